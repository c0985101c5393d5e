// The linear kernel (ops.h LinearSpec). Per block of token_block tokens:
//   each 128-token tile of x is loaded (plus delta, the sum stored as h), normalised per token
//   if asked (rows.h), and transposed on TensorE in 128 x 128 blocks into x^T [128, K/128, TB]
//   (the PSUM -> SBUF copies on VectorE, several blocks per copy);
//   then for each block of out_block columns of w (one DMA for all of K, double-buffered):
//     for each token tile, for each 128-row K tile: matmuls into one PSUM bank per 512
//     columns, the stationary x^T tile shared by the banks (loaded once);
//     the epilogue evacuates PSUM: ScalarE applies the activation (SiLU of the gate for a GLU),
//     VectorE adds the bias, multiplies by the up projection, adds the residual r;
//     the result, rounded to the dtype, is stored by DMA.
// For a few tokens (a decode step) the column layout (LinearTiling::columns) replaces the first
// step: x^T comes straight from HBM with partition p holding features [p K/128, (p+1) K/128) of
// every token, the residual add and the norm run in that layout (rows.h normalize_columns) and
// the weights' rows are laid out in the same order; no transposes, and each VectorE / ScalarE
// pass works K/128 elements per token on all partitions instead of K on one (transformers-
// neuronx keeps a decoder's hidden states hidden-major for the same reason).
// Weights are read tokens / token_block times and x once, so the tiling trades SBUF for HBM
// traffic; linear_tilings lists the candidates the compiler times (graph/tiling_search.h).
// Quantized weights (LinearSpec::weight_dtype) stream at one byte an element: FP8 straight
// into TensorE, int8 cast by the loading DMA; their per-channel scales multiply the
// accumulator first thing in the epilogue.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/ops.h"
#include "ops/rows.h"

namespace trnsim::ops {

using isa::AluOp;
using kernel::all;
using kernel::Tile;

bool is_glu(Act a) { return a == Act::kGluSilu || a == Act::kGluGelu; }

std::string_view name(Norm n) {
  switch (n) {
    case Norm::kNone:
      return "none";
    case Norm::kRms:
      return "rmsnorm";
    case Norm::kLayer:
      return "layernorm";
  }
  return "?";
}

std::string_view name(Act a) {
  switch (a) {
    case Act::kNone:
      return "none";
    case Act::kSilu:
      return "silu";
    case Act::kGelu:
      return "gelu";
    case Act::kGeluTanh:
      return "gelu_tanh";
    case Act::kRelu:
      return "relu";
    case Act::kGluSilu:
      return "swiglu";
    case Act::kGluGelu:
      return "geglu";
  }
  return "?";
}

namespace {

constexpr int64_t kBank = 512;  // fp32 columns of one PSUM bank (2 KiB per partition)
// Elements one access pattern moves per partition (a DMA's SBUF side; the ISA's limit).
constexpr int64_t kMaxApElements = 65535;
// Weight blocks in flight: three, so that the weight stream runs on while the first block's
// matmuls wait for x^T (a norm prologue over a few long token rows takes tens of us).
constexpr int kWeightBuffers = 3;

}  // namespace

num::Format linear_sbuf_weight_format(const arch::ChipSpec& chip, const LinearSpec& s) {
  if (!s.weight_dtype || *s.weight_dtype == s.dtype) return s.dtype;
  for (const std::string& name : chip.numerics.tensor_fp8_formats)
    if (num::parse_format(name) == *s.weight_dtype) return *s.weight_dtype;
  return s.dtype;
}

isa::ActFunc act_func(Act a) {
  switch (a) {
    case Act::kSilu:
    case Act::kGluSilu:
      return isa::ActFunc::kSilu;
    case Act::kGelu:
    case Act::kGluGelu:
      return isa::ActFunc::kGelu;
    case Act::kGeluTanh:
      return isa::ActFunc::kGeluApprxTanh;
    case Act::kRelu:
      return isa::ActFunc::kRelu;
    case Act::kNone:
      break;
  }
  return isa::ActFunc::kCopy;
}

namespace {

// How a linear of `s` runs on `chip`: its tiles, and the chunks of K its weight blocks load in.
// A block of w holds out_block columns of kc K tiles: all of K when two such blocks take at
// most 2/5 of a partition of SBUF and one DMA's SBUF side stays within the access pattern's
// 65535 elements, else K in chunks (the accumulators of every token tile of the block then
// stay open in PSUM across the chunks).
struct Plan {
  int64_t kt = 0, tb = 0, nb = 0, mt = 0, banks = 0, glu = 1, kc = 0, chunks = 1;
  bool cols = false;  // the column layout (LinearTiling::columns)
  bool ws = false;    // ... with w stationary (LinearTiling::weight_stationary)
  // The accumulators, and two banks for the transposes (column layout: the norm's sums).
  int64_t psum_banks() const { return (chunks == 1 ? 2 : mt) * banks * glu + 2; }
  // K row of partition `part` in K tile `k`: tiles of 128 consecutive rows, or in the column
  // layout the rows partition by partition (part * kt + k), as x^T is loaded.
  int64_t row(int64_t k, int64_t part, int64_t parts) const {
    return cols ? part * kt + k : k * parts + part;
  }
};

Plan plan_of(const arch::ChipSpec& chip, const LinearSpec& s) {
  const int64_t parts = chip.core.sbuf.partitions;
  Plan p;
  p.kt = ceil_div(s.in, parts);
  p.tb = std::min(s.tiling.token_block, ceil_div(s.tokens, parts) * parts);
  p.nb = std::min(s.tiling.out_block, ceil_div(s.out, kBank) * kBank);
  p.mt = ceil_div(p.tb, parts);
  p.banks = ceil_div(p.nb, kBank);
  p.glu = is_glu(s.act) ? 2 : 1;
  p.cols = s.tiling.columns;
  p.ws = s.tiling.columns && s.tiling.weight_stationary;
  // y^T packs each 128-channel group's few token columns densely in the banks.
  if (p.ws) p.banks = ceil_div(ceil_div(p.nb, parts) * std::min(s.tokens, parts), kBank);
  const int64_t usable = chip.core.sbuf.usable_bytes_per_partition > 0
                             ? chip.core.sbuf.usable_bytes_per_partition
                             : chip.core.sbuf.bytes_per_partition;
  const int64_t per_ktile = p.nb * linear_sbuf_weight_format(chip, s).storage_bytes * p.glu;
  p.kc = std::max<int64_t>(1, usable * 2 / 5 / (kWeightBuffers * per_ktile));
  p.kc = std::min({p.kc, p.kt, std::max<int64_t>(1, kMaxApElements / p.nb)});
  p.chunks = ceil_div(p.kt, p.kc);
  return p;
}

void check(const arch::ChipSpec& chip, const LinearSpec& s) {
  require_range("linear", "tokens", s.tokens, 1, int64_t{1} << 24);
  require_range("linear", "in", s.in, 1, int64_t{1} << 20);
  require_range("linear", "out", s.out, 1, int64_t{1} << 24);
  if (s.weight_dtype && *s.weight_dtype != s.dtype) {
    const num::Format& f = *s.weight_dtype;
    const bool fp8 = f.kind == num::Kind::kFloat && f.storage_bytes == 1 && f.bits == 8 &&
                     f.dtype != num::Dtype::kE8M0;
    if (!fp8 && f.dtype != num::Dtype::kInt8)
      throw InputError("linear", "weight_dtype",
                       fmt::format("{}: quantized weights are int8 or an FP8 format", f.name()));
  }
  const int64_t parts = chip.core.sbuf.partitions;
  if (s.tiling.token_block < 1 || s.tiling.token_block % parts != 0)
    throw InputError(
        "linear", "token_block",
        fmt::format("{} is not a positive multiple of {}", s.tiling.token_block, parts));
  if (s.tiling.out_block < 1 || s.tiling.out_block % kBank != 0)
    throw InputError("linear", "out_block",
                     fmt::format("{} is not a positive multiple of {}", s.tiling.out_block, kBank));
  // Banks for the tiling as asked (a block wider than the tensor is refused as it would be
  // for a wider tensor, not clamped).
  Plan p = plan_of(chip, s);
  p.banks = p.ws ? ceil_div(s.tiling.out_block / parts * std::min(s.tokens, parts), kBank)
                 : s.tiling.out_block / kBank;
  p.mt = s.tiling.token_block / parts;
  if (s.tiling.columns && (s.in % parts != 0 || s.tokens > parts || s.tiling.token_block != parts))
    throw InputError("linear", "tiling",
                     fmt::format("the column layout needs K ({}) a multiple of {}, at most {} "
                                 "tokens ({}) and token_block {}",
                                 s.in, parts, parts, s.tokens, parts));
  if (s.tiling.weight_stationary && (!s.tiling.columns || s.out % parts != 0))
    throw InputError("linear", "tiling",
                     fmt::format("weight_stationary needs the column layout and N ({}) a "
                                 "multiple of {}",
                                 s.out, parts));
  const int64_t banks = chip.core.psum.banks;
  if (p.psum_banks() > banks)
    throw InputError(
        "linear", "out_block",
        fmt::format(
            "{} columns{}{} need {} PSUM banks with the transposes; the core has {}",
            s.tiling.out_block, is_glu(s.act) ? " (GLU)" : "",
            p.chunks > 1 ? fmt::format(" for {} tokens with K in {} chunks", p.tb, p.chunks) : "",
            p.psum_banks(), banks));
}

}  // namespace

int64_t linear_sbuf_bytes(const arch::ChipSpec& chip, const LinearSpec& s) {
  const Plan p = plan_of(chip, s);
  const int64_t e = s.dtype.storage_bytes;
  int64_t bytes = 0;
  if (p.cols) {  // x^T (and delta), normalised x^T, the norm's fp32 squares and parameters
    const int64_t T = s.tokens;
    bytes += p.kt * T * e * (s.residual_in ? 2 : 1);
    const int64_t parts = chip.core.sbuf.partitions;  // the norm's ones matrix is [P, P] fp32
    if (s.norm != Norm::kNone) bytes += p.kt * T * (e + 4) + 2 * p.kt * 4 + parts * 4 + 6 * T * 4;
    if (s.norm == Norm::kLayer) bytes += p.kt * T * 4;
  } else {
    bytes += 2 * p.kt * p.tb * e;                     // x^T, two blocks
    bytes += 2 * s.in * e * (s.residual_in ? 2 : 1);  // x tiles (and delta)
    if (s.norm != Norm::kNone)  // normalised x; layer norm's centred values; gamma (and beta)
      bytes += 2 * s.in * e + (s.norm == Norm::kLayer ? 2 * s.in * 4 + 2 * s.in * 4 : s.in * 4);
  }
  bytes += kWeightBuffers * p.kc * p.nb * linear_sbuf_weight_format(chip, s).storage_bytes *
           p.glu;  // w blocks
  bytes += s.bias ? p.nb * 4 * p.glu : 0;
  bytes += s.weight_scale ? p.nb * 4 * p.glu : 0;
  bytes += 2 * p.nb * e + (p.glu > 1 ? p.nb * 4 : 0);  // results, gate scratch
  bytes += s.residual_out ? 2 * p.nb * e : 0;
  return bytes;
}

std::vector<float> pack_linear_weights(const arch::ChipSpec& chip, const LinearSpec& s,
                                       const std::vector<float>& w) {
  const Plan p = plan_of(chip, s);
  const int64_t parts = chip.core.sbuf.partitions, K = s.in, N = s.out;
  if (static_cast<int64_t>(w.size()) != K * N)
    throw InputError("linear", "w", fmt::format("{} values for a [{}, {}] weight", w.size(), K, N));
  const int64_t rows = p.kt * parts;
  std::vector<float> out(static_cast<size_t>(rows * N), 0.0f);
  for (int64_t n0 = 0; n0 < N; n0 += p.nb) {
    const int64_t nbn = std::min(p.nb, N - n0);
    for (int64_t k0 = 0; k0 < p.kt; k0 += p.kc) {
      const int64_t n = std::min(p.kt, k0 + p.kc) - k0;
      const int64_t base = rows * n0 + k0 * parts * nbn;
      for (int64_t part = 0; part < parts; ++part)
        for (int64_t t = 0; t < n; ++t) {
          const int64_t row = p.row(k0 + t, part, parts);
          if (row >= K) continue;  // padding
          for (int64_t c = 0; c < nbn; ++c)
            out[static_cast<size_t>(base + (part * n + t) * nbn + c)] =
                w[static_cast<size_t>(row * N + n0 + c)];
        }
    }
  }
  return out;
}

std::vector<LinearTiling> linear_tilings(const arch::ChipSpec& chip, const LinearSpec& s) {
  const int64_t parts = chip.core.sbuf.partitions;
  const int64_t budget = chip.core.sbuf.usable_bytes_per_partition > 0
                             ? chip.core.sbuf.usable_bytes_per_partition
                             : chip.core.sbuf.bytes_per_partition;
  const int64_t token_cap = ceil_div(s.tokens, parts) * parts;
  const int64_t out_cap = ceil_div(s.out, kBank) * kBank;
  std::vector<LinearTiling> all_tilings, fit;
  auto offer = [&](const LinearTiling& tiling) {
    LinearSpec t = s;
    t.tiling = tiling;
    try {
      check(chip, t);
    } catch (const InputError&) {
      return;
    }
    all_tilings.push_back(t.tiling);
    if (linear_sbuf_bytes(chip, t) <= budget) fit.push_back(t.tiling);
  };
  // A few tokens: the column layout first (what a decode step's kernels use), then the rows.
  for (int64_t nb : {512, 1024}) {
    if (s.tokens > parts || s.in % parts != 0 || (nb > out_cap && nb != 512)) break;
    offer({parts, nb, true});
    if (s.out % parts == 0) offer({parts, nb, true, true});
  }
  for (int64_t tb : {128, 256, 512, 1024, 2048}) {
    if (tb > token_cap && tb != 128) break;
    for (int64_t nb : {512, 1024}) {
      if (nb > out_cap && nb != 512) break;
      offer({std::min<int64_t>(tb, std::max<int64_t>(token_cap, 128)), nb});
    }
  }
  // Those over the estimate come after the ones that fit: the estimate counts every buffer
  // as live for the whole kernel, where placement (kernel/placement.h) reuses the bytes of
  // tiles whose live ranges end, so some of them fit in fact; what does not, spills.
  for (const LinearTiling& t : all_tilings)
    if (std::find(fit.begin(), fit.end(), t) == fit.end()) fit.push_back(t);
  return fit;
}

void emit_linear(kernel::KernelBuilder& kb, const arch::ChipSpec& chip, const LinearSpec& s) {
  check(chip, s);
  const Plan plan = plan_of(chip, s);
  const int64_t parts = chip.core.sbuf.partitions;
  const int64_t T = s.tokens, K = s.in, N = s.out;
  const int64_t kt = plan.kt, tb = plan.tb, nb = plan.nb, kc = plan.kc;
  const bool glu = is_glu(s.act);
  const num::Format dt = s.dtype;
  const num::Format wdt = s.weight_dtype.value_or(dt);          // in HBM
  const num::Format swdt = linear_sbuf_weight_format(chip, s);  // in SBUF, into TensorE

  const kernel::Tensor x = kb.input("x", dt, {T, K});
  kernel::Tensor delta, h;
  if (s.residual_in) {
    delta = kb.input("delta", dt, {T, K});
    h = kb.output("h", dt, {T, K});
  }
  const bool cols = plan.cols;
  const NormParams np = cols ? NormParams{} : load_norm_params(kb, s.norm, "", K);
  const ColumnNorm cn = cols ? load_column_norm(kb, s.norm, K, T) : ColumnNorm{};
  const int64_t w_rows = s.packed_weights ? kt * parts : K;
  const kernel::Tensor w = kb.input(glu ? "w_gate" : "w", wdt, {w_rows, N});
  const kernel::Tensor w_up = glu ? kb.input("w_up", wdt, {w_rows, N}) : kernel::Tensor{};
  kernel::Tensor ws, ws_up;
  if (s.weight_scale) {
    ws = kb.input(glu ? "w_gate_scale" : "w_scale", num::fp32(), {N});
    if (glu) ws_up = kb.input("w_up_scale", num::fp32(), {N});
  }
  kernel::Tensor b, b_up;
  if (s.bias) {
    b = kb.input(glu ? "b_gate" : "b", num::fp32(), {N});
    if (glu) b_up = kb.input("b_up", num::fp32(), {N});
  }
  const kernel::Tensor r = s.residual_out ? kb.input("r", dt, {T, N}) : kernel::Tensor{};
  const kernel::Tensor y = kb.output("y", dt, {T, N});

  // Transposes keep the source's width where the PE array has a bit-exact transpose mode.
  const num::Format tdt = chip.core.features.bit_exact_transpose ? dt : num::fp32();
  const int64_t per_bank =
      std::max<int64_t>(1, chip.core.psum.bank_bytes / (parts * tdt.storage_bytes));
  // Row layout: x tiles, transposed through PSUM into x^T blocks. Column layout: x^T [P, T, kt]
  // straight from HBM (xc), normalised into xn.
  std::vector<Tile> xT_bufs, x_bufs, d_bufs, xn_bufs, tp_bufs;
  std::vector<NormScratch> scratch;
  Tile xc, dc, xn;
  if (cols) {
    xc = kb.sbuf("x_cols", dt, {parts, T, kt});
    if (s.residual_in) dc = kb.sbuf("delta_cols", dt, {parts, T, kt});
    if (s.norm != Norm::kNone) xn = kb.sbuf("xn_cols", dt, {parts, T, kt});
  } else {
    xT_bufs = kb.sbuf_buffers("xT", dt, {parts, kt, tb}, 2);
    x_bufs = kb.sbuf_buffers("x", dt, {parts, K}, 2);
    if (s.residual_in) d_bufs = kb.sbuf_buffers("delta", dt, {parts, K}, 2);
    if (s.norm != Norm::kNone) {
      xn_bufs = kb.sbuf_buffers("xn", dt, {parts, K}, 2);
      for (int i = 0; i < 2; ++i)
        scratch.push_back(norm_scratch(kb, fmt::format("norm{}", i), K, s.norm));
    }
    tp_bufs = kb.psum_buffers("xT_psum", tdt, {parts, per_bank, parts}, 2);
  }
  const auto w_bufs = kb.sbuf_buffers(glu ? "w_gate" : "w", swdt, {parts, kc, nb}, kWeightBuffers);
  const auto wu_bufs =
      glu ? kb.sbuf_buffers("w_up", swdt, {parts, kc, nb}, kWeightBuffers) : std::vector<Tile>{};
  const int64_t banks = plan.banks;
  // Accumulator sets: two rotating over the token tiles when w holds all of K, else one per
  // token tile of the block (open across K's chunks).
  const int64_t acc_sets = plan.chunks == 1 ? 2 : plan.mt;
  std::vector<std::vector<Tile>> acc, acc_up;
  for (int64_t i = 0; i < acc_sets; ++i) {
    acc.push_back(kb.psum_buffers(fmt::format("acc{}_", i), num::fp32(), {parts, kBank},
                                  static_cast<int>(banks)));
    if (glu)
      acc_up.push_back(kb.psum_buffers(fmt::format("acc_up{}_", i), num::fp32(), {parts, kBank},
                                       static_cast<int>(banks)));
  }
  // Results: [tokens, columns] tiles, or with w stationary y^T [channels, groups of 128, tokens].
  const bool wst = plan.ws;
  const std::vector<int64_t> y_shape =
      wst ? std::vector<int64_t>{parts, nb / parts, T} : std::vector<int64_t>{parts, nb};
  const auto y_bufs = kb.sbuf_buffers(wst ? "yT" : "y", dt, y_shape, 2);
  const Tile gate = glu ? kb.sbuf("gate", num::fp32(), {parts, wst ? T : nb}) : Tile{};
  const auto r_bufs =
      s.residual_out ? kb.sbuf_buffers(wst ? "rT" : "r", dt, y_shape, 2) : std::vector<Tile>{};
  Tile b_t, bu_t, s_t, su_t;
  // A block's per-channel vectors (bias, scales) in two buffers each, so the next block's load
  // does not wait for this block's epilogue, nor the weight stream queued behind that load.
  std::map<std::string, std::vector<Tile>> vec_bufs;
  int64_t vec_no = 0;
  auto vec_buf = [&](const char* name, const std::vector<int64_t>& shape) {
    std::vector<Tile>& v = vec_bufs[name];
    if (v.empty()) v = kb.sbuf_buffers(name, num::fp32(), shape, 2);
    return v[static_cast<size_t>(vec_no % 2)];
  };

  // Loads K tiles [k0, k1) of columns [n0, n0 + nbn) of `src` into dst's tiles 0.. : the full
  // 128-row tiles in one DMA, a short last tile in another.
  auto load_w = [&](const Tile& dst, const kernel::Tensor& src, int64_t k0, int64_t k1, int64_t n0,
                    int64_t nbn) {
    if (s.packed_weights) {  // one contiguous run: partition p's kc rows, then p + 1's
      const int64_t n = k1 - k0;
      kb.dma_copy(dst(all, {0, n}, {0, nbn}), src.pattern(w_rows * n0 + k0 * parts * nbn,
                                                          {{parts, n * nbn}, {n, nbn}, {nbn, 1}}));
      return;
    }
    if (cols) {  // partition p's rows p * kt + k0 .. p * kt + k1 - 1: one run of rows each
      kb.dma_copy(dst(all, {0, k1 - k0}, {0, nbn}),
                  src.pattern(k0 * N + n0, {{parts, kt * N}, {k1 - k0, N}, {nbn, 1}}));
      return;
    }
    const int64_t full = std::min(k1, K / parts) - k0;
    if (full > 0)
      kb.dma_copy(dst(all, {0, full}, {0, nbn}),
                  src.pattern(k0 * parts * N + n0, {{parts, N}, {full, parts * N}, {nbn, 1}}));
    if (k0 + full < k1)
      kb.dma_copy(dst({0, K - (k0 + full) * parts}, full, {0, nbn}),
                  src({(k0 + full) * parts, K}, {n0, n0 + nbn}));
  };
  // PSUM -> SBUF with the epilogue, the residual, the store: token tile [m0, m0 + p) of the
  // block at t0, columns [n0, n0 + nbn), from accumulator set `ab` into result buffer `yb`.
  auto epilogue = [&](size_t ab, size_t yb, int64_t t0, int64_t m0, int64_t p, int64_t n0,
                      int64_t nbn) {
    const Tile yt = y_bufs[yb]({0, p}, {0, nbn});
    for (int64_t j = 0; j * kBank < nbn; ++j) {
      const int64_t c0 = j * kBank, c1 = std::min(nbn, c0 + kBank);
      const Tile a = acc[ab][static_cast<size_t>(j)]({0, p}, {0, c1 - c0});
      const Tile out = yt(all, {c0, c1});
      if (glu) {
        const Tile g = gate({0, p}, {c0, c1});
        const Tile u = acc_up[ab][static_cast<size_t>(j)]({0, p}, {0, c1 - c0});
        if (s.weight_scale) {
          kb.tensor_tensor(a, a, s_t({0, p}, {c0, c1}), AluOp::kMult);
          kb.tensor_tensor(u, u, su_t({0, p}, {c0, c1}), AluOp::kMult);
        }
        if (s.bias) {
          kb.tensor_tensor(g, a, b_t({0, p}, {c0, c1}), AluOp::kAdd);
          kb.activation(g, g, act_func(s.act));
          kb.tensor_tensor(u, u, bu_t({0, p}, {c0, c1}), AluOp::kAdd);
        } else {
          kb.activation(g, a, act_func(s.act));
        }
        kb.tensor_tensor(out, g, u, AluOp::kMult);
      } else if (s.weight_scale && !s.bias && s.act == Act::kNone) {
        kb.tensor_tensor(out, a, s_t({0, p}, {c0, c1}), AluOp::kMult);  // the evacuation itself
      } else if (s.bias) {
        if (s.weight_scale) kb.tensor_tensor(a, a, s_t({0, p}, {c0, c1}), AluOp::kMult);
        if (s.act == Act::kNone) {
          kb.tensor_tensor(out, a, b_t({0, p}, {c0, c1}), AluOp::kAdd);
        } else {
          kb.tensor_tensor(a, a, b_t({0, p}, {c0, c1}), AluOp::kAdd);
          kb.activation(out, a, act_func(s.act));
        }
      } else {
        if (s.weight_scale) kb.tensor_tensor(a, a, s_t({0, p}, {c0, c1}), AluOp::kMult);
        kb.activation(out, a, act_func(s.act));
      }
    }
    if (s.residual_out) {
      const Tile rt = r_bufs[yb]({0, p}, {0, nbn});
      kb.dma_copy(rt, r({t0 + m0, t0 + m0 + p}, {n0, n0 + nbn}));
      kb.tensor_tensor(yt, yt, rt, AluOp::kAdd);
    }
    kb.dma_copy(y({t0 + m0, t0 + m0 + p}, {n0, n0 + nbn}), yt);
  };
  // The matmuls of token tile [m0, m0 + p) over K tiles [k0, k1) held in w buffer `wb` from
  // K tile k0 on, into accumulator set `ab`; the x^T tile is stationary for the banks.
  auto matmuls = [&](const Tile& xT, size_t ab, size_t wb, int64_t m0, int64_t p, int64_t k0,
                     int64_t k1, int64_t nbn) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t kr = std::min(parts, K - k * parts);
      const Tile stat = cols ? xT(all, {m0, m0 + p}, k) : xT({0, kr}, k, {m0, m0 + p});
      for (int64_t j = 0; j * kBank < nbn; ++j) {
        const int64_t c0 = j * kBank, c1 = std::min(nbn, c0 + kBank);
        const kernel::MatmulOpts first{.start = k == 0};
        kb.matmul(acc[ab][static_cast<size_t>(j)]({0, p}, {0, c1 - c0}), stat,
                  w_bufs[wb]({0, kr}, k - k0, {c0, c1}), first);
        if (glu)
          kb.matmul(acc_up[ab][static_cast<size_t>(j)]({0, p}, {0, c1 - c0}), stat,
                    wu_bufs[wb]({0, kr}, k - k0, {c0, c1}), first);
      }
    }
  };

  int64_t tile_no = 0, wblock_no = 0, acc_no = 0, tp_no = 0, y_no = 0;
  // Blocks whose loads were issued before the loops (weights_first), or that the graph
  // prefetched (weights_prefetched): the loops skip loading the first `ahead` blocks.
  int64_t ahead = s.weights_prefetched ? kWeightBuffers : 0;
  // The column layout with w stationary (LinearTiling::weight_stationary): per block of nb
  // output channels, groups of 128; group i's y^T [128, p] accumulates w[:, group]^T x^T over
  // K in PSUM (groups packed p columns apart in the banks), and ScalarE evacuates it with the
  // channel's scale and bias as per-partition operands.
  auto weight_stationary_blocks = [&](const Tile& xT, int64_t p, int64_t t0) {
    const int64_t groups_per_bank = kBank / p;  // groups one PSUM bank holds
    // A per-channel vector of the block as columns: partition c of column i is channel
    // n0 + 128 i + c.
    auto load_cols = [&](Tile& t, const char* name, const kernel::Tensor& src, int64_t n0,
                         int64_t groups) {
      t = vec_buf(name, {parts, nb / parts});
      kb.dma_copy(t(all, {0, groups}), src.pattern(n0, {{parts, 1}, {groups, parts}}));
    };
    // [channels, groups, tokens] of a [T, N] tensor from column n0: y^T's HBM side.
    auto transposed = [&](const kernel::Tensor& t, int64_t n0, int64_t groups) {
      return t.pattern(t0 * N + n0, {{parts, 1}, {groups, parts}, {p, N}});
    };
    for (int64_t n0 = 0; n0 < N; n0 += nb, ++vec_no) {
      const int64_t groups = std::min(nb, N - n0) / parts;
      if (s.bias) {
        load_cols(b_t, "bias", b, n0, groups);
        if (glu) load_cols(bu_t, "bias_up", b_up, n0, groups);
      }
      if (s.weight_scale) {
        load_cols(s_t, "w_scale", ws, n0, groups);
        if (glu) load_cols(su_t, "w_up_scale", ws_up, n0, groups);
      }
      const size_t ab = static_cast<size_t>(plan.chunks == 1 ? acc_no++ % 2 : 0);
      auto group_acc = [&](const std::vector<std::vector<Tile>>& set, int64_t i) {
        return set[ab][static_cast<size_t>(i / groups_per_bank)](
            all, {i % groups_per_bank * p, (i % groups_per_bank + 1) * p});
      };
      for (int64_t k0 = 0; k0 < kt; k0 += kc) {
        const int64_t k1 = std::min(kt, k0 + kc);
        const bool pre = wblock_no < ahead;
        const size_t wb = static_cast<size_t>(wblock_no++ % kWeightBuffers);
        if (!pre) load_w(w_bufs[wb], w, k0, k1, n0, groups * parts);
        if (glu && !pre) load_w(wu_bufs[wb], w_up, k0, k1, n0, groups * parts);
        for (int64_t i = 0; i < groups; ++i)
          for (int64_t k = k0; k < k1; ++k) {
            const Tile mov = xT(all, {0, p}, k);
            const kernel::MatmulOpts first{.start = k == 0};
            const Tile cols_i = w_bufs[wb](all, k - k0, {i * parts, (i + 1) * parts});
            kb.matmul(group_acc(acc, i), cols_i, mov, first);
            if (glu)
              kb.matmul(group_acc(acc_up, i),
                        wu_bufs[wb](all, k - k0, {i * parts, (i + 1) * parts}), mov, first);
          }
      }
      const size_t yb = static_cast<size_t>(y_no++ % 2);
      const Tile yt = y_bufs[yb](all, {0, groups}, {0, p});
      for (int64_t i = 0; i < groups; ++i) {
        auto column = [&](const Tile& t, float none) -> kernel::Scalar {
          if (!t.valid()) return none;
          return kernel::Scalar(t(all, {i, i + 1}));
        };
        const kernel::Scalar sc = column(s.weight_scale ? s_t : Tile{}, 1.0f);
        const kernel::Scalar bi = column(s.bias ? b_t : Tile{}, 0.0f);
        const Tile out = y_bufs[yb](all, i, {0, p});
        if (!glu) {
          kb.activation(out, group_acc(acc, i), act_func(s.act), sc, bi);
          continue;
        }
        const Tile g = gate(all, {0, p}), u = group_acc(acc_up, i);
        kb.activation(g, group_acc(acc, i), act_func(s.act), sc, bi);
        if (s.weight_scale || s.bias)
          kb.activation(u, u, isa::ActFunc::kCopy, column(s.weight_scale ? su_t : Tile{}, 1.0f),
                        column(s.bias ? bu_t : Tile{}, 0.0f));
        kb.tensor_tensor(out, g, u, AluOp::kMult);
      }
      if (s.residual_out) {
        const Tile rt = r_bufs[yb](all, {0, groups}, {0, p});
        kb.dma_copy(rt, transposed(r, n0, groups));
        kb.tensor_tensor(yt, yt, rt, AluOp::kAdd);
      }
      kb.dma_copy(transposed(y, n0, groups), yt);
    }
  };
  if (s.weights_first && !s.weights_prefetched) {
    // The first blocks in the order the loops below take them: token blocks, then column
    // blocks, then K chunks.
    const int64_t step = wst || plan.chunks != 1 ? kc : kt;
    for (int64_t t0 = 0; t0 < T && ahead < kWeightBuffers; t0 += tb)
      for (int64_t n0 = 0; n0 < N && ahead < kWeightBuffers; n0 += nb) {
        const int64_t nbn = wst ? std::min(nb, N - n0) / parts * parts : std::min(nb, N - n0);
        for (int64_t k0 = 0; k0 < kt && ahead < kWeightBuffers; k0 += step, ++ahead) {
          const int64_t k1 = std::min(kt, k0 + step);
          const size_t wb = static_cast<size_t>(ahead % kWeightBuffers);
          load_w(w_bufs[wb], w, k0, k1, n0, nbn);
          if (glu) load_w(wu_bufs[wb], w_up, k0, k1, n0, nbn);
        }
      }
  }
  for (int64_t t0 = 0, blk = 0; t0 < T; t0 += tb, ++blk) {
    const int64_t tbn = std::min(tb, T - t0);
    Tile xT = cols ? xc : xT_bufs[static_cast<size_t>(blk % 2)];
    if (cols) {
      // Partition p takes features [p kt, (p + 1) kt) of every token: runs of kt elements.
      auto by_cols = [&](const kernel::Tensor& t) {
        return t.pattern(0, {{parts, kt}, {T, K}, {kt, 1}});
      };
      kb.dma_copy(xc, by_cols(x));
      if (s.residual_in) {
        kb.dma_copy(dc, by_cols(delta));
        kb.tensor_tensor(xc, xc, dc, AluOp::kAdd);
        kb.dma_copy(by_cols(h), xc);
      }
      if (s.norm != Norm::kNone) {
        normalize_columns(kb, s.norm, s.eps, xn, xc, cn);
        xT = xn;
      }
    }
    // Row layout: x^T of the block: load, (add, store h), (normalise), transpose.
    for (int64_t m0 = 0; m0 < (cols ? 0 : tbn); m0 += parts, ++tile_no) {
      const int64_t p = std::min(parts, tbn - m0);
      const size_t buf = static_cast<size_t>(tile_no % 2);
      const Tile xt = x_bufs[buf]({0, p});
      kb.dma_copy(xt, x({t0 + m0, t0 + m0 + p}));
      if (s.residual_in) {
        const Tile dt_t = d_bufs[buf]({0, p});
        kb.dma_copy(dt_t, delta({t0 + m0, t0 + m0 + p}));
        kb.tensor_tensor(xt, xt, dt_t, AluOp::kAdd);
        kb.dma_copy(h({t0 + m0, t0 + m0 + p}), xt);
      }
      Tile src = xt;
      if (s.norm != Norm::kNone) {
        src = xn_bufs[buf]({0, p});
        normalize_rows(kb, s.norm, s.eps, src, xt, np, scratch[buf], p);
      }
      for (int64_t k = 0; k < kt;) {
        const int64_t kr = std::min(parts, K - k * parts);
        // A group of full K tiles shares one PSUM tile and one copy; a short last tile is alone.
        int64_t nk = 1;
        while (kr == parts && nk < per_bank && k + nk < kt && K - (k + nk) * parts >= parts) ++nk;
        const Tile& tp = tp_bufs[static_cast<size_t>(tp_no++ % 2)];
        for (int64_t j = 0; j < nk; ++j)
          kb.transpose(tp({0, kr}, j, {0, p}), src(all, {(k + j) * parts, (k + j) * parts + kr}));
        kb.tensor_copy(xT({0, kr}, {k, k + nk}, {m0, m0 + p}), tp({0, kr}, {0, nk}, {0, p}));
        k += nk;
      }
    }
    if (wst) {
      weight_stationary_blocks(xT, tbn, t0);
      continue;
    }
    for (int64_t n0 = 0; n0 < N; n0 += nb, ++vec_no) {
      const int64_t nbn = std::min(nb, N - n0);
      // Rows broadcast to the partitions of a token tile, at most `rows` (a decode step's few
      // tokens read a row a few times, not 128), and reloaded per block: a bias of the whole
      // width would hold N fp32 per partition.
      const int64_t rows = std::min(parts, T);
      auto load_row = [&](Tile& t, const char* name, const kernel::Tensor& src) {
        t = vec_buf(name, {parts, nb});
        kb.dma_copy(t({0, rows}, {0, nbn}), src({n0, n0 + nbn}).broadcast(0, rows));
      };
      if (s.bias) {
        load_row(b_t, "bias", b);
        if (glu) load_row(bu_t, "bias_up", b_up);
      }
      if (s.weight_scale) {
        load_row(s_t, "w_scale", ws);
        if (glu) load_row(su_t, "w_up_scale", ws_up);
      }
      // The first kWeightBuffers blocks' loads are the graph's when they were prefetched.
      const bool preloaded = wblock_no < ahead;
      if (plan.chunks == 1) {
        const size_t wb = static_cast<size_t>(wblock_no++ % kWeightBuffers);
        if (!preloaded) load_w(w_bufs[wb], w, 0, kt, n0, nbn);
        if (glu && !preloaded) load_w(wu_bufs[wb], w_up, 0, kt, n0, nbn);
        for (int64_t m0 = 0; m0 < tbn; m0 += parts) {
          const int64_t p = std::min(parts, tbn - m0);
          const size_t ab = static_cast<size_t>(acc_no++ % 2);
          matmuls(xT, ab, wb, m0, p, 0, kt, nbn);
          epilogue(ab, ab, t0, m0, p, n0, nbn);
        }
        continue;
      }
      for (int64_t k0 = 0; k0 < kt; k0 += kc) {
        const int64_t k1 = std::min(kt, k0 + kc);
        const bool pre = wblock_no < ahead;
        const size_t wb = static_cast<size_t>(wblock_no++ % kWeightBuffers);
        if (!pre) load_w(w_bufs[wb], w, k0, k1, n0, nbn);
        if (glu && !pre) load_w(wu_bufs[wb], w_up, k0, k1, n0, nbn);
        for (int64_t m0 = 0, mi = 0; m0 < tbn; m0 += parts, ++mi)
          matmuls(xT, static_cast<size_t>(mi), wb, m0, std::min(parts, tbn - m0), k0, k1, nbn);
      }
      for (int64_t m0 = 0, mi = 0; m0 < tbn; m0 += parts, ++mi)
        epilogue(static_cast<size_t>(mi), static_cast<size_t>(y_no++ % 2), t0, m0,
                 std::min(parts, tbn - m0), n0, nbn);
    }
  }
}

isa::Program linear(const arch::ChipSpec& chip, const LinearSpec& s) {
  kernel::KernelBuilder kb(chip);
  emit_linear(kb, chip, s);
  return kb.build();
}

}  // namespace trnsim::ops
