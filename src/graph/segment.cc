#include "graph/segment.h"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "base/error.h"
#include "kernel/builder.h"
#include "ops/ops.h"

namespace trnsim::graph {

namespace {

// A kernel tensor that holds a node's output: all of it, or columns [c0, c1) of it (a
// horizontally fused linear's outputs share its y).
struct OutRef {
  std::string tensor;
  int64_t c0 = 0, c1 = -1;  // c1 < 0: every column
};

// The kernel tensors that hold each of a node's outputs, in order (as ValueRunner reads them).
std::vector<OutRef> output_refs(const Node& n, const Kernel& k) {
  std::vector<OutRef> refs;
  size_t next = 0;
  if ((k.kind == KernelKind::kLinear || k.kind == KernelKind::kNorm) && n.residual_in &&
      n.outputs.size() > 1) {
    refs.push_back({"h"});
    next = 1;
  }
  if (k.kind == KernelKind::kAttention) {
    refs.push_back({"out"});  // a training forward's saved statistics are not bound
    return refs;
  }
  const size_t outs = n.outputs.size() - next;
  if (outs == 1 || n.splits.size() != outs) {
    refs.push_back({"y"});
    return refs;
  }
  int64_t c = 0;
  for (size_t o = 0; o < outs; ++o) {
    refs.push_back({"y", c, c + n.splits[o]});
    c += n.splits[o];
  }
  return refs;
}

// The kernel's input tensors that read activations, by the node input they are.
std::vector<std::pair<std::string, size_t>> input_names(const Node& n, const Kernel& k) {
  std::vector<std::pair<std::string, size_t>> in;
  const size_t count = n.inputs.size();
  auto add = [&](const char* name, size_t i) {
    if (i < count) in.emplace_back(name, i);
  };
  switch (k.kind) {
    case KernelKind::kLinear:
      add("x", 0);
      if (n.residual_in) add("delta", 1);
      if (n.residual_out && count > 0) add("r", count - 1);
      break;
    case KernelKind::kNorm:
      add("x", 0);
      if (n.residual_in) add("delta", 1);
      break;
    case KernelKind::kAttention:
      add("q", 0);
      add("k", 1);
      add("v", 2);
      break;
    case KernelKind::kElementwise:
      add("a", 0);
      add("b", 1);
      break;
    default:
      break;
  }
  return in;
}

// One input of kernel `to` that kernel `from` of the segment wrote.
struct Feed {
  size_t to = 0;
  std::string name;
  size_t from = 0;
  OutRef out;
};

std::vector<Feed> feeds(const std::vector<SegmentItem>& items) {
  std::map<int, std::pair<size_t, OutRef>> written;  // value -> its kernel and tensor
  std::vector<Feed> out;
  for (size_t i = 0; i < items.size(); ++i) {
    const Node& n = *items[i].node;
    for (const auto& [name, idx] : input_names(n, items[i].kernel))
      if (auto it = written.find(n.inputs[idx]); it != written.end())
        out.push_back({i, name, it->second.first, it->second.second});
    const std::vector<OutRef> refs = output_refs(n, items[i].kernel);
    for (size_t o = 0; o < refs.size() && o < n.outputs.size(); ++o)
      written[n.outputs[o]] = {i, refs[o]};
  }
  return out;
}

void emit(kernel::KernelBuilder& kb, const arch::ChipSpec& chip, const Kernel& k) {
  switch (k.kind) {
    case KernelKind::kLinear:
      return ops::emit_linear(kb, chip, k.linear);
    case KernelKind::kAttention:
      return ops::emit_attention(kb, chip, k.attention);
    case KernelKind::kNorm:
      return ops::emit_norm(kb, chip, k.norm);
    case KernelKind::kEmbedding:
      return ops::emit_embedding(kb, chip, k.embedding);
    case KernelKind::kElementwise:
      return ops::emit_elementwise(kb, chip, k.elementwise);
    default:
      throw InternalError(fmt::format("a {} kernel in a segment", k.kind_name()));
  }
}

}  // namespace

bool segmentable(KernelKind k) {
  return k == KernelKind::kLinear || k == KernelKind::kAttention || k == KernelKind::kNorm ||
         k == KernelKind::kEmbedding || k == KernelKind::kElementwise;
}

std::string segment_key(const std::vector<SegmentItem>& items) {
  std::string key;
  for (const SegmentItem& it : items) {
    const ops::LinearTiling& t = it.kernel.linear.tiling;
    key += it.kernel.key();
    if (it.kernel.kind == KernelKind::kLinear)
      key += fmt::format(" tiling={}x{}{}{}", t.token_block, t.out_block, t.columns ? " cols" : "",
                         t.weight_stationary ? " wst" : "");
    key += " ;; ";
  }
  for (const Feed& f : feeds(items))
    key +=
        fmt::format("{}.{}<-{}.{}[{}:{}] ", f.to, f.name, f.from, f.out.tensor, f.out.c0, f.out.c1);
  return key;
}

isa::Program build_segment(const arch::ChipSpec& chip, const std::vector<SegmentItem>& items) {
  const std::vector<Feed> fs = feeds(items);
  kernel::KernelBuilder kb(chip);
  // Each kernel's tensors by name, once emitted, for the kernels after it.
  std::vector<std::map<std::string, kernel::View>> tensors(items.size());
  size_t next_feed = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    std::map<std::string, kernel::View> bound;
    for (; next_feed < fs.size() && fs[next_feed].to == i; ++next_feed) {
      const Feed& f = fs[next_feed];
      const auto& from = tensors[f.from];
      auto it = from.find(f.out.tensor);
      if (it == from.end())
        throw InternalError(
            fmt::format("segment: kernel {} kept no tensor '{}'", f.from, f.out.tensor));
      kernel::View v = it->second;
      if (f.out.c1 >= 0) v = v(kernel::all, {f.out.c0, f.out.c1});
      bound.emplace(f.name, std::move(v));
    }
    kb.begin_kernel(fmt::format("k{}_", i), std::move(bound));
    Kernel k = items[i].kernel;
    // After the first kernel, a linear's x waits for an earlier kernel's stores: its first
    // weight blocks are issued ahead of that load, under the kernels before it.
    k.linear.weights_first = i > 0;
    emit(kb, chip, k);
    for (const OutRef& r : output_refs(*items[i].node, items[i].kernel)) {
      const kernel::View* t = kb.kernel_tensor(r.tensor);
      // A node whose outputs are not this kernel's alone (a MoE block's router): timed apart.
      if (t == nullptr)
        throw InputError("segment", r.tensor,
                         fmt::format("kernel {} ({}) writes no tensor '{}'", i,
                                     items[i].kernel.describe(), r.tensor));
      tensors[i].emplace(r.tensor, *t);
    }
  }
  return kb.build();
}

}  // namespace trnsim::graph
