#include "fabric/flow_solver.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "base/error.h"
#include "fabric/fold.h"

namespace trnsim::fabric {

namespace {

// The problem on classes: class c has bytes[c] per member; resource class l has capacity
// cap[l]; CSR by class and by resource of the load coefficients a(c, l).
struct ClassProblem {
  std::vector<double> bytes;
  std::vector<int64_t> latency;
  std::vector<double> cap;
  std::vector<uint32_t> c_begin;  // class -> (res, a)
  std::vector<int32_t> c_res;
  std::vector<double> c_a;
  std::vector<uint32_t> l_begin;  // res -> (class, a)
  std::vector<int32_t> l_cls;
  std::vector<double> l_a;
};

ClassProblem build(const FlowSet& fs, const std::vector<int32_t>& local_res,
                   const std::vector<double>& local_cap, const Partition& p) {
  ClassProblem cp;
  const size_t nc = p.flow_classes, nl = p.resource_classes;
  cp.bytes.assign(nc, 0);
  cp.latency.assign(nc, 0);
  cp.cap.assign(nl, 0);
  std::vector<double> members(nl, 0);
  for (size_t r = 0; r < local_cap.size(); ++r) {
    cp.cap[static_cast<size_t>(p.res_class[r])] = local_cap[r];
    members[static_cast<size_t>(p.res_class[r])] += 1;
  }
  std::vector<char> seen(nc, 0);
  // Accumulate uses per (class, resource class), in first-appearance order per class.
  std::vector<std::vector<std::pair<int32_t, double>>> uses(nc);
  for (size_t f = 0; f < fs.size(); ++f) {
    const auto c = static_cast<size_t>(p.flow_class[f]);
    if (!seen[c]) {
      seen[c] = 1;
      cp.bytes[c] = fs.bytes[f];
      cp.latency[c] = fs.latency_ps[f];
    }
    for (uint32_t u = fs.begin[f]; u < fs.begin[f + 1]; ++u) {
      const int32_t l = p.res_class[static_cast<size_t>(local_res[u])];
      auto& v = uses[c];
      auto it = std::find_if(v.begin(), v.end(), [&](const auto& e) { return e.first == l; });
      if (it == v.end())
        v.emplace_back(l, fs.coef[u]);
      else
        it->second += fs.coef[u];
    }
  }
  cp.c_begin.push_back(0);
  std::vector<uint32_t> per_l(nl, 0);
  for (size_t c = 0; c < nc; ++c) {
    for (auto [l, a] : uses[c]) {
      cp.c_res.push_back(l);
      cp.c_a.push_back(a / members[static_cast<size_t>(l)]);
      ++per_l[static_cast<size_t>(l)];
    }
    cp.c_begin.push_back(static_cast<uint32_t>(cp.c_res.size()));
  }
  cp.l_begin.assign(nl + 1, 0);
  for (size_t l = 0; l < nl; ++l) cp.l_begin[l + 1] = cp.l_begin[l] + per_l[l];
  cp.l_cls.resize(cp.c_res.size());
  cp.l_a.resize(cp.c_res.size());
  std::vector<uint32_t> fill(cp.l_begin.begin(), cp.l_begin.end() - 1);
  for (size_t c = 0; c < nc; ++c) {
    for (uint32_t u = cp.c_begin[c]; u < cp.c_begin[c + 1]; ++u) {
      const auto l = static_cast<size_t>(cp.c_res[u]);
      cp.l_cls[fill[l]] = static_cast<int32_t>(c);
      cp.l_a[fill[l]] = cp.c_a[u];
      ++fill[l];
    }
  }
  return cp;
}

// Max-min fair rates of the active classes by progressive filling.
void max_min_rates(const ClassProblem& cp, const std::vector<char>& active,
                   std::vector<double>& rate) {
  const size_t nc = cp.bytes.size(), nl = cp.cap.size();
  std::vector<char> frozen(nc, 0);
  std::vector<double> residual = cp.cap;
  size_t unfrozen = 0;
  for (size_t c = 0; c < nc; ++c) {
    rate[c] = 0;
    if (active[c])
      ++unfrozen;
    else
      frozen[c] = 1;
  }
  std::vector<double> load(nl);
  while (unfrozen > 0) {
    double best = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < nl; ++l) {
      double a = 0;
      for (uint32_t u = cp.l_begin[l]; u < cp.l_begin[l + 1]; ++u) {
        if (!frozen[static_cast<size_t>(cp.l_cls[u])]) a += cp.l_a[u];
      }
      load[l] = a;
      if (a > 0) best = std::min(best, std::max(0.0, residual[l]) / a);
    }
    TRNSIM_ASSERT(std::isfinite(best));  // every flow crosses at least one resource
    const double limit = best * (1 + 1e-12);
    std::vector<size_t> now;
    for (size_t l = 0; l < nl; ++l) {
      if (load[l] <= 0 || std::max(0.0, residual[l]) / load[l] > limit) continue;
      for (uint32_t u = cp.l_begin[l]; u < cp.l_begin[l + 1]; ++u) {
        const auto c = static_cast<size_t>(cp.l_cls[u]);
        if (!frozen[c]) {
          frozen[c] = 1;
          rate[c] = best;
          now.push_back(c);
          --unfrozen;
        }
      }
    }
    for (size_t c : now) {
      for (uint32_t u = cp.c_begin[c]; u < cp.c_begin[c + 1]; ++u) {
        residual[static_cast<size_t>(cp.c_res[u])] -= cp.c_a[u] * rate[c];
      }
    }
  }
}

// Dense local resource numbers in order of first use, and their capacities.
void index_resources(const FlowSet& fs, const CapacityFn& capacity, std::vector<int32_t>& local_res,
                     std::vector<double>& local_cap) {
  std::unordered_map<int64_t, int32_t> index;
  local_res.assign(fs.res.size(), 0);
  local_cap.clear();
  for (size_t u = 0; u < fs.res.size(); ++u) {
    auto [it, inserted] = index.try_emplace(fs.res[u], static_cast<int32_t>(local_cap.size()));
    if (inserted) local_cap.push_back(capacity(fs.res[u]));
    local_res[u] = it->second;
  }
}

}  // namespace

std::vector<double> max_min_share(const FlowSet& fs, const CapacityFn& capacity) {
  std::vector<double> rate(fs.size(), 0);
  if (fs.size() == 0) return rate;
  std::vector<int32_t> local_res;
  std::vector<double> local_cap;
  index_resources(fs, capacity, local_res, local_cap);
  const ClassProblem cp = build(fs, local_res, local_cap, identity_partition(fs, local_cap));
  max_min_rates(cp, std::vector<char>(fs.size(), 1), rate);  // one class per flow, in order
  return rate;
}

StepTiming solve_step(const FlowSet& fs, const CapacityFn& capacity, bool fold) {
  StepTiming out;
  if (fs.size() == 0) return out;
  std::vector<int32_t> local_res;
  std::vector<double> local_cap;
  index_resources(fs, capacity, local_res, local_cap);
  const Partition p = fold ? refine(fs, local_res, local_cap) : identity_partition(fs, local_cap);
  out.flow_classes = static_cast<int64_t>(p.flow_classes);
  out.resource_classes = static_cast<int64_t>(p.resource_classes);
  const ClassProblem cp = build(fs, local_res, local_cap, p);

  const size_t nc = cp.bytes.size();
  std::vector<double> left = cp.bytes, rate(nc, 0), finish(nc, 0);
  std::vector<char> active(nc, 0);
  size_t n_active = 0;
  for (size_t c = 0; c < nc; ++c) {
    if (left[c] > 0) {
      active[c] = 1;
      ++n_active;
    }
  }
  double t = 0;
  while (n_active > 0) {
    max_min_rates(cp, active, rate);
    double dt = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < nc; ++c) {
      if (active[c]) dt = std::min(dt, left[c] / rate[c]);
    }
    t += dt;
    for (size_t c = 0; c < nc; ++c) {
      if (!active[c]) continue;
      left[c] -= rate[c] * dt;
      if (left[c] <= cp.bytes[c] * 1e-12) {
        active[c] = 0;
        finish[c] = t;
        --n_active;
      }
    }
  }
  int64_t worst = 0;
  for (size_t c = 0; c < nc; ++c) {
    const int64_t end = std::llround(finish[c] * 1e12) + cp.latency[c];
    worst = std::max(worst, end);
  }
  out.duration = Picoseconds(worst);
  return out;
}

}  // namespace trnsim::fabric
