#include "fabric/topology.h"

#include <cmath>

#include "base/error.h"

namespace trnsim::fabric {

namespace {

Picoseconds ns_to_ps(double ns) { return Picoseconds(std::llround(ns * 1000.0)); }

// Boustrophedon order of a mixed-radix box with dimension `fast` varying fastest: consecutive
// elements differ by one in one coordinate, and when the faster dimensions have even sizes the
// last element is a torus neighbour of the first.
std::vector<int64_t> snake(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                           size_t fast) {
  std::vector<size_t> order_dims{fast};
  for (size_t d = 0; d < dims.size(); ++d)
    if (d != fast) order_dims.push_back(d);
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) {
    // Mixed-radix digits, slowest last.
    std::vector<int64_t> digit(dims.size());
    int64_t rest = i;
    for (size_t k = 0; k < order_dims.size(); ++k) {
      digit[k] = rest % dims[order_dims[k]];
      rest /= dims[order_dims[k]];
    }
    int64_t chip = 0;
    for (size_t k = 0; k < order_dims.size(); ++k) {
      // Run index: the number the higher digits form; odd runs go backwards.
      int64_t run = 0;
      for (size_t j = order_dims.size(); j-- > k + 1;) run = run * dims[order_dims[j]] + digit[j];
      const int64_t n = dims[order_dims[k]];
      const int64_t x = (run % 2 == 0) ? digit[k] : n - 1 - digit[k];
      chip += x * strides[order_dims[k]];
    }
    out.push_back(chip);
  }
  return out;
}

int64_t gray_inverse_position(int64_t g) {
  // Position x on a ring whose Gray code is g (gray(x) = x ^ (x >> 1)).
  int64_t x = 0;
  for (; g != 0; g >>= 1) x ^= g;
  return x;
}

}  // namespace

const char* link_kind_name(LinkKind k) {
  switch (k) {
    case LinkKind::kTorus:
      return "neuronlink";
    case LinkKind::kTorusOuter:
      return "neuronlink-outer";
    case LinkKind::kSwitchUp:
      return "switch-up";
    case LinkKind::kSwitchDown:
      return "switch-down";
    case LinkKind::kEfaUp:
      return "efa-up";
    case LinkKind::kEfaDown:
      return "efa-down";
  }
  return "?";
}

Topology::Topology(const SystemSpec& s)
    : chips_per_server_(s.chips_per_server),
      servers_(s.servers),
      kind_(s.topology),
      dims_(s.torus_dims),
      outer_from_(static_cast<int>(s.torus_dims.size()) - s.outer_dims),
      link_Bps_(s.link_gbps * 1e9),
      outer_Bps_(s.outer_link_gbps * 1e9),
      port_Bps_(s.switch_port_gbps * 1e9),
      efa_Bps_(s.efa_gbps_per_server * 1e9 / static_cast<double>(s.chips_per_server)),
      link_lat_(ns_to_ps(s.link_latency_ns)),
      outer_lat_(ns_to_ps(s.outer_link_latency_ns)),
      switch_lat_(ns_to_ps(s.switch_latency_ns)),
      efa_lat_(ns_to_ps(s.efa_latency_ns)) {
  if (kind_ == ServerTopology::kTorus) {
    links_per_server_ = chips_per_server_ * static_cast<int64_t>(dims_.size()) * 2;
    int64_t stride = 1;
    for (int64_t d : dims_) {
      strides_.push_back(stride);
      stride *= d;
    }
    for (size_t fast = 0; fast < dims_.size(); ++fast) {
      if (dims_[fast] < 2) continue;
      ring_orders_.push_back(snake(dims_, strides_, fast));
    }
    if (ring_orders_.empty()) ring_orders_.push_back({0});
    bool pow2 = true;
    for (int64_t d : dims_) pow2 = pow2 && (d & (d - 1)) == 0;
    hypercube_order_.resize(static_cast<size_t>(chips_per_server_));
    for (int64_t h = 0; h < chips_per_server_; ++h) {
      if (!pow2) {
        hypercube_order_[static_cast<size_t>(h)] = h;
        continue;
      }
      // Index h's bits, split per dimension, are Gray codes of the ring positions.
      int64_t chip = 0, rest = h;
      for (size_t d = 0; d < dims_.size(); ++d) {
        chip += gray_inverse_position(rest % dims_[d]) * strides_[d];
        rest /= dims_[d];
      }
      hypercube_order_[static_cast<size_t>(h)] = chip;
    }
  } else {
    links_per_server_ = 2 * chips_per_server_;
    std::vector<int64_t> id(static_cast<size_t>(chips_per_server_));
    for (int64_t c = 0; c < chips_per_server_; ++c) id[static_cast<size_t>(c)] = c;
    ring_orders_.push_back(id);
    hypercube_order_ = id;
  }
}

LinkInfo Topology::link(int64_t id) const {
  TRNSIM_ASSERT(id >= 0 && id < num_links());
  const int64_t server_links = links_per_server_ * servers_;
  if (id >= server_links) {
    const bool up = (id - server_links) % 2 == 0;
    return {up ? LinkKind::kEfaUp : LinkKind::kEfaDown, efa_Bps_, up ? efa_lat_ : Picoseconds(0)};
  }
  const int64_t local = id % links_per_server_;
  if (kind_ == ServerTopology::kSwitch) {
    const bool up = local % 2 == 0;
    return {up ? LinkKind::kSwitchUp : LinkKind::kSwitchDown, port_Bps_,
            up ? switch_lat_ : Picoseconds(0)};
  }
  const int d = static_cast<int>((local / 2) % static_cast<int64_t>(dims_.size()));
  if (d >= outer_from_) return {LinkKind::kTorusOuter, outer_Bps_, outer_lat_};
  return {LinkKind::kTorus, link_Bps_, link_lat_};
}

void Topology::route(int64_t a, int64_t b, std::vector<int64_t>& out) const {
  if (a == b) return;
  const int64_t sa = server_of(a), sb = server_of(b);
  if (sa != sb) {
    const int64_t base = links_per_server_ * servers_;
    out.push_back(base + 2 * a);
    out.push_back(base + 2 * b + 1);
    return;
  }
  const int64_t off = sa * links_per_server_;
  int64_t la = a - sa * chips_per_server_;
  const int64_t lb = b - sa * chips_per_server_;
  if (kind_ == ServerTopology::kSwitch) {
    out.push_back(off + 2 * la);
    out.push_back(off + 2 * lb + 1);
    return;
  }
  const auto D = static_cast<int64_t>(dims_.size());
  for (size_t d = 0; d < dims_.size(); ++d) {
    const int64_t n = dims_[d], st = strides_[d];
    const int64_t xa = (la / st) % n, xb = (lb / st) % n;
    const int64_t fwd = ((xb - xa) % n + n) % n;
    const bool plus = fwd <= n - fwd;
    const int64_t steps = plus ? fwd : n - fwd;
    int64_t x = xa;
    for (int64_t k = 0; k < steps; ++k) {
      out.push_back(off + (la * D + static_cast<int64_t>(d)) * 2 + (plus ? 0 : 1));
      const int64_t nx = plus ? (x + 1) % n : (x + n - 1) % n;
      la += (nx - x) * st;
      x = nx;
    }
  }
}

int64_t Topology::hops(int64_t a, int64_t b) const {
  std::vector<int64_t> path;
  route(a, b, path);
  return static_cast<int64_t>(path.size());
}

}  // namespace trnsim::fabric
