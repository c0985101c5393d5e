// Helpers of the kernel tests: generations by name, running a program on the functional runner
// with named inputs, and host-side references that do not use trnsim's numerics (so the code
// under test is never its own oracle).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "arch/chip_spec.h"
#include "core/timing/timing_result.h"
#include "isa/program.h"

namespace trnsim::kernel_test {

// trn1, trn2, trn3, loaded once each.
const arch::ChipSpec& chip(const std::string& name);
inline const std::vector<std::string> kGenerations{"trn1", "trn2", "trn3"};

// Every example kernel of the registry at a small size (its name and arguments), for tests
// that compare two ways of running the same programs.
inline const std::vector<std::pair<std::string, std::vector<int64_t>>> kSmallExamples{
    {"matmul_tiled", {256, 256, 1024}},
    {"matmul_hoisted", {256, 256, 1024}},
    {"matmul_blocked", {512, 256, 1024}},
    {"matmul_fully_optimized", {256, 256, 1024, 2, 2, 2}},
    {"softmax", {256, 512}},
    {"layernorm", {256, 512}},
    {"rmsnorm", {256, 512}},
    {"attention", {512, 64, 1}}};

// Expects two timing runs of one program to agree on every time and statistic but the event
// count (tests of simulator shortcuts that must not change results).
void expect_same_timing(const core::TimingResult& a, const core::TimingResult& b);

// Runs `prog` functionally with the given inputs (fp32 values, cast by the runner) and
// returns every output tensor as fp32. Fails the test (ADD_FAILURE) on faults.
std::map<std::string, std::vector<float>> run(const arch::ChipSpec& chip, const isa::Program& prog,
                                              const std::map<std::string, std::vector<float>>& in);

// Round-to-nearest-even of an fp32 value to bf16, computed on the bit pattern (NaN-free input).
float round_bf16(float x);

// Deterministic pseudo-random values: integers in [lo, hi], or multiples of 1/64 in [-1, 1]
// (both exact in bf16).
std::vector<float> small_ints(size_t n, int lo, int hi, uint64_t seed);
std::vector<float> sixty_fourths(size_t n, uint64_t seed);

// Largest |a - b| and largest |a - b| / max(|b|, floor).
struct ErrorStats {
  double max_abs = 0, max_rel = 0;
};
ErrorStats compare(const std::vector<float>& got, const std::vector<double>& want,
                   double rel_floor = 1e-3);

}  // namespace trnsim::kernel_test
