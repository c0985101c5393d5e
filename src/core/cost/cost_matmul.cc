// TensorE cost (HARDWARE.md s8.1, s2.1):
//  - MultiplyMoving: II = max(min(MM_INIT_LATENCY, M_stationary), N_moving) PE cycles for
//    fp8/bf16/fp16/tf32 (ISA-OLD nc_matmul; = max(N, 64) for a full 128-wide stationary, AG2),
//    times 1 / matmul_rate.fp32 (= 4) when an input is FP32. NC-v3 double-row FP8 and NC-v4 MX
//    pack 2x / 4x K per column into the same cycles (AG3, AG4), so their time is the BF16 time:
//    the wider elements_per_cycle (fp8 512, mx 1024 vs 256) is spent on K, not on columns.
//    Double row's 2 K per column takes 2 / matmul_rate.fp8 passes: one on NC-v3 (rate 2), two
//    on NC-v4, whose non-MX FP8 streams at the BF16 rate (AG4) though the mode exists (ISA).
//  - LoadStationary: F / 4 (AG2, PG), on the background unit, so it hides behind the previous
//    matmul; the next matmul waits for it.
//  - transpose_pe: max(P, min(MM_INIT_LATENCY, F)) (ISA-OLD); FP32 at the FP32 matmul rate,
//    halved by the NC-v3+ bit-exact transpose path ("2x faster for FP32", AG3).
#include <algorithm>
#include <cmath>

#include "core/cost/cost.h"
#include "core/cost/cost_constants.h"
#include "core/cost/cost_operands.h"

namespace trnsim::core {

namespace {

// Operand slots from the op table (isa/op_table.cc): multiply_moving (dst, moving);
// matmul_mx (dst, stationary, moving, stationary_scale, moving_scale).
constexpr int kMmMovingSlot = 1;
constexpr int kMxMovingSlot = 2;

const isa::AccessPattern* moving_operand(const isa::Instruction& ins) {
  const int slot = ins.op == isa::Opcode::kMatmulMx ? kMxMovingSlot : kMmMovingSlot;
  return ins.num_operands > slot ? &ins.operands[slot] : nullptr;
}

const isa::AccessPattern* psum_destination(const isa::Instruction& ins) {
  if (const auto* p = first_operand_in(ins, isa::Space::kPsum)) return p;
  return ins.num_operands > 0 ? &ins.operands[0] : nullptr;
}

bool any_fp32_input(const isa::Instruction& ins) {
  for (int i = 0; i < ins.num_operands; ++i) {
    const auto& ap = ins.operands[i];
    if (ap.space == isa::Space::kSbuf && ap.dtype.dtype == num::Dtype::kFp32) return true;
  }
  return false;
}

// Cycle multiplier of FP32 inputs: 1 / matmul_rate.fp32 (4 on every generation, AG2/AG3).
uint64_t fp32_slowdown(const arch::CoreSpec& spec) {
  const double rate = spec.tensor.matmul_rate.fp32;
  if (!(rate > 0.0) || rate >= 1.0) return 1;
  return static_cast<uint64_t>(std::llround(1.0 / rate));
}

// Passes a double-row FP8 matmul (2 K per PE column) takes: 2 / matmul_rate.fp8, at least 1.
uint64_t double_row_passes(const arch::CoreSpec& spec) {
  const double rate = spec.tensor.matmul_rate.fp8.value_or(2.0);  // absent: no double row
  if (!(rate > 0.0) || rate >= 2.0) return 1;
  return static_cast<uint64_t>(std::llround(2.0 / rate));
}

uint64_t matmul_columns(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  const auto* dst = psum_destination(ins);
  const uint64_t n = dst ? static_cast<uint64_t>(dst->free_elements()) : 1;
  const uint64_t m = dst ? static_cast<uint64_t>(dst->num_partitions) : 1;
  const uint64_t init = static_cast<uint64_t>(spec.cost.mm_init_latency_cycles);
  uint64_t cycles = std::max(std::min(init, m), n);
  if (any_fp32_input(ins)) cycles *= fp32_slowdown(spec);
  if (ins.op == isa::Opcode::kMultiplyMoving &&
      ins.p.perf_mode == isa::MatmulPerfMode::kDoubleRowFp8)
    cycles *= double_row_passes(spec);
  return cycles;
}

}  // namespace

uint64_t tensor_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  switch (ins.op) {
    case isa::Opcode::kMultiplyMoving:
    case isa::Opcode::kMatmulMx:
      return matmul_columns(ins, spec);
    case isa::Opcode::kLoadStationary: {
      const auto* st = first_operand_in(ins, isa::Space::kSbuf);
      const uint64_t f = st ? static_cast<uint64_t>(st->free_elements()) : 1;
      uint64_t cycles = ceil_div(f, costk::kLoadStationarySpeedup);
      if (any_fp32_input(ins)) cycles *= fp32_slowdown(spec);
      return std::max<uint64_t>(cycles, 1);
    }
    case isa::Opcode::kTransposePe: {
      const auto* src = last_operand_in(ins, isa::Space::kSbuf);
      const uint64_t p = src ? static_cast<uint64_t>(src->num_partitions) : 1;
      const uint64_t f = src ? static_cast<uint64_t>(src->free_elements()) : 1;
      const uint64_t init = static_cast<uint64_t>(spec.cost.mm_init_latency_cycles);
      uint64_t cycles = std::max(p, std::min(init, f));
      if (any_fp32_input(ins)) {
        cycles *= fp32_slowdown(spec);
        if (ins.p.transpose && spec.features.bit_exact_transpose)
          cycles = ceil_div(cycles, costk::kTransposeFp32Speedup);
      }
      return cycles;
    }
    default:
      return costk::kControlCycles;  // not a TensorE op: the op table rejects it earlier
  }
}

double tensor_flops(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  if (ins.op != isa::Opcode::kMultiplyMoving && ins.op != isa::Opcode::kMatmulMx) return 0.0;
  const auto* dst = psum_destination(ins);
  const auto* mov = moving_operand(ins);
  if (!dst || !mov) return 0.0;
  const double n = static_cast<double>(dst->free_elements());
  const double m = static_cast<double>(dst->num_partitions);
  if (n <= 0) return 0.0;
  // K x N = every moving element: the free dim holds 2 K per column with double_row FP8 and
  // 4 with MX (x4 in the innermost dim, op table), so K follows without a per-mode rule.
  (void)spec;
  const double k = static_cast<double>(mov->elements()) / n;
  return 2.0 * m * k * n;
}

double tensor_issued_flops(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  if (ins.op != isa::Opcode::kTransposePe) return tensor_flops(ins, spec);
  const auto* src = last_operand_in(ins, isa::Space::kSbuf);
  if (!src) return 0.0;
  const double p = static_cast<double>(src->num_partitions);
  return 2.0 * p * p * static_cast<double>(src->free_elements());
}

const char* tensor_rate_class(const isa::Instruction& ins) {
  if (any_fp32_input(ins)) return "fp32";
  const auto* mov = ins.op == isa::Opcode::kTransposePe ? last_operand_in(ins, isa::Space::kSbuf)
                                                        : moving_operand(ins);
  const num::Dtype d = mov ? mov->dtype.dtype : num::Dtype::kBf16;
  if (ins.op == isa::Opcode::kMatmulMx) return d == num::Dtype::kFp4E2M1 ? "mxfp4" : "mxfp8";
  switch (d) {
    case num::Dtype::kFp16:
      return "fp16";
    case num::Dtype::kTf32:
      return "tf32";
    case num::Dtype::kFp8E4M3:
    case num::Dtype::kFp8E4M3Fn:
    case num::Dtype::kFp8E5M2:
    case num::Dtype::kFp8E3M4:
    case num::Dtype::kCfp8:
      return "fp8";
    default:
      return "bf16";
  }
}

}  // namespace trnsim::core
