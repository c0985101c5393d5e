#include "core/timing/timing_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "arch/derived.h"
#include "core/cost/cost.h"
#include "core/dma/dma_plan.h"
#include "core/timing/core_timing.h"
#include "isa/op_table.h"

namespace trnsim::core {

namespace {

constexpr double kFlopsPerTflop = 1e12;
constexpr double kBytesPerGB = 1e9;

std::string instruction_name(const isa::Instruction& ins) {
  const std::string_view mn = isa::mnemonic(ins.op);
  return ins.name.empty() ? std::string(mn) : fmt::format("{} '{}'", mn, ins.name);
}

// Labels as timing_path.h numbers them: every engine's stream, one after the other.
struct Labels {
  std::array<uint32_t, isa::kNumEngines + 1> base{};
  explicit Labels(const isa::Program& p) {
    for (isa::Engine e : isa::kAllEngines) {
      const auto i = static_cast<size_t>(e);
      base[i + 1] = base[i] + static_cast<uint32_t>(p.stream(e).size());
    }
  }
  std::pair<isa::Engine, size_t> at(uint32_t label) const {
    size_t e = 0;
    while (e + 1 < isa::kNumEngines && label >= base[e + 1]) ++e;
    return {static_cast<isa::Engine>(e), label - base[e]};
  }
};

ProfilePath named_path(const profile::CriticalPath& cp, const isa::Program& program, size_t top) {
  ProfilePath p;
  p.length = cp.length;
  p.time = cp.time;
  std::copy_n(cp.per_lane.begin(), std::min(cp.per_lane.size(), p.per_lane.size()),
              p.per_lane.begin());
  std::copy_n(cp.edges.begin(), std::min(cp.edges.size(), p.edges.size()), p.edges.begin());
  const Labels labels(program);
  // cp.top holds every static instruction on the path; items of one name sum them.
  // An NKI kernel's instructions have no names: its source line tells them apart.
  std::map<std::tuple<bool, isa::Engine, std::string, std::string>, size_t> item_of;
  for (const profile::CriticalPath::Item& it : cp.top) {
    const auto [e, index] = labels.at(it.label);
    const isa::Instruction& ins = program.stream(e)[index];
    const bool transfer = it.lane == kDmaLane;
    std::string name = instruction_name(ins);
    std::string source = ins.origin.file >= 0 ? isa::source_of(program, ins) : std::string();
    const auto [pos, added] = item_of.try_emplace({transfer, e, name, source}, p.top.size());
    if (added) {
      PathItem fresh;
      fresh.name = std::move(name);
      fresh.engine = e;
      fresh.transfer = transfer;
      fresh.index = index;
      fresh.line = ins.source_line;
      fresh.source = std::move(source);
      p.top.push_back(std::move(fresh));
    }
    PathItem& item = p.top[pos->second];
    if (index < item.index) {
      item.index = index;
      item.line = ins.source_line;
    }
    ++item.statics;
    item.count += it.count;
    item.time += it.time;
  }
  std::stable_sort(p.top.begin(), p.top.end(),
                   [](const PathItem& a, const PathItem& b) { return a.time > b.time; });
  if (p.top.size() > top) p.top.resize(top);
  return p;
}

std::vector<InstructionClass> classes_of(const profile::DependencyGraph& g,
                                         const isa::Program& program, const arch::ChipSpec& chip) {
  const arch::Derived derived = arch::derive(chip);
  const double bf16 = derived.at("core.tflops.bf16") * kFlopsPerTflop;
  auto peak = [&](const char* cls) {
    const arch::DerivedFigure* f = derived.find(std::string("core.tflops.") + cls);
    return f != nullptr && f->value > 0 ? f->value * kFlopsPerTflop : bf16;
  };
  std::map<std::pair<isa::Engine, isa::Opcode>, InstructionClass> by;
  const Labels labels(program);
  for (isa::Engine e : isa::kAllEngines) {
    const isa::Stream& stream = program.stream(e);
    for (size_t i = 0; i < stream.size(); ++i) {
      const profile::LabelWork& w = g.work()[labels.base[static_cast<size_t>(e)] + i];
      if (w.count == 0) continue;
      const isa::Instruction& ins = stream[i];
      InstructionClass& c = by[{e, ins.op}];
      c.engine = e;
      c.op = ins.op;
      c.count += w.count;
      c.busy += w.busy;
      const auto n = static_cast<double>(w.count);
      if (e == isa::Engine::kTensor) {
        const double f = tensor_flops(ins, chip.core);
        c.flops += f * n;
        c.issued_flops += tensor_issued_flops(ins, chip.core) * n;
        c.seconds_at_peak += f * n / peak(tensor_rate_class(ins));
      }
      if (isa::is_dma(ins.op)) {
        const DmaPlan plan = plan_dma(ins, chip.core);
        c.hbm_bytes += (plan.hbm_read_bytes + plan.hbm_write_bytes) * static_cast<int64_t>(w.count);
      }
    }
  }
  std::vector<InstructionClass> out;
  for (auto& [key, c] : by) out.push_back(c);
  return out;
}

}  // namespace

const char* path_lane_name(int lane) {
  if (lane >= 0 && lane < isa::kNumEngines)
    return isa::engine_name(static_cast<isa::Engine>(lane)).data();
  return "dma";
}

std::string bound_name(const std::string& verdict) {
  static const std::map<std::string, std::string> kNames{
      {"pe", "TensorE"}, {"dve", "VectorE"}, {"act", "ScalarE"}, {"pool", "GpSimd"},
      {"sp", "SyncE"},   {"dma", "DMA"},     {"hbm", "HBM"},     {"latency", "latency"}};
  const auto it = kNames.find(verdict);
  return it != kNames.end() ? it->second : verdict;
}

double core_hbm_ceiling(const arch::ChipSpec& chip) {
  const arch::DmaSpec& d = chip.core.dma;
  double c = static_cast<double>(hbm_stack_bandwidth(chip));
  if (d.engines > 0 && d.engine_bandwidth_practical_gbps > 0)
    c = std::min(c, d.engines * d.engine_bandwidth_practical_gbps * kBytesPerGB);
  // The core's caps: the larger (contiguous blocks, where there are two) is what HBM traffic
  // can reach at best.
  if (d.core_bandwidth_gbps || d.core_block_bandwidth_gbps)
    c = std::min(
        c, std::max(d.core_bandwidth_gbps.value_or(0), d.core_block_bandwidth_gbps.value_or(0)) *
               kBytesPerGB);
  return c;
}

CoreProfile profile_program(const arch::ChipSpec& chip, const isa::Program& program,
                            const ProfileOptions& options) {
  profile::DependencyGraph graph;
  TimingOptions t;
  t.path = &graph;
  t.max_instructions = options.limits.max_instructions;
  t.max_time = options.limits.max_time;
  TimingResult result = run_timing(chip, program, t);
  return profile_run(chip, program, std::move(result), graph, options.top);
}

CoreProfile profile_run(const arch::ChipSpec& chip, const isa::Program& program,
                        TimingResult result, const profile::DependencyGraph& graph, size_t top) {
  CoreProfile p;
  p.chip = chip.meta.name;
  p.result = std::move(result);
  p.path = named_path(profile::critical_path(graph, kNumPathLanes, kNumPathEdges, SIZE_MAX),
                      program, top);
  p.classes = classes_of(graph, program, chip);
  p.chip_hbm_bytes_per_s = chip.chip.hbm.bandwidth_gbps * kBytesPerGB;

  profile::RooflineInput in;
  in.time = p.result.total;
  for (const InstructionClass& c : p.classes) {
    in.flops += c.flops;
    in.issued_flops += c.issued_flops;
    in.seconds_at_peak += c.seconds_at_peak;
  }
  in.peak_flops = p.result.tensor_peak_flops;
  in.hbm_bytes = static_cast<double>(p.result.dma.hbm_read_bytes + p.result.dma.hbm_write_bytes);
  in.hbm_peak = core_hbm_ceiling(chip);
  const TimingResult::Bound b = p.result.bound();
  in.bound = b.verdict;
  in.bound_share = b.dma_share;
  for (double s : b.engine_share) in.bound_share = std::max(in.bound_share, s);
  p.roofline = profile::roofline(in);
  return p;
}

}  // namespace trnsim::core
