// How operand shapes must relate, one function per ShapeRule of the op table, plus the DMA
// rules (HARDWARE.md s2.3, s3, s4). TensorE rules are in validate_matmul.cc.
#include <algorithm>

#include "isa/dma_add_dtypes.h"
#include "isa/names.h"
#include "isa/validate_context.h"

namespace trnsim::isa::detail {

namespace {

// KLR bn_stats_fmax; max8 and find_index8 take 8..16384 elements, match_replace8 up to 16384,
// with 8 values per partition (ISA).
constexpr int64_t kBnStatsFreeMax = 512;
constexpr int64_t kMax8FreeMin = 8, kMax8FreeMax = 16384, kTop8 = 8;
constexpr int64_t kDveTransposeMax = 32;  // one reshape bank (32 x 32)

// b has a's partitions and elements per partition.
void same_shape(Context& c, int a, int b) {
  const AccessPattern &x = c.operand(a), &y = c.operand(b);
  if (x.num_partitions != y.num_partitions || x.free_elements() != y.free_elements())
    c.report(RuleKind::kShape, "{} is {} but {} is {}", operand_label(*c.inst, b), shape_text(y),
             operand_label(*c.inst, a), shape_text(x));
}

void expect_free(Context& c, int i, int64_t want, std::string_view why) {
  if (c.operand(i).free_elements() != want)
    c.report(RuleKind::kShape, "{} has {} elements per partition; {} needs {} ({})",
             operand_label(*c.inst, i), c.operand(i).free_elements(), mnemonic(c.inst->op), want,
             why);
}

void expect_partitions(Context& c, int i, int64_t want) {
  if (c.operand(i).num_partitions != want)
    c.report(RuleKind::kShape, "{} has {} partitions; {} needs {}", operand_label(*c.inst, i),
             c.operand(i).num_partitions, mnemonic(c.inst->op), want);
}

void free_range(Context& c, int i, int64_t lo, int64_t hi) {
  const int64_t f = c.operand(i).free_elements();
  if (f < lo || f > hi)
    c.report(RuleKind::kFreeSize, "{} has {} elements per partition; {} takes {}..{}",
             operand_label(*c.inst, i), f, mnemonic(c.inst->op), lo, hi);
}

// dst [F, P] of src [P, F].
void transposed(Context& c, int dst, int src) {
  const AccessPattern &d = c.operand(dst), &s = c.operand(src);
  if (d.num_partitions != s.free_elements() || d.free_elements() != s.num_partitions)
    c.report(RuleKind::kShape, "dst is {} but the transpose of src {} is [P={}, F={}]",
             shape_text(d), shape_text(s), s.free_elements(), s.num_partitions);
}

void reduce_free(Context& c) {
  const AccessPattern &dst = c.operand(0), &src = c.operand(1);
  const int axes = c.inst->p.reduce_axes;
  if (axes < 1 || axes > src.ndim) {
    c.report(RuleKind::kShape, "reduce_axes={} but src has {} free dims", axes, src.ndim);
    return;
  }
  int64_t kept = 1;
  for (int i = 0; i < src.ndim - axes; ++i) kept *= src.dims[static_cast<size_t>(i)].size;
  expect_partitions(c, 0, src.num_partitions);
  if (dst.free_elements() != kept)
    c.report(RuleKind::kShape,
             "dst has {} elements per partition; reducing {} innermost dims "
             "of src leaves {}",
             dst.free_elements(), axes, kept);
}

bool is_mx_only(const num::Format& f) {
  return f.dtype == num::Dtype::kFp4E2M1 || f.dtype == num::Dtype::kE8M0;
}

// sendrecv (NKI ISA): SBUF to SBUF, src and dst of one shape and dtype, ranks of a logical core
// (at most 2 physical cores: HARDWARE.md s6; whether the peer exists is the chip run's check).
// stream_shuffle (NKI nc_stream_shuffle): one dtype, one free size; the quadrants the two sides
// span start where the hardware allows (num_active = max partitions rounded up to 32: 96 or
// 128 from partition 0, 64 from 0 or 64, 32 from any multiple of 32); every source partition
// the mask names for a written dst partition exists.
void stream_shuffle_rules(Context& c) {
  const AccessPattern &dst = c.operand(0), &src = c.operand(1);
  if (dst.dtype != src.dtype)
    c.report(RuleKind::kDtype, "stream_shuffle moves elements unchanged: dst is {}, src {}",
             dst.dtype.name(), src.dtype.name());
  if (dst.free_elements() != src.free_elements())
    c.report(RuleKind::kShape, "dst has {} elements per partition, src {}", dst.free_elements(),
             src.free_elements());
  constexpr int64_t kQuadrant = kShuffleQuadrant;
  const int64_t active =
      (std::max(dst.num_partitions, src.num_partitions) + kQuadrant - 1) / kQuadrant * kQuadrant;
  const int64_t align = active > 2 * kQuadrant ? 4 * kQuadrant : active;
  for (int i : {0, 1})
    if (c.operand(i).start_partition % align != 0)
      c.report(RuleKind::kShape,
               "{} starts at partition {}; a shuffle over {} partitions starts at a multiple of {}",
               operand_label(*c.inst, i), c.operand(i).start_partition, active, align);
  const auto& mask = c.inst->p.shuffle;
  for (int64_t j = 0; j < dst.num_partitions; ++j) {
    const uint8_t m = mask[static_cast<size_t>(j % kQuadrant)];
    const int64_t from = shuffle_source(mask, j);
    if (from < 0) continue;
    if (m >= kQuadrant) {
      c.report(RuleKind::kShape,
               "shuffle[{}] = {}: a source partition of the quadrant (0..31) "
               "or 255",
               j % kQuadrant, m);
      return;
    }
    if (from >= src.num_partitions) {
      c.report(RuleKind::kShape,
               "dst partition {} copies src partition {} (shuffle[{}] = {}); src has {}", j, from,
               j % kQuadrant, m, src.num_partitions);
      return;
    }
  }
}

// tensor_scalar_cumulative (NKI API reference): the running op is add, subtract, mult, max or
// min; 32-bit integer tiles are not ISA operands of it.
void cumulative_rules(Context& c) {
  same_shape(c, 0, 1);
  const AluOp op1 = c.inst->p.op1;
  if (!is_cumulative_op(op1))
    c.report(RuleKind::kShape, "op1={}: the running op is add, subtract, mult, max or min",
             kAluOpNames.name(op1));
  for (int i : {0, 1}) {
    const num::Dtype d = c.operand(i).dtype.dtype;
    if (d == num::Dtype::kInt32 || d == num::Dtype::kUint32)
      c.report(RuleKind::kDtype, "{} is {}: tensor_scalar_cumulative takes no 32-bit integers",
               operand_label(*c.inst, i), c.operand(i).dtype.name());
  }
}

// activate2 (NKI): the ALU stage before the function takes six (op0, op1) pairs, (mult, add),
// (mult, subtract), (mult, bypass), (add, bypass), (subtract, bypass), (bypass, bypass); the
// row reduction add, max, min, abs_max or abs_min.
void activate2_rules(Context& c) {
  const Params& p = c.inst->p;
  using enum AluOp;
  const bool pair_ok =
      (p.op0 == kMult && (p.op1 == kAdd || p.op1 == kSubtract)) ||
      ((p.op0 == kMult || p.op0 == kAdd || p.op0 == kSubtract || p.op0 == kBypass) &&
       p.op1 == kBypass);
  if (!pair_ok)
    c.report(RuleKind::kMalformed,
             "op0={} op1={}: activate2's ALU stage takes mult then add, subtract or bypass; "
             "add, subtract or bypass then bypass",
             kAluOpNames.name(p.op0), kAluOpNames.name(p.op1));
  if (c.inst->op == Opcode::kActivate2Reduce && p.reduce_op != kAdd && p.reduce_op != kMax &&
      p.reduce_op != kMin && p.reduce_op != kAbsMax && p.reduce_op != kAbsMin)
    c.report(RuleKind::kMalformed,
             "reduce_op={}: activate2 reduces by add, max, min, abs_max "
             "or abs_min",
             kAluOpNames.name(p.reduce_op));
}

void send_recv_rules(Context& c) {
  const Params& p = c.inst->p;
  check_dma_queue(c);
  same_shape(c, 0, 1);
  if (c.operand(0).dtype != c.operand(1).dtype)
    c.report(RuleKind::kDtype, "sendrecv moves bytes: dst is {}, src {}", c.operand(0).dtype.name(),
             c.operand(1).dtype.name());
  if (p.send_to < 0 || p.recv_from < 0 || p.pipe < 0)
    c.report(RuleKind::kShape, "send_to={} recv_from={} pipe={}: ranks and pipes are >= 0",
             p.send_to, p.recv_from, p.pipe);
}

// What one rank can check alone; the rank run checks the group (fabric/rank_group.h).
void collective_rules(Context& c) {
  const Params& p = c.inst->p;
  check_dma_queue(c);
  const AccessPattern &dst = c.operand(0), &src = c.operand(1);
  if (dst.dtype != src.dtype)
    c.report(RuleKind::kDtype, "a collective moves elements unchanged: dst is {}, src {}",
             dst.dtype.name(), src.dtype.name());
  if (p.replica_group < 0 || p.collective_outer < 1)
    c.report(RuleKind::kShape, "group={} outer={}: a group index is >= 0, outer >= 1",
             p.replica_group, p.collective_outer);
  const int64_t d = dst.elements(), s = src.elements();
  const bool even = d % p.collective_outer == 0 && s % p.collective_outer == 0;
  switch (p.collective) {
    case CollectiveKind::kAllToAllV:
    case CollectiveKind::kAllGatherV:
      c.report(RuleKind::kShape, "{} reads its sizes at run time: it is a collective_v",
               name_of(p.collective));
      break;
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kPermute:
    case CollectiveKind::kAllToAll:
      if (d != s)
        c.report(RuleKind::kShape, "{}: dst has {} elements, src {}; they must be equal",
                 name_of(p.collective), d, s);
      break;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      break;  // dst = src x ranks (or src / ranks): the rank run knows the group's size
  }
  if (!even)
    c.report(RuleKind::kShape, "outer={} does not divide dst ({}) and src ({}) elements",
             p.collective_outer, d, s);
}

void collective_v_rules(Context& c) {
  const Params& p = c.inst->p;
  check_dma_queue(c);
  const AccessPattern &dst = c.operand(0), &meta = c.operand(1), &src = c.operand(2);
  if (dst.dtype != src.dtype)
    c.report(RuleKind::kDtype, "a collective moves elements unchanged: dst is {}, src {}",
             dst.dtype.name(), src.dtype.name());
  if (p.collective != CollectiveKind::kAllToAllV && p.collective != CollectiveKind::kAllGatherV)
    c.report(RuleKind::kShape, "collective_v runs all_to_all_v or all_gather_v, not {}",
             name_of(p.collective));
  const int rows = (p.collective_flags & kHasRdispls) != 0 ? 4 : 3;
  if ((p.collective_flags & ~(kRecvCountsKnown | kHasRdispls)) != 0 ||
      (meta.elements() % rows != 0 && meta.elements() % 4 != 0))
    c.report(RuleKind::kShape,
             "metadata has {} elements for flags={}: {} rows of one column per "
             "rank",
             meta.elements(), p.collective_flags, rows);
  if (p.replica_group < 0)
    c.report(RuleKind::kShape, "group={}: a group index is >= 0", p.replica_group);
}

void dma_rules(Context& c) {
  const Params& p = c.inst->p;
  check_dma_queue(c);
  const AccessPattern &dst = c.operand(0), &src = c.operand(1);
  if (c.inst->op == Opcode::kDmaTranspose) {
    transposed(c, 0, 1);
    const int bytes = src.dtype.storage_bytes;
    if (dst.dtype != src.dtype || (bytes != 2 && bytes != 4))
      c.report(RuleKind::kDtype,
               "DMA transpose moves 2- or 4-byte elements unchanged; src is {}, "
               "dst {}",
               src.dtype.name(), dst.dtype.name());
    return;
  }
  if (dst.elements() != src.elements())
    c.report(RuleKind::kShape, "dst has {} elements, src {}", dst.elements(), src.elements());
  // DMA casts go through fp32, which MX element and scale formats do not (DMA-OV).
  if (dst.dtype != src.dtype && (is_mx_only(dst.dtype) || is_mx_only(src.dtype)))
    c.report(RuleKind::kDtype, "DMA cannot cast {} to {}", src.dtype.name(), dst.dtype.name());
  if (!p.dma_accumulate) return;
  // Every generation adds into SBUF: NC-v4 near memory at full DMA throughput, earlier ones
  // through the DMA CC engines at half of it (HARDWARE.md s4, AG4; core/dma/dma_plan.cc).
  if (dst.space != Space::kSbuf)
    c.report(RuleKind::kSpace, "accumulate adds into SBUF only; dst is in {}", name_of(dst.space));
  if (dst.dtype != src.dtype || !sbuf_accumulate_dtype(dst.dtype.dtype))
    c.report(RuleKind::kDtype, "accumulate takes bf16 or fp32 on both sides; src is {}, dst {}",
             src.dtype.name(), dst.dtype.name());
}

}  // namespace

void check_dma_queue(Context& c) {
  const int64_t queue = c.inst->p.dma_queue;
  const int64_t queues = int64_t{c.core.dma.engines} * c.core.dma.queues_per_engine;
  if (queue < 0 || queue >= queues)
    c.report(RuleKind::kDmaQueue, "queue={} outside the core's {} DMA queues", queue, queues);
}

void check_shapes(Context& c) {
  const Instruction& in = *c.inst;
  const OpInfo& info = op_info(in.op);
  // Column operands: one element in each of the data's partitions.
  for (int i = info.num_roles; i < in.num_operands; ++i) {
    expect_free(c, i, 1, "a [P, 1] column");
    expect_partitions(c, i, c.operand(0).num_partitions);
  }
  switch (info.shape) {
    case ShapeRule::kElementwise:
      for (int i = 1; i < info.num_roles; ++i) same_shape(c, 0, i);
      break;
    case ShapeRule::kReduceAccum:
      same_shape(c, 0, 2);
      expect_partitions(c, 1, c.operand(2).num_partitions);
      expect_free(c, 1, 1, "one result per partition");
      break;
    case ShapeRule::kReduceFree:
      reduce_free(c);
      break;
    case ShapeRule::kPartitionReduce:
      expect_partitions(c, 0, 1);
      expect_free(c, 0, c.operand(1).free_elements(), "src's elements per partition");
      break;
    case ShapeRule::kBnStats:
      expect_partitions(c, 0, c.operand(1).num_partitions);
      expect_free(c, 0, 6, "count, mean, var*count for even and odd elements");
      free_range(c, 1, 1, kBnStatsFreeMax);
      break;
    case ShapeRule::kBnAggr:
      expect_partitions(c, 0, c.operand(1).num_partitions);
      expect_free(c, 0, 2, "mean and variance");
      if (c.operand(1).free_elements() % 6 != 0)
        c.report(RuleKind::kShape, "src has {} elements per partition, not groups of 6 bn_stats",
                 c.operand(1).free_elements());
      break;
    case ShapeRule::kMax8:
      expect_partitions(c, 0, c.operand(1).num_partitions);
      expect_free(c, 0, kTop8, "the 8 largest values");
      free_range(c, 1, kMax8FreeMin, kMax8FreeMax);
      break;
    case ShapeRule::kFindIndex8:  // dst, data, vals
      for (int i : {0, 2}) expect_partitions(c, i, c.operand(1).num_partitions);
      expect_free(c, 0, kTop8, "one position per value");
      expect_free(c, 2, kTop8, "8 values per partition");
      free_range(c, 1, kMax8FreeMin, kMax8FreeMax);
      break;
    case ShapeRule::kMatchReplace8:  // dst, dst_idx, data, vals
      same_shape(c, 2, 0);
      for (int i : {1, 3}) expect_partitions(c, i, c.operand(2).num_partitions);
      expect_free(c, 1, kTop8, "one position per value");
      expect_free(c, 3, kTop8, "8 values per partition");
      free_range(c, 2, 1, kMax8FreeMax);
      break;
    case ShapeRule::kRandSeed:
      if (c.operand(0).num_partitions != 1 && c.operand(0).start_partition != 0)
        c.report(RuleKind::kShape,
                 "src starts at partition {}: seed rows are one for every lane, or one per lane "
                 "from lane 0",
                 c.operand(0).start_partition);
      break;
    case ShapeRule::kRandState:
      // XORWOW's state (NKI rand_get_state): 6 words a lane on GpSimd, 24 on VectorE.
      if (c.operand(0).start_partition != 0)
        c.report(RuleKind::kShape, "dst starts at partition {}: row p holds lane p's state",
                 c.operand(0).start_partition);
      if (c.operand(0).free_elements() != (c.engine == Engine::kGpSimd ? 6 : 24))
        c.report(RuleKind::kShape, "dst has {} words per lane; the {} generator's state is {}",
                 c.operand(0).free_elements(), engine_name(c.engine),
                 c.engine == Engine::kGpSimd ? 6 : 24);
      break;
    case ShapeRule::kTransposeDve:
      transposed(c, 0, 1);
      if (c.operand(1).num_partitions > kDveTransposeMax ||
          c.operand(1).free_elements() > kDveTransposeMax)
        c.report(RuleKind::kShape, "src is {}; a VectorE transpose is at most 32 x 32",
                 shape_text(c.operand(1)));
      break;
    case ShapeRule::kCumulative:
      cumulative_rules(c);
      break;
    case ShapeRule::kStreamShuffle:
      stream_shuffle_rules(c);
      break;
    case ShapeRule::kActivate2:
      if (in.op == Opcode::kActivate2) {
        same_shape(c, 0, 1);
      } else {
        same_shape(c, 0, 2);
        expect_partitions(c, 1, c.operand(2).num_partitions);
        expect_free(c, 1, 1, "one result per partition");
      }
      activate2_rules(c);
      break;
    case ShapeRule::kNGather:
    case ShapeRule::kLocalGather:
    case ShapeRule::kSequenceBounds:
    case ShapeRule::kNonzeroWithCount:
      check_gather(c);
      break;
    case ShapeRule::kQuantizeMx:
      // MX blocks are 32 elements: 8 partitions x 4 elements of the innermost dim (AG4).
      same_shape(c, 0, 2);
      if (c.operand(2).num_partitions % 8 != 0 || c.operand(2).free_elements() % 4 != 0)
        c.report(RuleKind::kShape, "src is {}; MX blocks need partitions in 8s and elements in 4s",
                 shape_text(c.operand(2)));
      expect_free(c, 1, c.operand(2).free_elements() / 4, "one scale per 4 elements of a row");
      break;
    case ShapeRule::kDmaCopy:
    case ShapeRule::kDmaTranspose:
      dma_rules(c);
      break;
    case ShapeRule::kSendRecv:
      send_recv_rules(c);
      break;
    case ShapeRule::kCollective:
      collective_rules(c);
      break;
    case ShapeRule::kCollectiveV:
      collective_v_rules(c);
      break;
    case ShapeRule::kDmaIndirect:
      check_dma_indirect(c);
      break;
    case ShapeRule::kOneElement:
      if (c.operand(0).elements() != 1)
        c.report(RuleKind::kShape, "{} is {}; {} moves one element", operand_label(*c.inst, 0),
                 shape_text(c.operand(0)), mnemonic(c.inst->op));
      break;
    default:
      break;  // kNone; TensorE rules are validate_matmul.cc's
  }
}

}  // namespace trnsim::isa::detail
