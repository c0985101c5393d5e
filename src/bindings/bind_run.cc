// Run bindings: a built Program on one NeuronCore in one of the three run modes
// (core/timing/timing_run.h), HBM tensors in and out as raw bytes (the Python layer views them as
// numpy / ml_dtypes arrays), the timed result as JSON and text, the trace as an object that
// writes Perfetto protobuf, Chrome JSON and text summaries. SPMD programs on the physical cores of
// one logical core run together (chip/spmd_run.h), and so do the programs of a whole chip
// (chip/chip_run.h).
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <variant>

#include "arch/chip_spec.h"
#include "base/error.h"
#include "base/interrupt.h"
#include "bindings/bindings.h"
#include "chip/chip_cores.h"
#include "chip/chip_run.h"
#include "chip/lnc.h"
#include "chip/spmd_run.h"
#include "core/timing/result_json.h"
#include "core/timing/timing_run.h"
#include "fabric/rank_run.h"
#include "profile/chrome_trace.h"
#include "profile/perfetto_trace.h"
#include "profile/summary.h"
#include "profile/trace.h"

namespace trnsim::bindings {

namespace {

using Outputs = std::vector<std::tuple<std::string, nb::bytes>>;

// Every non-scratch HBM tensor of `program` as (name, bytes), read with `read(name)`.
template <class Read>
Outputs outputs_of(const isa::Program& program, Read read) {
  Outputs out;
  for (const auto& t : program.tensors) {
    if (t.kind == isa::TensorKind::kScratch) continue;
    const std::vector<uint8_t> b = read(t.name);
    out.emplace_back(t.name, nb::bytes(b.data(), b.size()));
  }
  return out;
}

using Bytes = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

core::RunMode parse_mode(const std::string& s) {
  if (s == "functional+timing") return core::RunMode::kFunctionalTiming;
  if (s == "timing") return core::RunMode::kTimingOnly;
  if (s == "functional") return core::RunMode::kFunctionalOnly;
  throw InputError("run", "mode", "'" + s + "': use functional+timing, timing or functional");
}

std::span<const uint8_t> bytes_of(const Bytes& a) {
  return {static_cast<const uint8_t*>(a.data()), a.nbytes()};
}

// A run's new process name: one for all its tracks, or one per process of its own (an SPMD
// run's "core0", "core1"; processes not in the map keep their name).
using ProcessNames = std::variant<std::string, std::map<std::string, std::string>>;

std::string rename(const ProcessNames& names, const std::string& process) {
  if (const auto* one = std::get_if<std::string>(&names)) return *one;
  // "core0" -> "nc0" renames "core0 dma" to "nc0 dma" as well (the core's DMA queues).
  const auto& map = std::get<std::map<std::string, std::string>>(names);
  if (const auto it = map.find(process); it != map.end()) return it->second;
  if (const size_t sp = process.find(' '); sp != std::string::npos)
    if (const auto it = map.find(process.substr(0, sp)); it != map.end())
      return it->second + process.substr(sp);
  return process;
}

// The trace of several runs laid side by side: each run's tracks under process names of its
// own, its spans shifted by its start time (SPMD instances, LNC cores).
std::unique_ptr<profile::Trace> merge(const std::vector<const profile::Trace*>& traces,
                                      const std::vector<int64_t>& offsets_ps,
                                      const std::vector<ProcessNames>& processes) {
  if (offsets_ps.size() != traces.size() || processes.size() != traces.size())
    throw InputError("merge_traces", "offsets_ps / processes", "need one per trace");
  for (size_t i = 0; i < traces.size(); ++i)  // None arrives as a null pointer
    if (traces[i] == nullptr)
      throw InputError("merge_traces", "traces[" + std::to_string(i) + "]",
                       "expected a Trace, got None");
  auto out = std::make_unique<profile::Trace>();
  for (size_t i = 0; i < traces.size(); ++i)
    profile::append_trace(*out, *traces[i], Picoseconds(offsets_ps.at(i)),
                          [&](const std::string& p) { return rename(processes[i], p); });
  return out;
}

void check_programs(const std::vector<const isa::Program*>& programs, const char* call) {
  for (size_t i = 0; i < programs.size(); ++i)  // None arrives as a null pointer
    if (programs[i] == nullptr)
      throw InputError(call, "programs[" + std::to_string(i) + "]", "expected a Program, got None");
}

// Runs a SpmdRunner or ChipRunner with the host's inputs; returns (outputs, per-core result
// JSON, total ps, summary, Trace or None).
template <class Runner>
auto run_cores(Runner& runner, const std::vector<const isa::Program*>& programs, core::RunMode mode,
               const std::vector<std::tuple<std::string, Bytes>>& inputs, bool want_trace) {
  if (mode != core::RunMode::kTimingOnly)
    for (const auto& [name, a] : inputs) runner.write_tensor(name, bytes_of(a));
  auto trace = want_trace ? std::make_unique<profile::Trace>() : nullptr;
  chip::ChipResult r;
  {
    const SigintScope sigint(on_main_thread());
    nb::gil_scoped_release release;
    r = runner.run(trace.get());
  }
  Outputs outputs;
  if (mode != core::RunMode::kTimingOnly)
    outputs =
        outputs_of(*programs.front(), [&](const std::string& n) { return runner.read_tensor(n); });
  std::vector<std::string> cores;
  for (const core::TimingResult& c : r.cores) cores.push_back(core::timing_result_json(c).dump());
  return std::make_tuple(std::move(outputs), std::move(cores), r.total.v, r.summary(),
                         std::move(trace));
}

}  // namespace

void bind_run(nb::module_& m) {
  nb::class_<profile::Trace>(m, "Trace", "Per-instruction spans of a timed run (profile/trace.h).")
      .def_prop_ro("num_spans", [](const profile::Trace& t) { return t.spans().size(); })
      .def_prop_ro("num_flows", [](const profile::Trace& t) { return t.flows().size(); })
      .def_prop_ro("num_counter_samples",
                   [](const profile::Trace& t) { return t.counter_samples().size(); })
      .def("chrome_json", &profile::chrome_trace_json,
           "Chrome / Perfetto trace-event JSON (ui.perfetto.dev opens it).")
      .def(
          "perfetto_trace",
          [](const profile::Trace& t) {
            const std::string b = profile::perfetto_trace_bytes(t);
            return nb::bytes(b.data(), b.size());
          },
          "Perfetto's native protobuf trace (profile/perfetto_trace.h; ui.perfetto.dev opens it).")
      .def(
          "window",
          [](const profile::Trace& t, int64_t start_ps, int64_t end_ps) {
            return std::make_unique<profile::Trace>(
                profile::window(t, Picoseconds(start_ps), Picoseconds(end_ps)));
          },
          nb::arg("start_ps"), nb::arg("end_ps"),
          "The spans overlapping [start_ps, end_ps), the flows between them and the counters "
          "in it.")
      .def("summary", &profile::text_summary, nb::arg("top") = 10,
           "Per track: spans, busy time and share; the labels that took the most time.");
  m.def("merge_traces", &merge, nb::arg("traces"), nb::arg("offsets_ps"), nb::arg("processes"),
        "Several runs' traces in one, each shifted by its offset, its tracks under a process "
        "name (str) or their processes renamed ({old: new}).");

  m.def(
      "lnc_degree",
      [](const arch::ChipSpec& chip, std::optional<int> requested, const std::string& what) {
        return chip::lnc_degree(chip, requested, what.c_str());
      },
      nb::arg("chip"), nb::arg("requested") = nb::none(), nb::arg("what") = "lnc",
      "The LNC degree to run with (`requested` or the chip's default); ValueError naming "
      "`what` when the chip does not allow it (chip.lnc.degrees).");
  m.def("cores_per_stack", &chip::cores_per_stack, nb::arg("chip"),
        "Physical cores sharing one HBM stack (the most a logical core can have).");
  m.def(
      "chip_lnc",
      [](const arch::ChipSpec& chip, int cores, std::optional<int> requested, int fallback,
         const std::string& cores_what, const std::string& lnc_what) {
        const int n = chip::physical_cores(chip, cores, cores_what.c_str());
        return chip::chip_lnc(chip, n, requested, fallback, lnc_what.c_str());
      },
      nb::arg("chip"), nb::arg("cores"), nb::arg("requested") = nb::none(), nb::arg("fallback") = 1,
      nb::arg("cores_what") = "cores", nb::arg("lnc_what") = "lnc",
      "The LNC degree of a run of `cores` physical cores (`requested` or `fallback`); "
      "ValueError naming `cores_what` / `lnc_what` and the spec key when the chip has fewer "
      "cores (chip.cores), does not allow the degree (chip.lnc.degrees) or it does not "
      "divide the cores.");

  m.def(
      "run_program",
      [](const arch::ChipSpec& chip, const isa::Program& program, const std::string& mode_name,
         const std::vector<std::tuple<std::string, Bytes>>& inputs, bool want_trace) {
        const core::RunMode mode = parse_mode(mode_name);
        core::CoreRunner runner(chip, program, mode);
        if (mode != core::RunMode::kTimingOnly)
          for (const auto& [name, a] : inputs) runner.functional().write_tensor(name, bytes_of(a));
        auto trace = want_trace ? std::make_unique<profile::Trace>() : nullptr;
        core::TimingResult r;
        {
          const SigintScope sigint(on_main_thread());
          nb::gil_scoped_release release;
          r = runner.run(trace.get());
        }
        Outputs outputs;
        if (mode != core::RunMode::kTimingOnly)
          outputs = outputs_of(
              program, [&](const std::string& n) { return runner.functional().read_tensor(n); });
        return std::make_tuple(std::move(outputs), core::timing_result_json(r).dump(), r.summary(),
                               std::move(trace));
      },
      nb::arg("chip"), nb::arg("program"), nb::arg("mode"), nb::arg("inputs"),
      nb::arg("trace") = false,
      "Runs `program` on one core. Inputs: (tensor name, C-contiguous array of its bytes). "
      "Returns (outputs [(name, bytes)] for every non-scratch tensor, result JSON, summary "
      "text, Trace or None).");

  m.def(
      "run_spmd",
      [](const arch::ChipSpec& chip, const std::vector<const isa::Program*>& programs,
         const std::string& mode_name, const std::vector<std::tuple<std::string, Bytes>>& inputs,
         bool want_trace) {
        check_programs(programs, "run_spmd");
        chip::SpmdRunner runner(chip, programs, parse_mode(mode_name));
        return run_cores(runner, programs, parse_mode(mode_name), inputs, want_trace);
      },
      nb::arg("chip"), nb::arg("programs"), nb::arg("mode"), nb::arg("inputs"),
      nb::arg("trace") = false,
      "Runs one program per physical core of one logical core together: one shared HBM (the "
      "programs declare the same tensors), the HBM stack's bandwidth shared, core_barrier and "
      "sendrecv between them. Returns (outputs [(name, bytes)], per-core result JSON by rank, "
      "the logical core's total ps (its slowest core), summary text, Trace or None; each "
      "core's tracks under process \"core<rank>\").");

  m.def(
      "run_ranks",
      [](const arch::ChipSpec& chip, const fabric::SystemSpec& system,
         const fabric::RuntimeSpec& runtime, const std::vector<const isa::Program*>& programs,
         const fabric::ReplicaGroups& groups, const std::string& mode_name,
         const std::vector<std::vector<std::tuple<std::string, Bytes>>>& inputs, bool want_trace,
         int lnc) {
        check_programs(programs, "run_ranks");
        const core::RunMode mode = parse_mode(mode_name);
        fabric::RankRunner runner(chip, system, runtime, programs, groups, lnc, mode);
        if (mode != core::RunMode::kTimingOnly) {
          if (inputs.size() != static_cast<size_t>(runner.ranks()))
            throw InputError("run_ranks", "inputs", "one list of (name, bytes) per rank");
          for (size_t r = 0; r < inputs.size(); ++r)
            for (const auto& [name, a] : inputs[r])
              runner.write_tensor(static_cast<int>(r), name, bytes_of(a));
        }
        auto trace = want_trace ? std::make_unique<profile::Trace>() : nullptr;
        chip::ChipResult r;
        {
          const SigintScope sigint(on_main_thread());
          nb::gil_scoped_release release;
          r = runner.run(trace.get());
        }
        std::vector<Outputs> outputs;
        if (mode != core::RunMode::kTimingOnly)
          for (int k = 0; k < runner.ranks(); ++k)
            outputs.push_back(
                outputs_of(*programs[static_cast<size_t>(k * lnc)],
                           [&](const std::string& n) { return runner.read_tensor(k, n); }));
        std::vector<std::string> ranks;
        for (const core::TimingResult& c : r.cores)
          ranks.push_back(core::timing_result_json(c).dump());
        return std::make_tuple(std::move(outputs), std::move(ranks), r.total.v,
                               fabric::rank_summary(r, system.name), std::move(trace));
      },
      nb::arg("chip"), nb::arg("system"), nb::arg("runtime"), nb::arg("programs"),
      nb::arg("groups"), nb::arg("mode"), nb::arg("inputs"), nb::arg("trace") = false,
      nb::arg("lnc") = 1,
      "Runs program p on physical core p, rank p / lnc a logical core of `lnc` cores with HBM "
      "of its own, all together, their collectives meeting over `system` (fabric/rank_run.h). "
      "`groups`: the replica "
      "groups the collectives name by index, each a list of rank lists. `inputs`: per rank, "
      "(tensor name, bytes). Returns (per rank outputs [(name, bytes)], per-rank result JSON, "
      "total ps (the slowest rank), summary text, Trace or None; rank i's tracks under "
      "\"core<i>\").");

  m.def(
      "run_chip",
      [](const arch::ChipSpec& chip, const std::vector<const isa::Program*>& programs, int lnc,
         const std::string& mode_name, const std::vector<std::tuple<std::string, Bytes>>& inputs,
         bool want_trace) {
        check_programs(programs, "run_chip");
        chip::ChipRunner runner(chip, programs, lnc, parse_mode(mode_name));
        return run_cores(runner, programs, parse_mode(mode_name), inputs, want_trace);
      },
      nb::arg("chip"), nb::arg("programs"), nb::arg("lnc"), nb::arg("mode"), nb::arg("inputs"),
      nb::arg("trace") = false,
      "Runs program i on physical core i of the chip, all together (chip/chip_run.h): one "
      "shared HBM, core i's HBM traffic through its stack (i / cores_per_stack), logical cores "
      "of `lnc` cores in which core_barrier and sendrecv meet. Returns what run_spmd returns, "
      "the total being the chip's (its slowest core); core i's tracks under \"core<i>\".");
}

}  // namespace trnsim::bindings
