// Lowering: each node of a fused graph (fusion.h) to one kernel of the ops library (or a
// collective), described by its spec; the spec's key names the kernel for the timing cache
// (kernel_cache.h), so the layers of a model that compile to the same kernel are simulated
// once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/chip_spec.h"
#include "graph/graph.h"
#include "isa/program.h"
#include "ops/ops.h"
#include "ops/train_ops.h"

namespace trnsim::graph {

enum class KernelKind : uint8_t {
  kLinear,
  kAttention,
  kNorm,
  kEmbedding,
  kElementwise,
  kRouter,
  kAllReduce,
  kAllGather,      // sequence parallelism (graph.h)
  kReduceScatter,  // sequence parallelism
  // Training (ops/train_ops.h; lower_train.cc).
  kLinearGradInput,
  kLinearGradWeight,
  kAttentionGrad,
  kNormGrad,
  kActGrad,
  kEmbeddingGrad,
  kCrossEntropy,
  kAdamW,
};
bool is_training_kernel(KernelKind k);
// All-reduce, all-gather, reduce-scatter: timed by the fabric layer, not a core program.
bool is_collective(KernelKind k);

struct Kernel {
  KernelKind kind = KernelKind::kLinear;
  ops::LinearSpec linear;
  ops::AttentionSpec attention;
  ops::NormSpec norm;
  ops::EmbeddingSpec embedding;
  ops::ElementwiseSpec elementwise;
  ops::RouterSpec router;
  ops::LinearGradInputSpec grad_input;
  ops::LinearGradWeightSpec grad_weight;
  ops::NormGradSpec norm_grad;
  ops::ActGradSpec act_grad;
  ops::EmbeddingGradSpec embedding_grad;
  ops::CrossEntropySpec cross_entropy;
  ops::AdamWSpec adamw;  // kAttentionGrad uses `attention`
  // Collectives: the whole tensor (an all-reduce's, the gathered one, the one reduced)
  int64_t collective_bytes = 0;
  num::Format collective_dtype = num::bf16();

  // Everything that makes two kernels the same program, tiling excluded (it is searched).
  std::string key() const;
  // "linear 8192x4096->6144 rmsnorm", for tables.
  std::string describe() const;
  std::string_view kind_name() const;
  // Useful floating-point operations (2 per multiply-accumulate; attention's causal half).
  double flops() const;
};

// Throws InputError naming the node for an operator no kernel runs on its own (a rope or
// head norm that did not fuse into an attention); a moe node, which takes several kernels, is
// an InternalError (lower_steps is for it).
Kernel lower(const Graph& g, const Node& n);

// A node as the kernels that run it: one for most; a MoE block is its router (a linear), the
// top-k (router kernel), the dispatch of each token's rows to its experts (a gather), each
// expert's GLU and down projection (`repeat` = experts), and the combine (a gather back, the
// routing weights, the sum over the top-k). Expert kernels assume balanced routing: each
// expert gets ceil(tokens x top_k / experts) tokens (docs/models.md).
struct Step {
  Kernel kernel;
  int64_t repeat = 1;
  std::string part;  // "" for a single-kernel node, else which piece ("router", ...)
};
std::vector<Step> lower_steps(const Graph& g, const Node& n);

// A MoE block's kernels (lower_moe.cc), forward and backward; lower_steps calls them.
std::vector<Step> moe_steps(const Graph& g, const Node& n);
std::vector<Step> moe_grad_steps(const Graph& g, const Node& n);
// A MoE node's token rows on one rank (T x top_k / expert_ranks, rounded up): what its
// kernels dispatch and what its backward keeps (backward.cc).
int64_t moe_rank_rows(const Graph& g, const Node& n);

// The kernel's program for one rank (not for collectives).
isa::Program build_program(const arch::ChipSpec& chip, const Kernel& k);

// The training kinds' parts of the above (lower_train.cc).
Kernel lower_training(const Graph& g, const Node& n);
std::string training_key(const Kernel& k);
std::string training_describe(const Kernel& k);
double training_flops(const Kernel& k);
isa::Program build_training_program(const arch::ChipSpec& chip, const Kernel& k);

}  // namespace trnsim::graph
