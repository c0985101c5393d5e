// What a collective algorithm produces: a plan of phases, each a sequence of steps, each step a
// set of transfers that run concurrently and end together (a step ends when its slowest
// transfer lands; the next step starts then). The same plan drives functional mode (data moved
// and reduced in step order) and timing mode (flows on the network); timing needs only sizes.
//
// Buffers: every rank has buffer 0 ("data", `Context::count` elements), for all-to-all and
// permute buffer 1 ("out"), and buffer 2 ("scratch", like data) where an algorithm stages
// received partial sums (KangaRing). Per operation, with block b = block_range(count, ranks, b):
//   all-reduce      data in, data out (everyone ends with the reduction)
//   reduce-scatter  data in, block r of data out on rank r
//   all-gather      block r of data in on rank r, data out
//   all-to-all      block j of rank i's data -> block i of rank j's out
//   all-to-all-v    as all-to-all with Context::a2av[i][j] elements from i to j, packed
//   broadcast       the root's data -> everyone's data
//   permute         rank i's data -> rank perm[i]'s out (send/receive pairs)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace trnsim::fabric {

enum class Op : uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kAllToAll,
  kAllToAllV,
  kBroadcast,
  kPermute,
};
std::string_view op_name(Op op);     // "all-reduce", ...
Op parse_op(std::string_view name);  // throws InputError listing the names
std::vector<std::string> op_names();
// nccom-test's bus bandwidth factor: 2(r-1)/r all-reduce, (r-1)/r all-gather, reduce-scatter,
// all-to-all(-v), 1 for broadcast and permute.
double busbw_factor(Op op, int64_t ranks);

// One transfer: `count` elements from src's buffer at src_off to dst's buffer at dst_off;
// reduce = dst += src (in the order the transfers of a step are listed), else dst = src.
//
// Multi-operand DMA (KangaRing, INTRA): src2 and src3 are more operands read at src_off (up to
// "3R1W"), and dst2 a second destination written at dst_off from the same read ("1R2W",
// duplication). The value written is the sum of [dst's old value if reduce], src, src2, src3
// in that order, accumulated in fp32 and rounded once to the dtype (functional.h); a single
// operand is copied. `by` is the rank whose collective DMA does the work (-1: src).
// Buffers: 0 data, 1 out, 2 scratch (a rank's receive staging, sized like data).
struct Transfer {
  int32_t src, dst;
  int64_t src_off, dst_off, count;
  uint8_t src_buf = 0, dst_buf = 0;
  bool reduce = false;
  int32_t src2 = -1, src3 = -1, dst2 = -1, by = -1;
  uint8_t src2_buf = 0, src3_buf = 0, dst2_buf = 0;

  int32_t executor() const { return by >= 0 ? by : src; }
  int operands() const { return (reduce ? 1 : 0) + 1 + (src2 >= 0 ? 1 : 0) + (src3 >= 0 ? 1 : 0); }
};
inline constexpr uint8_t kScratch = 2;

struct Phase {
  std::string name;
  int64_t steps = 0;
  // Every step moves the same (src, dst, bytes) pattern up to the rounding of block sizes, so
  // timing may simulate step 0 and multiply (folding in time).
  bool uniform = false;
  std::function<void(int64_t step, std::vector<Transfer>& out)> emit;
};

struct Plan {
  std::string algorithm;
  std::vector<Phase> phases;
};

// [offset, offset+size) of block b when `count` elements are split into `parts` blocks, the
// first (count % parts) blocks one element larger.
struct Range {
  int64_t off, len;
};
inline Range block_range(int64_t count, int64_t parts, int64_t b) {
  const int64_t base = count / parts, extra = count % parts;
  return {b * base + std::min(b, extra), base + (b < extra ? 1 : 0)};
}

}  // namespace trnsim::fabric
