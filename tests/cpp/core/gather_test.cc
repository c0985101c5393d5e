// GpSimd's index ops against references written here from the NKI API reference: nc_n_gather
// (dst[p, j] = data[p, indices[p, j]]), local_gather (its numpy equivalent: per 16-partition
// core the index slice flattened partition first, np.take of elems at each index),
// sequence_bounds (the documented run-based numpy), nonzero_with_count (positions + offset,
// padding, count in each core's partition 0). Raw codes move, so the gathers are bit-exact.
#include <vector>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::Engine;
using isa::Opcode;

std::vector<uint64_t> random_codes(Rng& rng, size_t n, const num::Format& f) {
  const uint64_t mask = (uint64_t{1} << (8 * f.storage_bytes)) - 1;
  std::vector<uint64_t> v(n);
  for (uint64_t& e : v) e = rng.next() & mask;  // any bit pattern, NaNs included
  return v;
}

TEST(NGather, EachPartitionPicksItsOwnElements) {
  for (const num::Format f : {num::bf16(), num::fp32(), num::fp8_e4m3()}) {
    Harness h;
    Rng rng(5);
    const int rows = 96, n = 40, fw = 300;
    const auto data = sbuf(f, 0, rows, 0, {3, 100});  // flattened: 300 per partition
    const auto idx = sbuf(num::int_format(num::Dtype::kUint32), 0, rows, 4096, {n});
    const auto dst = sbuf(f, 0, rows, 8192, {n});
    const std::vector<uint64_t> d = random_codes(rng, static_cast<size_t>(rows * fw), f);
    std::vector<uint64_t> ix(static_cast<size_t>(rows * n));
    for (uint64_t& i : ix) i = rng.next() % fw;
    h.put_codes(data, d);
    h.put_codes(idx, ix);
    ASSERT_TRUE(h.run(make(Opcode::kNGather, Engine::kGpSimd, {dst, data, idx})));
    std::vector<uint64_t> want(ix.size());
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < n; ++j)
        want[static_cast<size_t>(r * n + j)] =
            d[static_cast<size_t>(r * fw) + ix[static_cast<size_t>(r * n + j)]];
    EXPECT_EQ(h.get_codes(dst), want) << f.name();
  }
}

TEST(NGather, AnIndexOutsideTheDataFaults) {
  Harness h;
  const auto data = sbuf(num::fp32(), 0, 4, 0, {16});
  const auto idx = sbuf(num::int_format(num::Dtype::kUint32), 0, 4, 1024, {2});
  const auto dst = sbuf(num::fp32(), 0, 4, 2048, {2});
  h.put_codes(idx, {0, 1, 2, 3, 15, 16, 0, 0});
  EXPECT_FALSE(h.run(make(Opcode::kNGather, Engine::kGpSimd, {dst, data, idx})));
  ASSERT_FALSE(h.faults().empty());
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kIndexRange);
  EXPECT_NE(h.faults()[0].message.find("element 16 of 16"), std::string::npos)
      << h.faults()[0].message;
}

TEST(LocalGather, EveryCoreGathersItsPartitionsByItsIndexSlice) {
  for (const int elems : {1, 4}) {
    Harness h;
    Rng rng(9);
    const int rows = 64, m = 3, fw = 512;
    const int k = elems == 1 ? 48 : 20;  // all 16 x 3 indices, or the first 20
    const num::Format f = num::bf16();
    const auto src = sbuf(f, 0, rows, 0, {fw});
    const auto idx = sbuf(num::int_format(num::Dtype::kUint16), 0, rows, 4096, {m});
    const auto dst = sbuf(f, 0, rows, 8192, {k * elems});
    const std::vector<uint64_t> s = random_codes(rng, static_cast<size_t>(rows * fw), f);
    std::vector<uint64_t> ix(static_cast<size_t>(rows * m));
    for (uint64_t& i : ix) i = rng.next() % (fw - elems + 1);
    h.put_codes(src, s);
    h.put_codes(idx, ix);
    isa::Params p;
    p.gather_elems = static_cast<int16_t>(elems);
    p.gather_indices = static_cast<int16_t>(elems == 1 ? 0 : k);
    ASSERT_TRUE(h.run(make(Opcode::kLocalGather, Engine::kGpSimd, {dst, src, idx}, p)));
    std::vector<uint64_t> want(static_cast<size_t>(rows * k * elems));
    for (int core = 0; core < rows / 16; ++core) {
      std::vector<uint64_t> flat;  // the core's slice, partition first (numpy order='F')
      for (int c = 0; c < m; ++c)
        for (int q = 0; q < 16; ++q)
          flat.push_back(ix[static_cast<size_t>((core * 16 + q) * m + c)]);
      for (int p16 = 0; p16 < 16; ++p16) {
        const int part = core * 16 + p16;
        for (int j = 0; j < k; ++j)
          for (int e = 0; e < elems; ++e)
            want[static_cast<size_t>((part * k + j) * elems + e)] =
                s[static_cast<size_t>(part * fw) + flat[static_cast<size_t>(j)] + e];
      }
    }
    EXPECT_EQ(h.get_codes(dst), want) << "elems " << elems;
  }
}

// The API reference's numpy, transcribed.
std::vector<double> bounds_reference(const std::vector<double>& id) {
  const auto n = static_cast<int64_t>(id.size());
  std::vector<double> lo(id.size()), hi(id.size());
  lo[0] = id[0] != 0 ? 0 : static_cast<double>(n);
  for (int64_t i = 1; i < n; ++i) {
    const auto u = static_cast<size_t>(i);
    lo[u] = id[u] == 0           ? static_cast<double>(n)
            : id[u] == id[u - 1] ? lo[u - 1]
                                 : static_cast<double>(i);
  }
  hi[static_cast<size_t>(n - 1)] = id.back() != 0 ? static_cast<double>(n) : -1;
  for (int64_t i = n - 2; i >= 0; --i) {
    const auto u = static_cast<size_t>(i);
    hi[u] = id[u] == 0 ? -1 : id[u] == id[u + 1] ? hi[u + 1] : static_cast<double>(i + 1);
  }
  lo.insert(lo.end(), hi.begin(), hi.end());
  return lo;
}

TEST(SequenceBounds, RunsOfEqualIdsAndPadding) {
  const std::vector<double> id = {0, 3, 3, 3, 1, 1, 0, 0, 2, 7, 7, 3, 3, 0, 5, 5};
  for (const num::Format in : {num::fp32(), num::int_format(num::Dtype::kInt32)})
    for (const num::Format out : {num::fp32(), num::int_format(num::Dtype::kInt32)}) {
      Harness h;
      const auto ids = sbuf(in, 0, 1, 0, {static_cast<int64_t>(id.size())});
      const auto dst = sbuf(out, 0, 1, 1024, {2, static_cast<int64_t>(id.size())});
      h.put(ids, id);
      ASSERT_TRUE(h.run(make(Opcode::kSequenceBounds, Engine::kGpSimd, {dst, ids})));
      EXPECT_EQ(h.get(dst), bounds_reference(id)) << in.name() << " -> " << out.name();
    }
}

TEST(NonzeroWithCount, EachCoresFirstPartitionOnly) {
  Harness h;
  Rng rng(3);
  const int rows = 64, fw = 20;
  const auto src = sbuf(num::fp32(), 64, rows, 0, {fw});
  const auto dst = sbuf(num::int_format(num::Dtype::kInt32), 64, rows, 1024, {fw + 1});
  std::vector<double> x(static_cast<size_t>(rows * fw));
  for (double& v : x) v = rng.next() % 3 == 0 ? rng.uniform(-2, 2) : 0.0;
  x[5] = -0.0;  // zero
  std::vector<double> before(static_cast<size_t>(rows * (fw + 1)), 77);
  h.put(src, x);
  h.put(dst, before);
  isa::Params p;
  p.iota_base = 100;
  p.value = -9;
  ASSERT_TRUE(h.run(make(Opcode::kNonzeroWithCount, Engine::kGpSimd, {dst, src}, p)))
      << h.faults().to_string();
  std::vector<double> want = before;
  for (int r = 0; r < rows; r += 16) {  // partitions 64, 80, 96, 112: each core's first
    int count = 0;
    for (int i = 0; i <= fw; ++i) want[static_cast<size_t>(r * (fw + 1) + i)] = -9;
    for (int i = 0; i < fw; ++i)
      if (x[static_cast<size_t>(r * fw + i)] != 0)
        want[static_cast<size_t>(r * (fw + 1) + count++)] = 100 + i;
    want[static_cast<size_t>(r * (fw + 1) + fw)] = count;
  }
  EXPECT_EQ(h.get(dst), want);
}

}  // namespace
}  // namespace trnsim::core::testing
