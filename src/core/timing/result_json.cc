#include "core/timing/result_json.h"

#include "isa/names.h"
#include "isa/op_table.h"

namespace trnsim::core {

namespace {
double us(Picoseconds t) { return static_cast<double>(t.v) * 1e-6; }
}  // namespace

nlohmann::json timing_result_json(const TimingResult& r) {
  nlohmann::json j;
  j["total_ps"] = r.total.v;
  j["total_us"] = us(r.total);
  j["launch_ps"] = r.launch.v;
  j["latency_ps"] = r.latency().v;
  j["instructions"] = r.instructions;
  j["events"] = r.events;
  nlohmann::json engines = nlohmann::json::object();
  for (isa::Engine e : isa::kAllEngines) {
    const EngineStats& s = r.engines[static_cast<size_t>(e)];
    nlohmann::json ops = nlohmann::json::object();
    for (int op = 0; op < isa::kNumOpcodes; ++op) {
      const uint64_t n = s.by_opcode[static_cast<size_t>(op)];
      if (n != 0) ops[std::string(isa::mnemonic(static_cast<isa::Opcode>(op)))] = n;
    }
    nlohmann::json stall = nlohmann::json::object(), on = nlohmann::json::object();
    for (int k = 0; k < kNumStalls; ++k)
      stall[stall_name(static_cast<Stall>(k))] = s.stall[static_cast<size_t>(k)].v;
    for (isa::Engine p : isa::kAllEngines)
      if (s.waited_on[static_cast<size_t>(p)].v > 0)
        on[std::string(isa::engine_name(p))] = s.waited_on[static_cast<size_t>(p)].v;
    const double ns = 1e-3;
    engines[std::string(isa::engine_name(e))] = {
        {"instructions", s.instructions},
        {"busy_ps", s.busy.v},
        {"background_busy_ps", s.background_busy.v},
        {"busy_percent", r.busy_percent(e)},
        {"active_ps", s.active.v},
        {"active_percent", r.active_percent(e)},
        {"finish_ps", s.finish.v},
        {"by_opcode", ops},
        {"stall_ps", stall},
        {"waited_on_ps", on},
        {"idle_ps", s.idle(r.total).v},
        // The profile's names for the same figures (issue 18), in ns.
        {"busy_ns", static_cast<double>(s.busy.v) * ns},
        {"wait_semaphore_ns", static_cast<double>(s.stalled(Stall::kSemaphore).v) * ns},
        {"wait_dma_ns", static_cast<double>(s.stalled(Stall::kDma).v) * ns},
        {"wait_port_ns", static_cast<double>(s.stalled(Stall::kPort).v) * ns},
        {"wait_own_ns", static_cast<double>(s.stalled(Stall::kOwn).v) * ns},
        {"wait_barrier_ns", static_cast<double>(s.stalled(Stall::kBarrier).v) * ns},
        {"idle_ns", static_cast<double>(s.idle(r.total).v) * ns}};
  }
  j["engines"] = engines;
  const TimingResult::Bound b = r.bound();
  nlohmann::json shares = nlohmann::json::object();
  for (isa::Engine e : isa::kAllEngines)
    shares[std::string(isa::engine_name(e))] = b.engine_share[static_cast<size_t>(e)];
  shares["dma"] = b.dma_share;
  j["bound"] = {{"verdict", b.verdict}, {"busy_shares", shares}};
  j["tensor"] = {{"flops", r.tensor_flops},
                 {"peak_flops", r.tensor_peak_flops},
                 {"utilisation", r.tensor_utilisation()}};
  nlohmann::json busy = nlohmann::json::array();
  for (Picoseconds t : r.dma.engine_busy) busy.push_back(t.v);
  j["dma"] = {{"transfers", r.dma.transfers},
              {"pieces", r.dma.pieces},
              {"bytes", r.dma.bytes},
              {"hbm_read_bytes", r.dma.hbm_read_bytes},
              {"hbm_write_bytes", r.dma.hbm_write_bytes},
              {"hbm_gbps", r.hbm_gbps()},
              {"finish_ps", r.dma.finish.v},
              {"engine_busy_ps", busy}};
  j["sbuf_high_water_bytes"] = r.sbuf_high_water;
  j["spill"] = {{"tiles", r.spill.tiles},
                {"stores", r.spill.stores},
                {"reloads", r.spill.reloads},
                {"bytes_spilled", r.spill.bytes_spilled},
                {"bytes_reloaded", r.spill.bytes_reloaded}};
  j["psum_high_water_bytes"] = r.psum_high_water;
  nlohmann::json faults = nlohmann::json::array();
  for (const mem::Fault& f : r.faults.all())
    faults.push_back({{"kind", std::string(mem::fault_kind_name(f.kind))},
                      {"instruction", f.instruction},
                      {"message", f.message},
                      {"text", f.to_string()}});
  j["faults"] = faults;
  return j;
}

}  // namespace trnsim::core
