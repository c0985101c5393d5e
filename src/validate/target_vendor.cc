// VALIDATION.md s5: the vendor-stated constants of the compute engines, each reproduced by a
// microbenchmark built as a kernel and timed, so that they check the model end to end (the
// builder's dependencies and semaphores included), not just the spec values:
//  - RAW-dependent 1-element ScalarE instructions: 264 ScalarE cycles apart on NC-v2 (PG: 189
//    ns), which sets core.cost.act_dependent_ii_cycles; NC-v3 takes the same cycle count and is
//    checked against the current perf guide's NC-v3 figure, 222 ns;
//  - TensorE matmul turnaround: 64 cycles on NC-v2 (MM_INIT_LATENCY, PG / AG2), for short
//    moving matrices back to back;
//  - the ~100-cycle static overhead a RAW-dependent VectorE instruction pays (AG2), seen as a
//    dependent chain of 2N fp32 tensor_tensor ops running at 2N + 100 per step.
// Per-step figures are differences of two chain lengths, so the chain's start and end cancel.
#include <fmt/format.h>

#include <functional>

#include "arch/arch.h"
#include "core/timing/timing_run.h"
#include "kernel/builder.h"
#include "validate/target_list.h"

namespace trnsim::validate {

namespace {

constexpr int kShort = 40, kLong = 140;

// Simulated time of a kernel made by `body(kb, steps)`, in picoseconds.
double run_ps(const arch::ChipSpec& chip, int steps,
              const std::function<void(kernel::KernelBuilder&, int)>& body) {
  kernel::KernelBuilder kb(chip);
  body(kb, steps);
  return static_cast<double>(core::run_timing(chip, kb.build()).total.v);
}

// Picoseconds per step of a chain, from two chain lengths.
double per_step_ps(const arch::ChipSpec& chip,
                   const std::function<void(kernel::KernelBuilder&, int)>& body) {
  return (run_ps(chip, kLong, body) - run_ps(chip, kShort, body)) / (kLong - kShort);
}

// x = exp(x) on a [128, 1] fp32 tile, each step reading the previous step's result.
void dependent_activations(kernel::KernelBuilder& kb, int steps) {
  kernel::Tile t = kb.sbuf("t", num::fp32(), {128, 1});
  kb.memset(t, 0.0);
  for (int i = 0; i < steps; ++i) kb.activation(t, t, isa::ActFunc::kCopy);
}

// Independent [128 x 128] x [128 x 32] bf16 matmuls sharing one stationary.
void short_matmuls(kernel::KernelBuilder& kb, int steps) {
  kernel::Tile st = kb.sbuf("st", num::bf16(), {128, 128});
  kernel::Tile mv = kb.sbuf("mv", num::bf16(), {128, 32});
  kb.memset(st, 0.0);
  kb.memset(mv, 0.0);
  kernel::Tile ps = kb.psum("ps", num::fp32(), {128, 8, 32});
  for (int i = 0; i < steps; ++i) kb.matmul(ps(kernel::all, i % 8), st, mv, {.start = true});
}

// x = x * y on [128, 512] fp32 tiles, each step reading the previous step's result.
void dependent_vector_ops(kernel::KernelBuilder& kb, int steps) {
  kernel::Tile x = kb.sbuf("x", num::fp32(), {128, 512});
  kernel::Tile y = kb.sbuf("y", num::fp32(), {128, 512});
  kb.memset(x, 1.0);
  kb.memset(y, 1.0);
  for (int i = 0; i < steps; ++i) kb.tensor_tensor(x, x, y, isa::AluOp::kMult);
}

double cycles(double ps, double ghz) { return ps * 1e-3 * ghz; }

}  // namespace

std::vector<Record> vendor_constant_records() {
  const arch::ChipSpec trn1 = arch::load_chip("trn1");
  const arch::ChipSpec trn2 = arch::load_chip("trn2");
  std::vector<Record> out;
  const double act1 = cycles(per_step_ps(trn1, dependent_activations), trn1.core.scalar.clock_ghz);
  out.push_back({"vendor-constants", "ACT dependent II trn1", "cycles", 264.0, act1, 0.15,
                 "VALIDATION.md s5 (nki_perf_guide.rst: 189 ns on NC-v2)",
                 "1-element activations, each reading the previous one's result",
                 "core.cost.act_dependent_ii_cycles (trn1)"});
  const double act2_ns = per_step_ps(trn2, dependent_activations) * 1e-3;
  out.push_back({"vendor-constants", "ACT dependent II trn2", "ns", 222.0, act2_ns, 0.15,
                 "nki_perf_guide.rst (current: 222 ns on NC-v3)",
                 "the NC-v2 cycle count at the NC-v3 ScalarE clock", ""});
  const double mm = cycles(per_step_ps(trn1, short_matmuls), trn1.core.tensor.clock_ghz);
  out.push_back({"vendor-constants", "PE matmul turnaround trn1", "cycles", 64.0, mm, 0.15,
                 "VALIDATION.md s5 (nki_perf_guide.rst, AG2: MM_INIT_LATENCY)",
                 "128x128 stationary, 32-column moving bf16, back to back", ""});
  const double dve = cycles(per_step_ps(trn1, dependent_vector_ops), trn1.core.vector.clock_ghz);
  out.push_back({"vendor-constants", "DVE dependent overhead", "cycles", 100.0, dve - 2 * 512, 0.15,
                 "VALIDATION.md s5 (AG2: ~100 cycles static overhead)",
                 fmt::format("fp32 tensor_tensor N = 512, each step reading the last: {:.0f} "
                             "cycles a step, 2N of them streaming",
                             dve),
                 "core.cost.static_overhead_cycles"});
  return out;
}

}  // namespace trnsim::validate
