// Cost functions: engine cycles of one instruction, from its shapes, dtypes and the core spec
// (ARCHITECTURE.md: values and time are separate functions of one instruction). One function
// per op family (cost_matmul.cc, cost_vector.cc, cost_scalar.cc, cost_gpsimd.cc,
// cost_control.cc); instruction_cost() picks the family and composes the result.
//
// How the published figures combine (HARDWARE.md s8.1, s3):
//  - `ii` (initiation interval) is the s8.1 table's cost: the cycles the engine's datapath is
//    occupied, so back-to-back INDEPENDENT instructions start every `ii` cycles (pipelined).
//  - `latency` = ii + fixed overhead: the cycles from issue until the results are written and
//    the instruction's semaphore signals apply, hidden behind the next independent instruction,
//    exposed to a DEPENDENT one (which waits for the signal). VectorE and ScalarE: the static
//    overhead (~100 cycles "when the instructions are RAW-dependent", AG2), and at least the
//    measured turnaround of RAW-dependent 1-element instructions (core.cost.
//    act_dependent_ii_cycles: 264 cycles on NC-v2, PG), so a dependent chain of tiny ops runs
//    at the published interval and one of large ops at N + 100 per step. TensorE: static
//    overhead plus the SBUF/PSUM access setup (~60 cycles, AG2). GpSimd's GPSIMD_START is its
//    fixed cost and is already inside its `ii`.
//  - Streaming cycles count 2 per element when an operand's innermost stride is over 16 bytes
//    (half port bandwidth, HARDWARE.md s3).
// Every constant comes from arch::CoreSpec; what the spec lacks is named in cost_constants.h.
#pragma once

#include <cstdint>

#include "arch/core_spec.h"
#include "isa/instruction.h"

namespace trnsim::core {

// Execution units inside one engine. TensorE loads the stationary matrix in the background
// while the previous matmul streams (AG2, PG "background LS"); every other instruction runs on
// the engine's main unit.
enum class Unit : uint8_t { kMain, kBackground };
inline constexpr int kNumUnits = 2;

struct Cost {
  uint64_t ii = 1;       // engine cycles the unit is occupied (>= 1)
  uint64_t latency = 1;  // engine cycles from issue to completion (>= ii)
  Unit unit = Unit::kMain;
  // The instruction uses what the background unit produced (a matmul uses the loaded
  // stationary), so it issues only once the background unit is idle.
  bool waits_background = false;
};

// The cost of `ins` on the engine it names. Pure: depends only on the instruction and spec.
Cost instruction_cost(const isa::Instruction& ins, const arch::CoreSpec& spec);

// Datapath cycles (the s8.1 table entry, i.e. the `ii`) per family. Each is called only for
// opcodes of its family on an engine that runs them.
uint64_t tensor_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec);
uint64_t vector_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec);
uint64_t scalar_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec);
uint64_t gpsimd_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec);
// The VectorE table of s8.1 evaluated with `eng`'s datapath (VectorE, or GpSimd's 128 lanes).
uint64_t elementwise_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec,
                            const arch::EngineSpec& eng);
// Sequencer-only instructions (sem/reg/branch/nop) and DMA triggers, on any engine.
uint64_t control_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec);

bool is_control(isa::Opcode op);
// The clock of `engine`'s sequencer and datapath, GHz (spec core.<engine>.clock_ghz).
double engine_clock_ghz(const arch::CoreSpec& spec, isa::Engine engine);

// Multiply-accumulate FLOPs of a TensorE instruction (2 per MAC; 0 for other opcodes), for
// utilisation reports: M x K x N from the PSUM destination and the moving operand.
double tensor_flops(const isa::Instruction& ins, const arch::CoreSpec& spec);
// What TensorE computes for an instruction, useful or not (HFU): tensor_flops, plus a
// transpose_pe's as the identity matmul it is (2 x P x P x F for a [P, F] source).
double tensor_issued_flops(const isa::Instruction& ins, const arch::CoreSpec& spec);
// The rate class of a TensorE instruction's inputs, a core.tflops.<class> figure (arch/derived.h):
// "bf16", "fp16", "tf32", "fp32" (an FP32 input), "fp8", "mxfp8", "mxfp4".
const char* tensor_rate_class(const isa::Instruction& ins);

}  // namespace trnsim::core
