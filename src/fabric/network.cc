#include "fabric/network.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace trnsim::fabric {

namespace {

Picoseconds ns_ps(double ns) { return Picoseconds(std::llround(ns * 1000.0)); }

// Ranks of every used chip, following a local chip order, server by server.
std::vector<int32_t> rank_order(const std::vector<int64_t>& chip_order,
                                const std::vector<int64_t>& slot_of_chip, int64_t ranks, int rpc,
                                int64_t rps) {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(ranks));
  const int64_t servers = (ranks + rps - 1) / rps;
  for (int64_t s = 0; s < servers; ++s) {
    for (int64_t chip : chip_order) {
      const int64_t slot = slot_of_chip[static_cast<size_t>(chip)];
      if (slot < 0) continue;
      for (int k = 0; k < rpc; ++k) {
        const int64_t r = s * rps + slot * rpc + k;
        if (r < ranks && r < (s + 1) * rps) out.push_back(static_cast<int32_t>(r));
      }
    }
  }
  return out;
}

}  // namespace

Network::Network(const SystemSpec& spec, const Placement& pl)
    : spec_(&spec), topo_(spec), ranks_(pl.ranks) {
  const auto& chip = spec.chip.chip;
  const int lnc = pl.lnc > 0 ? pl.lnc : spec.lnc;
  if (pl.unit == RankUnit::kCore && chip.cores % lnc != 0) {
    throw InputError("--lnc", "",
                     fmt::format("{} cores per chip do not group by {}", chip.cores, lnc));
  }
  ranks_per_chip_ = pl.unit == RankUnit::kChip ? 1 : chip.cores / lnc;
  const int64_t server_capacity = ranks_per_chip_ * topo_.chips_per_server();
  ranks_per_server_ =
      pl.ranks_per_server > 0 ? pl.ranks_per_server : std::min<int64_t>(ranks_, server_capacity);
  if (ranks_ < 1) throw InputError("--ranks", "", "at least one rank");
  if (ranks_per_server_ > server_capacity) {
    throw InputError("--ranks-per-server", "",
                     fmt::format("{} ranks do not fit a server of {} chips x {} ranks",
                                 ranks_per_server_, topo_.chips_per_server(), ranks_per_chip_));
  }
  if (servers_used() > topo_.servers()) {
    throw InputError(
        "--ranks", "",
        fmt::format("{} ranks at {} per server need {} servers; {} has {} (set "
                    "--servers or cluster.servers)",
                    ranks_, ranks_per_server_, servers_used(), spec.name, topo_.servers()));
  }
  near_memory_ = spec.chip.core.features.near_memory_accumulation;
  const double cores_per_rank = pl.unit == RankUnit::kChip ? chip.cores : lnc;
  const double engines = chip.cc_cores * spec.dma_engines_per_cc_core * cores_per_rank / chip.cores;
  dma_Bps_ = engines * spec.chip.core.dma.engine_bandwidth_theoretical_gbps * 1e9;
  hbm_Bps_ = chip.hbm.bandwidth_gbps * 1e9;
  step_lat_ = ns_ps(spec.step_latency_ns);
  core_lat_ = ns_ps(spec.core_link_latency_ns);

  const int64_t chips_used = (ranks_per_server_ + ranks_per_chip_ - 1) / ranks_per_chip_;
  const auto& order0 = topo_.server_ring_orders()[0];
  used_chips_.assign(order0.begin(), order0.begin() + chips_used);
  std::vector<int64_t> slot(static_cast<size_t>(topo_.chips_per_server()), -1);
  for (size_t i = 0; i < used_chips_.size(); ++i)
    slot[static_cast<size_t>(used_chips_[i])] = static_cast<int64_t>(i);
  for (const auto& o : topo_.server_ring_orders())
    ring_orders_.push_back(rank_order(o, slot, ranks_, ranks_per_chip_, ranks_per_server_));
  // Both directions of every cycle (links are full duplex); two ranks have only one cycle.
  if (ranks_ > 2) {
    const size_t forward = ring_orders_.size();
    for (size_t i = 0; i < forward; ++i) {
      std::vector<int32_t> rev = ring_orders_[i];
      for (size_t b = 0; b < rev.size(); b += static_cast<size_t>(ranks_per_server_)) {
        const size_t e = std::min(rev.size(), b + static_cast<size_t>(ranks_per_server_));
        std::reverse(rev.begin() + static_cast<std::ptrdiff_t>(b),
                     rev.begin() + static_cast<std::ptrdiff_t>(e));
      }
      ring_orders_.push_back(std::move(rev));
    }
  }
  hypercube_order_ =
      rank_order(topo_.server_hypercube_order(), slot, ranks_, ranks_per_chip_, ranks_per_server_);
}

int64_t Network::chip_of(int64_t rank) const {
  const int64_t s = rank / ranks_per_server_;
  const int64_t slot = (rank % ranks_per_server_) / ranks_per_chip_;
  return s * topo_.chips_per_server() + used_chips_[static_cast<size_t>(slot)];
}

double Network::capacity(int64_t r) const {
  const int64_t links = topo_.num_links();
  if (r < links) return topo_.link(r).bytes_per_s;
  if (r < links + ranks_) return dma_Bps_;
  return hbm_Bps_;
}

std::string Network::resource_name(int64_t r) const {
  const int64_t links = topo_.num_links();
  if (r < links) return fmt::format("link {} ({})", r, link_kind_name(topo_.link(r).kind));
  if (r < links + ranks_) return fmt::format("rank {} collective DMA", r - links);
  return fmt::format("chip {} HBM", r - links - ranks_);
}

namespace {

void add_use(std::vector<Use>& out, size_t from, int64_t resource, double coef) {
  for (size_t i = from; i < out.size(); ++i) {
    if (out[i].resource == resource) {
      out[i].coef += coef;
      return;
    }
  }
  out.push_back({resource, coef});
}

}  // namespace

Picoseconds Network::path(const Transfer& x, std::vector<Use>& out) const {
  const size_t first = out.size();
  const int64_t links = topo_.num_links(), hbm = links + ranks_;
  const int32_t exec = x.executor();
  const int64_t ce = chip_of(exec);
  const int operands = x.operands();
  const int dma = std::max(1, near_memory_ ? operands - 1 : operands);
  add_use(out, first, links + exec, dma);
  thread_local std::vector<int64_t> route;
  // Links from chip a to chip b, and their latency (core-to-core on one chip).
  auto hop = [&](int64_t a, int64_t b, bool other_rank) {
    Picoseconds lat{0};
    if (a == b) return other_rank ? core_lat_ : lat;
    route.clear();
    topo_.route(a, b, route);
    for (int64_t l : route) {
      add_use(out, first, l, 1.0);
      lat += topo_.link(l).latency;
    }
    return lat;
  };
  Picoseconds in{0}, outl{0};
  if (x.reduce) add_use(out, first, hbm + ce, 1.0);
  for (int32_t s : {x.src, x.src2, x.src3}) {
    if (s < 0) continue;
    const int64_t cs = chip_of(s);
    add_use(out, first, hbm + cs, 1.0);
    if (cs != ce) in = std::max(in, hop(cs, ce, false));
  }
  for (int32_t d : {x.dst, x.dst2}) {
    if (d < 0) continue;
    const int64_t cd = chip_of(d);
    add_use(out, first, hbm + cd, 1.0);
    outl = std::max(outl, hop(ce, cd, d != exec));
  }
  return step_lat_ + in + outl;
}

}  // namespace trnsim::fabric
