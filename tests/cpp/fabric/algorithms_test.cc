// KangaRing, single-step mesh and the hierarchical stages: every algo_*.cc registered, results
// against a reference reduction (bf16 bit for bit against a reference that adds in the
// algorithm's documented order), times against closed forms, folded against per-rank.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "base/error.h"
#include "fabric/collective.h"
#include "fabric/kanga_steps.h"
#include "numerics/convert.h"

namespace trnsim::fabric {
namespace {

const num::NumericPolicy kPolicy{};
const num::Format kF32 = num::fp32();
const num::Format kBf = num::bf16();

uint64_t code(const num::Format& f, double v) {
  return num::encode(f, v, num::Rounding::kNearestEven, 0, kPolicy);
}
double value(const num::Format& f, uint64_t c) { return num::decode(f, c); }
double us(Picoseconds t) { return static_cast<double>(t.v) * 1e-6; }

Fabric make(const std::string& system, RankUnit unit, int64_t ranks, int64_t servers = 1,
            int64_t per_server = 0) {
  Placement pl;
  pl.unit = unit;
  pl.ranks = ranks;
  pl.ranks_per_server = per_server;
  std::vector<arch::Override> sets;
  if (servers > 1) sets.push_back({"cluster.servers", std::to_string(servers)});
  return Fabric(load_system(system, sets), load_runtime(kDefaultRuntime), pl);
}

// Small integers (exact in fp32 sums): rank r element e.
double input(int64_t r, int64_t e) { return static_cast<double>((r + 1) * 3 + e % 7); }
// Values whose bf16 sums depend on the order of additions.
double input_bf(int64_t r, int64_t e) {
  const double v = std::ldexp(1.0 + 0.0078125 * static_cast<double>((r * 5 + e * 3) % 11),
                              static_cast<int>((r * 7 + e) % 9) - 4);
  return value(kBf, code(kBf, v));
}

Buffers buffers(const num::Format& f, int64_t ranks, int64_t count,
                double (*fn)(int64_t, int64_t)) {
  Buffers b;
  for (int64_t r = 0; r < ranks; ++r) {
    b.data.emplace_back();
    for (int64_t e = 0; e < count; ++e) b.data.back().push_back(code(f, fn(r, e)));
  }
  return b;
}

double add_bf(std::initializer_list<double> xs) {  // fp32 accumulation, one bf16 rounding
  double acc = 0;
  bool first = true;
  for (double x : xs) {
    acc = first ? x : value(kF32, code(kF32, acc + x));
    first = false;
  }
  return value(kBf, code(kBf, acc));
}

int64_t owner_of(int64_t count, int64_t n, int64_t e) {
  int64_t b = 0;
  while (block_range(count, n, b).off + block_range(count, n, b).len <= e) ++b;
  return b;
}

// Checks all-reduce / reduce-scatter / all-gather results against sums of `input`.
void expect_op(const Fabric& f, Op op, const CollectiveRequest& base, int64_t count,
               const std::string& what) {
  const int64_t n = f.network().ranks();
  CollectiveRequest req = base;
  req.op = op;
  req.bytes = count * 4;
  Buffers b = buffers(kF32, n, count, input);
  f.run(req, b);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t e = 0; e < count; ++e) {
      const int64_t owner = owner_of(count, n, e);
      if (op == Op::kReduceScatter && owner != r) continue;
      double want = 0;
      if (op == Op::kAllGather) {
        want = input(owner, e);
      } else {
        for (int64_t q = 0; q < n; ++q) want += input(q, e);
      }
      ASSERT_EQ(value(kF32, b.data[r][e]), want)
          << what << " " << op_name(op) << " rank " << r << " element " << e;
    }
}

TEST(Algorithms, EveryAlgoFileIsRegistered) {
  const std::filesystem::path dir =
      std::filesystem::path(TRNSIM_TEST_DATA_DIR) / ".." / ".." / ".." / "src" / "fabric";
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    files += e.path().filename().string().starts_with("algo_");
  EXPECT_EQ(files, algorithms().size());
  std::set<std::string_view> names;
  for (const auto& a : algorithms()) names.insert(a.name);
  for (const char* want : {"ring", "kangaring", "mesh", "single-step-mesh", "rdh", "hierarchical"})
    EXPECT_TRUE(names.contains(want)) << want;
}

TEST(Algorithms, KangaRingReducesGathersAndScattersExactly) {
  struct Case {
    const char* system;
    int64_t ranks;
  };
  // Trn2 LNC=2: 4 ranks a chip, 2 pairs; Trn1 LNC=1: 2 ranks a chip; 2 ranks: one pair.
  for (const Case& c : {Case{"trn2.48xlarge", 16}, Case{"trn2.48xlarge", 64},
                        Case{"trn1.32xlarge", 32}, Case{"trn1.32xlarge", 2}}) {
    const Fabric f = make(c.system, RankUnit::kCore, c.ranks);
    CollectiveRequest req;
    req.algorithm = "kangaring";
    for (int64_t count : {c.ranks * 8 + 5, int64_t{3}})
      for (Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather})
        expect_op(f, op, req, count, std::string(c.system) + " " + std::to_string(c.ranks));
  }
}

TEST(Algorithms, KangaRingAppliesOnlyToPairedChipRanks) {
  CollectiveRequest req;
  req.bytes = kMiB;
  req.algorithm = "kangaring";
  EXPECT_THROW(make("trn2.48xlarge", RankUnit::kChip, 16).simulate(req), InputError);
  EXPECT_THROW(make("trn2.48xlarge", RankUnit::kCore, 6).simulate(req), InputError);
  EXPECT_NO_THROW(make("trn2.48xlarge", RankUnit::kCore, 8).simulate(req));
  req.op = Op::kAllToAll;
  EXPECT_THROW(make("trn2.48xlarge", RankUnit::kCore, 8).simulate(req), InputError);
}

// bf16 KangaRing all-reduce: the block a rank owns on channel c is summed by the cycle of c,
// starting at the pair after its own: t = (P+S), then t = (t + P' + S') at every later pair,
// ending with its own pair; each DMA adds in fp32 and rounds once to bf16.
TEST(Algorithms, KangaRingBf16AddsInItsOrder) {
  const Fabric f = make("trn2.48xlarge", RankUnit::kCore, 16);
  const auto& orders = f.network().ring_orders();
  const auto C = static_cast<int64_t>(orders.size());
  const int64_t n = 16, count = n * C * 2;  // two elements per channel slice
  CollectiveRequest req;
  req.dtype = kBf;
  req.bytes = count * 2;
  req.algorithm = "kangaring";
  Buffers b = buffers(kBf, n, count, input_bf);
  f.run(req, b);
  int differs = 0;
  for (int64_t e = 0; e < count; ++e) {
    const int64_t owner = owner_of(count, n, e);
    const Range blk = block_range(count, n, owner);
    int64_t c = 0;
    while (blk.off + block_range(blk.len, C, c).off + block_range(blk.len, C, c).len <= e) ++c;
    const KangaCycle cy = kanga_cycle(orders[static_cast<size_t>(c)], static_cast<size_t>(c));
    int64_t q = 0;
    while (cy.P(q) != owner && cy.S(q) != owner) ++q;
    double t = add_bf({input_bf(cy.P(q + 1), e), input_bf(cy.S(q + 1), e)});
    for (int64_t i = 2; i <= cy.m(); ++i)
      t = add_bf({t, input_bf(cy.P(q + i), e), input_bf(cy.S(q + i), e)});
    double naive = input_bf(0, e);
    for (int64_t r = 1; r < n; ++r) naive = add_bf({naive, input_bf(r, e)});
    for (int64_t r = 0; r < n; ++r) ASSERT_EQ(value(kBf, b.data[r][e]), t) << "element " << e;
    differs += naive != t;
  }
  EXPECT_GT(differs, 0) << "the inputs should make the addition order visible";
}

// Every rank adds the r buffers in rank order, each addition rounded to bf16: all replicas
// equal the rank-order chain.
TEST(Algorithms, SingleStepMeshAddsInRankOrderOnEveryRank) {
  const Fabric f = make("trn2.48xlarge", RankUnit::kCore, 12);
  const int64_t n = 12, count = 9;
  CollectiveRequest req;
  req.dtype = kBf;
  req.bytes = count * 2;
  req.algorithm = "single-step-mesh";
  Buffers b = buffers(kBf, n, count, input_bf);
  EXPECT_EQ(f.run(req, b), "single-step-mesh");
  for (int64_t e = 0; e < count; ++e) {
    double t = input_bf(0, e);
    for (int64_t r = 1; r < n; ++r) t = add_bf({t, input_bf(r, e)});
    for (int64_t r = 0; r < n; ++r) ASSERT_EQ(value(kBf, b.data[r][e]), t) << e;
  }
  req.dtype = kF32;
  req.bytes = 40 * 4;
  expect_op(f, Op::kAllReduce, req, 40, "single-step-mesh");
}

TEST(Algorithms, HierarchicalStagesReduceGatherAndScatterExactly) {
  struct Case {
    int64_t servers;
    const char* intra;
    const char* inter;
  };
  for (const Case& c :
       {Case{3, "ring", "ring"}, Case{3, "kangaring", "ring"}, Case{4, "ring", "rdh"},
        Case{4, "kangaring", "rdh"}, Case{5, "kangaring", "tree"}, Case{3, "ring", "tree"}}) {
    const Fabric f = make("trn2.48xlarge", RankUnit::kCore, 8 * c.servers, c.servers, 8);
    CollectiveRequest req;
    req.algorithm = "hierarchical";
    req.intra = c.intra;
    req.inter = c.inter;
    const std::string what = std::string(c.intra) + "+" + c.inter;
    for (int64_t count : {8 * c.servers * 4 + 7, int64_t{5}}) {
      expect_op(f, Op::kAllReduce, req, count, what);
      if (std::string(c.inter) == "tree") continue;
      expect_op(f, Op::kReduceScatter, req, count, what);
      expect_op(f, Op::kAllGather, req, count, what);
    }
  }
}

TEST(Algorithms, HierarchicalNamesItsStagesAndRefusesWhatDoesNotApply) {
  const Fabric f = make("trn2.48xlarge", RankUnit::kCore, 24, 3, 8);
  CollectiveRequest req;
  req.bytes = 64 * kMiB;
  req.algorithm = "hierarchical";
  EXPECT_EQ(f.simulate(req).algorithm, "hierarchical(kangaring+ring)");
  req.inter = "rdh";  // 3 servers
  EXPECT_THROW(f.simulate(req), InputError);
  req.inter = "tree";
  req.op = Op::kReduceScatter;
  EXPECT_THROW(f.simulate(req), InputError);
  req.inter = "";
  EXPECT_EQ(f.simulate(req).algorithm, "hierarchical(kangaring+ring)");
  const Fabric chips = make("trn2.48xlarge", RankUnit::kChip, 32, 2, 16);
  req.op = Op::kAllGather;
  req.bytes = kMiB;
  EXPECT_EQ(chips.simulate(req).algorithm, "hierarchical(ring+rdh)");
  req.intra = "kangaring";
  EXPECT_THROW(chips.simulate(req), InputError);
}

// KangaRing on Trn2 LNC=2, bound by the collective DMA: each rank is primary on half of the
// C channels and moves both blocks of a pair there, so a step costs coef x S/r on its DMA
// (coef = operands read: 2, then 3 in the reduce-scatter; 1 in the all-gather), plus the
// step latency and one NeuronLink traversal (none on the two local last steps).
TEST(Algorithms, KangaRingMatchesItsClosedForm) {
  const Fabric f = make("trn2.48xlarge", RankUnit::kCore, 64);
  const double D = f.network().dma_bytes_per_s();
  const int64_t n = 64, m = 32;
  for (int64_t bytes : {64 * kMiB, 1 * kGiB}) {
    CollectiveRequest req;
    req.bytes = bytes;
    req.algorithm = "kangaring";
    const CollectiveResult r = f.simulate(req);
    const double S = static_cast<double>(bytes);
    const double data = (2 + 3 * (m - 1) + m) * S / static_cast<double>(n) / D;
    const double lat = static_cast<double>(2 * m - 2) * 1.6e-6 + 2 * 1.5e-6;
    EXPECT_NEAR(us(r.device - r.timing.sync) * 1e-6 / (data + lat), 1.0, 1e-4) << bytes;
    req.algorithm = "ring";
    EXPECT_LT(r.device, f.simulate(req).device) << "KangaRing beats ring on paired ranks";
  }
}

TEST(Algorithms, SingleStepMeshWinsOnlyWhileItsExtraBytesCostLessThanAStep) {
  const Fabric f = make("trn2.48xlarge", RankUnit::kCore, 8);
  CollectiveRequest req;
  req.bytes = 1 * kKiB;
  EXPECT_EQ(f.simulate(req).algorithm, "single-step-mesh");
  req.algorithm = "mesh";
  const Picoseconds mesh_small = f.simulate(req).device;
  req.algorithm = "single-step-mesh";
  EXPECT_LT(f.simulate(req).device, mesh_small);
  req.bytes = 512 * kKiB;
  req.algorithm = "auto";
  EXPECT_EQ(f.simulate(req).algorithm, "mesh");
  req.algorithm = "single-step-mesh";
  const Picoseconds single_big = f.simulate(req).device;
  req.algorithm = "mesh";
  EXPECT_GT(single_big, f.simulate(req).device);
}

// The inter-server stages move the same EFA bytes (ring and rdh are bandwidth-optimal; the
// binomial tree sends every segment X-1 times up and X-1 times down), in 2(X-1), 2 log2 X and
// 2 ceil(log2 X) steps.
TEST(Algorithms, InterServerStagesMoveTheSameEfaBytesInFewerSteps) {
  const int64_t X = 8, bytes = 64 * kMiB;
  const Fabric f = make("trn2.48xlarge", RankUnit::kChip, 16 * X, X, 16);
  auto run = [&](Op op, const char* inter) {
    CollectiveRequest req;
    req.op = op;
    req.bytes = bytes;
    req.inter = inter;
    return f.simulate(req);
  };
  for (Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather}) {
    const int64_t want = (op == Op::kAllReduce ? 2 : 1) * (X - 1) * bytes;
    EXPECT_EQ(run(op, "ring").timing.efa_bytes, want) << op_name(op);
    EXPECT_EQ(run(op, "rdh").timing.efa_bytes, want) << op_name(op);
  }
  EXPECT_EQ(run(Op::kAllReduce, "tree").timing.efa_bytes, 2 * (X - 1) * bytes / 16 * 16);
  // Small all-reduce across many servers: the tree's 2 ceil(log2 X) EFA steps beat the ring.
  const Fabric g = make("trn2.48xlarge", RankUnit::kChip, 16 * 12, 12, 16);
  CollectiveRequest req;
  req.bytes = 64 * kKiB;
  EXPECT_EQ(g.simulate(req).algorithm, "hierarchical(ring+tree)");
  const Picoseconds tree = g.simulate(req).device;
  req.inter = "ring";
  EXPECT_LT(tree, g.simulate(req).device);
}

TEST(Algorithms, FoldedAgreesWithPerRank) {
  struct Case {
    const char* system;
    RankUnit unit;
    int64_t ranks, servers, per_server;
    Op op;
    const char *algo, *intra, *inter;
  };
  const std::vector<Case> cases = {
      {"trn2.48xlarge", RankUnit::kCore, 64, 1, 0, Op::kAllReduce, "kangaring", "", ""},
      {"trn1.32xlarge", RankUnit::kCore, 32, 1, 0, Op::kReduceScatter, "kangaring", "", ""},
      {"trn2.48xlarge", RankUnit::kCore, 16, 1, 0, Op::kAllReduce, "single-step-mesh", "", ""},
      {"trn2.48xlarge", RankUnit::kCore, 32, 2, 16, Op::kAllReduce, "hierarchical", "kangaring",
       "rdh"},
      {"trn2.48xlarge", RankUnit::kChip, 64, 4, 16, Op::kReduceScatter, "hierarchical", "ring",
       "rdh"},
      {"trn2.48xlarge", RankUnit::kChip, 48, 3, 16, Op::kAllGather, "hierarchical", "ring", "ring"},
      {"trn4-ultraserver", RankUnit::kChip, 40, 5, 8, Op::kAllReduce, "hierarchical", "ring",
       "tree"},
  };
  for (const Case& c : cases) {
    const Fabric f = make(c.system, c.unit, c.ranks, c.servers, c.per_server);
    CollectiveRequest req;
    req.op = c.op;
    req.bytes = 4 * c.ranks * c.ranks * 64 * 3;  // every block splits evenly
    req.algorithm = c.algo;
    req.intra = c.intra;
    req.inter = c.inter;
    const CollectiveResult folded = f.simulate(req);
    req.folded = false;
    const CollectiveResult per_rank = f.simulate(req);
    const std::string what = std::string(c.algo) + " " + c.intra + " " + c.inter;
    EXPECT_NEAR(static_cast<double>(folded.device.v), static_cast<double>(per_rank.device.v),
                static_cast<double>(c.ranks) * 4)
        << what;
    EXPECT_EQ(folded.timing.hbm_read, per_rank.timing.hbm_read) << what;
    EXPECT_EQ(folded.timing.link_bytes, per_rank.timing.link_bytes) << what;
  }
}

// Torus ring on the 4 x 4 torus of a trn2.48xlarge (chips): a reduce-scatter along each
// dimension then an all-gather back, 4 phases of 3 steps; every step opens with a round trip
// with each ring neighbour (both directions: 2 peers); each step is one hop, so it beats the
// ring through all 16 chips (15 steps a phase) at every size.
TEST(Algorithms, TorusRingRunsARingPerDimension) {
  const Fabric f = make("trn2.48xlarge", RankUnit::kChip, 16);
  CollectiveRequest req;
  req.algorithm = "torus-ring";
  for (int64_t bytes : {kMiB, 64 * kMiB, kGiB}) {
    req.bytes = bytes;
    const CollectiveResult t = f.simulate(req);
    ASSERT_EQ(t.timing.phases.size(), 4u);
    for (const auto& p : t.timing.phases) EXPECT_EQ(p.steps, 3) << p.name;
    EXPECT_NEAR(us(t.timing.sync), 12 * 2 * f.runtime().peer_sync_us, 1e-6);
    req.algorithm = "ring";
    EXPECT_LT(t.time, f.simulate(req).time) << bytes;
    req.algorithm = "torus-ring";
  }
  // One direction only: the same steps, half the links, so a large one takes longer.
  req.bytes = kGiB;
  const CollectiveResult both = f.simulate(req);
  req.ring_directions = 1;
  const CollectiveResult one = f.simulate(req);
  EXPECT_EQ(one.timing.phases.size(), both.timing.phases.size());
  EXPECT_GT(one.device, both.device);
  req.algorithm = "ring";
  EXPECT_GT(f.simulate(req).device, both.device);
  req.ring_directions = 3;
  EXPECT_THROW(f.simulate(req), InputError);
  req.ring_directions = 2;
  req.algorithm = "torus-ring";
  // Cores as an axis too: trn1 (2 cores a chip, 4 x 4 chips) has three axes.
  const Fabric cores = make("trn1.32xlarge", RankUnit::kCore, 32);
  req.bytes = 64 * kMiB;
  EXPECT_EQ(cores.simulate(req).timing.phases.size(), 6u);
  // Not every chip of the server: no grid.
  EXPECT_THROW(make("trn2.48xlarge", RankUnit::kChip, 8).simulate(req), InputError);
}

}  // namespace
}  // namespace trnsim::fabric
