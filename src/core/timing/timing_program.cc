#include "core/timing/timing_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "base/same_bytes.h"
#include "core/control/dynamic_operands.h"
#include "core/dma/dma_plan_cache.h"
#include "core/exec/operand_roles.h"
#include "isa/op_table.h"

namespace trnsim::core {

uint8_t shared_ports(const isa::Instruction& ins, const arch::PortSpec& ports) {
  bool sbuf = false, psum = false;
  for (int i = 0; i < ins.num_operands; ++i) {
    sbuf |= ins.operands[i].space == isa::Space::kSbuf;
    psum |= ins.operands[i].space == isa::Space::kPsum;
  }
  uint8_t mask = 0;
  const bool vector = ins.engine == isa::Engine::kVector;
  if (ports.vector_gpsimd_sbuf_conflict && sbuf && (vector || ins.engine == isa::Engine::kGpSimd))
    mask |= kPortVectorGpSimdSbuf;
  if (ports.vector_scalar_psum_conflict && psum && (vector || ins.engine == isa::Engine::kScalar))
    mask |= kPortVectorScalarPsum;
  return mask;
}

namespace {

// The pass below is bound by memory: each instruction is read once, and its fields span up to
// 17 cache lines (the operands last, 120 bytes each). On large programs it ran at half the
// rate of a plain loop over the same lines, and software prefetches ahead did not change that
// on the host measured (bench/README.md). So the lines are loaded a block of instructions at
// a time by a loop of independent loads, which keeps many misses in flight (1.3-1.5x faster
// there), and the pass then reads the block from the cache: from the header up to the end of
// the last operand in use (the unused operand slots are never read).
constexpr size_t kTouchBlock = 32;
constexpr uintptr_t kLine = 64;

void touch_block(const isa::Stream& stream, size_t i) {
  const size_t end = std::min(stream.size(), i + kTouchBlock);
  uint64_t sink = 0;
  for (size_t j = i; j < end; ++j) {
    const isa::Instruction& ins = stream[j];
    const int n = std::clamp<int>(ins.num_operands, 0, isa::kMaxOperands);
    // One byte per line, all inside the instruction: from its first byte, then its last.
    const auto* first = reinterpret_cast<const volatile unsigned char*>(&ins);
    const auto* last = reinterpret_cast<const volatile unsigned char*>(ins.operands.data() + n) - 1;
    for (const auto* q = first; q < last; q += kLine) sink += *q;
    sink += *last;
  }
  asm volatile("" : : "r"(sink));
}

// Bytes from an access pattern's offset to one past its highest byte within a partition.
int64_t footprint_extent(const isa::AccessPattern& ap) {
  int64_t hi = 0;
  for (int d = 0; d < ap.ndim; ++d)
    if (ap.dims[d].stride > 0) hi += (ap.dims[d].size - 1) * ap.dims[d].stride;
  // A dynamic operand reaches as far as its register's range moves it.
  const int64_t moves =
      ap.dynamic()
          ? std::max<int64_t>(0, isa::AccessPattern::saturating_product(ap.dyn_max, ap.dyn_step))
          : 0;
  return (hi + 1) * static_cast<int64_t>(ap.dtype.storage_bytes) + moves;
}

// Whether two access patterns differ at most in their offset (the cost functions, the DMA plan,
// the FLOPs and the shared ports never read it: core/cost*.cc, dma_plan.cc). The fields before
// `offset` compare as bytes (no implicit padding: isa/access_pattern.h), the dims in use and a
// dynamic operand's range too (the footprint extents are memoised with the price).
bool same_but_offset(const isa::AccessPattern& a, const isa::AccessPattern& b) {
  static_assert(sizeof(isa::AccessPattern) == 120 && offsetof(isa::AccessPattern, offset) == 32 &&
                    offsetof(isa::AccessPattern, dims) == 40,
                "AccessPattern changed: compare the new field here (or say why not)");
  if (!same_bytes<offsetof(isa::AccessPattern, offset)>(&a, &b) || a.ndim != b.ndim ||
      a.dyn_max != b.dyn_max || a.dyn_step != b.dyn_step)
    return false;
  const int n = std::clamp(a.ndim, 0, isa::kMaxFreeDims);
  for (int d = 0; d < n; ++d)
    if (!same_bytes<sizeof(isa::FreeDim)>(&a.dims[d], &b.dims[d])) return false;
  return true;
}

// Whether `b` is priced like `a`: same opcode, parameters and operands but for their offsets.
// An unrolled loop repeats a handful of such shapes thousands of times, and comparing is much
// cheaper than pricing again (the comparison is exact: a mismatch only prices again).
bool same_timing_shape(const isa::Instruction& a, const isa::Instruction& b) {
  if (a.op != b.op || a.num_operands != b.num_operands || !(a.p == b.p)) return false;
  for (int k = 0; k < a.num_operands; ++k)
    if (!same_but_offset(a.operands[k], b.operands[k])) return false;
  return true;
}

// Bytes an access pattern reaches below its offset (through negative steps).
int64_t bytes_below(const isa::AccessPattern& ap) {
  int64_t lo = 0;
  for (int d = 0; d < ap.ndim; ++d)
    if (ap.dims[d].stride < 0) lo += (ap.dims[d].size - 1) * ap.dims[d].stride;
  const int64_t moves =
      ap.dynamic()
          ? std::min<int64_t>(0, isa::AccessPattern::saturating_product(ap.dyn_max, ap.dyn_step))
          : 0;
  return lo * static_cast<int64_t>(ap.dtype.storage_bytes) + moves;
}

// Shapes remembered per opcode (the memo of priced shapes).
constexpr uint32_t kShapeWays = 4;

// The in-engine read-after-write scan of one stream (InstrInfo::raw_back): the on-chip writes
// of its last instructions, newest first, so that the first overlap found is the nearest
// producer and the scan stops at the first write out of the window.
class RawWindow {
 public:
  // raw_back of instruction `i`, then records its writes. `extent` and `below` are its
  // operands' bytes from their offsets up and down (footprint_extent, bytes_below).
  uint8_t scan(const isa::Instruction& ins, size_t i, uint8_t write_mask, const int64_t* extent,
               const int64_t* below) {
    uint8_t back = 0;
    if (count_ > 0 && i - writes_[head_].at <= kRawWindow) {
      for (int k = 0; k < ins.num_operands && back != 1; ++k) {
        const isa::AccessPattern& ap = ins.operands[k];
        if ((write_mask >> k) & 1u || ap.space == isa::Space::kHbm) continue;
        // Nothing of the window wrote this memory (TensorE reads SBUF and writes only PSUM).
        if (i - last_write_[space_slot(ap.space)] > kRawWindow) continue;
        const Span r = span(ap, extent[k], below[k]);
        for (size_t n = 0; n < count_; ++n) {
          const Write& w = writes_[(head_ + kSlots - n) % kSlots];
          const size_t d = i - w.at;
          if (d > kRawWindow || (back != 0 && d >= back)) break;
          if (r.overlaps(w.span)) {
            back = static_cast<uint8_t>(d);
            break;
          }
        }
      }
    }
    for (int k = 0; k < ins.num_operands; ++k) {
      const isa::AccessPattern& ap = ins.operands[k];
      if (!((write_mask >> k) & 1u) || ap.space == isa::Space::kHbm) continue;
      head_ = (head_ + 1) % kSlots;
      writes_[head_] = {i, span(ap, extent[k], below[k])};
      last_write_[space_slot(ap.space)] = i;
      count_ = std::min(count_ + 1, kSlots);
    }
    return back;
  }

 private:
  // The bytes an on-chip operand spans in each of its partitions, and its partitions.
  struct Span {
    isa::Space space = isa::Space::kSbuf;
    int64_t p0 = 0, p1 = 0, lo = 0, hi = 0;
    bool overlaps(const Span& o) const {
      return space == o.space && p0 < o.p1 && o.p0 < p1 && lo < o.hi && o.lo < hi;
    }
  };
  struct Write {
    size_t at = 0;
    Span span;
  };
  static Span span(const isa::AccessPattern& ap, int64_t extent, int64_t below) {
    return {ap.space, ap.start_partition, ap.start_partition + ap.num_partitions, ap.offset + below,
            ap.offset + extent};
  }
  static constexpr size_t kSlots = 2 * kRawWindow;  // an instruction writes at most two operands
  static size_t space_slot(isa::Space s) { return s == isa::Space::kPsum ? 1 : 0; }
  std::array<Write, kSlots> writes_{};
  // The latest instruction that wrote SBUF (0) and PSUM (1); far back at first.
  std::array<size_t, 2> last_write_{kNever, kNever};
  static constexpr size_t kNever = ~size_t{0} / 2;
  size_t head_ = 0, count_ = 0;
};

}  // namespace

TimingProgram::TimingProgram(const isa::Program& program, const arch::CoreSpec& spec)
    : program_(program) {
  int max_sem = program.num_semaphores - 1;
  DmaPlanCache plan_cache;
  for (isa::Engine e : isa::kAllEngines) {
    const auto& stream = program.stream(e);
    auto& info = info_[static_cast<size_t>(e)];
    info.reserve(stream.size());
    // The last instruction priced of each opcode on this engine, its record and the extents
    // of its operands (footprint_extent).
    struct Priced {
      const isa::Instruction* ins = nullptr;
      size_t info = 0;
      std::array<int64_t, isa::kMaxOperands> extent{};
      std::array<int64_t, isa::kMaxOperands> below{};  // bytes below the offset (negative steps)
      uint8_t write_mask = 0;
    };
    // A few shapes per opcode: a loop body often alternates two or three shapes of one opcode
    // (an attention kernel's tensor_tensor ops), which would evict each other from one slot.
    struct Ways {
      std::array<Priced, kShapeWays> way{};
      uint32_t next = 0;  // the slot a new shape takes (round robin)
      uint32_t mru = 0;   // the slot that matched last: tried first (runs of one shape)
    };
    std::array<Ways, isa::kNumOpcodes> last{};
    RawWindow raw;
    int max_reg = -1;
    for (size_t i = 0; i < stream.size(); ++i) {
      if (i % kTouchBlock == 0) touch_block(stream, i);
      const isa::Instruction& ins = stream[i];
      InstrInfo& x = info.emplace_back();
      // An opcode outside the table (a malformed program) is priced, and fails, every time.
      Ways& ways = last[std::min(static_cast<size_t>(ins.op), last.size() - 1)];
      Priced* hit = nullptr;
      for (uint32_t t = 0; t < kShapeWays; ++t) {
        const uint32_t w = t == 0 ? ways.mru : (t <= ways.mru ? t - 1 : t);
        Priced& way = ways.way[w];
        if (way.ins == nullptr) break;  // slots fill in order
        if (same_timing_shape(*way.ins, ins)) {
          hit = &way;
          ways.mru = w;
          break;
        }
      }
      Priced& rep = hit != nullptr ? *hit : ways.way[ways.next];
      if (hit != nullptr) {
        // Its priced fields; the per-instruction ones (waits, signals, footprint) follow.
        x = info[rep.info];
        x.sbuf_end = x.psum_end = 0;
      } else {
        ways.mru = ways.next;
        ways.next = (ways.next + 1) % kShapeWays;
        rep.ins = &ins;
        rep.info = i;
        for (int k = 0; k < ins.num_operands; ++k)
          rep.extent[static_cast<size_t>(k)] = footprint_extent(ins.operands[k]);
        for (int k = 0; k < ins.num_operands; ++k)
          rep.below[static_cast<size_t>(k)] = bytes_below(ins.operands[k]);
        rep.write_mask = operand_roles(ins.op).write_mask;
        x.cost = instruction_cost(ins, spec);
        x.op = ins.op;
        x.control = is_control(ins.op);
        x.dma = isa::is_dma(ins.op);
        x.ports = x.control || x.dma ? 0 : shared_ports(ins, spec.ports);
        x.flops = tensor_flops(ins, spec);
        if (x.dma) {
          bool added = false;
          x.dma_plan = plan_cache.find_or_add(dma_shape(ins), spec, dma_plans_, added);
          const DmaPlan& plan = dma_plans_[static_cast<size_t>(x.dma_plan)];
          if (added)
            dma_symmetric_ = dma_symmetric_ && (plan.num_pieces == 0 || plan.spreads_evenly());
        }
      }
      // DMA transfers complete through the DMA engines, under semaphores (kernel/
      // sync_resolver.h); the engine's own compute instructions follow each other here.
      x.registers = reads_registers(ins);
      x.raw_back = 0;
      if (!x.control && !x.dma) {
        x.raw_back = raw.scan(ins, i, rep.write_mask, rep.extent.data(), rep.below.data());
      }
      if (ins.waits.size() > UINT16_MAX || ins.signals.size() > UINT16_MAX)
        throw InputError(fmt::format("{} instruction {}: more than {} waits or signals",
                                     isa::engine_name(e), i, UINT16_MAX));
      x.num_waits = static_cast<uint16_t>(ins.waits.size());
      if (x.num_waits == 1) {
        x.wait = ins.waits[0];
      } else {
        x.waits = static_cast<uint32_t>(waits_.size());
        waits_.insert(waits_.end(), ins.waits.begin(), ins.waits.end());
      }
      x.num_signals = static_cast<uint16_t>(ins.signals.size());
      if (x.num_signals == 1) {
        x.signal = ins.signals[0];
      } else {
        x.signals = static_cast<uint32_t>(signals_.size());
        signals_.insert(signals_.end(), ins.signals.begin(), ins.signals.end());
      }
      // Operand extents are rep's (a shape it shares, or its own when just priced).
      for (int k = 0; k < ins.num_operands; ++k) {
        const isa::AccessPattern& ap = ins.operands[k];
        const int64_t end = ap.offset + rep.extent[static_cast<size_t>(k)];
        if (ap.space == isa::Space::kSbuf) x.sbuf_end = std::max(x.sbuf_end, end);
        if (ap.space == isa::Space::kPsum) x.psum_end = std::max(x.psum_end, end);
      }
      for (const auto& w : ins.waits) max_sem = std::max<int>(max_sem, w.sem);
      const auto producer = x.dma ? kDmaProducer : static_cast<uint8_t>(1u << static_cast<int>(e));
      for (const auto& s : ins.signals) {
        max_sem = std::max<int>(max_sem, s.sem);
        semaphores_monotone_ = semaphores_monotone_ && s.delta >= 0;
        if (s.sem >= sem_producers_.size()) sem_producers_.resize(size_t{s.sem} + 1, 0);
        sem_producers_[s.sem] |= producer;
      }
      max_reg = std::max({max_reg, int{ins.p.reg_dst}, int{ins.p.reg_a}, int{ins.p.reg_b}});
    }
    num_registers_[static_cast<size_t>(e)] = max_reg + 1;
  }
  num_semaphores_ = max_sem + 1;
  sem_producers_.resize(static_cast<size_t>(std::max(0, num_semaphores_)), 0);
}

}  // namespace trnsim::core
