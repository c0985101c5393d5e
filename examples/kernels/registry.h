// The example kernels by name, for the CLI (`trnsim run matmul_fully_optimized --chip trn1`)
// and the tests: each entry builds a Program from integer arguments (shapes, then options)
// and a generation. Missing trailing arguments take the entry's defaults; the matmul defaults
// are the measured setup of VALIDATION.md s2 (M = 4096, K = 8192, N = 8192).
//
// The list is written out in registry.cc (not registered by static initialisers, which a
// static library drops when nothing references them); a test checks every kernel in kernels.h
// is in it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "arch/chip_spec.h"
#include "isa/program.h"

namespace trnsim::examples {

struct KernelParam {
  std::string_view name;
  int64_t default_value = 0;
  std::string_view doc;
};

struct KernelEntry {
  std::string_view name;
  std::string_view doc;
  std::vector<KernelParam> params;
  std::function<isa::Program(const arch::ChipSpec&, std::span<const int64_t>)> build;
  // SPMD kernels: program `program_id` of `num_programs`, one per physical core of a logical
  // core (empty: the kernel runs on one core).
  std::function<isa::Program(const arch::ChipSpec&, std::span<const int64_t>, int program_id,
                             int num_programs)>
      build_spmd = {};
};

std::span<const KernelEntry> kernel_registry();
const KernelEntry* find_kernel(std::string_view name);

// Builds kernel `name` on `chip`. Throws InputError for an unknown name (listing the known
// ones), more arguments than the kernel takes, or shapes the kernel rejects.
isa::Program build_kernel(std::string_view name, const arch::ChipSpec& chip,
                          const std::vector<int64_t>& args = {});

// The programs of SPMD kernel `name` on `num_programs` cores, one per program id. Throws
// InputError as build_kernel does, and for a kernel that does not split over cores when
// num_programs > 1.
std::vector<isa::Program> build_kernel_spmd(std::string_view name, const arch::ChipSpec& chip,
                                            const std::vector<int64_t>& args, int num_programs);

// "name(p1=default, ...)  doc" per kernel, one per line: for `trnsim run --list`.
std::string describe_kernels();

}  // namespace trnsim::examples
