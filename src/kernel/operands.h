// Small argument types of the kernel API's calls.
#pragma once

#include <optional>
#include <vector>

#include "isa/engine.h"
#include "isa/instruction.h"
#include "kernel/view.h"

namespace trnsim::kernel {

// A per-partition scalar operand: an fp32 immediate, or a [P, 1] column of a tile (one value
// per partition: a row max, a mean, a bias vector).
struct Scalar {
  float imm = 0.0f;
  std::optional<View> column;

  Scalar(float v) : imm(v) {}                       // NOLINT(google-explicit-constructor)
  Scalar(double v) : imm(static_cast<float>(v)) {}  // NOLINT
  Scalar(int v) : imm(static_cast<float>(v)) {}     // NOLINT
  Scalar(const View& col) : column(col) {}          // NOLINT
};

// One ALU step of tensor_scalar and friends: x op arg (arg op x when reversed).
struct AluArg {
  isa::AluOp op = isa::AluOp::kBypass;
  Scalar arg = 0.0f;
  bool reverse = false;
};

// TensorE options. PE tiling (HARDWARE.md s2.1): a matmul may use a tile of the PE array
// (rows x cols from the generation's row/col tile sizes, positions in 32s) so that small
// matmuls run side by side; the default is the whole array.
struct MatmulOpts {
  bool start = false;  // begin a new accumulation group at dst even if one is open there
  int tile_row = 0, tile_col = 0;
  int tile_rows = 0, tile_cols = 0;  // 0: the whole array
  bool double_row = false;           // NC-v3 FP8 K = 256: operands [128, 2, F]
};

// DMA options. By default a transfer is triggered by the stream the DMA policy names for its
// direction, on that stream's queue (builder_dma.cc).
struct DmaOpts {
  std::optional<isa::Engine> trigger;
  bool accumulate = false;  // dst += src (NC-v4 SBUF read-add-write)
  bool skip_oob = false;    // dma_gather / dma_scatter: rows outside the table move nothing
};

// Which stream triggers DMAs. Loads (from HBM) come from the Sync engine, whose stream exists
// for triggering DMAs (HARDWARE.md s2), or round-robin from several streams: from NC-v3 on, a
// trigger costs its stream the descriptor-generation time (~600 ns, s4), and the two hardware
// DGEs are triggered from Sync and Scalar, so a load-bound kernel that leaves ScalarE idle can
// name both. Everything else (stores, on-chip copies) comes from GpSimd (software DGE, s4),
// which most kernels leave idle, so that a store waiting for its data does not hold back the
// loads queued behind it.
struct DmaPolicy {
  std::vector<isa::Engine> load_triggers{isa::Engine::kSync};
  isa::Engine store_trigger = isa::Engine::kGpSimd;
};

}  // namespace trnsim::kernel
