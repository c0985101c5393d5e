// Values of a model run (model_run.h with values): the graph's weights and inputs as host
// tensors (the caller's, checked against the graph's shapes, or random from the seed), each
// node's kernel run functionally in graph order on what it reads (weights packed as the
// kernel streams them), and the graph's outputs at the end. One rank.
#pragma once

#include <map>
#include <vector>

#include "arch/chip_spec.h"
#include "graph/graph.h"
#include "graph/kernel_cache.h"
#include "graph/lower.h"
#include "graph/model_run.h"

namespace trnsim::core {
class FunctionalRunner;
}  // namespace trnsim::core

namespace trnsim::graph {

class ValueRunner {
 public:
  // Fills the weights and inputs; generated ones are also written to res.weights. Throws
  // InputError for a missing or mis-sized weight or input.
  ValueRunner(const arch::ChipSpec& chip, const Graph& g, KernelCache& cache,
              const ModelRunOptions& o, const TensorMap* weights, const TensorMap* inputs,
              ModelResult& res);
  // Runs node `n` as kernel `k` (lower.h) on the host tensors; InputError when it faults.
  void run(const Node& n, const Kernel& k);
  // Runs a MoE block (value_runner_moe.cc): its lower_steps kernels with the routing its
  // router computes, each expert's kernels over the tokens routed to it.
  void run_moe(const Node& n);
  // The graph's outputs into res.outputs; of a training step also the weights' gradients
  // (res.gradients) and the updated weights (res.updated_weights).
  void finish();

 private:
  // A training node (backward.h): its ports bound to the host tensors (value_runner_train.cc).
  void run_training(const Node& n, const Kernel& k);
  void rope_tables(const Node& n, std::vector<float>& c, std::vector<float>& s) const;
  // Runs `runner` (node `n`'s kernel `k`); InputError naming the node when the kernel faults.
  static void run_checked(core::FunctionalRunner& runner, const Node& n, const Kernel& k);
  // One kernel of node `n` run on the given tensors; its named outputs. InputError naming the
  // node when it faults.
  using Bindings = std::vector<std::pair<const char*, const std::vector<float>*>>;
  std::map<std::string, std::vector<float>> exec(const Node& n, const Kernel& k, const Bindings& in,
                                                 const std::vector<const char*>& out);

  const arch::ChipSpec& chip_;
  const Graph& g_;
  KernelCache& cache_;
  ModelResult& res_;
  std::map<size_t, std::vector<float>> host_;
};

}  // namespace trnsim::graph
