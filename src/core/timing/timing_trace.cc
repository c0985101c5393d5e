#include "core/timing/timing_trace.h"

#include <fmt/format.h>

#include "isa/op_table.h"

namespace trnsim::core {

std::string describe_operand(const isa::AccessPattern& ap) {
  std::string s;
  if (ap.space == isa::Space::kHbm) {
    s = fmt::format("hbm@{:#x} rows={}", ap.offset, ap.num_partitions);
  } else {
    s = fmt::format("{}[{}:{}]+{:#x}", isa::space_name(ap.space), ap.start_partition,
                    ap.start_partition + ap.num_partitions, ap.offset);
  }
  s += ' ' + ap.dtype.name() + " [";
  for (int d = 0; d < ap.ndim; ++d) {
    if (d) s += 'x';
    s += std::to_string(ap.dims[d].size);
    if (ap.dims[d].stride != 1) s += fmt::format("/{}", ap.dims[d].stride);
  }
  return s + ']';
}

profile::Label instruction_label_for_trace(const isa::Instruction& ins, const InstrInfo& info,
                                           size_t index) {
  profile::Label l;
  const std::string_view mn = isa::mnemonic(ins.op);
  l.name = ins.name.empty() ? std::string(mn) : fmt::format("{} '{}'", mn, ins.name);
  l.category = std::string(isa::engine_name(ins.engine));
  l.args.emplace_back("opcode", std::string(mn));
  l.args.emplace_back("engine", l.category);
  l.args.emplace_back("index", std::to_string(index));
  if (ins.source_line > 0) l.args.emplace_back("line", std::to_string(ins.source_line));
  std::string ops;
  for (int i = 0; i < ins.num_operands; ++i) {
    if (i) ops += "; ";
    ops +=
        fmt::format("{}={}", isa::operand_role(ins.op, i).name, describe_operand(ins.operands[i]));
  }
  if (!ops.empty()) l.args.emplace_back("operands", ops);
  std::string w, s;
  for (const auto& x : ins.waits)
    w += fmt::format("{}s{}>={}", w.empty() ? "" : " ", x.sem, x.value);
  for (const auto& x : ins.signals)
    s += fmt::format("{}s{}+={}", s.empty() ? "" : " ", x.sem, x.delta);
  if (!w.empty()) l.args.emplace_back("waits", w);
  if (!s.empty()) l.args.emplace_back("signals", s);
  l.args.emplace_back("cycles", fmt::format("ii={} latency={}", info.cost.ii, info.cost.latency));
  return l;
}

TimingTrace::TimingTrace(profile::Trace& trace, const TimingProgram& prog,
                         const arch::CoreSpec& spec, int core_index)
    : trace_(trace),
      prog_(prog),
      queues_(std::max(spec.dma.queues_per_engine, 1)),
      process_(fmt::format("core{}", core_index)),
      dma_tracks_(static_cast<size_t>(std::max(spec.dma.engines, 1) * queues_), -1) {
  for (isa::Engine e : isa::kAllEngines) {
    const auto ei = static_cast<size_t>(e);
    const uint32_t main = trace_.add_track(process_, std::string(isa::engine_name(e)));
    tracks_[ei].fill(main);
    if (e == isa::Engine::kTensor)
      tracks_[ei][static_cast<size_t>(Unit::kBackground)] =
          trace_.add_track(process_, "pe.load_stationary");
    const auto& stream = prog.stream(e);
    label_base_[ei] = static_cast<uint32_t>(trace_.labels().size());
    for (size_t i = 0; i < stream.size(); ++i)
      trace_.add_label(instruction_label_for_trace(stream[i], prog.info(e)[i], i));
  }
}

void TimingTrace::on_piece(int dma_engine, int queue, const isa::Instruction& ins,
                           isa::Engine trigger, Picoseconds start, Picoseconds end) {
  int64_t& track = dma_tracks_[static_cast<size_t>(dma_engine * queues_ + queue)];
  if (track < 0)
    track = trace_.add_track(process_ + " dma", fmt::format("dma{}.q{}", dma_engine, queue));
  const auto& stream = prog_.stream(trigger);
  const auto index = static_cast<uint32_t>(&ins - stream.data());
  trace_.record(static_cast<uint32_t>(track), start, end,
                label_base_[static_cast<size_t>(trigger)] + index);
}

}  // namespace trnsim::core
