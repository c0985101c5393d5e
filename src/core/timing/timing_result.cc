#include "core/timing/timing_result.h"

#include <fmt/format.h>

#include <algorithm>

#include "isa/names.h"
#include "isa/op_table.h"

namespace trnsim::core {

namespace {
double seconds(Picoseconds t) { return static_cast<double>(t.v) * 1e-12; }
double ns(Picoseconds t) { return static_cast<double>(t.v) * 1e-3; }
// "19.66 ms", "62.52 us", "850.0 ns": four significant digits in the largest unit under it.
std::string readable(Picoseconds t) {
  const double x = static_cast<double>(t.v);
  if (x >= 1e12) return fmt::format("{:.4g} s", x * 1e-12);
  if (x >= 1e9) return fmt::format("{:.4g} ms", x * 1e-9);
  if (x >= 1e6) return fmt::format("{:.4g} us", x * 1e-6);
  return fmt::format("{:.4g} ns", x * 1e-3);
}
}  // namespace

double TimingResult::busy_percent(isa::Engine e) const {
  if (total.v <= 0) return 0.0;
  const auto& s = engines[static_cast<size_t>(e)];
  return 100.0 * static_cast<double>(s.busy.v) / static_cast<double>(total.v);
}

double TimingResult::active_percent(isa::Engine e) const {
  if (total.v <= 0) return 0.0;
  const auto& s = engines[static_cast<size_t>(e)];
  return 100.0 * static_cast<double>(s.active.v) / static_cast<double>(total.v);
}

double TimingResult::tensor_utilisation() const {
  if (total.v <= 0 || tensor_peak_flops <= 0) return 0.0;
  return tensor_flops / (seconds(total) * tensor_peak_flops);
}

double TimingResult::hbm_gbps() const {
  if (total.v <= 0) return 0.0;
  return static_cast<double>(dma.hbm_read_bytes + dma.hbm_write_bytes) / seconds(total) * 1e-9;
}

const char* stall_name(Stall s) {
  switch (s) {
    case Stall::kSemaphore:
      return "semaphore";
    case Stall::kDma:
      return "dma";
    case Stall::kPort:
      return "port";
    case Stall::kOwn:
      return "own";
    case Stall::kBarrier:
      return "barrier";
  }
  return "?";
}

Picoseconds EngineStats::idle(Picoseconds total) const {
  Picoseconds used = busy;
  for (Picoseconds t : stall) used += t;
  return used < total ? total - used : Picoseconds(0);
}

TimingResult::Bound TimingResult::bound() const {
  Bound b;
  if (total.v <= 0) {
    b.verdict = "none";
    return b;
  }
  double best = 0;
  for (isa::Engine e : isa::kAllEngines) {
    const auto i = static_cast<size_t>(e);
    b.engine_share[i] = static_cast<double>(engines[i].busy.v) / static_cast<double>(total.v);
    if (b.engine_share[i] > best) {
      best = b.engine_share[i];
      b.verdict = isa::engine_name(e);
    }
  }
  for (Picoseconds t : dma.engine_busy)
    b.dma_share = std::max(b.dma_share, static_cast<double>(t.v) / static_cast<double>(total.v));
  if (b.dma_share > best) {
    best = b.dma_share;
    b.verdict = "dma";
  }
  // Nothing busy half of the run: it is spent waiting (latency of dependent instructions,
  // semaphores between engines), not on a throughput limit.
  if (best < 0.5) b.verdict = "latency";
  return b;
}

std::string TimingResult::summary() const {
  std::string s = fmt::format("total time: {} ({} ps), {} instructions, {} events\n",
                              readable(total), total.v, instructions, events);
  if (launch.v > 0)
    s += fmt::format(
        "kernel launch: {} of start-up and tear-down (core.launch.overhead_ns), latency {}\n",
        readable(launch), readable(latency()));
  s += fmt::format("{:<6} {:>12} {:>16} {:>8} {:>9} {:>16}\n", "engine", "instructions", "busy ns",
                   "busy %", "active %", "finish ns");
  for (isa::Engine e : isa::kAllEngines) {
    const auto& st = engines[static_cast<size_t>(e)];
    s += fmt::format("{:<6} {:>12} {:>16.3f} {:>7.2f}% {:>8.2f}% {:>16.3f}\n", isa::engine_name(e),
                     st.instructions, ns(st.busy), busy_percent(e), active_percent(e),
                     ns(st.finish));
  }
  s += "where each engine's time went (ns): busy, waiting on another engine's semaphore, on DMA, "
       "on a shared port, on its own earlier instruction, at a barrier; idle\n";
  for (isa::Engine e : isa::kAllEngines) {
    const auto& st = engines[static_cast<size_t>(e)];
    if (st.instructions == 0) continue;
    std::string on;
    for (isa::Engine p : isa::kAllEngines) {
      const Picoseconds w = st.waited_on[static_cast<size_t>(p)];
      if (w.v > 0)
        on += fmt::format("{}{} {:.0f}", on.empty() ? " (" : ", ", isa::engine_name(p), ns(w));
    }
    if (!on.empty()) on += ")";
    s += fmt::format(
        "  {:<5} busy {:.0f}, semaphore {:.0f}{}, dma {:.0f}, port {:.0f}, own {:.0f}, "
        "barrier {:.0f}; idle {:.0f}\n",
        isa::engine_name(e), ns(st.busy), ns(st.stalled(Stall::kSemaphore)), on,
        ns(st.stalled(Stall::kDma)), ns(st.stalled(Stall::kPort)), ns(st.stalled(Stall::kOwn)),
        ns(st.stalled(Stall::kBarrier)), ns(st.idle(total)));
  }
  const Bound b = bound();
  s += fmt::format("bound: {}\n", b.verdict);
  s += fmt::format("TensorE: {:.4g} FLOPs, {:.2f}% of the {:.2f} TFLOPS BF16 peak\n", tensor_flops,
                   100.0 * tensor_utilisation(), tensor_peak_flops * 1e-12);
  s += fmt::format(
      "DMA: {} transfers in {} pieces, {} bytes; HBM read {} B, write {} B, {:.2f} GB/s\n",
      dma.transfers, dma.pieces, dma.bytes, dma.hbm_read_bytes, dma.hbm_write_bytes, hbm_gbps());
  s += fmt::format("high-water per partition: SBUF {} B, PSUM {} B\n", sbuf_high_water,
                   psum_high_water);
  if (spill.stores + spill.reloads > 0)
    s += fmt::format("SBUF spills: {} tiles, {} stores of {} B to HBM, {} reloads of {} B\n",
                     spill.tiles, spill.stores, spill.bytes_spilled, spill.reloads,
                     spill.bytes_reloaded);
  s += "instructions by engine and opcode:\n";
  for (isa::Engine e : isa::kAllEngines) {
    const auto& st = engines[static_cast<size_t>(e)];
    for (int op = 0; op < isa::kNumOpcodes; ++op) {
      if (st.by_opcode[static_cast<size_t>(op)] == 0) continue;
      s += fmt::format("  {:<5} {:<22} {:>12}\n", isa::engine_name(e),
                       isa::mnemonic(static_cast<isa::Opcode>(op)),
                       st.by_opcode[static_cast<size_t>(op)]);
    }
  }
  if (!faults.empty()) s += "faults:\n" + faults.to_string();
  return s;
}

}  // namespace trnsim::core
