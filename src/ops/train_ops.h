// The training kernels of the op library: each forward op's backward, the loss and the
// optimizer step, written with the kernel API like the forward ops (ops.h: same layout,
// token-major [tokens, features] activations and [in, out] weights in HBM).
//
// Numerics of training (the mixed precision of Neuron Distributed and of PyTorch autocast):
// activations and their gradients in the model dtype (bf16); weight gradients fp32 (each a
// PSUM accumulation over the tokens, stored once); fp32 master weights and AdamW moments, the
// bf16 weight written from the master by stochastic rounding where the generation has it
// (chip_spec.h numerics.stochastic_rounding; round to nearest even elsewhere).
//
// Tensor names are each kernel's interface (the model runner binds them), listed per spec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/chip_spec.h"
#include "isa/program.h"
#include "numerics/format.h"
#include "ops/ops.h"

namespace trnsim::ops {

// dx[T, K] = sum_i dy_i @ w[:, cols_i]^T: the input gradient of a linear whose output was
// split into outputs of `splits` columns (horizontal fusion: q, k, v; gate, up), each output's
// gradient its own tensor.
// Tensors: dy0, dy1, ... [T, splits[i]] (dtype); w [K, N] (dtype, N = sum of splits, the
// forward's weight, plain row-major); dx [T, K] (dtype). With `accumulate`, dacc [T, K] is
// added to the fp32 result before it is rounded (a second gradient of the same input).
struct LinearGradInputSpec {
  int64_t tokens = 0, in = 0;   // T, K (elements)
  std::vector<int64_t> splits;  // column counts of the forward's outputs (one entry: no split)
  num::Format dtype = num::bf16();
  bool accumulate = false;
};
isa::Program linear_grad_input(const arch::ChipSpec& chip, const LinearGradInputSpec& s);

// dw[K, N] = x^T @ [dy0 | dy1 | ...] (fp32), and with `bias` db[N] = column sums of the dy's
// (fp32). Tokens are the contraction: x and dy tiles load with tokens on the partitions as
// they lie in HBM, no transposes.
// Tensors: x [T, K], dy0, dy1, ... [T, splits[i]] (dtype); dw [K, N] fp32; db [N] fp32 when
// bias.
struct LinearGradWeightSpec {
  int64_t tokens = 0, in = 0;
  std::vector<int64_t> splits;
  num::Format dtype = num::bf16();
  bool bias = false;
};
isa::Program linear_grad_weight(const arch::ChipSpec& chip, const LinearGradWeightSpec& s);

// Flash attention backward (FlashAttention-2's, as NKI's flash_attn_bwd): the forward's
// spec (AttentionSpec; no KV cache, no qk_norm: a per-head norm stays a norm node when
// training) and its saved softmax statistics. Per (sequence, q head): D = rowsum(dout * out);
// per key block and query tile: S = q k^T / sqrt(d) (+ causal mask), P = exp(S - lse),
// dv += P^T dout, dP = dout v^T, dS = P * (dP - D), dq += dS k / sqrt(d),
// dk += dS^T q / sqrt(d); dk, dv summed over the q heads of a kv group. With rope, q and k are
// rotated on load as in the forward, and dq, dk rotated back (the transpose of the rotation)
// before they are stored, so they are the gradients of the inputs q, k.
// Tensors: q [B*S, Hq*d], k, v [B*S, Hkv*d], out, dout [B*S, Hq*d] (dtype); lse [B*S, Hq]
// fp32 (the forward's, attention() with save_lse); cos, sin [S, d] fp32 when rope;
// dq [B*S, Hq*d], dk, dv [B*S, Hkv*d] (dtype).
// Eager (AttentionSpec::eager, attention_eager_backward.cc): autograd's backward of the three
// ops from the saved probabilities, each [S, S] gradient through HBM: dP = dout v^T,
// dv = P^T dout; dS = P * (dP - rowsum(P * dP)) (torch's softmax backward); dq = dS k /
// sqrt(d), dk = dS^T q / sqrt(d). Tensors: q, k, v, dout; probs [B*Hq*S, S] (dtype, the
// forward's with save_lse); cos, sin when rope; dq, dk, dv as above.
isa::Program attention_backward(const arch::ChipSpec& chip, const AttentionSpec& s);

// The backward of a norm (ops.h NormSpec; no residual_in: the residual's gradient is dres):
// with xh = (x - mean) * rstd (mean 0 for RMSNorm) recomputed from x in fp32, g = dy * gamma:
//   RMSNorm:   dx = rstd * (g - xh * mean(g * xh))
//   LayerNorm: dx = rstd * (g - mean(g) - xh * mean(g * xh))
// means over the F features of a token; dgamma = sum over tokens of dy * xh, dbeta = sum of
// dy (fp32, summed over the tokens by TensorE, accumulating in PSUM across the tiles).
// Tensors: x [T, F], dy [T, F] (dtype), gamma [F] fp32, dx [T, F] (dtype), dgamma [F] fp32
// (dbeta [F] fp32 for layer norm); with `residual`, dres [T, F] (dtype) is added to dx in
// fp32 before rounding (the gradient that reached x through the residual stream).
struct NormGradSpec {
  int64_t tokens = 0, features = 0;
  num::Format dtype = num::bf16();
  Norm norm = Norm::kRms;
  double eps = 1e-5;
  bool residual = false;
};
isa::Program norm_backward(const arch::ChipSpec& chip, const NormGradSpec& s);

// The backward of an activation, elementwise over [T, F] (fp32 inside, results rounded):
//   not a GLU: dx = dy * act'(x)                       tensors x, dy -> dx
//   a GLU (y = act(gate) * up): dgate = dy * up * act'(gate), dup = dy * act(gate)
//                                                       tensors gate, up, dy -> dgate, dup
// act' from ScalarE's derivative functions where it has one (silu_dx, gelu_dx), else composed
// (relu: x > 0; gelu tanh: from its closed form).
struct ActGradSpec {
  int64_t tokens = 0, features = 0;
  num::Format dtype = num::bf16();
  Act act = Act::kSilu;
};
isa::Program act_backward(const arch::ChipSpec& chip, const ActGradSpec& s);

// The backward of an embedding lookup: dtable[v] = sum of dy[t] over the tokens t with
// ids[t] = v (fp32). dtable is zeroed, then per 128-token tile: the tile's rows with equal ids
// summed (an equality matrix of the ids times dy on TensorE, so every duplicate carries the
// whole sum), the table rows gathered, the sums added, the rows scattered back; tiles in
// order (each gather after the previous scatter).
// Tensors: ids [T] int32, dy [T, H] (dtype), dtable [V, H] fp32.
struct EmbeddingGradSpec {
  int64_t tokens = 0, vocab = 0, hidden = 0;
  num::Format dtype = num::bf16();
};
isa::Program embedding_backward(const arch::ChipSpec& chip, const EmbeddingGradSpec& s);

// Softmax cross-entropy of logits [T, V] against labels, forward and backward in one pass
// pair per 128-token tile: an online max and sum of exp over column chunks (lse), the label's
// logit picked by an iota compare; loss[t] = lse - logit[label]; then
// dlogits = (softmax - onehot(label)) * scale (scale = 1 / the tokens of the batch: the mean).
// A label outside 0..V-1 (-100, PyTorch's ignore_index) has loss 0 and a zero gradient row.
// Tensors: logits [T, V] (dtype), labels [T] int32, loss [T] fp32, dlogits [T, V] (dtype).
struct CrossEntropySpec {
  int64_t tokens = 0, vocab = 0;
  num::Format dtype = num::bf16();
  double scale = 1.0;
};
isa::Program cross_entropy(const arch::ChipSpec& chip, const CrossEntropySpec& s);

// One AdamW step (PyTorch's torch.optim.AdamW, decoupled weight decay) over a weight of n
// elements, laid out [128, n / 128] (n padded by the caller's view: any n, the tail a partial
// column block), in column blocks streamed through SBUF:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   master = master * (1 - lr wd) - lr * (m / (1 - b1^step)) / (sqrt(v / (1 - b2^step)) + eps)
//   w = round(master) to dtype (stochastic rounding when the chip has it)
// Tensors: grad [n] fp32; master, m, v [n] fp32 (inout); w [n] (dtype, out).
struct AdamWSpec {
  int64_t elements = 0;
  num::Format dtype = num::bf16();
  double lr = 1e-4, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  int64_t step = 1;                 // 1-based, for the bias corrections
  bool stochastic_rounding = true;  // when the chip has it
  uint64_t seed = 0;                // of the rounding's random bits
};
isa::Program adamw(const arch::ChipSpec& chip, const AdamWSpec& s);

}  // namespace trnsim::ops
