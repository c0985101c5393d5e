#include "planner/train.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/error.h"
#include "fabric/concurrent.h"
#include "fabric/system.h"
#include "graph/backward.h"
#include "graph/build.h"
#include "graph/fusion.h"

namespace trnsim::planner {

std::string_view name(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

Recompute parse_recompute(const std::string& s, const std::string& command,
                          const std::string& key) {
  for (const Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull})
    if (s == name(r)) return r;
  throw InputError(command, key, s + ": none, selective or full");
}

namespace {

// Which pipeline stage a non-layer tensor or kernel belongs to: the embedding to the first,
// everything after the layers (final norm, LM head, loss) to the last.
bool first_stage_part(const std::string& name) {
  return name.starts_with("embed_tokens") || name.starts_with("embed_positions") ||
         name.starts_with("embeddings");
}
bool layer_part(const std::string& name) { return name.starts_with("layers."); }
// Whether pipeline stage `s` of `pp` holds the tensor or kernel `name`: a layer's are every
// stage's (each stage runs its own layers, which the stage run's "layers.*" stand for).
bool on_stage(const std::string& name, int s, int pp) {
  return layer_part(name) || (first_stage_part(name) ? s == 0 : s == pp - 1);
}

// A MoE expert's weight (they are sharded over the expert_dp replicas, and reduced and
// ZeRO-sharded over the dp / expert_dp that hold the same experts).
bool expert_weight(const std::string& name) { return name.find(".experts.") != std::string::npos; }

// The expert-parallel ranks inside one TP group, in the graph's shards (TP x LNC cores): the
// plan's ep up to tp, every core of the group when ep spans replicas.
int inner_ep(const TrainOptions& o, const TrainResult& r) {
  return r.expert_dp > 1 ? o.tp * r.lnc : o.ep;
}

// Bytes of the stage's weights, fp32 gradients, optimizer state and saved activations per
// micro-batch, from the graph of one stage's layers (with the embedding and the head).
void stage_memory(const graph::ModelConfig& m, const TrainOptions& o, int64_t layers,
                  TrainResult& r) {
  graph::Graph g = graph::build_model_graph(m, {.batch = o.micro_batch,
                                                .seq = o.seq,
                                                .tp = o.tp * r.lnc,
                                                .layers = layers,
                                                .vocab_parallel = true,
                                                .ep = inner_ep(o, r),
                                                .expert_dp = r.expert_dp,
                                                .quant = {},
                                                .sequence_parallel = o.sequence_parallel,
                                                .eager_attention = o.eager_attention,
                                                .mlm_head = m.model_type == "bert"});
  graph::fuse(g, true, true);
  graph::add_training(g, {});
  auto add = [&](const std::string& name, auto field, int64_t bytes) {
    for (int s = 0; s < o.pp; ++s) {
      if (on_stage(name, s, o.pp)) r.stages[static_cast<size_t>(s)].*field += bytes;
    }
  };
  // ZeRO shards over the replicas: stage 1 the optimizer state (fp32 master, m and v), 2 the
  // fp32 gradients too, 3 the weights too, of which a layer is gathered while it runs and the
  // next one prefetched (two layers' weights whole).
  // An expert's replicas are dp / expert_dp.
  auto shards = [&](const graph::Value& v, int stage) -> int64_t {
    return o.zero >= stage ? (expert_weight(v.name) ? o.dp / r.expert_dp : o.dp) : 1;
  };
  int64_t layer_weights = 0;
  std::vector<int64_t> whole(static_cast<size_t>(o.pp), 0);  // each stage's weights, unsharded
  for (const graph::Value& v : g.values)
    if (v.kind == graph::ValueKind::kWeight) {
      add(v.name, &TrainResult::Stage::params, v.elements());
      if (expert_weight(v.name)) add(v.name, &TrainResult::Stage::expert_params, v.elements());
      add(v.name, &TrainResult::Stage::weight_bytes, v.bytes() / shards(v, 3));
      add(v.name, &TrainResult::Stage::grad_bytes, v.elements() * 4 / shards(v, 2));
      add(v.name, &TrainResult::Stage::optimizer_bytes, v.elements() * 12 / shards(v, 1));
      for (int s = 0; s < o.pp; ++s)
        if (on_stage(v.name, s, o.pp)) whole[static_cast<size_t>(s)] += v.bytes();
      if (v.name.starts_with("layers.0.")) layer_weights += v.bytes();
    }
  if (o.zero >= 3)  // never more than the stage's weights whole
    for (size_t s = 0; s < r.stages.size(); ++s)
      r.stages[s].weight_bytes = std::min(
          whole[s], r.stages[s].weight_bytes + std::min<int64_t>(2, layers) * layer_weights);
  int64_t layer_inputs = 0;  // what full recomputation keeps: each layer's input
  const bool full = o.recompute == Recompute::kFull;
  for (int v : graph::saved_activations(g)) {
    const graph::Value& x = g.values[static_cast<size_t>(v)];
    if (full && layer_part(x.name)) continue;
    // Selective: the core attention's own saved state (flash attention's row statistics, eager
    // attention's [S, S] probabilities, Megatron's reason for it; its inputs q, k, v and its
    // output stay, as the projections around it need them).
    if (o.recompute == Recompute::kSelective && layer_part(x.name) &&
        (x.name.ends_with(".lse") || x.name.ends_with(".attn.probs")))
      continue;
    add(x.name, &TrainResult::Stage::activation_bytes, x.bytes());
  }
  if (full) {
    layer_inputs = layers * o.micro_batch * o.seq * m.hidden * m.dtype.storage_bytes;
    int64_t one_layer = 0;  // the recomputed layer's own saved set, live during its backward
    for (int v : graph::saved_activations(g))
      if (g.values[static_cast<size_t>(v)].name.starts_with("layers.0."))
        one_layer += g.values[static_cast<size_t>(v)].bytes();
    for (auto& st : r.stages) st.activation_bytes += layer_inputs + one_layer;
  }
}

// Checks the plan against the model and the system and fills `r`'s plan fields; returns the
// system (with --servers) and the layers per stage.
std::pair<fabric::SystemSpec, int64_t> check_plan(const graph::ModelConfig& m,
                                                  const TrainOptions& o, TrainResult& r) {
  if (o.system.empty()) throw InputError("train", "system", "name a system (spec/systems)");
  if (o.tp < 1 || o.pp < 1 || o.dp < 1)
    throw InputError("train", o.tp < 1 ? "tp" : o.pp < 1 ? "pp" : "dp", "at least 1");
  if (o.zero < 0 || o.zero > 3)
    throw InputError("train", "zero", fmt::format("{}: ZeRO stage 0, 1, 2 or 3", o.zero));
  if (o.micro_batch < 1 || o.global_batch < 1 || o.seq < 1)
    throw InputError("train", o.seq < 1 ? "seq" : "batch", "at least 1");
  // --set: system keys (server., cluster., collective.) to the system, the rest to its chip;
  // the stage runs see both (graph::ModelRunOptions::overrides), and so do the HBM capacity
  // and the DP and PP collectives here.
  const fabric::SplitOverrides over = fabric::split_overrides(o.overrides);
  std::vector<arch::Override> sys_over = over.system;
  if (o.servers > 0)
    sys_over.push_back(arch::parse_override(fmt::format("cluster.servers={}", o.servers)));
  fabric::SystemSpec sys = fabric::load_system(o.system, sys_over);
  if (!over.chip.empty()) sys.chip = arch::load_chip(sys.chip_name, over.chip);
  r.model = m.name;
  r.system = sys.name;
  r.tp = o.tp, r.pp = o.pp, r.dp = o.dp, r.zero = o.zero;
  r.lnc = o.lnc > 0 ? o.lnc : sys.lnc;
  r.servers = sys.servers;
  r.chips = sys.chips();
  r.seq = o.seq;
  r.global_batch = o.global_batch;
  r.micro_batch = o.micro_batch;
  r.recompute = o.recompute;
  r.eager_attention = o.eager_attention;
  r.sequence_parallel = o.sequence_parallel && o.tp > 1;
  const int64_t ranks = sys.chips() * sys.chip.chip.cores / r.lnc;
  if (int64_t{o.tp} * o.pp * o.dp != ranks)
    throw InputError(
        "train", "plan",
        fmt::format("TP {} x PP {} x DP {} = {} ranks; {} has {} ({} chips x {} cores{})", o.tp,
                    o.pp, o.dp, int64_t{o.tp} * o.pp * o.dp, sys.name, ranks, sys.chips(),
                    sys.chip.chip.cores, r.lnc > 1 ? fmt::format(" / LNC {}", r.lnc) : ""));
  const int64_t server_ranks = sys.chips_per_server * sys.chip.chip.cores / r.lnc;
  if (o.tp > server_ranks)
    throw InputError("train", "tp",
                     fmt::format("{} ranks exceed a server's {}: tensor parallelism stays inside "
                                 "a NeuronLink domain",
                                 o.tp, server_ranks));
  r.ep = o.ep;
  r.expert_dp = o.ep > o.tp ? o.ep / o.tp : 1;
  const int64_t cores = int64_t{o.tp} * r.lnc;
  if (o.ep < 1 ||
      (o.ep > o.tp &&
       (o.ep % o.tp != 0 || o.dp % r.expert_dp != 0 || !m.moe() ||
        m.experts % (cores * r.expert_dp) != 0 || !graph::splits_into(m, cores, cores))) ||
      (o.ep <= o.tp && o.ep != 1 && !graph::splits_into(m, cores, o.ep)))
    throw InputError(
        "train", "ep",
        fmt::format("{} expert-parallel ranks do not split {} over TP {}{} x DP {}: ep must be "
                    "a MoE's, and divide its experts and the TP group's cores, or be TP x a "
                    "divisor of DP whose every core then holds whole experts",
                    o.ep, m.name, o.tp, r.lnc > 1 ? fmt::format(" (x LNC {})", r.lnc) : "", o.dp));
  if (m.layers % o.pp != 0)
    throw InputError("train", "pp",
                     fmt::format("{} stages do not divide {}'s {} layers", o.pp, m.name, m.layers));
  if (o.virtual_stages < 1) throw InputError("train", "virtual-stages", "at least 1");
  if (o.virtual_stages > 1 && (o.pp < 2 || m.layers % (int64_t{o.pp} * o.virtual_stages) != 0))
    throw InputError(
        "train", "virtual-stages",
        fmt::format("{} chunks per stage need at least 2 stages whose chunks divide {}'s {} layers "
                    "({} stages x {} chunks)",
                    o.virtual_stages, m.name, m.layers, o.pp, o.virtual_stages));
  if (o.global_batch % (int64_t{o.dp} * o.micro_batch) != 0)
    throw InputError("train", "global-batch",
                     fmt::format("{} sequences are not whole micro-batches of {} on {} replicas",
                                 o.global_batch, o.micro_batch, o.dp));
  r.micro_batches = o.global_batch / (int64_t{o.dp} * o.micro_batch);
  if (o.virtual_stages > 1 && r.micro_batches % o.pp != 0)  // Megatron's interleaved schedule
    throw InputError("train", "virtual-stages",
                     fmt::format("the interleaved schedule runs micro-batches in rounds of the {} "
                                 "stages; {} per replica are not whole rounds",
                                 o.pp, r.micro_batches));
  r.virtual_stages = o.virtual_stages;
  return {std::move(sys), m.layers / o.pp};
}

// Memory per chip: the fullest stage's rank, times the ranks of a chip. 1F1B keeps up to pp
// micro-batches' activations in flight on the first stage (pp - s on stage s); the interleaved
// schedule 1 + (pp - 1) / (pp v) times that (Narayanan et al., SC'21, section 2.2.2).
void chip_memory(const fabric::SystemSpec& sys, const TrainOptions& o, TrainResult& r) {
  int64_t per_rank = 0;
  const double v = o.virtual_stages;
  const double more = o.virtual_stages > 1 ? 1.0 + (o.pp - 1) / (o.pp * v) : 1.0;
  for (int s = 0; s < o.pp; ++s) {
    const auto& S = r.stages[static_cast<size_t>(s)];
    const double in_flight = static_cast<double>(std::min<int64_t>(o.pp - s, r.micro_batches));
    per_rank = std::max(
        per_rank, S.weight_bytes + S.grad_bytes + S.optimizer_bytes +
                      static_cast<int64_t>(
                          std::ceil(in_flight * more * static_cast<double>(S.activation_bytes))));
  }
  r.memory_per_chip_bytes = per_rank * (sys.chip.chip.cores / r.lnc);
  r.hbm_per_chip_bytes = static_cast<int64_t>(sys.chip.chip.hbm.capacity_gib * 1073741824.0);
}

}  // namespace

TrainResult train_memory(const graph::ModelConfig& m, const TrainOptions& o) {
  TrainResult r;
  const auto setup = check_plan(m, o, r);
  const fabric::SystemSpec& sys = setup.first;
  const int64_t layers = setup.second;
  r.stages.assign(static_cast<size_t>(o.pp), {});
  stage_memory(m, o, layers, r);
  chip_memory(sys, o, r);
  return r;
}

TrainResult train(const graph::ModelConfig& m, const TrainOptions& o) {
  TrainResult r;
  // Plain names, not structured bindings: lambdas below capture them (clang < 16 refuses).
  const auto setup = check_plan(m, o, r);
  const fabric::SystemSpec& sys = setup.first;
  const int64_t layers = setup.second;
  const int64_t ranks = sys.chips() * sys.chip.chip.cores / r.lnc;

  // One stage's step: its layers, with the embedding and the head (split off by name below).
  graph::ModelRunOptions ro;
  ro.system = o.system;
  ro.overrides = o.overrides;
  ro.tp = o.tp;
  ro.ep = inner_ep(o, r);
  ro.expert_dp = r.expert_dp;
  ro.lnc = r.lnc;
  ro.batch = o.micro_batch;
  ro.seq = o.seq;
  ro.layers = layers;
  ro.train = true;
  ro.eager_attention = o.eager_attention;
  ro.sequence_parallel = o.sequence_parallel;
  ro.runtime = o.runtime;
  ro.search_tilings = o.search_tilings;
  ro.kernel_caches = o.kernel_caches;
  const graph::ModelResult step = graph::run_model(m, ro);
  r.stages.assign(static_cast<size_t>(o.pp), {});
  std::vector<double> tp_comm(static_cast<size_t>(o.pp), 0.0);
  double layer_fwd = 0, attn_fwd = 0;
  for (const auto& sl : step.timeline) {
    // What the kernel adds to the step: a collective under independent compute adds only
    // what sticks out (graph/stream_schedule.h).
    const double s = sl.exposed_us * 1e-6;
    for (int st = 0; st < o.pp; ++st) {
      if (!on_stage(sl.name, st, o.pp)) continue;
      auto& S = r.stages[static_cast<size_t>(st)];
      const bool collective =
          sl.kind == "all_reduce" || sl.kind == "all_gather" || sl.kind == "reduce_scatter";
      if (collective && sl.phase != "optimizer") tp_comm[static_cast<size_t>(st)] += s;
      (sl.phase == "forward"    ? S.forward_s
       : sl.phase == "backward" ? S.backward_s
                                : S.optimizer_s) += s;
    }
    if (layer_part(sl.name) && sl.phase == "forward") {
      layer_fwd += s;
      if (sl.kind == "attention") attn_fwd += s;
    }
  }
  // Recomputation runs in the backward: every layer's forward (full), or its attention's.
  const double again = o.recompute == Recompute::kFull        ? layer_fwd
                       : o.recompute == Recompute::kSelective ? attn_fwd
                                                              : 0.0;
  for (auto& S : r.stages) S.backward_s += again;
  stage_memory(m, o, layers, r);

  fabric::Placement pl;
  pl.unit = fabric::RankUnit::kCore;
  pl.ranks = ranks;
  pl.lnc = r.lnc;
  const fabric::Fabric fab(sys, fabric::load_runtime(o.runtime), pl);
  auto rank = [&](int t, int d, int s) {
    return static_cast<int32_t>(t + int64_t{o.tp} * (d + int64_t{o.dp} * s));
  };
  // Experts across replicas: each MoE block's routed rows go to their experts' ranks and back
  // by an all-to-all among the expert_dp replicas' ranks of one TP index (every TP index's
  // and every group's at once), twice in the forward and twice in the backward (their
  // gradients), again in a fully recomputed forward; exposed (Megatron's default dispatcher
  // does not overlap them). A rank's buffer: its 1 / tp of the micro-batch's tokens x top-k
  // rows of [hidden].
  std::vector<double> ep_comm(static_cast<size_t>(o.pp), 0.0);
  if (r.expert_dp > 1) {
    std::vector<fabric::GroupRequest> groups;
    for (int s = 0; s < o.pp; ++s)
      for (int t = 0; t < o.tp; ++t)
        for (int g0 = 0; g0 < o.dp; g0 += r.expert_dp) {
          fabric::GroupRequest g;
          g.req.op = fabric::Op::kAllToAll;
          const int64_t rows = (o.micro_batch * o.seq * m.experts_per_token + o.tp - 1) / o.tp;
          g.req.bytes = rows * m.hidden * m.dtype.storage_bytes;
          g.req.dtype = m.dtype;
          for (int d = g0; d < g0 + r.expert_dp; ++d) g.ranks.push_back(rank(t, d, s));
          groups.push_back(std::move(g));
        }
    const double a2a =
        static_cast<double>(fabric::simulate_concurrent(fab, groups).makespan.v) * 1e-12;
    const double fwd = 2.0 * static_cast<double>(layers) * a2a;
    const double bwd = o.recompute == Recompute::kFull ? 2 * fwd : fwd;
    for (size_t s = 0; s < r.stages.size(); ++s) {
      r.stages[s].forward_s += fwd;
      r.stages[s].backward_s += bwd;
      ep_comm[s] = fwd + bwd;
    }
  }

  // The pipeline over the micro-batches.
  double sum = 0, slowest = 0;
  size_t slow_stage = 0;
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const double t = r.stages[s].forward_s + r.stages[s].backward_s;
    sum += t;
    if (t > slowest) slowest = t, slow_stage = s;
  }
  const auto mb = static_cast<double>(r.micro_batches);
  r.compute_s = mb * slowest;
  // Interleaved (v chunks per stage): the warm-up and cool-down fill the pipeline in chunks
  // of 1 / v of a stage, so the bubble is 1 / v of 1F1B's (Narayanan et al., SC'21).
  r.pp_bubble_s = (sum - slowest) / o.virtual_stages;
  // TP all-reduces and EP all-to-alls of the slowest stage's micro-batches (inside compute_s).
  r.tp_comm_s = mb * tp_comm[slow_stage];
  r.ep_comm_s = mb * ep_comm[slow_stage];

  if (o.pp > 1) {
    // One micro-batch's activations [micro x seq, hidden] between two stages, each way.
    fabric::GroupRequest g;
    g.req.op = fabric::Op::kPermute;
    g.req.bytes = o.micro_batch * o.seq * m.hidden * m.dtype.storage_bytes;
    g.req.dtype = m.dtype;
    g.ranks = {rank(0, 0, 0), rank(0, 0, 1)};
    g.req.perm = {1, 0};
    const auto pr = fabric::simulate_concurrent(fab, {g});
    // Exposed once per boundary a micro-batch crosses, each way: pp v - 1 of them interleaved.
    const auto crossings = static_cast<double>(int64_t{o.pp} * o.virtual_stages - 1);
    r.pp_comm_s = 2.0 * crossings * static_cast<double>(pr.makespan.v) * 1e-12;
  }
  if (o.dp > 1) {
    // Every (stage, TP rank)'s replicas reduce their gradients at once. With experts across
    // expert_dp replicas, the experts' gradients are reduced apart, among the dp / expert_dp
    // replicas holding the same experts (d, d + expert_dp, ...), alongside the rest's.
    auto phase = [&](fabric::Op op, int64_t bytes_per_elem) {
      std::vector<fabric::GroupRequest> groups;
      auto add = [&](int64_t params, int s, int t, int d0, int stride) {
        fabric::GroupRequest g;
        g.req.op = op;
        g.req.bytes = params * bytes_per_elem;
        g.req.dtype = bytes_per_elem == 4 ? num::fp32() : num::bf16();
        for (int d = d0; d < o.dp; d += stride) g.ranks.push_back(rank(t, d, s));
        if (params > 0 && g.ranks.size() > 1) groups.push_back(std::move(g));
      };
      for (int s = 0; s < o.pp; ++s)
        for (int t = 0; t < o.tp; ++t) {
          const auto& S = r.stages[static_cast<size_t>(s)];
          if (r.expert_dp == 1) {
            add(S.params, s, t, 0, 1);
            continue;
          }
          add(S.params - S.expert_params, s, t, 0, 1);
          for (int j = 0; j < r.expert_dp; ++j) add(S.expert_params, s, t, j, r.expert_dp);
        }
      if (groups.empty()) return 0.0;
      const auto cr = fabric::simulate_concurrent(fab, groups);
      if (r.dp_algorithm.empty()) r.dp_algorithm = cr.groups.front().algorithm;
      return static_cast<double>(cr.makespan.v) * 1e-12;
    };
    // ZeRO 0 and 1 reduce the accumulated gradients after the last micro-batch (exposed);
    // 2 reduce-scatters each micro-batch's gradients during its backward, and 3 also gathers
    // the weights before each forward and backward (prefetched, as DeepSpeed and FSDP do):
    // what the slowest stage's compute cannot hide is exposed, every micro-batch.
    const auto& slow = r.stages[slow_stage];
    const double mbs = static_cast<double>(r.micro_batches);
    if (o.zero == 0) {
      r.dp_comm_s = phase(fabric::Op::kAllReduce, 4);
    } else if (o.zero == 1) {
      r.dp_comm_s = phase(fabric::Op::kReduceScatter, 4) + phase(fabric::Op::kAllGather, 2);
    } else if (o.zero == 2) {
      const double rs = phase(fabric::Op::kReduceScatter, 4);
      r.dp_comm_s = mbs * std::max(0.0, rs - slow.backward_s) + phase(fabric::Op::kAllGather, 2);
    } else {
      const double rs = phase(fabric::Op::kReduceScatter, 4), ag = phase(fabric::Op::kAllGather, 2);
      r.dp_comm_s =
          mbs * (std::max(0.0, ag - slow.forward_s) + std::max(0.0, ag + rs - slow.backward_s));
    }
  }
  for (const auto& S : r.stages)
    r.optimizer_s = std::max(r.optimizer_s, S.optimizer_s / (o.zero >= 1 ? o.dp : 1));
  r.step_time_s = r.compute_s + r.pp_bubble_s + r.pp_comm_s + r.dp_comm_s + r.optimizer_s;
  r.sequences_per_s = static_cast<double>(o.global_batch) / r.step_time_s;
  r.tokens_per_s = r.sequences_per_s * static_cast<double>(o.seq);

  // FLOPs: the stage run's rows are one rank's; layer rows stand for pp stages' layers.
  double layer_flops = 0, other_flops = 0, layer_fwd_flops = 0, attn_fwd_flops = 0;
  for (const auto& row : step.rows)
    (layer_part(row.name) ? layer_flops : other_flops) +=
        row.flops * static_cast<double>(row.count);
  for (const auto& row : step.rows)
    if (layer_part(row.name) && row.kind != "grad_input" && row.kind != "grad_weight" &&
        row.kind != "attn_grad") {
      layer_fwd_flops += row.flops * static_cast<double>(row.count);
      if (row.kind == "attention") attn_fwd_flops += row.flops * static_cast<double>(row.count);
    }
  const double model = (layer_flops * o.pp + other_flops) * o.tp * mb * o.dp;
  const double recomputed = (o.recompute == Recompute::kFull        ? layer_fwd_flops
                             : o.recompute == Recompute::kSelective ? attn_fwd_flops
                                                                    : 0.0) *
                            o.pp * o.tp * mb * o.dp;
  const double peak = sys.chip.chip.tflops.bf16 * 1e12 * static_cast<double>(sys.chips());
  r.mfu = model / (r.step_time_s * peak);
  r.hfu = (model + recomputed) / (r.step_time_s * peak);

  chip_memory(sys, o, r);

  // Energy (energy.h), when the chip has a power model: the FLOPs executed, HBM bytes scaled
  // from the stage run as the FLOPs are (rows are one physical core's), the TP all-reduces'
  // bytes and the DP reduction's (a ring's 2 (dp - 1) / dp of each rank's gradients) on links.
  r.power = power_model_if_any(sys.chip);
  if (r.power) {
    double layer_hbm = 0, other_hbm = 0;
    for (const auto& row : step.rows)
      (layer_part(row.name) ? layer_hbm : other_hbm) +=
          static_cast<double>(row.hbm_bytes) * static_cast<double>(row.count);
    const double cores = static_cast<double>(o.tp) * r.lnc;
    const double hbm = (layer_hbm * o.pp + other_hbm) * cores * mb * o.dp;
    double grads = 0;
    for (const auto& S : r.stages) grads += static_cast<double>(S.grad_bytes);
    const double link =
        static_cast<double>(step.collective_bytes) * mb * o.dp + 2.0 * (o.dp - 1) * grads * o.tp;
    r.energy = energy_of(*r.power, r.step_time_s, sys.chips(), model + recomputed, hbm, link);
  }
  return r;
}

nlohmann::json TrainResult::to_json() const {
  nlohmann::json st = nlohmann::json::array();
  for (const auto& s : stages)
    st.push_back({{"forward_s", s.forward_s},
                  {"backward_s", s.backward_s},
                  {"optimizer_s", s.optimizer_s},
                  {"weight_bytes", s.weight_bytes},
                  {"grad_bytes", s.grad_bytes},
                  {"optimizer_bytes", s.optimizer_bytes},
                  {"activation_bytes_per_micro_batch", s.activation_bytes}});
  return {
      {"model", model},
      {"system", system},
      {"servers", servers},
      {"chips", chips},
      {"tp", tp},
      {"pp", pp},
      {"dp", dp},
      {"lnc", lnc},
      {"zero", zero},
      {"ep", ep},
      {"expert_dp", expert_dp},
      {"seq", seq},
      {"global_batch", global_batch},
      {"micro_batch", micro_batch},
      {"micro_batches", micro_batches},
      {"virtual_stages", virtual_stages},
      {"recompute", name(recompute)},
      {"attention", eager_attention ? "eager" : "flash"},
      {"sequence_parallel", sequence_parallel},
      {"step_time_s", step_time_s},
      {"sequences_per_s", sequences_per_s},
      {"tokens_per_s", tokens_per_s},
      {"mfu", mfu},
      {"hfu", hfu},
      {"energy", energy ? energy->to_json() : nlohmann::json(nullptr)},
      {"power_model", power ? power->to_json() : nlohmann::json(nullptr)},
      {"joules_per_token", energy ? nlohmann::json(energy->joules() / (tokens_per_s * step_time_s))
                                  : nlohmann::json(nullptr)},
      {"tokens_per_s_per_w",
       energy ? nlohmann::json(tokens_per_s / energy->mean_power_w()) : nlohmann::json(nullptr)},
      {"breakdown",
       {{"compute_s", compute_s},
        {"tp_comm_s", tp_comm_s},
        {"ep_comm_s", ep_comm_s},
        {"pp_bubble_s", pp_bubble_s},
        {"pp_comm_s", pp_comm_s},
        {"dp_comm_s", dp_comm_s},
        {"optimizer_s", optimizer_s}}},
      {"dp_algorithm", dp_algorithm},
      {"memory_per_chip_bytes", memory_per_chip_bytes},
      {"hbm_per_chip_bytes", hbm_per_chip_bytes},
      {"fits", fits()},
      {"stages", st}};
}

std::string TrainResult::text() const {
  auto gib = [](int64_t b) { return static_cast<double>(b) / 1073741824.0; };
  std::string out = fmt::format(
      "{} on {} x {} ({} chips): TP {}{} x PP {}{} x DP {}{}, ZeRO-{}, recompute {}{}\n"
      "seq {}, global batch {} = {} micro-batches of {} per replica\n",
      model, servers, system, chips, tp,
      ep > 1 ? fmt::format(" (EP {}{})", ep,
                           expert_dp > 1 ? fmt::format(" over {} replicas", expert_dp) : "")
             : "",
      pp, virtual_stages > 1 ? fmt::format(" (interleaved, {} chunks)", virtual_stages) : "", dp,
      lnc > 1 ? fmt::format(" (LNC={})", lnc) : "", zero, name(recompute),
      std::string(sequence_parallel ? ", sequence parallel" : "") +
          (eager_attention ? ", eager attention" : ""),
      seq, global_batch, micro_batches, micro_batch);
  out += fmt::format("step {:.3f} s: {:.2f} sequences/s, {:.0f} tokens/s, MFU {:.1f}%{}\n",
                     step_time_s, sequences_per_s, tokens_per_s, 100 * mfu,
                     recompute != Recompute::kNone ? fmt::format(" (HFU {:.1f}%)", 100 * hfu) : "");
  auto share = [&](double s) { return step_time_s > 0 ? 100 * s / step_time_s : 0; };
  out += fmt::format(
      "  compute {:.3f} s ({:.0f}%; TP all-reduces {:.3f} s of it{}), pipeline bubble {:.3f} s "
      "({:.0f}%), stage sends {:.3f} s, DP gradients {:.3f} s ({:.0f}%{}), optimizer {:.3f} s\n",
      compute_s, share(compute_s), tp_comm_s,
      expert_dp > 1 ? fmt::format(", EP all-to-alls {:.3f} s", ep_comm_s) : "", pp_bubble_s,
      share(pp_bubble_s), pp_comm_s, dp_comm_s, share(dp_comm_s),
      dp_algorithm.empty() ? "" : ", " + dp_algorithm, optimizer_s);
  if (energy)
    out += fmt::format(
        "  energy {:.3g} J a step ({:.3g} kW mean over {} chips: static {:.0f} %, TensorE {:.0f} "
        "%, HBM {:.0f} %, links {:.0f} %), {:.3g} J per token, {:.3g} tokens/s per W\n",
        energy->joules(), energy->mean_power_w() / 1e3, energy->chips,
        100 * energy->static_j / energy->joules(), 100 * energy->tensor_j / energy->joules(),
        100 * energy->hbm_j / energy->joules(), 100 * energy->link_j / energy->joules(),
        energy->joules() / (tokens_per_s * step_time_s), tokens_per_s / energy->mean_power_w());
  for (size_t s = 0; s < stages.size(); ++s) {
    const auto& S = stages[s];
    out += fmt::format(
        "  stage {}: forward {:.1f} ms + backward {:.1f} ms per micro-batch; weights {:.2f} GiB, "
        "gradients {:.2f} GiB, optimizer {:.2f} GiB, activations {:.2f} GiB per micro-batch "
        "(per rank)\n",
        s, S.forward_s * 1e3, S.backward_s * 1e3, gib(S.weight_bytes), gib(S.grad_bytes),
        gib(S.optimizer_bytes), gib(S.activation_bytes));
  }
  out += fmt::format("memory per chip {:.2f} GiB of {:.2f} GiB HBM: {}\n",
                     gib(memory_per_chip_bytes), gib(hbm_per_chip_bytes),
                     fits() ? "fits"
                            : fmt::format("does not fit (short by {:.2f} GiB)",
                                          gib(memory_per_chip_bytes - hbm_per_chip_bytes)));
  return out;
}

}  // namespace trnsim::planner
