// Cost-model figures that arch::CoreSpec does not (yet) carry, named once with their source.
// Most are the shape of a published formula (the "2" in 2N) rather than a hardware parameter;
// the few assumptions are marked as such. Candidates for spec keys are listed in the timing
// report (docs: the timing model section of the final report).
#pragma once

#include <cstdint>

namespace trnsim::core::costk {

// --- HARDWARE.md s8.1 (ISA-OLD) formula factors --------------------------------------------
inline constexpr uint64_t kTwoPass = 2;     // tensor_tensor / scan / stt / predicated: 2N
inline constexpr uint64_t kBnAggrNum = 13;  // bn_aggr: 13 N / 3
inline constexpr uint64_t kBnAggrDen = 3;
inline constexpr uint64_t kVectorReciprocal = 8;  // VectorE reciprocal: 8 N (SHARED)
inline constexpr uint64_t kHalfRate = 2;          // N/2 cases: bf16 tensor_reduce add/max, zero
                                                  // memset of bf16/fp16

// --- Access patterns (HARDWARE.md s3, AG2) ---------------------------------------------------
// "If the innermost stride is over 16 bytes, that read/write port runs at half bandwidth"
// (AG2, NC-v2; not restated for NC-v3/v4, assumed to hold): each element then takes two
// port cycles, so the instruction streams 2N instead of N.
inline constexpr int64_t kWideStrideBytes = 16;
inline constexpr uint64_t kWideStridePenalty = 2;

// --- TensorE (HARDWARE.md s8.1, s2.1) -------------------------------------------------------
// LoadStationary is "up to 4x faster than an MM of the same free size" (AG2, PG): F/4 cycles.
inline constexpr uint64_t kLoadStationarySpeedup = 4;
// NC-v4 background transpose runs beside another transpose or matmul: "about 2x on transpose
// chains" (AG4), modelled as two transposes in flight (the unit is occupied for half the time).
inline constexpr uint64_t kBackgroundTransposeOverlap = 2;
// NC-v3+ bit-exact transpose (is_transpose) is "2x faster for FP32" than the matmul path (AG3).
inline constexpr uint64_t kTransposeFp32Speedup = 2;

// --- VectorE / ScalarE performance modes (HARDWARE.md s2.3, s2.4) ---------------------------
// NC-v3 VectorE: 4x for tensor_copy / tensor_scalar, SBUF in and out, BF16/FP16, contiguous
// inner dim; 2x when not contiguous or one side is PSUM; tensor_tensor 2x with both inputs in
// SBUF and all BF16/FP16 (AG3). The factor is further capped by elements_per_cycle / lanes.
inline constexpr uint64_t kVectorPerfFull = 4;
inline constexpr uint64_t kVectorPerfReduced = 2;
// NC-v4 ScalarE: tensor_scalar / tensor_copy natively with a 2x BF16/FP16 mode (AG4).
inline constexpr uint64_t kScalarPerf = 2;
// NC-v4 VectorE exponential: 4x the throughput of ScalarE exp (AG4).
inline constexpr uint64_t kFastExponentialSpeedup = 4;
// NC-v4 quantize_mx: 4 elements per partition per cycle (AG4).
inline constexpr uint64_t kQuantizeMxElementsPerCycle = 4;

// --- Sequencers (assumption: HARDWARE.md s11 item 1, issue rates are not public) -------------
// A control instruction (nop, semaphore, scalar register, branch) or a DMA trigger without a
// descriptor-generation cost occupies its sequencer for one engine cycle.
inline constexpr uint64_t kControlCycles = 1;
// An indirect DMA (dma_gather / dma_scatter) has its descriptors made by software DGE on
// GpSimd at run time, one per SBUF partition from the offsets (DGE). What that costs is not
// public (HARDWARE.md s11 item 10); trnsim's assumption: the GpSimd sequencer is occupied for
// the one published descriptor-generation time, the hardware DGE's ~600 ns per instruction
// (DGE, AG3), on every generation and whatever the partition count (docs/timing.md).
inline constexpr double kSwdgeInstructionNs = 600.0;
// A sequencer reading an element of memory into a register (reg_load) or writing one
// (reg_store): "an overhead of approximately 140 cycles is incurred to read index elements from
// SBUF / PSUM into the engine" (NKI API reference, tensor_copy_dynamic_src of NKI Beta 1). HBM
// is assumed no slower: the figure is the only one published (HARDWARE.md s11 item 1).
inline constexpr uint64_t kRegisterMemoryCycles = 140;
// An engine instruction with a register-relative operand: "max(MIN_II_DYNAMIC, N) engine
// cycles ... MIN_II_DYNAMIC is roughly 600 engine cycles" (NKI API reference,
// tensor_copy_dynamic_src / _dst).
inline constexpr uint64_t kMinIiDynamic = 600;

// --- DMA (HARDWARE.md s4) ----------------------------------------------------------------
// DMA transpose reaches up to 90% of DMA throughput HBM->SBUF and 50% SBUF->SBUF (AG3).
inline constexpr uint64_t kDmaTransposeHbmPercent = 90;
inline constexpr uint64_t kDmaTransposeSbufPercent = 50;
// SBUF read-add-write before NC-v4 goes through the DMA CC engines at 50% (AG4).
inline constexpr uint64_t kDmaAccumulateLegacyPercent = 50;
inline constexpr uint64_t kPercent = 100;

}  // namespace trnsim::core::costk
