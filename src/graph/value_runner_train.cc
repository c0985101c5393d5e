// Values of the training nodes (backward.h): each node's ports name its kernel's tensors
// (ops/train_ops.h), so binding is by name; what is not one host tensor per port is joined
// or split here: a fused linear's weights and its dy's, dw and db per weight, the RoPE tables
// of an attention backward, AdamW's state (the master copy starts as the weight, the
// moments at zero).
#include <fmt/format.h>

#include "base/error.h"
#include "core/exec/functional_runner.h"
#include "graph/host_columns.h"
#include "graph/value_runner.h"

namespace trnsim::graph {

void ValueRunner::run_training(const Node& n, const Kernel& k) {
  const isa::Program prog = build_program(chip_, k);
  core::FunctionalRunner runner(chip_, prog);
  auto host = [&](int id) -> std::vector<float>& { return host_[static_cast<size_t>(id)]; };
  auto shape = [&](int id) -> const std::vector<int64_t>& {
    return g_.values[static_cast<size_t>(id)].shape;
  };
  const size_t ins = n.inputs.size();
  std::vector<const std::vector<float>*> ws;
  std::vector<int64_t> widths;
  for (size_t i = 0; i < ins; ++i) {
    const std::string& port = n.ports[i];
    if (port == "w") {  // a fused linear's weights, joined by columns
      ws.push_back(&host_.at(static_cast<size_t>(n.inputs[i])));
      widths.push_back(shape(n.inputs[i]).back());
      continue;
    }
    runner.write_tensor_f32(port, host_.at(static_cast<size_t>(n.inputs[i])));
  }
  if (!ws.empty())
    runner.write_tensor_f32("w",
                            ws.size() == 1 ? *ws[0] : concat_columns(ws, widths, k.grad_input.in));
  if (k.kind == KernelKind::kAttentionGrad && n.rope) {
    std::vector<float> c, s;
    rope_tables(n, c, s);
    runner.write_tensor_f32("cos", c);
    runner.write_tensor_f32("sin", s);
  }
  if (k.kind == KernelKind::kAdamW) {
    const int w = n.state[0];
    for (size_t j = 1; j < n.state.size(); ++j) {
      std::vector<float>& st = host(n.state[j]);
      if (st.empty())
        st = j == 1 ? host_.at(static_cast<size_t>(w))
                    : std::vector<float>(host_.at(static_cast<size_t>(w)).size());
      runner.write_tensor_f32(n.ports[ins + j], st);
    }
  }
  run_checked(runner, n, k);
  if (k.kind == KernelKind::kAdamW) {
    for (size_t j = 0; j < n.state.size(); ++j)
      host(n.state[j]) = runner.read_tensor_f32(n.ports[ins + j]);
    return;
  }
  if (k.kind == KernelKind::kLinearGradWeight) {  // dw (and db) per weight of the linear
    std::vector<int> dw, db;
    for (size_t o = 0; o < n.outputs.size(); ++o)
      (n.ports[ins + o] == "dw" ? dw : db).push_back(n.outputs[o]);
    std::vector<int64_t> cols;
    for (int d : dw) cols.push_back(shape(d).back());
    auto parts = split_columns(runner.read_tensor_f32("dw"), cols, k.grad_weight.in);
    for (size_t j = 0; j < dw.size(); ++j) host(dw[j]) = std::move(parts[j]);
    if (!db.empty()) {
      auto bparts = split_columns(runner.read_tensor_f32("db"), cols, 1);
      for (size_t j = 0; j < db.size(); ++j) host(db[j]) = std::move(bparts[j]);
    }
    return;
  }
  for (size_t o = 0; o < n.outputs.size(); ++o)
    host(n.outputs[o]) = runner.read_tensor_f32(n.ports[ins + o]);
}

}  // namespace trnsim::graph
