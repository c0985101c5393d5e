// Hardware loops (builder.h): every engine runs the same loop on its own registers and
// branches. NKI's dynamic loops, as the compiler lowers them ("NKI Dynamic Loops": every
// iteration ends with a drain and a barrier across all engines, and the semaphores are reset
// before the next iteration starts):
//
//   every engine   drain (waits for every agent's latest instruction)
//                  i = start; [bound = stop]; branch to SKIP if !(i < bound)
//   HEAD:          body (synchronised as straight-line code, sync_resolver.h)
//                  drain; the leader's drain, emitted last, waits for the others' too
//   the leader     sem_signal: every semaphore back by what one iteration added; go_e += 1
//   the others     nop wait=go_e>=1 signal=go_e-1   (go_e counts the leader's resets)
//   every engine   i += step; branch to HEAD if i < bound
//   the leader     SKIP: sem_signal: every semaphore forward by one iteration's signals
//   the others     SKIP:
//
// With the reset, each iteration sees the semaphore values the first saw, so the body's waits
// (counted once in program order) hold in every iteration; the restore after the loop leaves the
// values a single pass of the body would, which the waits after the loop count on (a loop of
// zero iterations included). The drains make the body's waits on earlier work, and later waits
// on the body, known complete (pruned). The per-iteration counts are only known once every
// signal is placed: finish_loops() fills them in at build().
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/error.h"
#include "kernel/builder.h"
#include "kernel/call_error.h"

namespace trnsim::kernel {

namespace {

// The engine whose drain comes last, so that it waits for the others' drains.
constexpr isa::Engine kLeader = isa::kAllEngines[isa::kNumEngines - 1];

isa::Instruction control(isa::Opcode op, isa::Engine e) {
  isa::Instruction in;
  in.op = op;
  in.engine = e;
  return in;
}

isa::Instruction branch(isa::Engine e, int32_t target, int32_t ra, isa::AluOp cmp,
                        const KernelBuilder::Bound& rhs) {
  isa::Instruction in = control(isa::Opcode::kBranch, e);
  in.p.branch_target = target;
  in.p.reg_a = static_cast<int16_t>(ra);
  in.p.op0 = cmp;
  in.p.reg_b = static_cast<int16_t>(rhs.reg);
  in.p.reg_imm = rhs.reg >= 0 ? 0 : rhs.value;
  return in;
}

isa::Instruction reg_alu(isa::Engine e, int32_t rd, int32_t ra, int64_t imm) {
  isa::Instruction in = control(isa::Opcode::kRegAlu, e);
  in.p.reg_dst = static_cast<int16_t>(rd);
  in.p.reg_a = static_cast<int16_t>(ra);
  in.p.op0 = isa::AluOp::kAdd;
  in.p.reg_imm = imm;
  return in;
}

}  // namespace

void KernelBuilder::stale_but_counters() {
  // The counters of the loops still open stay in every engine's registers.
  for (int32_t r = 0; r < isa::kScalarRegisters; ++r)
    if (!regs_[static_cast<size_t>(r)].counter) stale_everywhere(r);
}

InstrRef KernelBuilder::emit_control(isa::Instruction in, bool barrier) {
  if (built_) call_error("loop", "the kernel was already built");
  in.source_line = source_line_;
  const InstrRef ref{in.engine, static_cast<int32_t>(prog_.stream(in.engine).size())};
  order_.push_back({ref, 0, barrier});
  prog_.append(std::move(in));
  return ref;
}

void KernelBuilder::drain() {
  close_all_groups();
  stationary_.reset();  // a body loads its own stationary every iteration
  stationary_where_.reset();
  for (isa::Engine e : isa::kAllEngines) emit_control(control(isa::Opcode::kNop, e), true);
}

int32_t KernelBuilder::begin_for(Bound start, Bound stop, int64_t step) {
  constexpr std::string_view kCall = "dynamic_range";
  if (step <= 0)
    call_error(kCall, fmt::format("step {}: a loop's step is a positive number", step));
  for (const Bound* b : {&start, &stop}) {
    if (b->reg >= 0)
      check_register(kCall, b->reg);
    else if (b->value < INT32_MIN || b->value > INT32_MAX)
      call_error(kCall, fmt::format("bound {} does not fit a 32-bit register", b->value));
  }
  LoopRec L;
  L.step = step;
  L.stop_value = stop.value;
  L.counter = new_register();
  if (stop.reg >= 0) L.stop = new_register();  // its value when the loop starts
  drain();
  const Bound bound = L.stop >= 0 ? Bound{0, L.stop} : stop;
  for (isa::Engine e : isa::kAllEngines) {
    if (start.reg >= 0) {
      materialize(start.reg, e);
      emit_control(reg_alu(e, L.counter, start.reg, 0));
    } else {
      isa::Instruction set = control(isa::Opcode::kRegSet, e);
      set.p.reg_dst = static_cast<int16_t>(L.counter);
      set.p.reg_imm = start.value;
      emit_control(std::move(set));
    }
    if (L.stop >= 0) {
      materialize(stop.reg, e);
      emit_control(reg_alu(e, L.stop, stop.reg, 0));
    }
    L.skip[static_cast<size_t>(e)] =
        emit_control(branch(e, -1, L.counter, isa::AluOp::kIsGe, bound));
  }
  // The counter and the bound are in every engine's registers.
  regs_[static_cast<size_t>(L.counter)].counter = true;
  if (L.stop >= 0) regs_[static_cast<size_t>(L.stop)].counter = true;
  open_loop(L);
  return loops_.back().counter;
}

void KernelBuilder::open_loop(LoopRec L) {
  for (isa::Engine e : isa::kAllEngines)
    L.head[static_cast<size_t>(e)] = static_cast<int32_t>(prog_.stream(e).size());
  // A copy of a register made before the body may be a previous iteration's inside it.
  stale_but_counters();
  for (auto& fresh : reg_fresh_)
    for (int32_t r = 0; r < isa::kScalarRegisters; ++r)
      if (regs_[static_cast<size_t>(r)].counter) fresh[static_cast<size_t>(r)] = true;
  L.first_order = order_.size();
  loops_.push_back(L);
  open_loops_.push_back(loops_.size() - 1);
}

void KernelBuilder::begin_while(int32_t r) {
  constexpr std::string_view kCall = "while";
  check_register(kCall, r);
  if (regs_[static_cast<size_t>(r)].counter)
    call_error(kCall, fmt::format("r{} is a loop's counter", r));
  LoopRec L;
  L.cond = r;
  drain();
  for (isa::Engine e : isa::kAllEngines) {
    materialize(r, e);
    L.skip[static_cast<size_t>(e)] = emit_control(branch(e, -1, r, isa::AluOp::kIsEqual, {0, -1}));
  }
  open_loop(L);
}

void KernelBuilder::end_loop() {
  constexpr std::string_view kCall = "end_loop";
  if (open_loops_.empty()) call_error(kCall, "no loop is open");
  LoopRec& L = loops_[open_loops_.back()];
  drain();
  L.reset = emit_control(control(isa::Opcode::kSemSignal, kLeader));
  for (isa::Engine e : isa::kAllEngines)
    if (e != kLeader) L.go[static_cast<size_t>(e)] = emit_control(control(isa::Opcode::kNop, e));
  for (isa::Engine e : isa::kAllEngines) {
    const int32_t head = L.head[static_cast<size_t>(e)];
    if (L.cond >= 0) {
      // The condition again, as the body left it in memory.
      reg_fresh_[static_cast<size_t>(e)][static_cast<size_t>(L.cond)] = false;
      materialize(L.cond, e);
      emit_control(branch(e, head, L.cond, isa::AluOp::kNotEqual, {0, -1}));
    } else {
      emit_control(reg_alu(e, L.counter, L.counter, L.step));
      emit_control(branch(e, head, L.counter, isa::AluOp::kIsLt, {L.stop_value, L.stop}));
    }
  }
  L.restore = emit_control(control(isa::Opcode::kSemSignal, kLeader));
  for (isa::Engine e : isa::kAllEngines) {
    const InstrRef s = L.skip[static_cast<size_t>(e)];
    // The leader's skip lands on the restore; the others' after their tails.
    // The loop's region ends before the restore, which runs once, not every iteration.
    const int32_t exit =
        e == kLeader ? L.restore.index : static_cast<int32_t>(prog_.stream(e).size());
    prog_.stream(e)[static_cast<size_t>(s.index)].p.branch_target = exit;
    L.end[static_cast<size_t>(e)] = exit;
  }
  L.end_order = order_.size();
  for (int32_t r : {L.counter, L.stop}) {
    if (r < 0) continue;
    regs_[static_cast<size_t>(r)].counter = false;
    free_register(r);
  }
  stale_but_counters();
  open_loops_.pop_back();
}

void KernelBuilder::finish_loops() {
  if (loops_.empty()) return;
  // One go semaphore per engine but the leader, after the dependencies' own.
  const int32_t first_go = prog_.num_semaphores;
  if (first_go + isa::kNumEngines - 1 > isa::kMaxSemaphores)
    throw InputError(
        "kernel build", "semaphores",
        fmt::format("the kernel needs {} semaphores with its loops' {}; a core has {}",
                    first_go + isa::kNumEngines - 1, isa::kNumEngines - 1, isa::kMaxSemaphores));
  prog_.num_semaphores = first_go + isa::kNumEngines - 1;
  const auto go_of = [&](isa::Engine e) {
    const int k = static_cast<int>(e) - (static_cast<int>(e) > static_cast<int>(kLeader) ? 1 : 0);
    return static_cast<uint16_t>(first_go + k);
  };
  // What one pass of each loop's region signals, from the dependencies' signals alone (the
  // deltas below are not counted: an inner loop's reset and restore leave one pass's worth).
  std::vector<std::map<uint16_t, int64_t>> per_pass(loops_.size());
  for (size_t l = 0; l < loops_.size(); ++l)
    for (isa::Engine e : isa::kAllEngines) {
      const auto i = static_cast<size_t>(e);
      for (int32_t x = loops_[l].head[i]; x < loops_[l].end[i]; ++x)
        for (const isa::SemSignal& g : prog_.stream(e)[static_cast<size_t>(x)].signals)
          if (g.sem < first_go) per_pass[l][g.sem] += g.delta;
    }
  for (size_t l = 0; l < loops_.size(); ++l) {
    const LoopRec& L = loops_[l];
    isa::Instruction& reset = prog_.stream(kLeader)[static_cast<size_t>(L.reset.index)];
    isa::Instruction& restore = prog_.stream(kLeader)[static_cast<size_t>(L.restore.index)];
    for (const auto& [sem, n] : per_pass[l]) {
      if (n == 0) continue;
      reset.signals.push_back({sem, -n});
      restore.signals.push_back({sem, n});
    }
    if (restore.signals.empty()) restore.op = isa::Opcode::kNop;
    for (isa::Engine e : isa::kAllEngines) {
      if (e == kLeader) continue;
      reset.signals.push_back({go_of(e), 1});
      isa::Instruction& go =
          prog_.stream(e)[static_cast<size_t>(L.go[static_cast<size_t>(e)].index)];
      go.waits.push_back({go_of(e), 1});
      go.signals.push_back({go_of(e), -1});
    }
  }
}

}  // namespace trnsim::kernel
