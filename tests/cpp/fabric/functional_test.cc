// Functional collectives against a reference written here: every algorithm and operation on
// small rank counts, exact for integer-valued fp32, and the addition order of bf16 reductions
// against the order each algorithm implies.
#include <gtest/gtest.h>

#include "base/error.h"
#include "fabric/collective.h"
#include "numerics/convert.h"

namespace trnsim::fabric {
namespace {

const num::NumericPolicy kPolicy{};

uint64_t code(const num::Format& f, double v) {
  return num::encode(f, v, num::Rounding::kNearestEven, 0, kPolicy);
}
double value(const num::Format& f, uint64_t c) { return num::decode(f, c); }

// Inputs: rank r element e = (r + 1) * 3 + e % 7 (small integers, exact in fp32).
Buffers inputs(const num::Format& f, int64_t ranks, int64_t count) {
  Buffers b;
  for (int64_t r = 0; r < ranks; ++r) {
    b.data.emplace_back();
    for (int64_t e = 0; e < count; ++e)
      b.data.back().push_back(code(f, static_cast<double>((r + 1) * 3 + e % 7)));
  }
  return b;
}

double input_value(int64_t r, int64_t e) { return static_cast<double>((r + 1) * 3 + e % 7); }

struct Shape {
  const char* system;
  RankUnit unit;
  int64_t ranks;
  int64_t servers;
  int64_t ranks_per_server = 0;
};

Fabric make(const Shape& s) {
  Placement pl;
  pl.unit = s.unit;
  pl.ranks = s.ranks;
  pl.ranks_per_server = s.ranks_per_server;
  std::vector<arch::Override> sets;
  if (s.servers > 1) sets.push_back({"cluster.servers", std::to_string(s.servers)});
  return Fabric(load_system(s.system, sets), load_runtime(kDefaultRuntime), pl);
}

void expect_allreduce(const Buffers& b, int64_t ranks, int64_t count, const char* what) {
  for (int64_t r = 0; r < ranks; ++r)
    for (int64_t e = 0; e < count; ++e) {
      double want = 0;
      for (int64_t q = 0; q < ranks; ++q) want += input_value(q, e);
      ASSERT_EQ(value(num::fp32(), b.data[r][e]), want) << what << " rank " << r << " el " << e;
    }
}

TEST(Functional, AllReduceEveryAlgorithmEveryShape) {
  const std::vector<std::pair<Shape, std::vector<const char*>>> cases = {
      {{"trn1.32xlarge", RankUnit::kCore, 2, 1}, {"ring", "mesh", "rdh"}},
      {{"trn1.32xlarge", RankUnit::kCore, 6, 1}, {"ring", "mesh"}},
      {{"trn1.32xlarge", RankUnit::kChip, 16, 1}, {"ring", "mesh", "rdh", "torus-ring"}},
      {{"trn1.32xlarge", RankUnit::kCore, 32, 1}, {"torus-ring"}},
      {{"trn2-ultraserver", RankUnit::kChip, 64, 1}, {"ring", "rdh", "torus-ring"}},
      {{"trn2.48xlarge", RankUnit::kCore, 24, 3, 8}, {"hierarchical", "ring", "mesh"}},
      {{"trn2.48xlarge", RankUnit::kChip, 48, 3}, {"torus-ring"}},
      {{"trn3-ultraserver-144", RankUnit::kChip, 144, 1}, {"ring"}},
  };
  for (const auto& [setup, algos] : cases) {
    const Fabric f = make(setup);
    for (int64_t count : {setup.ranks * 3 + 5, int64_t{7}}) {
      for (const char* algo : algos) {
        CollectiveRequest req;
        req.bytes = count * 4;
        req.algorithm = algo;
        Buffers b = inputs(num::fp32(), setup.ranks, count);
        f.run(req, b);
        expect_allreduce(b, setup.ranks, count, algo);
      }
    }
  }
}

TEST(Functional, ReduceScatterAndAllGatherLeaveBlockROnRankR) {
  for (const auto& [shape, algo] : std::vector<std::pair<Shape, const char*>>{
           {{"trn1.32xlarge", RankUnit::kChip, 8, 1}, "ring"},
           {{"trn1.32xlarge", RankUnit::kChip, 8, 1}, "mesh"},
           {{"trn1.32xlarge", RankUnit::kChip, 8, 1}, "rdh"},
           {{"trn1.32xlarge", RankUnit::kCore, 32, 1}, "torus-ring"},
           {{"trn2.48xlarge", RankUnit::kChip, 32, 2}, "torus-ring"}}) {
    const Fabric f = make(shape);
    const int64_t n = shape.ranks, count = n * 5 + 3;
    CollectiveRequest req;
    req.op = Op::kReduceScatter;
    req.bytes = count * 4;
    req.algorithm = algo;
    Buffers b = inputs(num::fp32(), n, count);
    f.run(req, b);
    for (int64_t r = 0; r < n; ++r) {
      const Range blk = block_range(count, n, r);
      for (int64_t e = blk.off; e < blk.off + blk.len; ++e) {
        double want = 0;
        for (int64_t q = 0; q < n; ++q) want += input_value(q, e);
        ASSERT_EQ(value(num::fp32(), b.data[r][e]), want) << algo << " rs " << r;
      }
    }
    req.op = Op::kAllGather;
    Buffers g = inputs(num::fp32(), n, count);
    f.run(req, g);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t e = 0; e < count; ++e) {
        int64_t owner = 0;
        while (block_range(count, n, owner).off + block_range(count, n, owner).len <= e) ++owner;
        ASSERT_EQ(value(num::fp32(), g.data[r][e]), input_value(owner, e)) << algo << " ag";
      }
  }
}

TEST(Functional, AllToAllBroadcastPermute) {
  const Fabric f = make({"trn2.48xlarge", RankUnit::kCore, 12, 1});
  const int64_t n = 12, count = 12 * 4;
  CollectiveRequest req;
  req.bytes = count * 4;
  req.op = Op::kAllToAll;
  Buffers b = inputs(num::fp32(), n, count);
  EXPECT_EQ(f.run(req, b), "mesh");
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < 4; ++k)
        ASSERT_EQ(value(num::fp32(), b.out[j][i * 4 + k]), input_value(i, j * 4 + k));
  req.op = Op::kBroadcast;
  req.root = 5;
  b = inputs(num::fp32(), n, count);
  f.run(req, b);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t e = 0; e < count; ++e)
      ASSERT_EQ(value(num::fp32(), b.data[r][e]), input_value(5, e));
  // Pipelined along a ring from the root, in chunks: the same result.
  req.algorithm = "pipeline";
  b = inputs(num::fp32(), n, count);
  EXPECT_EQ(f.run(req, b).rfind("pipeline(", 0), 0u);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t e = 0; e < count; ++e)
      ASSERT_EQ(value(num::fp32(), b.data[r][e]), input_value(5, e)) << "pipeline rank " << r;
  req.algorithm = "auto";
  req.op = Op::kPermute;
  req.perm = {3, 0, 1, 2, 5, 4, 7, 6, 9, 8, 11, 10};
  b = inputs(num::fp32(), n, count);
  f.run(req, b);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t e = 0; e < count; ++e)
      ASSERT_EQ(value(num::fp32(), b.out[req.perm[i]][e]), input_value(i, e));
}

// Pairwise all-to-all (two stages through the scratch buffer) leaves what the mesh leaves:
// block j of rank i's data in block i of rank j's out; on one server and on three.
TEST(Functional, PairwiseAllToAllMatchesTheDefinition) {
  for (const Shape& shape : {Shape{"trn2.48xlarge", RankUnit::kCore, 12, 1},
                             Shape{"trn2.48xlarge", RankUnit::kCore, 24, 3, 8},
                             Shape{"trn3-ultraserver-64", RankUnit::kChip, 128, 2}}) {
    const Fabric f = make(shape);
    const int64_t n = shape.ranks, per = 3, count = n * per;
    CollectiveRequest req;
    req.bytes = count * 4;
    req.op = Op::kAllToAll;
    req.algorithm = "pairwise";
    Buffers b = inputs(num::fp32(), n, count);
    EXPECT_EQ(f.run(req, b), "pairwise");
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < per; ++k)
          ASSERT_EQ(value(num::fp32(), b.out[j][i * per + k]), input_value(i, j * per + k))
              << shape.system << " " << n << " ranks: rank " << j << " block " << i;
  }
  // Data that does not split evenly is refused in functional mode, named.
  const Fabric f = make({"trn2.48xlarge", RankUnit::kCore, 12, 1});
  CollectiveRequest req;
  req.op = Op::kAllToAll;
  req.bytes = (12 * 3 + 1) * 4;
  req.algorithm = "pairwise";
  Buffers b = inputs(num::fp32(), 12, 12 * 3 + 1);
  EXPECT_THROW(f.run(req, b), InputError);
  req.algorithm = "auto";  // timing takes any count
  EXPECT_GT(f.simulate(req).device.v, 0);
}

TEST(Functional, AllToAllVMovesUnevenCounts) {
  const Fabric f = make({"trn1.32xlarge", RankUnit::kChip, 3, 1});
  CollectiveRequest req;
  req.op = Op::kAllToAllV;
  req.a2av = {{1, 2, 3}, {0, 4, 1}, {2, 2, 2}};
  req.bytes = 6 * 4;
  // Rank 1 receives 2 from rank 0 (its elements 1..2), 4 from itself (0..3), 2 from rank 2 (2..3).
  const std::vector<double> want = {input_value(0, 1), input_value(0, 2), input_value(1, 0),
                                    input_value(1, 1), input_value(1, 2), input_value(1, 3),
                                    input_value(2, 2), input_value(2, 3)};
  Buffers c = inputs(num::fp32(), 3, 6);
  c.out.assign(3, std::vector<uint64_t>(8, 0));
  f.run(req, c);
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(value(num::fp32(), c.out[1][k]), want[k]);
}

// bf16 ring all-reduce: position p's segment is summed starting at p+1 around the ring, each
// addition in fp32 then rounded to bf16; a reference that adds in that order must agree bit
// for bit, and one that adds in rank order generally does not.
TEST(Functional, Bf16RingAddsInRingOrder) {
  const num::Format bf = num::bf16();
  const Fabric f = make({"trn3-ultraserver-64", RankUnit::kChip, 8, 1});
  const int64_t n = 8, count = 8;  // one element per block
  Buffers b;
  std::vector<std::vector<double>> x(n);
  for (int64_t r = 0; r < n; ++r) {
    b.data.emplace_back();
    for (int64_t e = 0; e < count; ++e) {
      const double v = std::ldexp(1.0 + 0.0078125 * static_cast<double>((r * 5 + e * 3) % 11),
                                  static_cast<int>((r * 7 + e) % 9) - 4);
      x[r].push_back(value(bf, code(bf, v)));
      b.data.back().push_back(code(bf, v));
    }
  }
  CollectiveRequest req;
  req.dtype = bf;
  req.bytes = count * 2;
  req.algorithm = "ring";
  f.run(req, b);
  const auto& order = f.network().ring_orders()[0];  // one channel on a switch
  auto round_add = [&](double acc, double v) {
    const double s32 = value(num::fp32(), code(num::fp32(), acc + v));
    return value(bf, code(bf, s32));
  };
  int differs = 0;
  for (int64_t p = 0; p < n; ++p) {
    const int64_t e = order[p];  // the element (block) position p owns
    double acc = x[order[(p + 1) % n]][e];
    for (int64_t t = 2; t <= n; ++t) acc = round_add(x[order[(p + t) % n]][e], acc);
    double naive = x[0][e];
    for (int64_t q = 1; q < n; ++q) naive = round_add(naive, x[q][e]);
    for (int64_t r = 0; r < n; ++r) ASSERT_EQ(value(bf, b.data[r][e]), acc) << "element " << e;
    differs += naive != acc;
  }
  EXPECT_GT(differs, 0) << "the inputs should make the addition order visible";
}

}  // namespace
}  // namespace trnsim::fabric
