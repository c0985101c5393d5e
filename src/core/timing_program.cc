#include "core/timing_program.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"
#include "core/dma_plan_cache.h"

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

// The pass below is bound by memory latency: each instruction is read once, and its waits and
// signals sit in separate heap blocks found only through the instruction. Prefetching the
// instruction (its first lines: counts, parameters, the first operands) a few iterations ahead,
// and its wait / signal blocks a little later, keeps several instructions in flight.
constexpr size_t kAheadBody = 8, kAheadSync = 4, kBodyLines = 8;
constexpr size_t kLine = 64;

void prefetch_ahead(const std::vector<isa::Instruction>& stream, size_t i) {
  if (i + kAheadBody < stream.size()) {
    const auto* q = reinterpret_cast<const char*>(&stream[i + kAheadBody]);
    for (size_t l = 0; l < kBodyLines; ++l) __builtin_prefetch(q + l * kLine);
  }
  if (i + kAheadSync < stream.size()) {
    __builtin_prefetch(stream[i + kAheadSync].waits.data());
    __builtin_prefetch(stream[i + kAheadSync].signals.data());
  }
}

}  // namespace

int64_t footprint_end(const isa::AccessPattern& ap) {
  int64_t hi = 0;
  for (int d = 0; d < ap.ndim; ++d)
    if (ap.dims[d].stride > 0) hi += (ap.dims[d].size - 1) * ap.dims[d].stride;
  return ap.offset + (hi + 1) * static_cast<int64_t>(ap.dtype.storage_bytes);
}

TimingProgram::TimingProgram(const isa::Program& program, const arch::CoreSpec& spec)
    : program_(program) {
  int max_sem = program.num_semaphores - 1;
  DmaPlanCache plan_cache;
  // Most instructions wait for or signal at most one semaphore: one growth-free pass.
  waits_.reserve(program.num_instructions());
  signals_.reserve(program.num_instructions());
  for (isa::Engine e : isa::kAllEngines) {
    const auto& stream = program.stream(e);
    auto& info = info_[static_cast<size_t>(e)];
    info.resize(stream.size());
    int max_reg = -1;
    for (size_t i = 0; i < stream.size(); ++i) {
      prefetch_ahead(stream, i);
      const isa::Instruction& ins = stream[i];
      InstrInfo& x = info[i];
      x.cost = instruction_cost(ins, spec);
      x.op = ins.op;
      x.control = is_control(ins.op);
      x.dma = is_dma(ins.op);
      x.ports = x.control || x.dma ? 0 : shared_ports(ins, spec.ports);
      if (ins.waits.size() > UINT16_MAX || ins.signals.size() > UINT16_MAX)
        throw InputError(fmt::format("{} instruction {}: more than {} waits or signals",
                                     isa::engine_name(e), i, UINT16_MAX));
      x.waits = static_cast<uint32_t>(waits_.size());
      x.num_waits = static_cast<uint16_t>(ins.waits.size());
      waits_.insert(waits_.end(), ins.waits.begin(), ins.waits.end());
      x.signals = static_cast<uint32_t>(signals_.size());
      x.num_signals = static_cast<uint16_t>(ins.signals.size());
      signals_.insert(signals_.end(), ins.signals.begin(), ins.signals.end());
      x.flops = tensor_flops(ins, spec);
      if (x.dma) {
        bool added = false;
        x.dma_plan = plan_cache.find_or_add(dma_shape(ins), spec, dma_plans_, added);
        const DmaPlan& plan = dma_plans_.back();
        if (added)
          dma_symmetric_ = dma_symmetric_ && (plan.num_pieces == 0 || plan.spreads_evenly());
      }
      for (int k = 0; k < ins.num_operands; ++k) {
        const isa::AccessPattern& ap = ins.operands[k];
        if (ap.space == isa::Space::kSbuf) x.sbuf_end = std::max(x.sbuf_end, footprint_end(ap));
        if (ap.space == isa::Space::kPsum) x.psum_end = std::max(x.psum_end, footprint_end(ap));
      }
      for (const auto& w : ins.waits) max_sem = std::max<int>(max_sem, w.sem);
      for (const auto& s : ins.signals) max_sem = std::max<int>(max_sem, s.sem);
      max_reg = std::max({max_reg, int{ins.p.reg_dst}, int{ins.p.reg_a}, int{ins.p.reg_b}});
    }
    num_registers_[static_cast<size_t>(e)] = max_reg + 1;
  }
  num_semaphores_ = max_sem + 1;
}

}  // namespace trnsim::core
