#include "fabric/concurrent.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "base/error.h"
#include "base/interrupt.h"
#include "fabric/timing.h"

namespace trnsim::fabric {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr size_t kMaxFlows = size_t{1} << 16;

struct Flow {
  int32_t group;
  double bytes, left, rate = 0;
  double latency_s;
  std::vector<Use> uses;
};

enum class State : uint8_t { kWaiting, kRunning, kDone };

// One group: its plan, where it is in it, and what it has cost so far.
struct Group {
  Plan plan;
  Context ctx;
  std::vector<int32_t> to_global;
  size_t phase = 0;
  int64_t step = 0;
  State state = State::kWaiting;
  double step_begin = 0, start_at = 0, end_at = 0;
  int64_t fluid_left = 0;
  std::vector<Transfer> pending;  // the step's transfers, global ranks, until it starts
  Timing timing;
  CollectiveResult result;
};

// The group's placement: its size and ranks per server, the Fabric's rank unit and LNC.
Placement group_placement(const Fabric& f, const std::vector<int32_t>& ranks, size_t g) {
  const Network& net = f.network();
  if (ranks.empty()) throw InputError("groups", fmt::format("group {}", g), "has no ranks");
  std::vector<int32_t> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw InputError("groups", fmt::format("group {}", g), "lists a rank twice");
  if (sorted.front() < 0 || sorted.back() >= net.ranks()) {
    throw InputError("groups", fmt::format("group {}", g),
                     fmt::format("ranks must be 0 to {}", net.ranks() - 1));
  }
  std::unordered_map<int64_t, int64_t> per_server;
  for (int32_t r : ranks) ++per_server[net.server_of(r)];
  const int64_t rps = per_server.begin()->second;
  for (const auto& [server, n] : per_server) {
    if (n != rps) {
      throw InputError("groups", fmt::format("group {}", g),
                       "needs the same number of ranks on every server it uses");
    }
  }
  Placement pl = f.placement();
  pl.ranks = static_cast<int64_t>(ranks.size());
  pl.ranks_per_server = rps;
  return pl;
}

// Max-min fair rates of the running flows (flow_solver.h, unfolded), into each flow's rate.
void share(std::vector<Flow>& flows, const Network& net, FlowSet& fs) {
  fs.clear();
  for (const Flow& fl : flows) {
    for (const Use& u : fl.uses) {
      fs.res.push_back(u.resource);
      fs.coef.push_back(u.coef);
    }
    fs.close_flow(fl.left, Picoseconds(0));
  }
  const std::vector<double> rate =
      max_min_share(fs, [&net](int64_t res) { return net.capacity(res); });
  for (size_t f = 0; f < flows.size(); ++f) flows[f].rate = rate[f];
}

class Runner {
 public:
  Runner(const Fabric& f, std::vector<Group>& groups) : f_(f), net_(f.network()), g_(groups) {}

  void run() {
    for (size_t g = 0; g < g_.size(); ++g) begin_step(g, 0.0);
    double t = 0;
    bool dirty = true;
    while (
        std::any_of(g_.begin(), g_.end(), [](const Group& g) { return g.state != State::kDone; })) {
      if (dirty) share(flows_, net_, fs_);
      dirty = false;
      double next = kInf;
      for (const Flow& fl : flows_) next = std::min(next, t + fl.left / fl.rate);
      for (const Group& g : g_) {
        if (g.state == State::kWaiting) next = std::min(next, g.start_at);
        if (g.state == State::kRunning && g.fluid_left == 0) next = std::min(next, g.end_at);
      }
      TRNSIM_ASSERT(std::isfinite(next));
      const double dt = std::max(0.0, next - t);
      t = std::max(t, next);
      // Flows that finish now; their step waits for their latency.
      for (size_t i = 0; i < flows_.size();) {
        Flow& fl = flows_[i];
        fl.left -= fl.rate * dt;
        if (fl.left <= fl.bytes * 1e-12) {
          Group& g = g_[static_cast<size_t>(fl.group)];
          g.end_at = std::max(g.end_at, t + fl.latency_s);
          --g.fluid_left;
          flows_[i] = std::move(flows_.back());
          flows_.pop_back();
          dirty = true;
        } else {
          ++i;
        }
      }
      for (size_t g = 0; g < g_.size(); ++g) {
        Group& grp = g_[g];
        if (grp.state == State::kRunning && grp.fluid_left == 0 && grp.end_at <= t * (1 + 1e-15)) {
          end_step(g);
          dirty = true;
        }
        if (grp.state == State::kWaiting && grp.start_at <= t * (1 + 1e-15)) {
          start_flows(g);
          dirty = true;
        }
      }
    }
  }

 private:
  void begin_step(size_t g, double at) {
    Group& grp = g_[g];
    while (grp.phase < grp.plan.phases.size() && grp.step >= grp.plan.phases[grp.phase].steps) {
      ++grp.phase;
      grp.step = 0;
    }
    if (grp.phase >= grp.plan.phases.size()) {
      grp.state = State::kDone;
      grp.timing.device = Picoseconds(std::llround(at * 1e12));
      return;
    }
    local_.clear();
    grp.plan.phases[grp.phase].emit(grp.step, local_);
    grp.pending.clear();
    for (Transfer x : local_) {
      for (int32_t* r : {&x.src, &x.dst, &x.src2, &x.src3, &x.dst2, &x.by})
        if (*r >= 0) *r = grp.to_global[static_cast<size_t>(*r)];
      grp.pending.push_back(x);
    }
    const Picoseconds sync = step_sync(grp.pending, net_, &f_.runtime(), pairs_, scratch_);
    grp.timing.phases[grp.phase].sync += sync;
    grp.timing.sync += sync;
    grp.step_begin = at;
    grp.start_at = at + static_cast<double>(sync.v) * 1e-12;
    grp.state = State::kWaiting;
  }

  void start_flows(size_t g) {
    Group& grp = g_[g];
    grp.state = State::kRunning;
    grp.end_at = grp.start_at;
    grp.fluid_left = 0;
    for (const Transfer& x : grp.pending) {
      Flow fl{static_cast<int32_t>(g), 0, 0, 0, 0, {}};
      const Picoseconds lat = net_.path(x, fl.uses);
      const int64_t bytes = x.count * grp.ctx.elem_bytes;
      count_links(fl.uses, bytes, net_, grp.timing);
      count_hbm(x, bytes, net_, grp.timing);
      fl.latency_s = static_cast<double>(lat.v) * 1e-12;
      fl.bytes = fl.left = static_cast<double>(bytes);
      if (bytes <= 0 || fl.uses.empty()) {
        grp.end_at = std::max(grp.end_at, grp.start_at + fl.latency_s);
        continue;
      }
      ++grp.fluid_left;
      flows_.push_back(std::move(fl));
    }
    // Unfolded, every event re-shares every running flow: bound the work (concurrent.h).
    if (flows_.size() > kMaxFlows) {
      throw InputError("groups", "",
                       fmt::format("more than {} transfers in flight at once; concurrent groups "
                                   "are simulated flow by flow (use fewer or smaller groups)",
                                   kMaxFlows));
    }
  }

  void end_step(size_t g) {
    Group& grp = g_[g];
    PhaseTiming& pt = grp.timing.phases[grp.phase];
    pt.time += Picoseconds(std::llround((grp.end_at - grp.step_begin) * 1e12));
    pt.flows = std::max(pt.flows, static_cast<int64_t>(grp.pending.size()));
    ++grp.step;
    begin_step(g, grp.end_at);
  }

  const Fabric& f_;
  const Network& net_;
  std::vector<Group>& g_;
  std::vector<Flow> flows_;
  FlowSet fs_;  // the running flows as the solver takes them
  std::vector<Transfer> local_;
  std::vector<std::pair<int32_t, int32_t>> pairs_;
  std::vector<double> scratch_;
};

}  // namespace

ConcurrentResult simulate_concurrent(const Fabric& f, const std::vector<GroupRequest>& requests) {
  if (requests.empty()) throw InputError("groups", "", "at least one group");
  // Sub-fabrics own the networks the groups' plans are built on; they must outlive the plans.
  std::vector<std::unique_ptr<Fabric>> subs;
  std::vector<Group> groups(requests.size());
  const auto chips = static_cast<size_t>(f.network().topology().chips());
  for (size_t g = 0; g < requests.size(); ++g) {
    const GroupRequest& gr = requests[g];
    subs.push_back(
        std::make_unique<Fabric>(f.system(), f.runtime(), group_placement(f, gr.ranks, g)));
    Group& grp = groups[g];
    try {
      grp.ctx = subs.back()->context(gr.req);
      grp.ctx.sizes_only = true;
      grp.plan = subs.back()->choose(grp.ctx, gr.req.algorithm).build(grp.ctx);
    } catch (const InputError& e) {  // say which group's request it was
      throw InputError("groups", fmt::format("group {}", g), e.what());
    }
    grp.to_global = gr.ranks;
    grp.timing.hbm_read.assign(chips, 0);
    grp.timing.hbm_write.assign(chips, 0);
    for (const Phase& ph : grp.plan.phases) grp.timing.phases.push_back({ph.name, ph.steps});
  }
  Runner(f, groups).run();
  ConcurrentResult out;
  const RuntimeSpec& rt = f.runtime();
  const auto launch = Picoseconds(std::llround(rt.launch_us * 1e6));
  const auto start = Picoseconds(std::llround((rt.launch_us - rt.overlap_us) * 1e6));
  for (size_t g = 0; g < groups.size(); ++g) {
    Group& grp = groups[g];
    CollectiveResult r;
    r.op = requests[g].req.op;
    r.algorithm = grp.plan.algorithm;
    r.ranks = static_cast<int64_t>(grp.to_global.size());
    r.count = grp.ctx.count;
    r.bytes = grp.ctx.count * grp.ctx.elem_bytes;
    r.dtype = requests[g].req.dtype.name();
    r.timing = std::move(grp.timing);
    r.device = r.timing.device;
    r.time = std::max(launch, start + r.device);  // the launch rule of Fabric::simulate
    out.makespan = std::max(out.makespan, r.time);
    out.groups.push_back(std::move(r));
  }
  return out;
}

std::vector<std::vector<int32_t>> split_ranks(int64_t ranks, int64_t groups,
                                              std::string_view layout) {
  if (groups < 1 || ranks % groups != 0) {
    throw InputError("--groups", std::to_string(groups),
                     fmt::format("must divide the {} ranks evenly", ranks));
  }
  if (layout != "strided" && layout != "contiguous")
    throw InputError("--group-layout", std::string(layout), "expected contiguous or strided");
  const int64_t size = ranks / groups;
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t i = 0; i < size; ++i) {
      const int64_t r = layout == "strided" ? g + i * groups : g * size + i;
      out[static_cast<size_t>(g)].push_back(static_cast<int32_t>(r));
    }
  }
  return out;
}

}  // namespace trnsim::fabric
