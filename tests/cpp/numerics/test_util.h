// Shared helpers of the numerics tests: the catalogue pairing each library Format with the
// oracle's own description of it, bulk conversion through the library, comparison against the
// oracle with compact mismatch reports, a seeded generator and the test level.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "numerics/convert.h"
#include "numerics/format.h"
#include "oracle.h"

namespace trnsim::num::testing {

// A library Format and the oracle's independent description of the same format.
struct FormatCase {
  Format lib;
  oracle::Spec ref;
};

FormatCase case_for(Dtype d);  // every Dtype but kCfp8 (and kFp64)
FormatCase case_cfp8(int exp_bits, int bias);
// The 8-bit float formats named in the task: e4m3, e4m3fn, e5m2, e3m4, cfp8 (default).
std::vector<FormatCase> fp8_cases();
// fp8_cases() plus fp4_e2m1 and e8m0.
std::vector<FormatCase> narrow_cases();
// cFP8 in both layouts with every bias 0..63.
std::vector<FormatCase> cfp8_all_cases();
// int8 .. uint32.
std::vector<FormatCase> int_cases();

// TRNSIM_TEST_LEVEL=nightly selects the larger counts. Sanitizer builds (about 15x slower) run
// the random parts at a twentieth of the CI count and thin out the secondary boundary sweeps
// (sample_stride()); the exhaustive sweeps of every code stay whole in every build.
bool nightly();
bool sanitized();
size_t count_for_level(size_t ci, size_t nightly_count);
// 1 normally; `sanitizer_stride` in sanitizer builds (not nightly).
size_t sample_stride(size_t sanitizer_stride);
// Every `stride`-th element of v, plus the last one.
std::vector<uint64_t> thin(const std::vector<uint64_t>& v, size_t stride);

// splitmix64: a fixed-seed generator for the random cases.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t u32() { return static_cast<uint32_t>(next() >> 32); }
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  uint64_t s_;
};

// Element containers of a format (storage_bytes each, host byte order), from and to codes.
std::vector<uint8_t> pack(const Format& f, const std::vector<uint64_t>& codes);
std::vector<uint64_t> unpack(const Format& f, const std::vector<uint8_t>& buf, size_t n);
// The library's convert() of codes of `from` to codes of `to`.
std::vector<uint64_t> convert_codes(const Format& from, const std::vector<uint64_t>& codes,
                                    const Format& to, const RoundOptions& opts);

std::string mode_name(Rounding r);
std::string overflow_name(Overflow o);
std::string describe(const RoundOptions& o);
std::string hex(uint64_t v);

// Counts checks and mismatches, keeps the first few mismatches for the report.
class Mismatches {
 public:
  explicit Mismatches(std::string what) : what_(std::move(what)) {}
  void checked(size_t n = 1) { checked_ += n; }
  void add(const std::string& detail);
  bool ok() const { return count_ == 0; }
  size_t count() const { return count_; }
  size_t checked_count() const { return checked_; }
  std::string report() const;

 private:
  std::string what_;
  size_t checked_ = 0, count_ = 0;
  std::vector<std::string> first_;
};

// The oracle's expectation for element i of a conversion with `opts` (SR bits from
// random_u32(seed, stream, index_base + i)).
oracle::Expect expect_element(const oracle::Spec& to, const oracle::Exact& x,
                              const RoundOptions& opts, size_t i);

// Converts `codes` of `from` to `to` with `opts` through the library and compares every
// element with the oracle.
void check_conversion(const FormatCase& from, const std::vector<uint64_t>& codes,
                      const FormatCase& to, const RoundOptions& opts, Mismatches& mm);

// The library's encode() of one double against the oracle.
void check_encode(const FormatCase& to, double value, Rounding mode, uint32_t random,
                  const NumericPolicy& policy, Mismatches& mm);

// Every combination of rounding (RNE, RZ, SR) and overflow policy, with a fixed seed.
std::vector<RoundOptions> all_round_options(uint64_t seed = 0x5eed, uint64_t stream = 7);

}  // namespace trnsim::num::testing
