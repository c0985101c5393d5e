// The chips of a system and the links between them, implicit: links are numbered by formula
// (chip, dimension, direction) and routes are computed on demand, so a 100,000-chip cluster
// costs no memory until a transfer asks for its path.
//
// Chip numbering: server s holds chips [s*C, (s+1)*C). Inside a torus server, chip
// c = x0 + X0*(x1 + X1*(x2 ...)). Links, each one direction:
//   torus   link(c, d, dir): from c to its neighbour in dimension d (dir 0 = +1, 1 = -1)
//   switch  up(c), down(c): chip c's NeuronSwitch port
//   EFA     up(c), down(c): chip c's EFA NIC to the spine (non-blocking)
#pragma once

#include <cstdint>
#include <vector>

#include "base/units.h"
#include "fabric/system.h"

namespace trnsim::fabric {

enum class LinkKind : uint8_t { kTorus, kTorusOuter, kSwitchUp, kSwitchDown, kEfaUp, kEfaDown };
const char* link_kind_name(LinkKind k);

struct LinkInfo {
  LinkKind kind;
  double bytes_per_s;
  Picoseconds latency;
};

class Topology {
 public:
  explicit Topology(const SystemSpec& spec);

  int64_t chips() const { return chips_per_server_ * servers_; }
  int64_t servers() const { return servers_; }
  int64_t chips_per_server() const { return chips_per_server_; }
  int64_t server_of(int64_t chip) const { return chip / chips_per_server_; }
  bool is_torus() const { return kind_ == ServerTopology::kTorus; }
  // A torus server's dimension sizes (empty on a switch); local chip c has coordinate
  // (c / stride(d)) % dims()[d], stride(d) = the product of the sizes before d.
  const std::vector<int64_t>& dims() const { return dims_; }

  int64_t num_links() const { return links_per_server_ * servers_ + 2 * chips(); }
  LinkInfo link(int64_t id) const;

  // Appends the links from chip a to chip b (none when a == b): dimension order on a torus,
  // shortest way round each ring (+1 on a tie); up and down through a switch; EFA up and down
  // between servers.
  void route(int64_t a, int64_t b, std::vector<int64_t>& out) const;
  int64_t hops(int64_t a, int64_t b) const;

  // Hamiltonian orders of one server's chips (local numbers) that a ring may follow: on a
  // torus, one boustrophedon (snake) per dimension taken as the fastest, so consecutive chips
  // and the wrap-around are neighbours; on a switch, the identity.
  const std::vector<std::vector<int64_t>>& server_ring_orders() const { return ring_orders_; }
  // Hypercube numbering of a server's chips (Gray code per torus dimension) when every torus
  // size is a power of two, so that index partners at distance 2^k are torus neighbours;
  // else the identity. Used by recursive halving-doubling.
  const std::vector<int64_t>& server_hypercube_order() const { return hypercube_order_; }

 private:
  int64_t chips_per_server_, servers_, links_per_server_;
  ServerTopology kind_;
  std::vector<int64_t> dims_, strides_;
  int outer_from_;  // first outer dimension
  double link_Bps_, outer_Bps_, port_Bps_, efa_Bps_;
  Picoseconds link_lat_, outer_lat_, switch_lat_, efa_lat_;
  std::vector<std::vector<int64_t>> ring_orders_;
  std::vector<int64_t> hypercube_order_;
};

}  // namespace trnsim::fabric
