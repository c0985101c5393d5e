#include "graph/model_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "base/counter_rng.h"
#include "base/error.h"
#include "chip/chip_run.h"
#include "core/exec/functional_runner.h"
#include "fabric/system.h"
#include "graph/build.h"
#include "graph/kernel_cache.h"
#include "graph/lower.h"
#include "numerics/convert.h"

namespace trnsim::graph {

namespace {

const Value& val(const Graph& g, int id) { return g.values[static_cast<size_t>(id)]; }

// The layer number folded out of a node name, so that the layers' copies share a row.
std::string row_name(const std::string& n) {
  // The first numbered path component: "layers.3.mlp" and "model.layers.3.mlp" alike.
  static const std::regex kLayer(R"(^((?:\w+\.)*?\w+)\.\d+\.)");
  return std::regex_replace(n, kLayer, "$1.*.", std::regex_constants::format_first_only);
}

// A single-server system of the chip's generation for the tensor-parallel all-reduces.
std::unique_ptr<fabric::SystemSpec> system_for(const arch::ChipSpec& chip) {
  std::unique_ptr<fabric::SystemSpec> best;
  for (const std::string& name : fabric::list_systems()) {
    fabric::SystemSpec s = fabric::load_system(name);
    if (s.chip_name != chip.meta.name) continue;
    if (!best || s.chips() < best->chips())
      best = std::make_unique<fabric::SystemSpec>(std::move(s));
  }
  return best;
}

// Largest sum of live activation bytes over the graph's order (a value lives from its
// producer to its last reader; model outputs to the end).
int64_t peak_activation_bytes(const Graph& g) {
  const size_t n = g.nodes.size();
  std::vector<int64_t> first(g.values.size(), -1), last(g.values.size(), -1);
  for (size_t i = 0; i < n; ++i) {
    for (int v : g.nodes[i].outputs)
      if (first[static_cast<size_t>(v)] < 0)
        first[static_cast<size_t>(v)] = static_cast<int64_t>(i);
    for (int v : g.nodes[i].inputs) last[static_cast<size_t>(v)] = static_cast<int64_t>(i);
  }
  std::vector<int64_t> delta(n + 1, 0);
  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& x = g.values[v];
    if (x.kind == ValueKind::kWeight || first[v] < 0) continue;
    const int64_t end =
        x.kind == ValueKind::kOutput ? static_cast<int64_t>(n) : std::max(first[v], last[v]);
    delta[static_cast<size_t>(first[v])] += x.bytes();
    delta[static_cast<size_t>(end) + (x.kind == ValueKind::kOutput ? 0 : 1)] -= x.bytes();
  }
  int64_t live = 0, peak = 0;
  for (size_t i = 0; i < n; ++i) peak = std::max(peak, live += delta[i]);
  return peak;
}

float round_to(const num::Format& f, double x) {
  return static_cast<float>(num::decode(f, num::encode(f, x, num::Rounding::kNearestEven, 0, {})));
}

// Deterministic weights when the caller gives none: linears uniform in +-1/sqrt(in) (torch's
// nn.Linear bound), embeddings in +-1, norm scales 1 +- 0.1, shifts and biases +- 0.1;
// rounded to the value's dtype.
std::vector<float> random_weight(const Value& w, uint64_t seed, uint64_t stream) {
  std::vector<float> out(static_cast<size_t>(w.elements()));
  const bool norm_scale = w.name.ends_with("norm.weight") || w.name.ends_with("LayerNorm.weight");
  double lo = -1, hi = 1;
  if (w.shape.size() == 2 && !w.name.starts_with("embed")) {
    hi = 1.0 / std::sqrt(static_cast<double>(w.shape[0]));
    lo = -hi;
  } else if (norm_scale) {
    lo = 0.9, hi = 1.1;
  } else if (w.shape.size() == 1) {
    lo = -0.1, hi = 0.1;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const double u = random_u32(seed, stream, i) / 4294967296.0;
    out[i] = round_to(w.dtype, lo + (hi - lo) * u);
  }
  return out;
}

// [K, N_i] row-major blocks side by side: [K, sum N_i].
std::vector<float> concat_columns(const std::vector<const std::vector<float>*>& parts,
                                  const std::vector<int64_t>& widths, int64_t rows) {
  int64_t total = 0;
  for (int64_t w : widths) total += w;
  std::vector<float> out(static_cast<size_t>(rows * total));
  int64_t c0 = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(parts[p]->begin() + r * widths[p], widths[p], out.begin() + r * total + c0);
    c0 += widths[p];
  }
  return out;
}

class ValueRunner {
 public:
  ValueRunner(const arch::ChipSpec& chip, const Graph& g, KernelCache& cache,
              const ModelRunOptions& o, const TensorMap* weights, const TensorMap* inputs,
              ModelResult& res)
      : chip_(chip), g_(g), cache_(cache), res_(res) {
    for (size_t v = 0; v < g.values.size(); ++v) {
      const Value& x = g.values[v];
      const size_t n = static_cast<size_t>(x.elements());
      if (x.kind == ValueKind::kWeight) {
        if (weights != nullptr) {
          auto it = weights->find(x.name);
          if (it == weights->end()) throw InputError("weights", x.name, "missing");
          if (it->second.size() != n)
            throw InputError("weights", x.name,
                             fmt::format("{} values; the model needs {} ({})", it->second.size(), n,
                                         fmt::join(x.shape, " x ")));
          host_[v] = it->second;
        } else {
          host_[v] = random_weight(x, o.seed, v);
          res_.weights[x.name] = host_[v];
        }
      } else if (x.kind == ValueKind::kInput) {
        if (inputs != nullptr && inputs->contains(x.name)) {
          const auto& in = inputs->at(x.name);
          if (in.size() != n)
            throw InputError("inputs", x.name,
                             fmt::format("{} values; the model needs {}", in.size(), n));
          host_[v] = in;
        } else if (x.name == "position_ids") {
          host_[v].resize(n);
          for (size_t i = 0; i < n; ++i)
            host_[v][i] = static_cast<float>(static_cast<int64_t>(i) % g.seq);
        } else if (x.dtype.kind == num::Kind::kFloat) {  // activations given by the caller
          host_[v].resize(n);
          for (size_t i = 0; i < n; ++i)
            host_[v][i] =
                round_to(x.dtype, random_u32(o.seed, (1u << 30) + v, i) / 2147483648.0 - 1.0);
        } else {  // token ids for the embedding that reads them
          int64_t vocab = 1;
          for (const Node& nd : g.nodes)
            if (nd.kind == OpKind::kEmbedding && !nd.inputs.empty() &&
                nd.inputs[0] == static_cast<int>(v))
              vocab = val(g, nd.weights[0]).shape[0];
          host_[v].resize(n);
          for (size_t i = 0; i < n; ++i)
            host_[v][i] =
                static_cast<float>(random_u32(o.seed, 1u << 30, i) % static_cast<uint64_t>(vocab));
          res_.weights[x.name] = host_[v];
        }
      }
    }
  }

  void run(const Node& n, const Kernel& k0) {
    Kernel k = k0;
    if (k.kind == KernelKind::kLinear) k.linear.tiling = cache_.tiling(k);
    const isa::Program prog = build_program(chip_, k);
    core::FunctionalRunner runner(chip_, prog);
    auto put = [&](const char* name, const std::vector<float>& v) {
      runner.write_tensor_f32(name, v);
    };
    auto in = [&](size_t i) -> const std::vector<float>& {
      return host_.at(static_cast<size_t>(n.inputs[i]));
    };
    auto w = [&](int id) -> const std::vector<float>& { return host_.at(static_cast<size_t>(id)); };
    switch (k.kind) {
      case KernelKind::kLinear: {
        put("x", in(0));
        if (n.residual_in) put("delta", in(1));
        if (!n.norm_weights.empty()) put("gamma", w(n.norm_weights[0]));
        if (n.norm_weights.size() > 1) put("beta", w(n.norm_weights[1]));
        // The kernel reads its weights in the packed layout (lower.cc): laid out here, as the
        // compiler lays out a compiled model's weights once.
        auto put_w = [&](const char* name, const std::vector<float>& v) {
          put(name, k.linear.packed_weights ? ops::pack_linear_weights(chip_, k.linear, v) : v);
        };
        if (ops::is_glu(n.act)) {
          put_w("w_gate", w(n.weights[0]));
          put_w("w_up", w(n.weights[1]));
          if (!n.biases.empty()) {
            put("b_gate", w(n.biases[0]));
            put("b_up", w(n.biases[1]));
          }
        } else {
          std::vector<const std::vector<float>*> parts, bparts;
          std::vector<int64_t> widths;
          for (int id : n.weights) {
            parts.push_back(&w(id));
            widths.push_back(val(g_, id).shape[1]);
          }
          put_w("w", parts.size() == 1 ? *parts[0] : concat_columns(parts, widths, k.linear.in));
          if (!n.biases.empty()) {
            for (int id : n.biases) bparts.push_back(&w(id));
            put("b", bparts.size() == 1 ? *bparts[0] : concat_columns(bparts, widths, 1));
          }
        }
        if (n.residual_out) put("r", in(n.inputs.size() - 1));
        break;
      }
      case KernelKind::kAttention: {
        put("q", in(0));
        put("k", in(1));
        put("v", in(2));
        if (n.rope) {
          std::vector<float> c, s;
          rope_tables(n, c, s);
          put("cos", c);
          put("sin", s);
        }
        if (n.qk_norm) {
          put("q_gamma", w(n.norm_weights[0]));
          put("k_gamma", w(n.norm_weights[1]));
        }
        break;
      }
      case KernelKind::kNorm:
        put("x", in(0));
        if (n.residual_in) put("delta", in(1));
        put("gamma", w(n.norm_weights[0]));
        if (n.norm_weights.size() > 1) put("beta", w(n.norm_weights[1]));
        break;
      case KernelKind::kEmbedding:
        put("ids", in(0));
        put("table", w(n.weights[0]));
        if (n.weights.size() > 1) {
          put("pos_ids", in(1));
          put("pos_table", w(n.weights[1]));
        }
        break;
      case KernelKind::kElementwise:
        put("a", in(0));
        if (n.inputs.size() > 1) put("b", in(1));
        break;
      case KernelKind::kAllReduce:
      case KernelKind::kRouter:
        throw InternalError("no values for an all-reduce or a MoE router (refused before the run)");
    }
    runner.run();
    if (!runner.faults().empty())
      throw InputError(n.name, std::string(k.kind_name()),
                       fmt::format("the kernel faulted: {}: {}", runner.faults()[0].instruction,
                                   runner.faults()[0].message));
    // Outputs.
    size_t next = 0;
    if ((k.kind == KernelKind::kLinear || k.kind == KernelKind::kNorm) && n.residual_in &&
        n.outputs.size() > 1)
      host_[static_cast<size_t>(n.outputs[next++])] = runner.read_tensor_f32("h");
    const char* yname = k.kind == KernelKind::kAttention ? "out" : "y";
    std::vector<float> y = runner.read_tensor_f32(yname);
    const size_t outs = n.outputs.size() - next;
    if (outs == 1) {
      host_[static_cast<size_t>(n.outputs[next])] = std::move(y);
    } else {  // a horizontally fused linear: columns back to each output
      const int64_t N = k.linear.out, T = k.linear.tokens;
      int64_t c0 = 0;
      for (size_t o = 0; o < outs; ++o) {
        const int64_t wdt = n.splits[o];
        std::vector<float> part(static_cast<size_t>(T * wdt));
        for (int64_t r = 0; r < T; ++r)
          std::copy_n(y.begin() + r * N + c0, wdt, part.begin() + r * wdt);
        host_[static_cast<size_t>(n.outputs[next + o])] = std::move(part);
        c0 += wdt;
      }
    }
  }

  void finish() {
    for (size_t v = 0; v < g_.values.size(); ++v)
      if (g_.values[v].kind == ValueKind::kOutput) res_.outputs[g_.values[v].name] = host_[v];
  }

 private:
  void rope_tables(const Node& n, std::vector<float>& c, std::vector<float>& s) const {
    const int64_t S = n.seq, d = n.head_dim, half = d / 2;
    c.resize(static_cast<size_t>(S * d));
    s.resize(c.size());
    for (int64_t p = 0; p < S; ++p)
      for (int64_t i = 0; i < half; ++i) {
        const double inv =
            std::pow(n.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
        const double a = static_cast<double>(static_cast<float>(p) * static_cast<float>(inv));
        const auto ci = static_cast<float>(std::cos(a)), si = static_cast<float>(std::sin(a));
        c[static_cast<size_t>(p * d + i)] = c[static_cast<size_t>(p * d + i + half)] = ci;
        s[static_cast<size_t>(p * d + i)] = s[static_cast<size_t>(p * d + i + half)] = si;
      }
  }

  const arch::ChipSpec& chip_;
  const Graph& g_;
  KernelCache& cache_;
  ModelResult& res_;
  std::map<size_t, std::vector<float>> host_;
};

}  // namespace

ModelResult run_graph(Graph g, const std::string& name, const ModelRunOptions& o,
                      const TensorMap* weights, const TensorMap* inputs) {
  std::unique_ptr<fabric::SystemSpec> sys;
  if (!o.system.empty()) sys = std::make_unique<fabric::SystemSpec>(fabric::load_system(o.system));
  const arch::ChipSpec chip =
      sys ? (o.overrides.empty() ? sys->chip : arch::load_chip(sys->chip_name, o.overrides))
          : arch::load_chip(o.chip, o.overrides);
  const int shards = g.tp;  // physical cores the graph's shapes are split over
  const int lnc = std::max(1, o.lnc);
  if (shards % lnc != 0)
    throw InputError("model", "lnc", fmt::format("{} cores do not form ranks of {}", shards, lnc));
  const int tp = shards / lnc;
  const int64_t cores = sys ? sys->chips() * chip.chip.cores : chip.chip.cores;
  if (shards > cores)
    throw InputError("model", "tp",
                     fmt::format("{} ranks of {} cores on {} cores ({})", tp, lnc, cores,
                                 sys ? sys->name : "one " + chip.meta.name + " chip"));
  if (o.values && tp != 1)
    throw InputError("model", "tp",
                     fmt::format("values run one rank (tp 1), not {}: a functional run holds one "
                                 "rank's tensors; ask for timing only, or tp 1",
                                 tp));
  ModelResult res;
  res.model = name;
  res.chip = chip.meta.name;
  res.tp = tp;
  res.batch = g.batch;
  res.seq = g.seq;
  g.validate();
  res.fusion = fuse(g, o.fuse);
  res.graph_text = g.dump();
  res.lnc = lnc;
  if (tp > 1 && !sys) sys = system_for(chip);
  if (tp > 1 && !sys)
    throw InputError(
        "model", "chip",
        fmt::format("no system in spec/systems has {} chips for the all-reduces", res.chip));
  if (!o.system.empty())
    res.system = sys->name;  // the one asked for (not the one picked for
                             // a chip's all-reduces)
  KernelCache cache(chip, tp, sys.get(), o.search_tilings, lnc, o.runtime);

  for (const Value& v : g.values)
    if (v.kind == ValueKind::kWeight)
      res.weight_bytes += v.bytes();
    else if (v.kind == ValueKind::kCache)
      res.cache_bytes += v.bytes();
  res.activation_bytes = peak_activation_bytes(g);
  res.hbm_capacity_bytes =
      static_cast<int64_t>(chip.chip.hbm.capacity_gib * 1073741824.0 / chip.chip.cores);
  if (o.values && !res.fits())
    throw InputError(
        "model", name,
        fmt::format(
            "{:.2f} GiB of weights and activations per rank do not fit the "
            "rank's {:.2f} GiB of HBM (short by {:.2f} GiB)",
            static_cast<double>(res.weight_bytes + res.activation_bytes) / 1073741824.0,
            static_cast<double>(res.hbm_capacity_bytes) / 1073741824.0,
            static_cast<double>(res.weight_bytes + res.activation_bytes - res.hbm_capacity_bytes) /
                1073741824.0));

  if (o.values)
    for (const Node& n : g.nodes)
      if (n.kind == OpKind::kMoe || n.kv_cache)
        throw InputError(
            n.name, "values",
            n.kind == OpKind::kMoe
                ? "the values of mixture-of-experts blocks are not computed yet (their "
                  "expert kernels are timed under balanced routing); ask for timing only"
                : "values through a KV cache are not computed yet; ask for timing only");
  std::unique_ptr<ValueRunner> values;
  if (o.values) values = std::make_unique<ValueRunner>(chip, g, cache, o, weights, inputs, res);
  std::map<std::string, size_t> row_of;
  Picoseconds total{0};
  int64_t layers_seen = -1;
  for (const Node& n : g.nodes) {
    layers_seen = std::max<int64_t>(layers_seen, n.repeat_of);
    for (const Step& st : lower_steps(g, n)) {
      const Kernel& k = st.kernel;
      const KernelTiming& t = cache.time(k);
      if (values) values->run(n, k);
      const std::string label = st.part.empty() ? n.name : n.name + "." + st.part;
      const Picoseconds dur(t.time.v * st.repeat);
      res.timeline.push_back({label, std::string(k.kind_name()), static_cast<double>(total.v) / 1e6,
                              static_cast<double>(dur.v) / 1e6});
      total += dur;
      res.kernels += static_cast<int>(st.repeat);
      const std::string rn = row_name(label);
      const std::string key = rn + "|" + k.key();
      auto it = row_of.find(key);
      if (it == row_of.end()) {
        OpRow r;
        r.name = rn;
        r.kind = std::string(k.kind_name());
        r.detail = k.describe();
        r.bound = t.bound;
        if (k.kind == KernelKind::kLinear)
          r.tiling = fmt::format("{}x{}", t.tiling.token_block, t.tiling.out_block);
        if (k.kind == KernelKind::kAllReduce) r.tiling = t.algorithm;
        r.fused = fmt::format("{}", fmt::join(n.fused, ", "));
        r.time_us = static_cast<double>(t.time.v) / 1e6;
        r.flops = k.flops();
        r.hbm_bytes = t.hbm_bytes;
        it = row_of.emplace(key, res.rows.size()).first;
        res.rows.push_back(r);
      }
      OpRow& r = res.rows[it->second];
      r.count += st.repeat;
      res.flops += k.flops() * static_cast<double>(shards * st.repeat);
      res.hbm_bytes += t.hbm_bytes * shards * st.repeat;
    }
  }
  if (values) values->finish();
  res.layers = layers_seen + 1;
  res.launch_us = chip.core.launch.overhead_ns.value_or(0.0) / 1e3;
  res.latency_us = static_cast<double>(total.v) / 1e6 + res.launch_us;
  const double peak = chip.chip.tflops.bf16 * 1e12 * shards / chip.chip.cores;
  res.mfu = res.latency_us > 0 ? res.flops / (res.latency_us * 1e-6 * peak) : 0;
  res.kernels_simulated = cache.distinct();
  res.simulations = cache.simulated();
  res.cache_hits = cache.hits();
  return res;
}

ModelResult run_model(const ModelConfig& m, const ModelRunOptions& o, const TensorMap* weights,
                      const TensorMap* inputs) {
  const int lnc = std::max(1, o.lnc);
  int tp = o.tp;
  if (tp == 0) {
    int64_t cores = 0;
    if (!o.system.empty()) {
      const fabric::SystemSpec sys = fabric::load_system(o.system);
      cores = sys.chips() * sys.chip.chip.cores;
    } else {
      cores = arch::load_chip(o.chip, o.overrides).chip.cores;
    }
    // Every core when the model's shapes split that many ways; else the largest count of
    // ranks the model splits into (4 heads on an 8-core Trn2: tp 4; 32 heads on 24: tp 16).
    tp = 1;
    if (!o.values)
      for (int64_t t = cores / lnc; t >= 1; --t) {
        const int64_t sh = t * lnc;
        const bool kv_ok = m.kv_heads % sh == 0 || sh % m.kv_heads == 0;
        const int64_t inter = m.moe() ? m.expert_intermediate : m.intermediate;
        if (m.heads % sh == 0 && kv_ok && inter % sh == 0) {
          tp = static_cast<int>(t);
          break;
        }
      }
  }
  BuildOptions b{.batch = o.batch,
                 .seq = o.seq,
                 .tp = tp * lnc,
                 .layers = o.layers,
                 .kv_cache = o.kv_cache,
                 .past = o.past};
  ModelResult r = run_graph(build_model_graph(m, b), m.name, o, weights, inputs);
  r.source = m.source;
  r.params = m.params();
  return r;
}

std::string ModelResult::table() const {
  std::string out =
      fmt::format("{} on {}{} (tp {}{}), batch {} x {} tokens, {} layers: forward\n", model,
                  system.empty() ? chip : system, system.empty() ? "" : fmt::format(" ({})", chip),
                  tp, lnc > 1 ? fmt::format(", LNC={}", lnc) : "", batch, seq, layers);
  out += fmt::format("{:<42} {:<11} {:>5} {:>11} {:>11} {:>6} {:>9}  {}\n", "op", "kernel", "count",
                     "each (us)", "total (us)", "share", "bound", "detail");
  double sum = 0;
  for (const OpRow& r : rows) sum += r.total_us();
  for (const OpRow& r : rows) {
    out += fmt::format("{:<42} {:<11} {:>5} {:>11.2f} {:>11.1f} {:>5.1f}% {:>9}  {}{}\n", r.name,
                       r.kind, r.count, r.time_us, r.total_us(),
                       sum > 0 ? 100 * r.total_us() / sum : 0, r.bound, r.detail,
                       r.tiling.empty() ? "" : fmt::format(" [{}]", r.tiling));
  }
  out += fmt::format(
      "latency {:.3f} ms (launch {:.1f} us); {:.3g} TFLOP, MFU {:.1f}% of bf16 peak; HBM "
      "traffic {:.2f} GB\n",
      latency_us / 1e3, launch_us, flops / 1e12, 100 * mfu, static_cast<double>(hbm_bytes) / 1e9);
  out += fmt::format(
      "memory per core: weights {:.2f} GiB + activations {:.2f} GiB{} of {:.2f} GiB HBM: {}\n",
      static_cast<double>(weight_bytes) / 1073741824.0,
      static_cast<double>(activation_bytes) / 1073741824.0,
      cache_bytes > 0
          ? fmt::format(" + KV cache {:.2f} GiB", static_cast<double>(cache_bytes) / 1073741824.0)
          : "",
      static_cast<double>(hbm_capacity_bytes) / 1073741824.0,
      fits() ? "fits"
             : fmt::format("does not fit (short by {:.2f} GiB)",
                           static_cast<double>(weight_bytes + activation_bytes + cache_bytes -
                                               hbm_capacity_bytes) /
                               1073741824.0));
  out += fmt::format(
      "compiler: {} kernels, {} distinct ({} simulator runs with the tiling search); fusion {} -> "
      "{} nodes\n",
      kernels, kernels_simulated, simulations, fusion.nodes_before, fusion.nodes_after);
  return out;
}

}  // namespace trnsim::graph
