#include "fabric/timing.h"

#include <algorithm>

namespace trnsim::fabric {

namespace {

// Folded steps treat flows whose sizes differ only by block remainders (less than 0.1 %) as
// equal, at the largest size: otherwise the one-element differences of blocks that do not
// divide evenly would split every symmetry class. Per-rank steps keep exact sizes.
void even_out_remainders(std::vector<double>& bytes) {
  double lo = 0, hi = 0;
  for (double b : bytes) {
    if (b <= 0) continue;
    lo = lo == 0 ? b : std::min(lo, b);
    hi = std::max(hi, b);
  }
  if (hi <= 0 || hi > lo * 1.001) return;
  for (double& b : bytes)
    if (b > 0) b = hi;
}

struct StepResult {
  StepTiming t;
  Picoseconds sync{0};
  int64_t flows = 0;
};

// Builds the flows of one step, counts its traffic (`times` steps' worth) and solves it.
StepResult run_step(const std::vector<Transfer>& xfers, const Context& ctx, bool fold,
                    int64_t times, Timing& acc, FlowSet& fs, std::vector<Use>& uses,
                    std::vector<std::pair<int32_t, int32_t>>& pairs, std::vector<double>& sync_us) {
  const Network& net = *ctx.net;
  fs.clear();
  for (const Transfer& x : xfers) {
    uses.clear();
    const Picoseconds lat = net.path(x, uses);
    const int64_t bytes = x.count * ctx.elem_bytes;
    for (const Use& u : uses) {
      fs.res.push_back(u.resource);
      fs.coef.push_back(u.coef);
    }
    count_links(uses, bytes * times, net, acc);
    fs.close_flow(static_cast<double>(bytes), lat);
    count_hbm(x, bytes * times, net, acc);
  }
  if (fold) even_out_remainders(fs.bytes);
  StepResult r;
  r.flows = static_cast<int64_t>(xfers.size());
  r.t = solve_step(
      fs, [&net](int64_t res) { return net.capacity(res); }, fold);
  r.sync = step_sync(xfers, net, ctx.runtime, pairs, sync_us);
  r.t.duration += r.sync;
  return r;
}

}  // namespace

void count_links(const std::vector<Use>& uses, int64_t bytes, const Network& net, Timing& acc) {
  const int64_t links = net.topology().num_links();
  for (const Use& u : uses) {
    if (u.resource >= links) continue;
    const auto b = static_cast<int64_t>(u.coef) * bytes;
    acc.link_bytes += b;
    if (net.topology().link(u.resource).kind == LinkKind::kEfaUp) acc.efa_bytes += b;
  }
}

// HBM traffic as Network::path charges it: one read per operand, one write per destination.
void count_hbm(const Transfer& x, int64_t bytes, const Network& net, Timing& acc) {
  auto chip = [&net](int32_t rank) { return static_cast<size_t>(net.chip_of(rank)); };
  if (x.reduce) acc.hbm_read[chip(x.executor())] += bytes;
  for (int32_t s : {x.src, x.src2, x.src3})
    if (s >= 0) acc.hbm_read[chip(s)] += bytes;
  for (int32_t d : {x.dst, x.dst2})
    if (d >= 0) acc.hbm_write[chip(d)] += bytes;
}

// The handshakes that open a step (runtime.h, sync.*): every rank does one round trip with
// each distinct rank on its server it shares a non-empty transfer with, one after the other;
// each network proxy (a host thread serving ranks_per_proxy ranks of a server) does the same
// for every (own rank, remote peer) pair that crosses EFA. The step's data moves once the slowest
// rank and the slowest proxy are through. A rank with no data in the step waits for no one.
Picoseconds step_sync(const std::vector<Transfer>& xfers, const Network& net,
                      const RuntimeSpec* runtime, std::vector<std::pair<int32_t, int32_t>>& pairs,
                      std::vector<double>& us) {
  if (runtime == nullptr) return Picoseconds(0);  // a context built without a runtime
  const RuntimeSpec& rt = *runtime;
  if (rt.peer_sync_us <= 0 && rt.efa_message_us <= 0) return Picoseconds(0);
  pairs.clear();
  for (const Transfer& x : xfers) {
    if (x.count <= 0) continue;
    const int32_t ex = x.executor();
    for (int32_t p : {x.src, x.src2, x.src3, x.dst, x.dst2}) {
      if (p < 0 || p == ex) continue;
      pairs.emplace_back(ex, p);
      pairs.emplace_back(p, ex);
    }
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  // Ranks first, then the network proxies: each server's ranks in groups of ranks_per_proxy.
  const auto ranks = static_cast<size_t>(net.ranks());
  const int64_t rps = net.ranks_per_server();
  const int64_t rpp = std::max<int64_t>(1, rt.ranks_per_proxy);
  const int64_t proxies = (rps + rpp - 1) / rpp;
  us.assign(ranks + static_cast<size_t>(net.servers_used() * proxies), 0.0);
  double slowest = 0;
  for (const auto& [a, b] : pairs) {
    const int64_t server = net.server_of(a);
    const bool local = server == net.server_of(b);
    const int64_t proxy = server * proxies + (a % rps) / rpp;
    double& t = us[local ? static_cast<size_t>(a) : ranks + static_cast<size_t>(proxy)];
    t += local ? rt.peer_sync_us : rt.efa_message_us;
    slowest = std::max(slowest, t);
  }
  return Picoseconds(std::llround(slowest * 1e6));
}

Timing time_plan(const Plan& plan, const Context& ctx, bool folded) {
  Timing acc;
  const auto chips = static_cast<size_t>(ctx.net->topology().chips());
  acc.hbm_read.assign(chips, 0);
  acc.hbm_write.assign(chips, 0);
  FlowSet fs;
  std::vector<Use> uses;
  std::vector<Transfer> xfers;
  std::vector<std::pair<int32_t, int32_t>> pairs;
  std::vector<double> sync_us;
  for (const Phase& ph : plan.phases) {
    PhaseTiming pt{ph.name, ph.steps};
    const bool fold_time = folded && ph.uniform;
    const int64_t simulated = fold_time ? std::min<int64_t>(ph.steps, 1) : ph.steps;
    for (int64_t k = 0; k < simulated; ++k) {
      xfers.clear();
      ph.emit(k, xfers);
      const int64_t times = fold_time ? ph.steps : 1;
      const StepResult r = run_step(xfers, ctx, folded, times, acc, fs, uses, pairs, sync_us);
      pt.time += Picoseconds(r.t.duration.v * times);
      pt.sync += Picoseconds(r.sync.v * times);
      pt.flows = std::max(pt.flows, r.flows);
      pt.flow_classes = std::max(pt.flow_classes, r.t.flow_classes);
      pt.resource_classes = std::max(pt.resource_classes, r.t.resource_classes);
    }
    acc.device += pt.time;
    acc.sync += pt.sync;
    acc.phases.push_back(std::move(pt));
  }
  return acc;
}

}  // namespace trnsim::fabric
