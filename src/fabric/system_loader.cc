// Loading spec/systems/*.toml: one table of keys (type, unit, range, meaning, member), walked
// against the file so that an unknown key, a missing source or a bad value names its file and
// line. Leaves use the chip files' grammar (arch/leaf.h): { v = ..., src|assume|derived = ... }.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "arch/leaf.h"
#include "arch/toml_reader.h"
#include "base/error.h"
#include "fabric/keyed_rows.h"
#include "fabric/system.h"

namespace trnsim::fabric {

namespace fs = std::filesystem;

namespace {

using Row = KeyRow<SystemSpec>;

const std::vector<Row>& rows() {
  static const std::vector<Row> table = [] {
    std::vector<Row> t;
    t.push_back(int_row<SystemSpec>("server.chips", 1, 1 << 20, "chips in one NeuronLink domain",
                                    [](SystemSpec& s, int64_t v) { s.chips_per_server = v; }));
    Row topo;
    topo.info.key = "server.topology";
    topo.info.type = arch::ValueType::kString;
    topo.info.choices = {"torus", "switch"};
    topo.info.help = "torus: NeuronLinks between neighbours; switch: all-to-all via NeuronSwitch";
    topo.set = [](SystemSpec& s, const arch::Value& v) {
      s.topology =
          std::get<std::string>(v) == "torus" ? ServerTopology::kTorus : ServerTopology::kSwitch;
    };
    t.push_back(topo);
    Row dims;
    dims.info.key = "server.torus_dims";
    dims.info.type = arch::ValueType::kIntList;
    dims.info.min = 1;
    dims.info.max = 4096;
    dims.info.help = "torus sizes, fastest-varying dimension first (chip = x + X*y + ...)";
    dims.set = [](SystemSpec& s, const arch::Value& v) {
      s.torus_dims = std::get<std::vector<int64_t>>(v);
    };
    t.push_back(dims);
    t.push_back(num_row<SystemSpec>("server.link_gbps", "GB/s", 1e-3, 1e6,
                                    "one torus link, one direction",
                                    [](SystemSpec& s, double v) { s.link_gbps = v; }));
    t.push_back(int_row<SystemSpec>(
        "server.outer_dims", 0, 8, "how many of the last torus dimensions use the outer links",
        [](SystemSpec& s, int64_t v) { s.outer_dims = static_cast<int>(v); }));
    t.push_back(num_row<SystemSpec>("server.outer_link_gbps", "GB/s", 1e-3, 1e6,
                                    "one outer torus link (between instances), one direction",
                                    [](SystemSpec& s, double v) { s.outer_link_gbps = v; }));
    t.push_back(num_row<SystemSpec>("server.link_latency_ns", "ns", 0, 1e9,
                                    "one NeuronLink traversal",
                                    [](SystemSpec& s, double v) { s.link_latency_ns = v; }));
    t.push_back(num_row<SystemSpec>("server.outer_link_latency_ns", "ns", 0, 1e9,
                                    "one outer-link traversal",
                                    [](SystemSpec& s, double v) { s.outer_link_latency_ns = v; }));
    t.push_back(num_row<SystemSpec>("server.switch_port_gbps", "GB/s", 1e-3, 1e6,
                                    "NeuronSwitch port of one chip, each direction",
                                    [](SystemSpec& s, double v) { s.switch_port_gbps = v; }));
    t.push_back(num_row<SystemSpec>("server.switch_latency_ns", "ns", 0, 1e9,
                                    "one pass through the switch",
                                    [](SystemSpec& s, double v) { s.switch_latency_ns = v; }));
    t.push_back(int_row<SystemSpec>("cluster.servers", 1, 1 << 22, "servers joined by EFA",
                                    [](SystemSpec& s, int64_t v) { s.servers = v; }));
    t.push_back(
        num_row<SystemSpec>("cluster.efa_gbps", "GB/s", 1e-3, 1e6,
                            "EFA bandwidth of one server, each direction (one NIC per chip)",
                            [](SystemSpec& s, double v) { s.efa_gbps_per_server = v; }));
    t.push_back(num_row<SystemSpec>("cluster.efa_latency_ns", "ns", 0, 1e9,
                                    "one EFA crossing, on top of the step latency",
                                    [](SystemSpec& s, double v) { s.efa_latency_ns = v; }));
    t.push_back(
        num_row<SystemSpec>("collective.step_latency_ns", "ns", 0, 1e9,
                            "per step and transfer of a collective (semaphores, DMA start, HBM)",
                            [](SystemSpec& s, double v) { s.step_latency_ns = v; }));
    t.push_back(num_row<SystemSpec>("collective.core_link_latency_ns", "ns", 0, 1e9,
                                    "core to core inside one chip, on top of the step latency",
                                    [](SystemSpec& s, double v) { s.core_link_latency_ns = v; }));
    t.push_back(int_row<SystemSpec>(
        "collective.dma_engines_per_cc_core", 1, 64,
        "DMA engines one CC-core keeps streaming for a collective",
        [](SystemSpec& s, int64_t v) { s.dma_engines_per_cc_core = static_cast<int>(v); }));
    t.push_back(int_row<SystemSpec>("collective.lnc", 1, 2,
                                    "physical NeuronCores per logical core (one rank) by default",
                                    [](SystemSpec& s, int64_t v) { s.lnc = static_cast<int>(v); }));
    return t;
  }();
  return table;
}

const std::set<std::string, std::less<>> kMetaKeys = {"name",        "title",  "chip",
                                                      "description", "status", "inherits"};

fs::path resolve(std::string_view name_or_path, const fs::path& relative_to) {
  const std::string s(name_or_path);
  const bool is_path =
      s.find('/') != std::string::npos || (s.size() > 5 && s.substr(s.size() - 5) == ".toml");
  if (is_path) {
    fs::path p(s);
    if (p.is_relative() && !relative_to.empty()) p = relative_to / p;
    // A regular file: /dev/zero or a FIFO would be read forever. With an error_code: a name
    // too long for the file system is no such file, not a filesystem_error.
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) throw InputError("", s, "no such system file");
    return p;
  }
  const fs::path p = arch::spec_dir() / "systems" / (s + ".toml");
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) {
    throw InputError("", s,
                     fmt::format("unknown system; known: {}", fmt::join(list_systems(), ", ")));
  }
  return p;
}

void load_into(SystemSpec& spec, const fs::path& file, std::vector<fs::path>& stack) {
  const std::string where = file.string();
  const arch::RawNode root = arch::read_toml_file(file);
  const arch::RawNode* meta = root.child("meta");
  if (meta == nullptr || !meta->is_table()) {
    throw InputError(where + ":1", "meta", "a system file starts with a [meta] table");
  }
  for (const auto& m : meta->children) {
    if (!kMetaKeys.contains(m.key)) {
      throw InputError(fmt::format("{}:{}", where, m.line), "meta." + m.key,
                       fmt::format("unknown key; [meta] takes {}", fmt::join(kMetaKeys, ", ")));
    }
    if (m.kind != arch::RawNode::Kind::kString) {
      throw InputError(fmt::format("{}:{}", where, m.line), "meta." + m.key, "expected a string");
    }
  }
  auto meta_str = [&](std::string_view k) -> const std::string* {
    const arch::RawNode* n = meta->child(k);
    return n == nullptr ? nullptr : &n->s;
  };
  if (const std::string* parent = meta_str("inherits")) {
    const fs::path pf = fs::weakly_canonical(resolve(*parent, file.parent_path()));
    if (std::find(stack.begin(), stack.end(), pf) != stack.end()) {
      throw InputError(fmt::format("{}:{}", where, meta->child("inherits")->line), "meta.inherits",
                       "inheritance cycle");
    }
    stack.push_back(pf);
    load_into(spec, pf, stack);
    stack.pop_back();
  }
  if (const std::string* v = meta_str("name")) spec.name = *v;
  if (const std::string* v = meta_str("title")) spec.title = *v;
  if (const std::string* v = meta_str("description")) spec.description = *v;
  if (const std::string* v = meta_str("chip")) {
    // A chip given as a relative path is relative to this file.
    const bool is_path = v->find('/') != std::string::npos || v->ends_with(".toml");
    spec.chip_name =
        is_path && fs::path(*v).is_relative() ? (file.parent_path() / *v).string() : *v;
  }
  if (const std::string* v = meta_str("status")) spec.status = *v;
  spec.files.push_back(where);

  arch::LeafContext ctx{where, spec.status != "what-if"};
  apply_tables(spec, spec.fields, rows(), root, ctx, "meta, server, cluster, collective");
}

void check(const SystemSpec& s) {
  const std::string where = s.files.empty() ? "" : s.files.back();
  auto need = [&](bool ok, std::string_view key, std::string_view why) {
    if (!ok) throw InputError(where, std::string(key), std::string(why));
  };
  need(!s.chip_name.empty(), "meta.chip", "the chip generation is required");
  need(s.chips_per_server > 0, "server.chips", "required");
  need(s.fields.contains("collective.step_latency_ns"), "collective.step_latency_ns", "required");
  if (s.topology == ServerTopology::kTorus) {
    int64_t prod = 1;
    // Stops once past server.chips (<= 2^20, sizes <= 4096): a long list cannot overflow.
    for (int64_t d : s.torus_dims)
      if ((prod *= d) > s.chips_per_server) break;
    need(!s.torus_dims.empty() && prod == s.chips_per_server, "server.torus_dims",
         fmt::format("the product of the torus sizes must be server.chips ({})",
                     s.chips_per_server));
    need(s.link_gbps > 0, "server.link_gbps", "a torus needs its link bandwidth");
    need(s.outer_dims <= static_cast<int>(s.torus_dims.size()), "server.outer_dims",
         "more outer dimensions than torus dimensions");
    need(s.outer_dims == 0 || s.outer_link_gbps > 0, "server.outer_link_gbps",
         "outer dimensions need their link bandwidth");
  } else {
    need(s.switch_port_gbps > 0, "server.switch_port_gbps", "a switch needs its port bandwidth");
  }
  need(s.servers == 1 || s.efa_gbps_per_server > 0, "cluster.efa_gbps",
       "servers > 1 need the EFA bandwidth");
}

}  // namespace

std::vector<std::string> list_systems() { return list_toml_stems(arch::spec_dir() / "systems"); }

SystemSpec load_system(std::string_view name_or_path,
                       const std::vector<arch::Override>& overrides) {
  const fs::path file = fs::weakly_canonical(resolve(name_or_path, {}));
  std::vector<fs::path> stack{file};
  SystemSpec spec;
  load_into(spec, file, stack);
  apply_overrides(spec, spec.fields, rows(), overrides);
  check(spec);
  spec.chip = arch::load_chip(spec.chip_name);
  return spec;
}

std::string format_system_keys() { return format_rows(rows()); }

}  // namespace trnsim::fabric

namespace trnsim::fabric {

bool is_system_key(std::string_view key) {
  for (std::string_view section : {"server.", "cluster.", "collective."})
    if (key.starts_with(section)) return true;
  return false;
}

SplitOverrides split_overrides(const std::vector<arch::Override>& all) {
  SplitOverrides out;
  for (const arch::Override& o : all) (is_system_key(o.key) ? out.system : out.chip).push_back(o);
  return out;
}

}  // namespace trnsim::fabric
