#include "graph/model_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <regex>

#include "base/error.h"
#include "chip/chip_run.h"
#include "fabric/system.h"
#include "graph/backward.h"
#include "graph/build.h"
#include "graph/kernel_cache.h"
#include "graph/lower.h"
#include "graph/segment.h"
#include "graph/stream_schedule.h"
#include "graph/value_runner.h"

namespace trnsim::graph {

namespace {

// The layer number folded out of a node name, so that the layers' copies share a row; a MoE
// block's expert number too (its experts' optimizer steps: one row per weight, not per expert).
std::string row_name(const std::string& n) {
  // The first numbered path component: "layers.3.mlp" and "model.layers.3.mlp" alike.
  static const std::regex kLayer(R"(^((?:\w+\.)*?\w+)\.\d+\.)");
  static const std::regex kExpert(R"(\.experts\.\d+\.)");
  return std::regex_replace(
      std::regex_replace(n, kLayer, "$1.*.", std::regex_constants::format_first_only), kExpert,
      ".experts.*.");
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

}  // namespace

ModelResult run_graph(Graph g, const std::string& name, const ModelRunOptions& o,
                      const TensorMap* weights, const TensorMap* inputs) {
  // --set keys of the system (server., cluster., collective.) go to the system, the rest to
  // the chip.
  const fabric::SplitOverrides over = fabric::split_overrides(o.overrides);
  if (o.system.empty() && !over.system.empty())
    throw InputError("model", "--set " + over.system.front().key,
                     "a system key needs a system (--system)");
  std::unique_ptr<fabric::SystemSpec> sys;
  if (!o.system.empty())
    sys = std::make_unique<fabric::SystemSpec>(fabric::load_system(o.system, over.system));
  const arch::ChipSpec chip =
      sys ? (over.chip.empty() ? sys->chip : arch::load_chip(sys->chip_name, over.chip))
          : arch::load_chip(o.chip, over.chip);
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
  if (o.micro_batches < 1 || (o.micro_batches > 1 && !o.train))
    throw InputError("model", "micro_batches",
                     fmt::format("{}: gradient accumulation is a training step's (train), of at "
                                 "least 1 micro-batch",
                                 o.micro_batches));
  if (o.values && o.micro_batches > 1)
    throw InputError("model", "micro_batches",
                     "values run one micro-batch: a functional run holds one step's tensors");
  if (o.values && o.train)
    for (const Node& n : g.nodes)
      if (n.kind == OpKind::kMoe)
        throw InputError(n.name, "values",
                         "a training step's values through a MoE block are not computed yet "
                         "(its forward values are: run without train); ask for timing only");
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
  res.fusion = fuse(g, o.fuse, o.train);
  res.train = o.train;
  res.micro_batches = o.micro_batches;
  if (o.train) {
    OptimizerParams opt = o.optimizer;
    opt.seed = o.seed;
    add_training(g, opt);
  }
  res.graph_text = g.dump();
  res.lnc = lnc;
  if (tp * lnc > 1 && !sys) sys = system_for(chip);
  if (tp * lnc > 1 && !sys)
    throw InputError(
        "model", "chip",
        fmt::format("no system in spec/systems has {} chips for the all-reduces", res.chip));
  if (!o.system.empty())
    res.system = sys->name;  // the one asked for (not the one picked for
                             // a chip's all-reduces)
  std::unique_ptr<KernelCache> own;
  KernelCache* shared = nullptr;
  if (o.kernel_caches) {
    shared = &o.kernel_caches->get(
        {&chip, o.overrides, sys.get(), tp, lnc, o.search_tilings, o.prefetch, o.runtime});
  } else {
    own = std::make_unique<KernelCache>(chip, tp, sys.get(), o.search_tilings, lnc, o.runtime);
    own->set_warm_timing(o.prefetch);
  }
  KernelCache& cache = shared ? *shared : *own;

  for (const Value& v : g.values)
    if (v.kind == ValueKind::kWeight)
      res.weight_bytes += v.bytes();
    else if (v.kind == ValueKind::kCache)
      res.cache_bytes += v.bytes();
    else if (v.kind == ValueKind::kOptState)
      res.optimizer_bytes += v.bytes();
  res.activation_bytes = peak_activation_bytes(g);
  res.hbm_capacity_bytes =
      static_cast<int64_t>(chip.chip.hbm.capacity_gib * 1073741824.0 / chip.chip.cores);
  if (o.values && !res.fits())
    throw InputError(
        "model", name,
        fmt::format(
            "{:.2f} GiB of weights{} and activations per rank do not fit the rank's "
            "{:.2f} GiB of HBM (short by {:.2f} GiB)",
            static_cast<double>(res.needed_bytes()) / 1073741824.0,
            o.train ? ", optimizer state" : "",
            static_cast<double>(res.hbm_capacity_bytes) / 1073741824.0,
            static_cast<double>(res.needed_bytes() - res.hbm_capacity_bytes) / 1073741824.0));

  if (o.values)
    for (const Node& n : g.nodes)
      if (n.kv_cache)
        throw InputError(n.name, "values",
                         "values through a KV cache are not computed yet; ask for timing only");
  std::unique_ptr<ValueRunner> values;
  if (o.values) values = std::make_unique<ValueRunner>(chip, g, cache, o, weights, inputs, res);
  std::map<std::string, size_t> row_of;
  // Collectives beside the compute that does not read them (stream_schedule.h).
  StreamSchedule sched(g.values.size());
  int64_t layers_seen = -1;
  Picoseconds hbm_idle{0};  // time since the last HBM-bound kernel (prefetch)
  // The compute kernel placed last, which the next is timed beside (overlap_kernels), and its
  // time alone.
  std::optional<SegmentItem> before;
  Picoseconds before_alone{0};
  std::vector<double> row_us;  // per row: the time of all its instances
  // A training step with gradient accumulation runs the forward and backward once per
  // micro-batch, then the optimizer once.
  const int64_t passes = o.train ? o.micro_batches : 1;
  // Nodes after the loss are the backward's (backward.h appends them in that order).
  const size_t loss_at = loss_node(g);
  auto phase_of = [&](const Node& n) -> std::string {
    if (n.kind == OpKind::kAdamW) return "optimizer";
    return static_cast<size_t>(&n - g.nodes.data()) > loss_at ? "backward" : "forward";
  };
  auto run_node = [&](const Node& n, bool first_pass) {
    layers_seen = std::max<int64_t>(layers_seen, n.repeat_of);
    if (values && first_pass && n.kind == OpKind::kMoe) values->run_moe(n);
    Picoseconds at = sched.inputs_ready(n);  // the node's kernels one after another
    for (const Step& st : lower_steps(g, n)) {
      const Kernel& k = st.kernel;
      const KernelTiming& t = cache.time(k);
      if (values && first_pass && n.kind != OpKind::kMoe) values->run(n, k);
      const std::string label = st.part.empty() ? n.name : n.name + "." + st.part;
      Picoseconds dur(t.time.v * st.repeat);
      bool overlapped = false;
      if (o.overlap_kernels && st.repeat == 1 && segmentable(k.kind)) {
        SegmentItem item{&n, k};
        item.kernel.linear.tiling = t.tiling;
        if (before && before_alone + t.time <= kSegmentMaxTime) {
          // What this kernel adds after the one before it, at most its time alone.
          if (const KernelTiming* pair = cache.time_segment({*before, item})) {
            const int64_t added = std::clamp<int64_t>(pair->time.v - before_alone.v, 0, t.time.v);
            res.overlap_us += static_cast<double>(t.time.v - added) / 1e6;
            dur = Picoseconds(added);
            overlapped = true;
          }
        }
        before = std::move(item);
        before_alone = t.time;
      } else {
        before.reset();
      }
      if (o.prefetch && st.repeat == 1) {
        if (k.kind == KernelKind::kLinear) {
          // Its first weight blocks loaded while the kernels since the last HBM-bound one ran:
          // at most what the kernel saves with them in SBUF (its warm time), at most that idle
          // time. Timed beside the kernel before it, it already loaded them under that kernel.
          const int64_t hidden =
              overlapped
                  ? 0
                  : std::clamp<int64_t>(std::min(t.time.v - t.warm_time.v, hbm_idle.v), 0, dur.v);
          dur = Picoseconds(dur.v - hidden);
          res.prefetch_us += static_cast<double>(hidden) / 1e6;
          hbm_idle = Picoseconds(0);
        } else if (t.bound == "dma") {
          hbm_idle = Picoseconds(0);  // HBM busy: nothing streams ahead under it
        } else {
          hbm_idle += dur;
        }
      }
      const Picoseconds start = sched.place(is_collective(k.kind), at, dur);
      at = start + dur;
      res.timeline.push_back({label, std::string(k.kind_name()), static_cast<double>(start.v) / 1e6,
                              static_cast<double>(dur.v) / 1e6, phase_of(n)});
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
          r.tiling = t.tiling.columns
                         ? fmt::format("cols{} x{}", t.tiling.weight_stationary ? " w-stat" : "",
                                       t.tiling.out_block)
                         : fmt::format("{}x{}", t.tiling.token_block, t.tiling.out_block);
        if (is_collective(k.kind)) r.tiling = t.algorithm;
        r.fused = fmt::format("{}", fmt::join(n.fused, ", "));
        r.flops = k.flops();
        r.hbm_bytes = t.hbm_bytes;
        it = row_of.emplace(key, res.rows.size()).first;
        res.rows.push_back(r);
        row_us.push_back(0);
      }
      OpRow& r = res.rows[it->second];
      r.count += st.repeat;
      row_us[it->second] += static_cast<double>(dur.v) / 1e6;
      r.time_us = row_us[it->second] / static_cast<double>(r.count);
      res.flops += k.flops() * static_cast<double>(shards * st.repeat);
      res.hbm_bytes += t.hbm_bytes * shards * st.repeat;
      // A ring all-reduce: each of the tp ranks sends 2 (tp - 1) / tp of the tensor; an
      // all-gather or reduce-scatter half of that.
      if (is_collective(k.kind))
        res.collective_bytes += (k.kind == KernelKind::kAllReduce ? 2 : 1) * int64_t{tp - 1} *
                                k.collective_bytes * st.repeat;
    }
    sched.finish(n, at);
  };
  for (int64_t p = 0; p < passes; ++p)
    for (const Node& n : g.nodes)
      if (n.kind != OpKind::kAdamW) run_node(n, p == 0);
  for (const Node& n : g.nodes)
    if (n.kind == OpKind::kAdamW) run_node(n, true);
  if (values) {
    values->finish();
    if (o.train) {
      const auto& l = res.outputs.at("loss");
      double sum = 0;
      for (float x : l) sum += x;
      res.loss = l.empty() ? 0 : sum / static_cast<double>(l.size());
    }
  }
  const std::vector<Picoseconds> exposed = sched.exposed();
  for (size_t i = 0; i < res.timeline.size(); ++i) {
    auto& sl = res.timeline[i];
    sl.exposed_us = static_cast<double>(exposed[i].v) / 1e6;
    res.overlapped_us += sl.dur_us - sl.exposed_us;
  }
  const Picoseconds total = sched.makespan();
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
        if (splits_into(m, t * lnc, o.ep)) {
          tp = static_cast<int>(t);
          break;
        }
      }
  }
  if (o.values && m.eagle_draft)
    throw InputError(m.name, "values",
                     "an EAGLE draft head reads its target's hidden states, which a values run "
                     "does not have; ask for timing only");
  if (o.values && m.model_type == "gpt_oss")
    throw InputError(m.name, "values",
                     "gpt-oss's experts run here as plain GLUs (no clamped SwiGLU, no router or "
                     "expert biases) and its attention without sinks or sliding windows: the "
                     "values would not be gpt-oss's; ask for timing only");
  if (o.values && m.rope && !m.rope_scaling.changes_frequencies_only())
    throw InputError(m.name, "rope_scaling",
                     fmt::format("rope type '{}' changes the tables with the sequence length or "
                                 "scales the attention, which the value run does not model "
                                 "(linear and llama3 it does); ask for timing only",
                                 m.rope_scaling.type));
  if (o.train && o.kv_cache) throw InputError(m.name, "train", "a training step has no KV cache");
  if (o.values && o.expert_dp != 1)
    throw InputError(m.name, "expert_dp",
                     "values run one rank; experts spread over data-parallel replicas are timing "
                     "only");
  // The chip whose formats the quantized weights and cache take (loaded only if asked).
  std::optional<arch::ChipSpec> chip;
  auto chip_spec = [&]() -> const arch::ChipSpec& {
    if (!chip)
      chip = o.system.empty() ? arch::load_chip(o.chip, o.overrides)
                              : fabric::load_system(o.system).chip;
    return *chip;
  };
  WeightQuant quant;
  if (o.weights != "bf16" && o.weights != "none") {
    if (o.train)
      throw InputError(m.name, "weights",
                       "a training step keeps its weights in the model's dtype; weight "
                       "quantization is for inference");
    quant = {.dtype = quantized_weight_format(chip_spec(), o.weights),
             .mlp_only = o.quantize_mlp_only};
  }
  const std::optional<num::Format> kv_dtype =
      o.kv_cache_dtype == "bf16" ? std::nullopt : kv_cache_format(chip_spec(), o.kv_cache_dtype);
  BuildOptions b{.batch = o.batch,
                 .seq = o.seq,
                 .tp = tp * lnc,
                 .layers = o.layers,
                 .kv_cache = o.kv_cache,
                 .past = o.past,
                 .kv_cache_dtype = kv_dtype,
                 .vocab_parallel = o.train,
                 .ep = o.ep,
                 .expert_dp = o.expert_dp,
                 .quant = quant,
                 .sequence_parallel = o.sequence_parallel,
                 .eager_attention = o.eager_attention,
                 .pad_heads = !o.train,
                 .mlm_head = o.train && m.model_type == "bert"};
  ModelResult r = run_graph(build_model_graph(m, b), m.name, o, weights, inputs);
  r.ep = o.ep;
  r.source = m.source;
  r.params = m.params();
  return r;
}

std::string ModelResult::table() const {
  std::string out = fmt::format(
      "{} on {}{} (tp {}{}), batch {} x {} tokens, {} layers: {}\n", model,
      system.empty() ? chip : system, system.empty() ? "" : fmt::format(" ({})", chip), tp,
      (ep > 1 ? fmt::format(", ep {}", ep) : "") + (lnc > 1 ? fmt::format(", LNC={}", lnc) : ""),
      batch, seq, layers,
      !train              ? "forward"
      : micro_batches > 1 ? fmt::format("training step of {} micro-batches (forward "
                                        "and backward each, then AdamW)",
                                        micro_batches)
                          : "training step (forward, backward, AdamW)");
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
  if (prefetch_us > 0)
    out += fmt::format(
        "weight prefetch: {:.3f} ms of the linears' weight loads ran under the kernels before "
        "them\n",
        prefetch_us / 1e3);
  if (overlap_us > 0)
    out += fmt::format(
        "kernels together: {:.3f} ms of the kernels ran under the kernel before them (weight "
        "loads, fill and drain)\n",
        overlap_us / 1e3);
  if (overlapped_us > 0)
    out += fmt::format(
        "collectives beside compute: {:.3f} ms of the collectives ran under kernels that do not "
        "read them\n",
        overlapped_us / 1e3);
  out += fmt::format(
      "latency {:.3f} ms (launch {:.1f} us); {:.3g} TFLOP, MFU {:.1f}% of bf16 peak; HBM "
      "traffic {:.2f} GB\n",
      latency_us / 1e3, launch_us, flops / 1e12, 100 * mfu, static_cast<double>(hbm_bytes) / 1e9);
  if (train)
    out += fmt::format(
        "{:.0f} tokens/s{}\n",
        latency_us > 0 ? static_cast<double>(batch * seq * micro_batches) / (latency_us * 1e-6) : 0,
        outputs.contains("loss") ? fmt::format("; loss {:.4f}", loss) : "");
  out += fmt::format(
      "memory per core: weights {:.2f} GiB{} + activations {:.2f} GiB{} of {:.2f} GiB HBM: {}\n",
      static_cast<double>(weight_bytes) / 1073741824.0,
      optimizer_bytes > 0 ? fmt::format(" + optimizer state {:.2f} GiB",
                                        static_cast<double>(optimizer_bytes) / 1073741824.0)
                          : "",
      static_cast<double>(activation_bytes) / 1073741824.0,
      cache_bytes > 0
          ? fmt::format(" + KV cache {:.2f} GiB", static_cast<double>(cache_bytes) / 1073741824.0)
          : "",
      static_cast<double>(hbm_capacity_bytes) / 1073741824.0,
      fits()
          ? "fits"
          : fmt::format("does not fit (short by {:.2f} GiB)",
                        static_cast<double>(needed_bytes() - hbm_capacity_bytes) / 1073741824.0));
  out += fmt::format(
      "compiler: {} kernels, {} distinct ({} simulator runs with the tiling search); fusion {} -> "
      "{} nodes\n",
      kernels, kernels_simulated, simulations, fusion.nodes_before, fusion.nodes_after);
  return out;
}

}  // namespace trnsim::graph
