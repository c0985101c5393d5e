// The kernel library the model compiler lowers to (src/graph): each op is a kernel written
// with the kernel API (src/kernel/builder.h) for one tensor-parallel shard, parameterised by
// shapes, dtype, the fusions the compiler chose (a norm before a matmul, a residual add, an
// activation or GLU epilogue, RoPE and q/k norms inside attention) and a tiling.
//
// Layout. Activations live in HBM token-major, [tokens, features] row-major, as PyTorch holds
// them; weights as [in, out] (x @ w, the transpose of torch's nn.Linear.weight). A matmul puts
// tokens on the PSUM partitions: the stationary operand is x transposed (TensorE transposes of
// 128 x 128 blocks, as the Neuron compiler inserts them), the moving one a block of w, so the
// result comes out token-major without a second transpose.
//
// Numerics: bf16 (or the spec's dtype) in HBM, fp32 in PSUM and for norm statistics; a result
// is rounded to the HBM dtype once, when it leaves the kernel (round to nearest even), except
// that a residual_out add is done on the rounded result and rounded again, as PyTorch's bf16
// `x + linear(y)` does.
//
// Tensor names are each kernel's interface (the model runner writes and reads them by name);
// they are listed with each spec below.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/chip_spec.h"
#include "isa/program.h"
#include "numerics/format.h"

namespace trnsim::kernel {
class KernelBuilder;
}  // namespace trnsim::kernel

namespace trnsim::ops {

enum class Norm : uint8_t { kNone, kRms, kLayer };
// What a linear does to its fp32 result before rounding it: nothing, an activation, or a
// gated linear unit act(x @ w_gate) * (x @ w_up) (SwiGLU, GeGLU).
enum class Act : uint8_t { kNone, kSilu, kGelu, kGeluTanh, kRelu, kGluSilu, kGluGelu };
bool is_glu(Act a);
std::string_view name(Norm n);
std::string_view name(Act a);

// A tiling of a linear: tokens per block (x^T of a block stays in SBUF while every block of
// w streams past it; w is read T / token_block times) and output columns per block (one PSUM
// bank = 512 fp32 columns per bank used).
struct LinearTiling {
  int64_t token_block = 512;
  int64_t out_block = 512;
  // x^T loaded token by token across the partitions (partition p holding features
  // [p K / 128, (p + 1) K / 128) of each token, the weights' rows laid out to match), and the
  // norm and residual worked in that layout: no TensorE transposes, and K / 128 elements per
  // partition per token instead of K on one partition. For a few tokens (decode steps); needs
  // K a multiple of 128 and at most 128 tokens.
  bool columns = false;
  // With the column layout: each 128 x 128 block of w is the stationary operand and the few
  // tokens' x^T the moving one, so the result comes out transposed (y^T, output channels on the
  // partitions) and TensorE takes a weight block in max(64, tokens) cycles instead of 128 rows
  // x 512 columns in 512 (HARDWARE.md s8.1): twice the weights per cycle for a decode step,
  // which a 1-byte weight stream needs. Bias and scales are then per partition, folded into the
  // ScalarE evacuation; y^T is stored through a transposing pattern. Needs N a multiple of 128.
  bool weight_stationary = false;
  bool operator==(const LinearTiling&) const = default;
};

// y[T, N] = epilogue(norm(x (+ delta)) @ w (+ b)) (+ r)
// Tensors: x [T, K]; delta [T, K] and h [T, K] (out: x + delta) when residual_in; gamma [K]
// (and beta [K] for layer norm) fp32 when norm; w [K, N], or w_gate and w_up [K, N] for a
// GLU; b [N] fp32 (b_gate, b_up for a GLU) when bias; r [T, N] when residual_out; y [T, N];
// w_scale [N] fp32 (w_gate_scale, w_up_scale for a GLU) when weight_scale.
struct LinearSpec {
  int64_t tokens = 0, in = 0, out = 0;  // T, K, N (elements)
  num::Format dtype = num::bf16();      // x, delta, h, w, r, y
  Norm norm = Norm::kNone;
  double eps = 1e-5;
  bool residual_in = false;
  bool bias = false;
  Act act = Act::kNone;
  bool residual_out = false;
  // w (w_gate, w_up) stored as pack_linear_weights lays it out: each block the kernel loads
  // is one contiguous run of HBM, partition by partition, so the loads stream at the DMA
  // engines' block rate instead of gathering 1-2 KiB rows. Weights are static: the model
  // compiler lays them out once, as the Neuron compiler lays out a compiled model's weights.
  bool packed_weights = false;
  // Timing only: the first weight blocks (as many as the kernel's weight buffers hold) are
  // already in SBUF, loaded by the graph while earlier kernels ran, so the kernel does not load
  // them (their buffers' contents are whatever SBUF held: not for values).
  bool weights_prefetched = false;
  // The first weight blocks' loads (as many as the weight buffers hold) are issued before x's,
  // as one compiled graph's schedule issues them (graph/segment.h: there x is an earlier
  // kernel's output, and its load waits for that kernel's stores, which would hold the weight
  // stream behind it); false: in the loop, as the kernel alone is written.
  bool weights_first = false;
  // Weight-only quantization (NxD Inference's quantized linears, neuronx-distributed
  // QuantizedColumnParallel / QuantizedRowParallel): w (w_gate, w_up) is held in HBM in this
  // 1-byte format (int8 or an FP8), unset: in dtype. A format TensorE takes (the generation's
  // numerics.tensor_fp8_formats) is loaded as it is and multiplied against x^T in dtype; any
  // other (int8) is cast to dtype by the DMA that loads it (HARDWARE.md s4, DMA casting: one
  // byte an element read from HBM, dtype's size written to SBUF).
  std::optional<num::Format> weight_dtype;
  // Per-output-channel scales (w_scale): the fp32 accumulator is multiplied by them before the
  // bias and the activation, as NxD dequantizes after the matmul (scale_dequantize).
  bool weight_scale = false;
  LinearTiling tiling;
};
// The format w (w_gate, w_up) has in SBUF, the one TensorE reads: the weight format when the
// generation's TensorE takes it, else dtype (the DMA casts).
num::Format linear_sbuf_weight_format(const arch::ChipSpec& chip, const LinearSpec& s);
isa::Program linear(const arch::ChipSpec& chip, const LinearSpec& s);
// Legal tilings of `s` on `chip` (their PSUM banks fit): first those whose tiles fit a
// partition of SBUF by linear_sbuf_bytes, smallest first, then the others (which may fit once
// placed, or spill, which the kernel then pays for). Never empty.
std::vector<LinearTiling> linear_tilings(const arch::ChipSpec& chip, const LinearSpec& s);
// SBUF bytes per partition the tiles of `s` need (the estimate linear_tilings filters by).
int64_t linear_sbuf_bytes(const arch::ChipSpec& chip, const LinearSpec& s);
// A [K, N] row-major weight in the packed layout of `s` (its tiling): for each block of
// out_block columns, for each chunk of K tiles the kernel loads together, partition p's rows
// (p, 128 + p, ...) of the chunk one after another; K padded with zeros to whole 128-row tiles.
// [ceil(K / 128) * 128 * N] elements.
std::vector<float> pack_linear_weights(const arch::ChipSpec& chip, const LinearSpec& s,
                                       const std::vector<float>& w);

// Self-attention of `batch` sequences, flash style (online softmax over key blocks of 512):
// out = softmax(q k^T / sqrt(d) + mask) v per head, GQA (q head h reads kv head
// h / (q_heads / kv_heads)), optional RMSNorm of each q and k head over d (qk_norm, Qwen3) and
// rotary embedding (rope, rotate-half convention of Hugging Face Llama) applied on load.
// Tensors: q [B*S, Hq*d], k and v [B*S, Hkv*d], out [B*S, Hq*d]; cos and sin [S, d] fp32 when
// rope; q_gamma and k_gamma [d] fp32 when qk_norm.
//
// With a KV cache (kv_cache, decode and chunked prefill): the queries are the last `seq` of
// kv_seq positions; k_cache and v_cache [B*kv_seq, Hkv*d] hold the earlier positions' keys
// (already normed and rotated) and values, the new tokens' k and v ([B*seq, Hkv*d]) are
// prepared, written into the cache's last `seq` rows and attended to with the rest.
struct AttentionSpec {
  int64_t batch = 1, seq = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  num::Format dtype = num::bf16();
  bool causal = true;
  bool rope = false;
  bool qk_norm = false;
  double eps = 1e-6;
  bool kv_cache = false;
  int64_t kv_seq = 0;  // positions attended to with a cache (>= seq); 0: seq
  // A quantized KV cache (vLLM Neuron's kv_cache_dtype "fp8"): k_cache and v_cache hold an
  // 8-bit float format, x * scale clamped to the format's largest finite value and rounded
  // (the scales are the reciprocals of a checkpoint's k_scale / v_scale, as vLLM Neuron loads
  // them). The new tokens' k and v are quantized the same way before they are attended to, so
  // every key and value is in the scaled domain: 1 / k_scale folds into the softmax scale and
  // 1 / v_scale into the output. k_cache is then kept transposed, [B*Hkv*d, kv_seq] (row
  // (b, g, i): dimension i of kv head g at every position; NxD Inference's
  // k_cache_transposed), v_cache as above. Unset: the cache holds `dtype`.
  std::optional<num::Format> cache_dtype;
  double k_scale = 1.0, v_scale = 1.0;
  // Training: also write what the backward (train_ops.h) reads: flash, lse [B*S, Hq] fp32,
  // each query row's log-sum-exp of its scaled, masked scores (m + ln l), which it recomputes
  // P from; eager, probs [B*Hq*S, S] (dtype), the probabilities themselves.
  bool save_lse = false;
  // Eager attention (attention_eager.h): the scores q k^T / sqrt(d), their softmax and the
  // product with v as three ops with the [S, S] scores and probabilities of every head in HBM,
  // as Megatron-LM's CoreAttention (baddbmm, softmax, bmm) and Hugging Face's "eager"
  // attention compute it, masked blocks included; the backward is autograd's of those ops
  // from the saved probabilities. No KV cache.
  bool eager = false;
};
isa::Program attention(const arch::ChipSpec& chip, const AttentionSpec& s);

// y = norm(x (+ delta)) per token over F features (fp32 statistics).
// Tensors: x [T, F], delta and h (out: x + delta) when residual_in, gamma [F] (beta [F]) fp32,
// y [T, F].
struct NormSpec {
  int64_t tokens = 0, features = 0;
  num::Format dtype = num::bf16();
  Norm norm = Norm::kRms;
  double eps = 1e-5;
  bool residual_in = false;
};
isa::Program norm(const arch::ChipSpec& chip, const NormSpec& s);

// y[t] = table[ids[t]] (+ pos_table[pos_ids[t]]): rows gathered by DMA (software DGE).
// Tensors: ids [T] int32, table [V, H], pos_ids [T] int32 and pos_table [P, H] when positions,
// y [T, H].
struct EmbeddingSpec {
  int64_t tokens = 0, vocab = 0, hidden = 0, positions = 0;  // positions 0: none
  num::Format dtype = num::bf16();
};
isa::Program embedding(const arch::ChipSpec& chip, const EmbeddingSpec& s);

// Mixture-of-experts routing: per token, the top_k of `experts` router logits (VectorE max8 and
// find_index8, as NKI's MoE kernels find them) and their softmax (the normalised top-k
// probabilities of Mixtral, gpt-oss and Qwen3-MoE with norm_topk_prob; with `normalize` off,
// the softmax over all the experts at the top k, Qwen3-MoE's default).
// Tensors: logits [T, E]; weights [T, k] fp32, experts [T, k] uint32 (out).
struct RouterSpec {
  int64_t tokens = 0, experts = 0, top_k = 0;
  bool normalize = true;
  num::Format dtype = num::bf16();
};
isa::Program router(const arch::ChipSpec& chip, const RouterSpec& s);

// y = a + b, a * b, or act(a), elementwise over [T, F] (what no fusion absorbed).
// Tensors: a [T, F], b [T, F] for add and mul, y [T, F].
enum class Elementwise : uint8_t { kAdd, kMul, kAct };
struct ElementwiseSpec {
  int64_t tokens = 0, features = 0;
  num::Format dtype = num::bf16();
  Elementwise op = Elementwise::kAdd;
  Act act = Act::kNone;  // kAct: not a GLU
};
isa::Program elementwise(const arch::ChipSpec& chip, const ElementwiseSpec& s);

// The kernels above emitted into a builder that may already hold other kernels (a compiled
// graph's kernels timed as one program, graph/segment.h; KernelBuilder::begin_kernel names
// and binds their tensors); the functions above build each alone.
void emit_linear(kernel::KernelBuilder& kb, const arch::ChipSpec& chip, const LinearSpec& s);
void emit_attention(kernel::KernelBuilder& kb, const arch::ChipSpec& chip, const AttentionSpec& s);
void emit_norm(kernel::KernelBuilder& kb, const arch::ChipSpec& chip, const NormSpec& s);
void emit_embedding(kernel::KernelBuilder& kb, const arch::ChipSpec& chip, const EmbeddingSpec& s);
void emit_elementwise(kernel::KernelBuilder& kb, const arch::ChipSpec& chip,
                      const ElementwiseSpec& s);

}  // namespace trnsim::ops
