// Topologies: routes, ring orders and hypercube numbering against hand-counted hop counts.
#include "fabric/topology.h"

#include <gtest/gtest.h>

#include <set>

#include "base/error.h"
#include "fabric/network.h"

namespace trnsim::fabric {
namespace {

TEST(Topology, TorusRoutesTakeTheShortWayRound) {
  const Topology t(load_system("trn1.32xlarge"));  // 4 x 4
  EXPECT_EQ(t.hops(0, 1), 1);
  EXPECT_EQ(t.hops(0, 3), 1);  // wrap-around
  EXPECT_EQ(t.hops(0, 2), 2);
  EXPECT_EQ(t.hops(0, 10), 4);  // (2, 2)
  EXPECT_EQ(t.hops(5, 5), 0);
  std::vector<int64_t> path;
  t.route(0, 5, path);  // x then y
  ASSERT_EQ(path.size(), 2u);
  EXPECT_EQ(t.link(path[0]).kind, LinkKind::kTorus);
}

TEST(Topology, EveryRingOrderIsAHamiltonianCycleOfNeighbours) {
  for (const char* name : {"trn1.32xlarge", "trn2-ultraserver"}) {
    const Topology t(load_system(name));
    ASSERT_EQ(t.server_ring_orders().size(), name[3] == '1' ? 2u : 3u);
    for (const auto& order : t.server_ring_orders()) {
      ASSERT_EQ(static_cast<int64_t>(order.size()), t.chips());
      EXPECT_EQ(std::set<int64_t>(order.begin(), order.end()).size(), order.size());
      for (size_t i = 0; i < order.size(); ++i)
        EXPECT_EQ(t.hops(order[i], order[(i + 1) % order.size()]), 1) << name << " " << i;
    }
  }
}

TEST(Topology, HypercubePartnersAreNeighbours) {
  const Topology t(load_system("trn2.48xlarge"));
  const auto& h = t.server_hypercube_order();
  for (int64_t p = 0; p < 16; ++p)
    for (int64_t d = 1; d < 16; d *= 2) EXPECT_EQ(t.hops(h[p], h[p ^ d]), 1) << p << " " << d;
}

TEST(Topology, SwitchAndEfaRoutes) {
  const Topology t(load_system("trn4-ultracluster"));
  EXPECT_EQ(t.chips(), 32768);
  std::vector<int64_t> path;
  t.route(3, 100, path);
  ASSERT_EQ(path.size(), 2u);
  EXPECT_EQ(t.link(path[0]).kind, LinkKind::kSwitchUp);
  EXPECT_EQ(t.link(path[1]).kind, LinkKind::kSwitchDown);
  path.clear();
  t.route(3, 128 * 7 + 5, path);
  ASSERT_EQ(path.size(), 2u);
  EXPECT_EQ(t.link(path[0]).kind, LinkKind::kEfaUp);
  EXPECT_EQ(t.link(path[1]).kind, LinkKind::kEfaDown);
  EXPECT_DOUBLE_EQ(t.link(path[0]).bytes_per_s, 25600e9 / 8 / 128);
}

TEST(Network, CoreRanksFillAChipFirstAndShareItsCcDma) {
  Placement pl;
  pl.ranks = 4;
  const Network n(load_system("trn1.32xlarge"), pl);
  EXPECT_EQ(n.ranks_per_chip(), 2);
  EXPECT_EQ(n.chip_of(0), n.chip_of(1));
  EXPECT_NE(n.chip_of(1), n.chip_of(2));
  EXPECT_EQ(n.topology().hops(n.chip_of(1), n.chip_of(2)), 1);
  // 6 CC-cores x 1 engine x 27.2 GB/s, half per NeuronCore.
  EXPECT_DOUBLE_EQ(n.dma_bytes_per_s(), 3 * 27.2e9);
  pl.unit = RankUnit::kChip;
  EXPECT_DOUBLE_EQ(Network(load_system("trn1.32xlarge"), pl).dma_bytes_per_s(), 6 * 27.2e9);
}

TEST(Network, TooManyRanksNamesTheServersNeeded) {
  Placement pl;
  pl.unit = RankUnit::kChip;
  pl.ranks = 64;
  EXPECT_THROW(Network(load_system("trn1.32xlarge"), pl), InputError);
}

}  // namespace
}  // namespace trnsim::fabric
