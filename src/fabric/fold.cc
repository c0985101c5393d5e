#include "fabric/fold.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

namespace trnsim::fabric {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64 finaliser over the running hash: fixed, platform-independent.
  uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t bits(double d) { return std::bit_cast<uint64_t>(d); }

// Renumbers hashes densely in order of first appearance; returns the number of classes.
size_t relabel(const std::vector<uint64_t>& h, std::vector<int32_t>& out) {
  std::unordered_map<uint64_t, int32_t> ids;
  ids.reserve(h.size());
  out.resize(h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    auto [it, inserted] = ids.try_emplace(h[i], static_cast<int32_t>(ids.size()));
    out[i] = it->second;
  }
  return ids.size();
}

// A colour from the old colour and the sorted multiset of (neighbour colour, coefficient).
uint64_t recolour(uint64_t salt, int32_t old, std::vector<std::pair<uint64_t, uint64_t>>& ms) {
  std::sort(ms.begin(), ms.end());
  uint64_t h = mix(salt, static_cast<uint64_t>(old));
  for (auto [a, b] : ms) h = mix(mix(h, a), b);
  return h;
}

// Distinctions travel one flow-resource hop per round, so a long chain of unequal loads needs
// many rounds; past this the step is solved unfolded.
constexpr int kMaxRounds = 256;

}  // namespace

Partition refine(const FlowSet& fs, const std::vector<int32_t>& local_res,
                 const std::vector<double>& cap) {
  const size_t nf = fs.size(), nr = cap.size();
  // Resource -> uses (flow, coefficient), CSR.
  std::vector<uint32_t> rb(nr + 1, 0);
  for (int32_t r : local_res) ++rb[static_cast<size_t>(r) + 1];
  for (size_t r = 0; r < nr; ++r) rb[r + 1] += rb[r];
  std::vector<uint32_t> rflow(local_res.size());
  std::vector<double> rcoef(local_res.size());
  {
    std::vector<uint32_t> fill(rb.begin(), rb.end() - 1);
    for (size_t f = 0; f < nf; ++f) {
      for (uint32_t u = fs.begin[f]; u < fs.begin[f + 1]; ++u) {
        const auto r = static_cast<size_t>(local_res[u]);
        rflow[fill[r]] = static_cast<uint32_t>(f);
        rcoef[fill[r]] = fs.coef[u];
        ++fill[r];
      }
    }
  }
  Partition p;
  std::vector<uint64_t> fh(nf), rh(nr);
  for (size_t f = 0; f < nf; ++f)
    fh[f] = mix(mix(1, bits(fs.bytes[f])), static_cast<uint64_t>(fs.latency_ps[f]));
  for (size_t r = 0; r < nr; ++r) rh[r] = mix(2, bits(cap[r]));
  p.flow_classes = relabel(fh, p.flow_class);
  p.resource_classes = relabel(rh, p.res_class);
  std::vector<std::pair<uint64_t, uint64_t>> ms;
  bool stable = false;
  for (int round = 0; round < kMaxRounds && !stable; ++round) {
    for (size_t r = 0; r < nr; ++r) {
      ms.clear();
      for (uint32_t u = rb[r]; u < rb[r + 1]; ++u)
        ms.emplace_back(static_cast<uint64_t>(p.flow_class[rflow[u]]), bits(rcoef[u]));
      rh[r] = recolour(3, p.res_class[r], ms);
    }
    std::vector<int32_t> new_res;
    const size_t nrc = relabel(rh, new_res);
    for (size_t f = 0; f < nf; ++f) {
      ms.clear();
      for (uint32_t u = fs.begin[f]; u < fs.begin[f + 1]; ++u)
        ms.emplace_back(static_cast<uint64_t>(new_res[static_cast<size_t>(local_res[u])]),
                        bits(fs.coef[u]));
      fh[f] = recolour(4, p.flow_class[f], ms);
    }
    std::vector<int32_t> new_flow;
    const size_t nfc = relabel(fh, new_flow);
    stable = nfc == p.flow_classes && nrc == p.resource_classes;
    p.res_class.swap(new_res);
    p.flow_class.swap(new_flow);
    p.flow_classes = nfc;
    p.resource_classes = nrc;
  }
  // An unstable partition is not known to be equitable: solve unfolded rather than risk it.
  return stable ? p : identity_partition(fs, cap);
}

Partition identity_partition(const FlowSet& fs, const std::vector<double>& cap) {
  Partition p;
  p.flow_class.resize(fs.size());
  p.res_class.resize(cap.size());
  for (size_t f = 0; f < fs.size(); ++f) p.flow_class[f] = static_cast<int32_t>(f);
  for (size_t r = 0; r < cap.size(); ++r) p.res_class[r] = static_cast<int32_t>(r);
  p.flow_classes = fs.size();
  p.resource_classes = cap.size();
  return p;
}

}  // namespace trnsim::fabric
