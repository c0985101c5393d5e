// Helpers for the validation tests: assemble a snippet after a standard prelude, validate it
// against a shipped generation, and compare the rule kinds reported.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "isa/assembler.h"
#include "isa/validate.h"

namespace trnsim::isa::testing_util {

inline const arch::ChipSpec& chip(const std::string& name) {
  static std::map<std::string, arch::ChipSpec> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, arch::load_chip(name)).first;
  return it->second;
}

// Tensors A (bf16 [128, 512]) and B (fp32 [128, 512]) right after it; 4 semaphores.
inline constexpr const char* kPrelude =
    ".tensor A hbm bf16 [128, 512] input\n"
    ".tensor B hbm fp32 [128, 512] output\n"
    ".semaphores 4\n";

inline std::vector<Diagnostic> check(const std::string& gen, const std::string& body) {
  return validate(assemble(std::string(kPrelude) + body, "t.trn"), chip(gen));
}
inline std::vector<Diagnostic> check(const std::string& gen, const Program& p) {
  return validate(p, chip(gen));
}

inline std::string dump(const std::vector<Diagnostic>& ds) {
  std::string s;
  for (const Diagnostic& d : ds) s += "\n  " + to_string(d);
  return s.empty() ? " (none)" : s;
}

inline bool has(const std::vector<Diagnostic>& ds, RuleKind k) {
  for (const Diagnostic& d : ds)
    if (d.kind == k) return true;
  return false;
}

}  // namespace trnsim::isa::testing_util

// The snippet is legal on `gen`.
#define EXPECT_LEGAL(gen, body)                                                         \
  do {                                                                                  \
    const auto ds_ = ::trnsim::isa::testing_util::check(gen, body);                     \
    EXPECT_TRUE(ds_.empty()) << (gen) << ":" << ::trnsim::isa::testing_util::dump(ds_); \
  } while (0)

// The snippet breaks rule `rule` on `gen` (and possibly others, which are printed).
#define EXPECT_RULE(gen, body, rule)                                                        \
  do {                                                                                      \
    const auto ds_ = ::trnsim::isa::testing_util::check(gen, body);                         \
    EXPECT_TRUE(::trnsim::isa::testing_util::has(ds_, ::trnsim::isa::RuleKind::rule))       \
        << (gen) << ": expected " #rule ", got:" << ::trnsim::isa::testing_util::dump(ds_); \
  } while (0)

// The snippet breaks rule `rule` on `gen` and nothing else.
#define EXPECT_ONLY_RULE(gen, body, rule)                                                 \
  do {                                                                                    \
    const auto ds_ = ::trnsim::isa::testing_util::check(gen, body);                       \
    bool only_ = !ds_.empty();                                                            \
    for (const auto& d_ : ds_) only_ = only_ && d_.kind == ::trnsim::isa::RuleKind::rule; \
    EXPECT_TRUE(only_) << (gen) << ": expected only " #rule ", got:"                      \
                       << ::trnsim::isa::testing_util::dump(ds_);                         \
  } while (0)
