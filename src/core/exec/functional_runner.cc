#include "core/exec/functional_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/interrupt.h"
#include "core/exec/exec_context.h"
#include "numerics/convert.h"

namespace trnsim::core {

FunctionalRunner::FunctionalRunner(const arch::ChipSpec& chip, const isa::Program& program,
                                   RunOptions run)
    : FunctionalRunner(chip.core, exec_options_for(chip, program.seed), device_hbm_bytes(chip),
                       program, run) {}

FunctionalRunner::FunctionalRunner(const arch::CoreSpec& core, const ExecOptions& opts,
                                   uint64_t hbm_bytes, const isa::Program& program, RunOptions run)
    : program_(program),
      run_(run),
      hbm_(hbm_bytes),
      exec_(core, opts, hbm_),
      io_(program, hbm_, opts.policy),
      sems_(static_cast<size_t>(std::max(program.num_semaphores, isa::kMaxSemaphores)), 0) {}

void FunctionalRunner::write_tensor(std::string_view name, std::span<const uint8_t> bytes) {
  io_.write(name, bytes);
}

void FunctionalRunner::write_tensor_f32(std::string_view name, std::span<const float> values) {
  io_.write_f32(name, values);
}

std::vector<uint8_t> FunctionalRunner::read_tensor(std::string_view name) const {
  return io_.read(name);
}

std::vector<float> FunctionalRunner::read_tensor_f32(std::string_view name) const {
  return io_.read_f32(name);
}

bool FunctionalRunner::waits_hold(const isa::Instruction& in) const {
  for (const isa::SemWait& w : in.waits)
    if (w.sem >= sems_.size() || sems_[w.sem] < w.value) return false;
  return true;
}

void FunctionalRunner::fault(mem::FaultKind kind, const isa::Instruction& in, isa::Engine e,
                             uint64_t id, std::string message) {
  mem::Fault f;
  f.kind = kind;
  f.instruction_id = id;
  f.instruction = fmt::format("{} at {}[{}]", instruction_label(in, e, id), isa::engine_name(e),
                              pc_[static_cast<size_t>(e)]);
  f.message = std::move(message);
  exec_.faults().add(std::move(f));
}

bool FunctionalRunner::apply_signals(const isa::Instruction& in, isa::Engine e, uint64_t id) {
  for (const isa::SemSignal& s : in.signals) {
    if (s.sem >= sems_.size()) {
      fault(mem::FaultKind::kShape, in, e, id,
            fmt::format("signals semaphore {} of {}", s.sem, sems_.size()));
      return false;
    }
    sems_[s.sem] += s.delta;
  }
  return true;
}

void FunctionalRunner::report_deadlock() {
  for (isa::Engine e : isa::kAllEngines) {
    const auto& stream = program_.stream(e);
    const size_t pc = pc_[static_cast<size_t>(e)];
    if (pc >= stream.size()) continue;
    const isa::Instruction& in = stream[pc];
    std::string waits;
    for (const isa::SemWait& w : in.waits) {
      const bool bad = w.sem >= sems_.size();
      if (!bad && sems_[w.sem] >= w.value) continue;
      if (!waits.empty()) waits += ", ";
      waits += bad ? fmt::format("semaphore {} (does not exist)", w.sem)
                   : fmt::format("semaphore {} >= {} (it is {})", w.sem, w.value, sems_[w.sem]);
    }
    fault(mem::FaultKind::kDeadlock, in, e, issued_[static_cast<size_t>(e)],
          "blocked forever waiting for " + waits);
  }
}

RunResult FunctionalRunner::run() {
  RunResult r;
  for (;;) {
    bool progress = false, done = true;
    for (isa::Engine e : isa::kAllEngines) {
      const auto ei = static_cast<size_t>(e);
      const auto& stream = program_.stream(e);
      if (pc_[ei] >= stream.size()) continue;
      done = false;
      const isa::Instruction& in = stream[pc_[ei]];
      if (!waits_hold(in)) continue;
      const uint64_t id = issued_[ei]++;
      const size_t before = exec_.faults().size();
      const ExecResult res = exec_.execute(in, e, id);
      // Add the stream position, which the executor does not know.
      for (size_t i = before; i < exec_.faults().size(); ++i)
        exec_.faults()[i].instruction += fmt::format(" at {}[{}]", isa::engine_name(e), pc_[ei]);
      // Ctrl-C: checked every 1024 instructions (core-side values can take ~1 ms each).
      if ((++r.instructions & 1023) == 0) check_interrupt();
      ++r.per_engine[ei];
      progress = true;
      const bool signalled = apply_signals(in, e, id);
      if ((!res.ok || !signalled) && run_.stop_on_fault) return r;
      if (res.jump && (*res.jump < 0 || static_cast<size_t>(*res.jump) > stream.size())) {
        fault(mem::FaultKind::kRegister, in, e, id,
              fmt::format("branch target {} outside the stream (0..{})", *res.jump, stream.size()));
        return r;
      }
      if (r.instructions >= run_.max_instructions) {
        fault(mem::FaultKind::kStepLimit, in, e, id,
              fmt::format("{} instructions executed, the limit (--max-instructions); a runaway "
                          "loop?",
                          r.instructions));
        return r;
      }
      pc_[ei] = res.jump ? static_cast<size_t>(*res.jump) : pc_[ei] + 1;
    }
    if (done) {
      r.ok = exec_.faults().empty();
      return r;
    }
    if (!progress) {
      report_deadlock();
      return r;
    }
  }
}

}  // namespace trnsim::core
