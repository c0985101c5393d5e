// `trnsim collective OP --system NAME --ranks N --sizes 8B:1GiB ...`: a size sweep of one
// collective, printed as nccom-test prints it (size, count, dtype, time, algbw, busbw). All
// content comes from the fabric layer (fabric/collective.h); this file maps options to calls.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/interrupt.h"
#include "cli/commands.h"
#include "cli/sweep_journal.h"
#include "fabric/collective.h"
#include "fabric/concurrent.h"

namespace trnsim::cli {

namespace {

struct CollectiveOptions {
  std::string op;
  std::string system = "trn1.32xlarge";
  std::string runtime = std::string(fabric::kDefaultRuntime);
  int64_t ranks = 2;
  std::string unit = "core";
  int lnc = 0;
  int64_t servers = 0;
  int64_t ranks_per_server = 0;
  std::string sizes = "8B:1GiB";
  std::string dtype = "fp32";
  std::string algorithm = "auto";
  std::string intra, inter;
  int32_t root = 0;
  bool per_rank = false;
  bool json = false;
  bool keys = false;
  bool list = false;
  std::vector<std::string> sets;
  std::string resume;  // the sweep's journal (sweep_journal.h)
  int64_t groups = 1;  // concurrent communicators of the same collective (concurrent.h)
  int ring_directions = 2;
  std::string group_layout = "contiguous";
};

// What makes two sweeps the same, sizes aside (a journal resumes only its own sweep).
nlohmann::json sweep_identity(const CollectiveOptions& o) {
  return {{"trnsim", TRNSIM_VERSION},
          {"op", o.op},
          {"system", o.system},
          {"runtime", o.runtime},
          {"ranks", o.ranks},
          {"rank_unit", o.unit},
          {"lnc", o.lnc},
          {"servers", o.servers},
          {"ranks_per_server", o.ranks_per_server},
          {"dtype", o.dtype},
          {"algorithm", o.algorithm},
          {"intra", o.intra},
          {"inter", o.inter},
          {"root", o.root},
          {"per_rank", o.per_rank},
          {"sets", o.sets},
          {"groups", o.groups},
          {"group_layout", o.group_layout},
          {"ring_directions", o.ring_directions}};
}

// K groups of the ranks run the same collective at once: the row is the slowest group's, with
// every group's row under "groups" (the size is each group's tensor).
nlohmann::json concurrent_row(const fabric::Fabric& f, const fabric::CollectiveRequest& req,
                              const CollectiveOptions& o) {
  std::vector<fabric::GroupRequest> groups;
  for (auto& ranks : fabric::split_ranks(f.network().ranks(), o.groups, o.group_layout))
    groups.push_back({req, std::move(ranks)});
  const fabric::ConcurrentResult c = fabric::simulate_concurrent(f, groups);
  size_t slowest = 0;
  for (size_t g = 0; g < c.groups.size(); ++g)
    if (c.groups[g].time > c.groups[slowest].time) slowest = g;
  nlohmann::json row = fabric::sweep_row_json(c.groups[slowest]);
  row["groups"] = nlohmann::json::array();
  for (const auto& r : c.groups) row["groups"].push_back(fabric::sweep_row_json(r));
  return row;
}

void run_collective(const CollectiveOptions& o, Io& io) {
  if (o.keys) {
    io.out << "System keys (spec/systems/*.toml):\n" << fabric::format_system_keys();
    io.out << "Runtime keys (spec/runtime/*.toml):\n" << fabric::format_runtime_keys();
    return;
  }
  if (o.list || o.op.empty()) {
    io.out << "collectives: ";
    for (const auto& n : fabric::op_names()) io.out << n << " ";
    io.out << "\nalgorithms: auto";
    for (const auto& a : fabric::algorithms()) io.out << ", " << a.name;
    io.out << "\nsystems:";
    for (const auto& s : fabric::list_systems()) io.out << " " << s;
    io.out << "\nruntimes:";
    for (const auto& s : fabric::list_runtimes()) io.out << " " << s;
    io.out << "\n";
    return;
  }
  std::vector<arch::Override> sys_sets, rt_sets;
  for (const auto& s : o.sets) {
    arch::Override ov = arch::parse_override(s);
    (fabric::is_runtime_key(ov.key) ? rt_sets : sys_sets).push_back(ov);
  }
  if (o.servers > 0) sys_sets.push_back({"cluster.servers", std::to_string(o.servers)});
  fabric::Placement pl;
  if (o.unit != "core" && o.unit != "chip")
    throw InputError("--rank-unit", o.unit, "expected core or chip");
  pl.unit = o.unit == "chip" ? fabric::RankUnit::kChip : fabric::RankUnit::kCore;
  pl.ranks = o.ranks;
  pl.lnc = o.lnc;
  pl.ranks_per_server = o.ranks_per_server;
  const fabric::Fabric f(fabric::load_system(o.system, sys_sets),
                         fabric::load_runtime(o.runtime, rt_sets), pl);
  fabric::CollectiveRequest req;
  req.op = fabric::parse_op(o.op);
  req.dtype = num::parse_format(o.dtype);
  req.algorithm = o.algorithm;
  req.intra = o.intra;
  req.inter = o.inter;
  req.ring_directions = o.ring_directions;
  req.root = o.root;
  req.placement = pl;
  req.folded = !o.per_rank;
  const std::vector<int64_t> sizes = fabric::parse_sizes(o.sizes);
  std::optional<SweepJournal> journal;
  if (!o.resume.empty()) journal.emplace(o.resume, sweep_identity(o));
  nlohmann::json sweep = fabric::sweep_json(f, {});
  if (o.groups > 1) {
    sweep["groups"] = o.groups;
    sweep["group_layout"] = o.group_layout;
  }
  for (int64_t bytes : sizes) {
    check_interrupt();  // between sizes too: a sweep of large sizes stops promptly
    if (journal)
      if (const nlohmann::json* done = journal->find(bytes)) {
        sweep["rows"].push_back(*done);
        continue;
      }
    req.bytes = bytes;
    nlohmann::json row =
        o.groups > 1 ? concurrent_row(f, req, o) : fabric::sweep_row_json(f.simulate(req));
    if (journal) journal->record(row);
    sweep["rows"].push_back(std::move(row));
  }
  if (o.json)
    io.out << json_text(sweep) << "\n";
  else
    io.out << fabric::format_sweep_json(sweep);
  if (journal && journal->resumed() > 0)
    io.err << fmt::format("trnsim: resumed {} of {} sizes from {}\n", journal->resumed(),
                          sizes.size(), o.resume);
}

}  // namespace

void setup_collective_command(CLI::App& app, Io& io) {
  auto o = std::make_shared<CollectiveOptions>();
  auto* sub = app.add_subcommand(
      "collective", "a collective's size sweep on a Trainium system, as nccom-test prints it");
  sub->add_option("op", o->op,
                  "all-reduce, reduce-scatter, all-gather, all-to-all, all-to-all-v, broadcast, "
                  "permute");
  sub->add_option("--system", o->system, "system name (spec/systems) or .toml path")
      ->capture_default_str();
  sub->add_option("--ranks,-r", o->ranks, "number of ranks")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  sub->add_option("--rank-unit", o->unit, "a rank is a (logical) core or a whole chip")
      ->capture_default_str();
  sub->add_option("--lnc", o->lnc, "physical cores per logical core (default: the system's)")
      ->check(CLI::Range(1, 64));
  sub->add_option("--servers", o->servers, "servers in the cluster (overrides cluster.servers)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  sub->add_option("--ranks-per-server", o->ranks_per_server,
                  "ranks placed on each server (default: fill)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  sub->add_option("--sizes", o->sizes, "LO:HI[:FACTOR], a list A,B,C, or one size")
      ->capture_default_str();
  sub->add_option("--dtype", o->dtype, "element type (numerics formats)")->capture_default_str();
  sub->add_option("--algorithm", o->algorithm,
                  "auto, ring, kangaring, mesh, single-step-mesh, rdh, hierarchical")
      ->capture_default_str();
  sub->add_option("--intra", o->intra,
                  "hierarchical intra-server stage: ring or kangaring (default: by rule)")
      ->check(CLI::IsMember({"ring", "kangaring"}));
  sub->add_option("--inter", o->inter,
                  "hierarchical inter-server stage: ring, rdh or tree (default: by rule)")
      ->check(CLI::IsMember({"ring", "rdh", "tree"}));
  sub->add_option("--root", o->root, "broadcast root")->check(CLI::NonNegativeNumber);
  sub->add_option("--runtime", o->runtime, "collective runtime (spec/runtime)")
      ->capture_default_str();
  sub->add_option("--set", o->sets, "override a system or runtime key: --set cluster.servers=8");
  sub->add_flag("--per-rank", o->per_rank, "simulate every rank and step (no folding)");
  sub->add_option("--ring-directions", o->ring_directions,
                  "ring, torus-ring: 2 runs every cycle both ways (default), 1 one way")
      ->check(CLI::IsMember({1, 2}));
  sub->add_option("--groups", o->groups,
                  "run the collective on this many equal groups of the ranks at once, sharing "
                  "the system (the row is the slowest group's; --json lists every group)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_option("--group-layout", o->group_layout,
                  "contiguous (group g: ranks g*n/K..) or strided (group g: g, g+K, ..)")
      ->capture_default_str();
  sub->add_option("--resume", o->resume,
                  "keep finished sizes in this file and skip them when the same sweep runs "
                  "again (a long sweep that was stopped resumes where it stopped)");
  sub->add_flag("--json", o->json, "rows with phases and HBM traffic, as JSON");
  sub->add_flag("--keys", o->keys, "list the system and runtime keys");
  sub->add_flag("--list", o->list, "list collectives, algorithms, systems and runtimes");
  sub->callback([o, &io] { run_collective(*o, io); });
}

}  // namespace trnsim::cli
