// Fuzz target: the model compiler's inputs. The first byte picks the surface, the rest is its
// text: even, a Hugging Face config.json (graph::parse_model_config, then a 2-layer graph of it
// built, fused and lowered at a few tokens, tp 1 and 2); odd, a front end's graph JSON
// (graph::graph_from_json, validate, fuse, lower). Small kernels are also built, so the ops
// library's argument checks are exercised. Every rejection must be an InputError.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "arch/arch.h"
#include "fuzz_util.h"
#include "graph/build.h"
#include "graph/fusion.h"
#include "graph/graph_json.h"
#include "graph/lower.h"
#include "graph/model_config.h"

namespace {

using namespace trnsim;

const arch::ChipSpec& chip() {
  static const arch::ChipSpec c = arch::load_chip("trn2");
  return c;
}

void compile(graph::Graph g) {
  g.validate();
  graph::fuse(g);
  for (const graph::Node& n : g.nodes)
    for (const graph::Step& s : graph::lower_steps(g, n)) {
      const graph::Kernel& k = s.kernel;
      (void)k.key();
      (void)k.describe();
      const bool small =
          (k.kind == graph::KernelKind::kLinear && k.linear.tokens <= 256 && k.linear.in <= 1024 &&
           k.linear.out <= 2048) ||
          (k.kind == graph::KernelKind::kAttention && k.attention.batch * k.attention.seq <= 256 &&
           k.attention.q_heads <= 8) ||
          (k.kind == graph::KernelKind::kNorm && k.norm.tokens <= 256 && k.norm.features <= 4096);
      if (small) (void)graph::build_program(chip(), k);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 16384) return -1;
  const std::string text(fuzz::as_text(data + 1, size - 1));
  if (data[0] % 2 == 0) {
    fuzz::expect_clean("model config", [&] {
      const graph::ModelConfig m = graph::parse_model_config(text, "config.json");
      (void)m.params();
      for (int tp : {1, 2}) {
        fuzz::expect_clean("model config", [&] {
          compile(graph::build_model_graph(
              m, {.batch = 1, .seq = 16, .tp = tp, .layers = std::min<int64_t>(m.layers, 2)}));
        });
      }
    });
  } else {
    fuzz::expect_clean("graph json", [&] { compile(graph::graph_from_json(text)); });
  }
  return 0;
}
