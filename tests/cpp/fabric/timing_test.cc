// Timing mode against closed forms, folded against per-rank, and the calibration sweep.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "fabric/collective.h"

namespace trnsim::fabric {
namespace {

const std::string kData = std::string(TRNSIM_TEST_DATA_DIR) + "/fabric/";

Fabric make(const std::string& system, RankUnit unit, int64_t ranks,
            std::vector<arch::Override> sets = {}, int64_t ranks_per_server = 0) {
  Placement pl;
  pl.unit = unit;
  pl.ranks = ranks;
  pl.ranks_per_server = ranks_per_server;
  return Fabric(load_system(system, sets), load_runtime(kDefaultRuntime), pl);
}

CollectiveResult sim(const Fabric& f, Op op, int64_t bytes, const std::string& algo = "auto",
                     bool folded = true) {
  CollectiveRequest req;
  req.op = op;
  req.bytes = bytes;
  req.algorithm = algo;
  req.folded = folded;
  return f.simulate(req);
}

double us(Picoseconds t) { return static_cast<double>(t.v) * 1e-6; }

// The data movement alone: a step's time less the handshakes that open it (runtime.h).
double data_us(const CollectiveResult& r) { return us(r.device - r.timing.sync); }

// Ring all-reduce on N chips of a switch whose ports bound everything: each of the 2(N-1) steps
// opens with a round trip with each ring neighbour (2 x sync.peer_us), then moves S/N per chip
// through its port at B, plus the step latency and one switch pass; the call adds the launch
// cost's non-overlapped part.
TEST(Timing, RingAllReduceMatchesItsClosedForm) {
  const Fabric f = make(kData + "link_bound_switch.toml", RankUnit::kChip, 8);
  const double B = 2.56e12, lat = 1.5e-6 + 300e-9;
  const double h = f.runtime().peer_sync_us * 1e-6;
  const auto not_overlapped =
      Picoseconds(std::llround((f.runtime().launch_us - f.runtime().overlap_us) * 1e6));
  for (int64_t bytes : {8 * kMiB, 256 * kMiB, 1 * kGiB}) {
    const CollectiveResult r = sim(f, Op::kAllReduce, bytes, "ring");
    // Two channels (both directions) share each port: S/N per chip per step either way.
    const double step = static_cast<double>(bytes) / 8 / B + lat + 2 * h;
    EXPECT_NEAR(us(r.device), 14 * step * 1e6, 1e-3) << bytes;
    EXPECT_NEAR(us(r.timing.sync), 14 * 2 * h * 1e6, 1e-6) << bytes;
    EXPECT_EQ(r.time, not_overlapped + r.device);
  }
  // Approaches 2(N-1)/N * S / B as S grows: the latency share shrinks.
  auto ratio = [&](int64_t bytes) {
    const double bound = 2.0 * 7 / 8 * static_cast<double>(bytes) / B;
    return data_us(sim(f, Op::kAllReduce, bytes, "ring")) * 1e-6 / bound;
  };
  EXPECT_GT(ratio(64 * kMiB), ratio(kGiB));
  EXPECT_GT(ratio(kGiB), ratio(16 * kGiB));
  EXPECT_NEAR(ratio(16 * kGiB), 1.0, 0.003);
}

TEST(Timing, AllToAllOnTheSwitchPaysNoHopCount) {
  const Fabric sw = make(kData + "link_bound_switch.toml", RankUnit::kChip, 64);
  const Fabric torus = make(kData + "link_bound_torus.toml", RankUnit::kChip, 64);
  const int64_t bytes = 256 * kMiB;
  const CollectiveResult s = sim(sw, Op::kAllToAll, bytes);
  const CollectiveResult t = sim(torus, Op::kAllToAll, bytes);
  // Switch: each port carries 63/64 of S out and in: one step of that at the port bandwidth,
  // after a round trip with each of the 63 peers.
  const double closed = 63.0 / 64 * static_cast<double>(bytes) / 2.56e12 + 1.8e-6;
  EXPECT_NEAR(data_us(s) * 1e-6 / closed, 1.0, 0.001);
  EXPECT_NEAR(us(s.timing.sync), 63 * sw.runtime().peer_sync_us, 1e-6);
  // Torus with the same bandwidth per chip: the average route is 3 hops, so links carry ~3x
  // the bytes a port does.
  EXPECT_GT(data_us(t) / data_us(s), 2.5);
}

TEST(Timing, TheTwoDimensionalTorusBeatsARingOfTheSameSize) {
  const Fabric torus = make("trn2.48xlarge", RankUnit::kChip, 16);
  const Fabric ring = make(kData + "ring16.toml", RankUnit::kChip, 16);
  // Each with its own choice (rdh on the 4x4 torus, whose partners are neighbours; the ring on
  // the 16-chip ring, where rdh's are not): whole times, handshakes included.
  for (int64_t bytes : {64 * kKiB, 4 * kMiB, 32 * kMiB}) {
    EXPECT_LT(sim(torus, Op::kAllReduce, bytes).device, sim(ring, Op::kAllReduce, bytes).device)
        << bytes;
  }
  // The networks alone: both pay the same handshakes for the same algorithm.
  for (int64_t bytes : {kMiB, 256 * kMiB})
    EXPECT_LT(data_us(sim(torus, Op::kAllToAll, bytes)), data_us(sim(ring, Op::kAllToAll, bytes)));
  EXPECT_LE(data_us(sim(torus, Op::kAllReduce, kGiB)), data_us(sim(ring, Op::kAllReduce, kGiB)));
}

// Folding (symmetry classes, uniform steps simulated once) must not change any time.
TEST(Timing, FoldedAgreesWithPerRank) {
  struct Case {
    std::string system;
    RankUnit unit;
    int64_t ranks, servers, per_server;
    Op op;
    std::string algo;
  };
  const std::vector<Case> cases = {
      {"trn1.32xlarge", RankUnit::kChip, 16, 1, 0, Op::kAllReduce, "ring"},
      {"trn1.32xlarge", RankUnit::kCore, 32, 1, 0, Op::kAllReduce, "ring"},
      {"trn2.48xlarge", RankUnit::kChip, 16, 1, 0, Op::kAllReduce, "mesh"},
      {"trn2.48xlarge", RankUnit::kChip, 16, 1, 0, Op::kAllReduce, "rdh"},
      {"trn2.48xlarge", RankUnit::kChip, 16, 1, 0, Op::kAllGather, "ring"},
      {"trn2-ultraserver", RankUnit::kChip, 64, 1, 0, Op::kAllReduce, "ring"},
      {"trn2-ultraserver", RankUnit::kChip, 64, 1, 0, Op::kAllToAll, "mesh"},
      {"trn3-ultraserver-144", RankUnit::kChip, 144, 1, 0, Op::kReduceScatter, "ring"},
      {"trn2.48xlarge", RankUnit::kChip, 64, 4, 16, Op::kAllReduce, "hierarchical"},
      {"trn4-ultraserver", RankUnit::kChip, 32, 4, 8, Op::kAllReduce, "hierarchical"},
      {"trn2.48xlarge", RankUnit::kChip, 32, 2, 16, Op::kAllReduce, "ring"},
      {"trn2.48xlarge", RankUnit::kChip, 16, 1, 0, Op::kAllReduce, "torus-ring"},
      {"trn3-ultraserver-64", RankUnit::kChip, 128, 2, 64, Op::kAllToAll, "pairwise"},
      {"trn2.48xlarge", RankUnit::kChip, 32, 2, 16, Op::kAllToAll, "pairwise"},
  };
  for (const Case& c : cases) {
    std::vector<arch::Override> sets;
    if (c.servers > 1) sets.push_back({"cluster.servers", std::to_string(c.servers)});
    const Fabric f = make(c.system, c.unit, c.ranks, sets, c.per_server);
    const int64_t bytes = 4 * c.ranks * c.ranks * 64 * 3;  // every block splits evenly
    const CollectiveResult folded = sim(f, c.op, bytes, c.algo, true);
    const CollectiveResult per_rank = sim(f, c.op, bytes, c.algo, false);
    // Equal up to the rounding of each step to whole picoseconds.
    EXPECT_NEAR(static_cast<double>(folded.device.v), static_cast<double>(per_rank.device.v),
                static_cast<double>(c.ranks) * 4)
        << c.system << " " << c.algo;
    EXPECT_EQ(folded.timing.hbm_read, per_rank.timing.hbm_read) << c.system << " " << c.algo;
    EXPECT_EQ(folded.timing.link_bytes, per_rank.timing.link_bytes) << c.system;
    int64_t classes = 0, flows = 0;
    for (const auto& p : folded.timing.phases) {
      classes = std::max(classes, p.flow_classes);
      flows = std::max(flows, p.flows);
    }
    EXPECT_LT(classes, flows) << c.system << " " << c.algo << ": folding should find symmetry";
  }
}

TEST(Timing, HbmTrafficOfATwoRankAllReduce) {
  const Fabric f = make("trn1.32xlarge", RankUnit::kCore, 2);
  const int64_t S = 64 * kMiB;
  const CollectiveResult r = sim(f, Op::kAllReduce, S, "ring");
  // Reduce-scatter: each core sends S/2 with a reduction (two reads, one write); all-gather:
  // S/2 copied (one read, one write). Both cores are on chip 0.
  const auto chip = static_cast<size_t>(f.network().chip_of(0));
  EXPECT_EQ(r.timing.hbm_read[chip], 3 * S);
  EXPECT_EQ(r.timing.hbm_write[chip], 2 * S);
  EXPECT_EQ(r.timing.link_bytes, 0);
}

TEST(Timing, DeterministicAndSelectsByTheDocumentedRule) {
  const Fabric f = make("trn2.48xlarge", RankUnit::kChip, 16);
  EXPECT_EQ(sim(f, Op::kAllReduce, 64 * kKiB).algorithm, "mesh");
  EXPECT_EQ(sim(f, Op::kAllReduce, 8 * kMiB).algorithm, "rdh");
  // The chips fill the 4 x 4 torus: a ring per dimension.
  EXPECT_EQ(sim(f, Op::kAllReduce, 256 * kMiB).algorithm, "torus-ring");
  EXPECT_EQ(sim(make("trn2.48xlarge", RankUnit::kChip, 12), Op::kAllReduce, 256 * kMiB).algorithm,
            "ring");
  EXPECT_EQ(sim(f, Op::kAllToAll, 256 * kMiB).algorithm, "mesh");
  EXPECT_EQ(sim(f, Op::kAllReduce, 8 * kKiB).algorithm, "single-step-mesh");
  // Logical cores (LNC=2, 4 a chip) pair up: KangaRing above the RDH range.
  const Fabric cores = make("trn2.48xlarge", RankUnit::kCore, 64);
  EXPECT_EQ(sim(cores, Op::kAllReduce, 256 * kMiB).algorithm, "kangaring");
  EXPECT_EQ(sim(cores, Op::kReduceScatter, 256 * kMiB).algorithm, "kangaring");
  EXPECT_EQ(sim(make("trn2.48xlarge", RankUnit::kCore, 48), Op::kAllReduce, 8 * kMiB).algorithm,
            "kangaring");
  const Fabric g = make("trn2.48xlarge", RankUnit::kChip, 48, {{"cluster.servers", "3"}});
  EXPECT_EQ(sim(g, Op::kAllReduce, 64 * kKiB).algorithm, "hierarchical(ring+ring)");
  EXPECT_EQ(sim(g, Op::kReduceScatter, 64 * kKiB).algorithm, "hierarchical(ring+ring)");
  const Fabric h = make("trn2.48xlarge", RankUnit::kCore, 128, {{"cluster.servers", "2"}});
  EXPECT_EQ(sim(h, Op::kAllGather, 256 * kMiB).algorithm, "hierarchical(kangaring+ring)");
  EXPECT_EQ(sim(h, Op::kAllGather, 8 * kMiB).algorithm, "hierarchical(kangaring+rdh)");
  EXPECT_EQ(sim(f, Op::kAllReduce, 3 * kMiB).time, sim(f, Op::kAllReduce, 3 * kMiB).time);
  EXPECT_THROW(sim(make("trn2.48xlarge", RankUnit::kChip, 12), Op::kAllReduce, kMiB, "rdh"),
               InputError);
}

// Broadcast of 1 GiB over the 32 cores of a trn1.32xlarge: the mesh sends 31 copies through
// the root's collective DMA (31 S / B); the pipeline about S / B plus the fill, and the rule
// picks it from select.mesh_max_bytes.
TEST(Timing, PipelinedBroadcastBeatsTheRootsCopies) {
  const Fabric f = make("trn1.32xlarge", RankUnit::kCore, 32);
  const double B = f.network().dma_bytes_per_s(), S = static_cast<double>(kGiB);
  const CollectiveResult mesh = sim(f, Op::kBroadcast, kGiB, "mesh");
  const CollectiveResult pipe = sim(f, Op::kBroadcast, kGiB);
  EXPECT_EQ(pipe.algorithm.rfind("pipeline(", 0), 0u) << pipe.algorithm;
  EXPECT_GT(us(mesh.device) * 1e-6, 31 * S / B);
  EXPECT_GT(us(pipe.device) * 1e-6, S / B);
  EXPECT_LT(us(pipe.device) * 1e-6, 1.5 * S / B);
  EXPECT_EQ(sim(f, Op::kBroadcast, 64 * kKiB).algorithm, "mesh");
}

TEST(Timing, TheSmallestCollectiveCostsTheLaunch) {
  const Fabric f = make("trn1.32xlarge", RankUnit::kCore, 2);
  EXPECT_EQ(sim(f, Op::kAllReduce, 8).time, Picoseconds(58'000'000));
}

// Handshakes (runtime.h, sync.*): a step opens with one round trip per peer on the server,
// peer after peer, so a mesh step with r-1 peers costs (r-1) x sync.peer_us and a ring step
// with its two neighbours 2 x; an exchange across EFA goes through each server's proxy, one
// exchange after another; a rank with nothing to move in a step waits for no one.
TEST(Timing, HandshakesCountPeersPerStep) {
  const Fabric f = make("trn1.32xlarge", RankUnit::kCore, 32);
  const double h = f.runtime().peer_sync_us;
  const CollectiveResult mesh = sim(f, Op::kAllGather, 64 * kKiB, "mesh");
  EXPECT_NEAR(us(mesh.timing.sync), 31 * h, 1e-6);
  // The ring: 31 steps, each with the distinct neighbours of the rank on all its channels (a
  // channel per ring order and direction; RingAllReduceMatchesItsClosedForm has exactly 2).
  const double ring = us(sim(f, Op::kAllGather, 64 * kKiB, "ring").timing.sync) / (31 * h);
  EXPECT_NEAR(ring, std::round(ring), 1e-9);
  EXPECT_GE(ring, 2);
  EXPECT_LE(ring, 4);
  // All-to-all-v with data only from rank 0 to rank 5: one peer each, one round trip.
  CollectiveRequest req;
  req.op = Op::kAllToAllV;
  req.bytes = 4 * 32 * 32;
  req.a2av.assign(32, std::vector<int64_t>(32, 0));
  req.a2av[0][5] = 256;
  req.algorithm = "mesh";
  EXPECT_NEAR(us(f.simulate(req).timing.sync), h, 1e-6);
  // Two servers of 32 ranks: the inter-server steps pair every rank with one peer across EFA,
  // so each proxy handles 32 exchanges a step.
  const Fabric two = make("trn1.32xlarge", RankUnit::kCore, 64, {{"cluster.servers", "2"}});
  const CollectiveResult r = sim(two, Op::kAllReduce, kMiB);
  ASSERT_EQ(r.algorithm, "hierarchical(kangaring+rdh)");
  int inter = 0;
  for (const auto& p : r.timing.phases) {
    if (!p.name.starts_with("inter")) continue;
    ++inter;
    EXPECT_NEAR(us(p.sync), 32 * two.runtime().efa_message_us, 1e-6) << p.name;
  }
  EXPECT_EQ(inter, 2);
  // Per-rank and folded agree on the handshakes too.
  EXPECT_EQ(sim(two, Op::kAllReduce, kMiB, "auto", false).timing.sync, r.timing.sync);
  // Proxies serving 8 ranks each: 8 exchanges one after another, 4 proxies at once.
  Placement pl;
  pl.ranks = 64;
  const Fabric eight(load_system("trn1.32xlarge", {{"cluster.servers", "2"}}),
                     load_runtime(kDefaultRuntime, {{"sync.ranks_per_proxy", "8"}}), pl);
  for (const auto& p : sim(eight, Op::kAllReduce, kMiB).timing.phases)
    if (p.name.starts_with("inter"))
      EXPECT_NEAR(us(p.sync), 8 * eight.runtime().efa_message_us, 1e-6) << p.name;
}

// VALIDATION.md s4, each size within 15 %.
TEST(Validation, TwoRankAllReduceSweepWithin15Percent) {
  for (const SweepCheck& c : allreduce_2rank_check()) {
    const double err = (c.simulated_us - c.measured_us) / c.measured_us;
    EXPECT_LT(std::abs(err), 0.15) << c.bytes << " B: measured " << c.measured_us
                                   << " us, simulated " << c.simulated_us << " us";
  }
}

}  // namespace
}  // namespace trnsim::fabric
