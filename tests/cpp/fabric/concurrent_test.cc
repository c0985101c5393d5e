// Concurrent collectives (concurrent.h): one group equals the collective alone, groups that
// share nothing do not slow each other, groups that share links do, by at most their number.
#include "fabric/concurrent.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace trnsim::fabric {
namespace {

const std::string kData = std::string(TRNSIM_TEST_DATA_DIR) + "/fabric/";

Fabric make(const std::string& system, RankUnit unit, int64_t ranks,
            std::vector<arch::Override> sets = {}) {
  Placement pl;
  pl.unit = unit;
  pl.ranks = ranks;
  return Fabric(load_system(system, sets), load_runtime(kDefaultRuntime), pl);
}

GroupRequest group(Op op, int64_t bytes, std::vector<int32_t> ranks,
                   const std::string& algo = "auto") {
  GroupRequest g;
  g.req.op = op;
  g.req.bytes = bytes;
  g.req.algorithm = algo;
  g.ranks = std::move(ranks);
  return g;
}

std::vector<int32_t> iota(int32_t from, int32_t n, int32_t stride = 1) {
  std::vector<int32_t> v;
  for (int32_t i = 0; i < n; ++i) v.push_back(from + i * stride);
  return v;
}

// The event-driven run of one group is the step-by-step per-rank timing of Fabric::simulate.
TEST(Concurrent, OneGroupOfAllRanksIsTheCollectiveAlone) {
  struct Case {
    std::string system;
    RankUnit unit;
    int64_t ranks, servers;
    Op op;
    int64_t bytes;
  };
  for (const Case& c : std::vector<Case>{
           {"trn1.32xlarge", RankUnit::kCore, 32, 1, Op::kAllReduce, 64 * kMiB},
           {"trn1.32xlarge", RankUnit::kCore, 32, 1, Op::kAllGather, 64 * kKiB},
           {"trn2.48xlarge", RankUnit::kChip, 32, 2, Op::kAllReduce, 8 * kMiB},
           {"trn2.48xlarge", RankUnit::kChip, 16, 1, Op::kAllToAll, 16 * kMiB},
       }) {
    std::vector<arch::Override> sets;
    if (c.servers > 1) sets.push_back({"cluster.servers", std::to_string(c.servers)});
    const Fabric f = make(c.system, c.unit, c.ranks, sets);
    CollectiveRequest req;
    req.op = c.op;
    req.bytes = c.bytes;
    req.folded = false;
    const CollectiveResult alone = f.simulate(req);
    const ConcurrentResult both =
        simulate_concurrent(f, {group(c.op, c.bytes, iota(0, static_cast<int32_t>(c.ranks)))});
    ASSERT_EQ(both.groups.size(), 1u);
    const CollectiveResult& r = both.groups[0];
    EXPECT_EQ(r.algorithm, alone.algorithm);
    // Equal up to the rounding of each step to whole picoseconds.
    EXPECT_NEAR(static_cast<double>(r.device.v), static_cast<double>(alone.device.v), 1e3)
        << c.system << " " << op_name(c.op);
    EXPECT_EQ(r.timing.sync, alone.timing.sync);
    EXPECT_EQ(r.timing.hbm_read, alone.timing.hbm_read);
    EXPECT_EQ(r.timing.link_bytes, alone.timing.link_bytes);
    EXPECT_EQ(both.makespan, r.time);
  }
}

// Two servers, one group each: nothing is shared, so each takes its time alone.
TEST(Concurrent, GroupsOnSeparateServersDoNotInterfere) {
  const Fabric f = make("trn2.48xlarge", RankUnit::kChip, 32, {{"cluster.servers", "2"}});
  const auto groups = split_ranks(32, 2, "contiguous");
  const ConcurrentResult alone =
      simulate_concurrent(f, {group(Op::kAllReduce, 64 * kMiB, groups[0])});
  const ConcurrentResult both = simulate_concurrent(
      f,
      {group(Op::kAllReduce, 64 * kMiB, groups[0]), group(Op::kAllReduce, 64 * kMiB, groups[1])});
  for (const CollectiveResult& r : both.groups)
    EXPECT_NEAR(static_cast<double>(r.device.v), static_cast<double>(alone.groups[0].device.v),
                1e3);
}

// Two interleaved rings on a 16-chip ring: each group's ring crosses links the other uses, so
// running both at once costs each more than alone, and at most twice the data movement alone.
TEST(Concurrent, GroupsThatShareLinksShareTheirBandwidth) {
  const Fabric f = make(kData + "ring16.toml", RankUnit::kChip, 16);
  const auto groups = split_ranks(16, 2, "strided");
  EXPECT_EQ(groups[1], iota(1, 8, 2));
  const int64_t bytes = 256 * kMiB;
  const CollectiveResult alone =
      simulate_concurrent(f, {group(Op::kAllReduce, bytes, groups[0], "ring")}).groups[0];
  const ConcurrentResult both =
      simulate_concurrent(f, {group(Op::kAllReduce, bytes, groups[0], "ring"),
                              group(Op::kAllReduce, bytes, groups[1], "ring")});
  const double data_alone = static_cast<double>((alone.device - alone.timing.sync).v);
  for (const CollectiveResult& r : both.groups) {
    const double data = static_cast<double>((r.device - r.timing.sync).v);
    EXPECT_GT(data, 1.1 * data_alone);
    EXPECT_LE(data, 2.0 * data_alone * 1.001);
  }
  // A different collective at the same time: the all-gather moves half the all-reduce's bytes.
  const ConcurrentResult mixed =
      simulate_concurrent(f, {group(Op::kAllReduce, bytes, groups[0], "ring"),
                              group(Op::kAllGather, bytes, groups[1], "ring")});
  EXPECT_LT(mixed.groups[1].device, mixed.groups[0].device);
  EXPECT_GE(mixed.groups[0].device, alone.device);
  EXPECT_EQ(mixed.makespan, mixed.groups[0].time);
}

TEST(Concurrent, BadGroupsAreInputErrors) {
  const Fabric f = make("trn2.48xlarge", RankUnit::kChip, 32, {{"cluster.servers", "2"}});
  EXPECT_THROW(simulate_concurrent(f, {}), InputError);
  EXPECT_THROW(simulate_concurrent(f, {group(Op::kAllReduce, kMiB, {})}), InputError);
  EXPECT_THROW(simulate_concurrent(f, {group(Op::kAllReduce, kMiB, {0, 1, 1})}), InputError);
  EXPECT_THROW(simulate_concurrent(f, {group(Op::kAllReduce, kMiB, {0, 32})}), InputError);
  // Two ranks on server 0, one on server 1.
  EXPECT_THROW(simulate_concurrent(f, {group(Op::kAllReduce, kMiB, {0, 1, 16})}), InputError);
  // 2 x 256 x 255 all-to-all transfers in one step: more than are simulated flow by flow.
  const Fabric big = make("trn2.48xlarge", RankUnit::kCore, 512, {{"cluster.servers", "8"}});
  const auto halves = split_ranks(512, 2, "contiguous");
  EXPECT_THROW(simulate_concurrent(big, {group(Op::kAllToAll, 64 * kMiB, halves[0], "mesh"),
                                         group(Op::kAllToAll, 64 * kMiB, halves[1], "mesh")}),
               InputError);
  // A request that does not apply names its group.
  try {
    simulate_concurrent(f, {group(Op::kAllReduce, kMiB, iota(0, 16)),
                            group(Op::kAllReduce, kMiB, iota(16, 16), "pairwise")});
    ADD_FAILURE() << "pairwise all-reduce accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("group 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("pairwise"), std::string::npos) << e.what();
  }
  EXPECT_THROW(split_ranks(32, 3, "contiguous"), InputError);
  EXPECT_THROW(split_ranks(32, 2, "diagonal"), InputError);
  EXPECT_EQ(split_ranks(8, 2, "contiguous")[1], iota(4, 4));
}

}  // namespace
}  // namespace trnsim::fabric
