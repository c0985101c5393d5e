// Fabric bindings: systems, runtimes and collectives (fabric/collective.h). Timing results cross
// the boundary as the rows `trnsim collective --json` prints (sweep_row_json), so Python's
// records have exactly the command's fields, whatever fields the rows gain; functional buffers
// cross as arrays of the dtype's codes in unsigned containers, which Python views as its dtype.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "base/interrupt.h"
#include "bindings/bindings.h"
#include "fabric/collective.h"
#include "fabric/concurrent.h"
#include "numerics/format.h"

namespace trnsim::bindings {

namespace {

using Codes = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::numpy>;

// JSON as the commands print it: bytes that are not UTF-8 (a path) become U+FFFD.
std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<arch::Override> overrides_of(const std::vector<std::string>& sets) {
  std::vector<arch::Override> out;
  for (const auto& s : sets) out.push_back(arch::parse_override(s));
  return out;
}

// The command's rule (fabric::is_runtime_key): keys of the runtime file's tables go to the
// runtime, the rest to the system, so one `set` list serves both files as `--set` does.
std::pair<std::vector<std::string>, std::vector<std::string>> split_sets(
    const std::vector<std::string>& sets) {
  std::vector<std::string> sys, rt;
  for (const auto& s : sets) {
    const arch::Override o = arch::parse_override(s);
    (fabric::is_runtime_key(o.key) ? rt : sys).push_back(s);
  }
  return {sys, rt};
}

nlohmann::json provenance_json(const arch::FieldRecords& fields) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, rec] : fields) j[key] = rec.prov.to_json();
  return j;
}

// What a system is, from its spec and its Topology's accessors (no model of our own): the
// chips, servers, the server topology and every kind of link with its count, rate and latency.
nlohmann::json system_json(const fabric::SystemSpec& s) {
  const fabric::Topology topo(s);
  struct Kind {
    int64_t count = 0;
    fabric::LinkInfo info{};
  };
  std::map<std::string, Kind> kinds;
  std::vector<std::string> order;  // kinds in link-number order
  for (int64_t id = 0; id < topo.num_links(); ++id) {
    const fabric::LinkInfo li = topo.link(id);
    const std::string name = fabric::link_kind_name(li.kind);
    auto [it, fresh] = kinds.try_emplace(name);
    if (fresh) {
      it->second.info = li;
      order.push_back(name);
    }
    ++it->second.count;
  }
  nlohmann::json links = nlohmann::json::array();
  for (const auto& name : order) {
    const Kind& k = kinds.at(name);
    links.push_back({{"kind", name},
                     {"count", k.count},
                     {"gbps", k.info.bytes_per_s * 1e-9},
                     {"latency_us", static_cast<double>(k.info.latency.v) * 1e-6}});
  }
  const bool torus = s.topology == fabric::ServerTopology::kTorus;
  nlohmann::json server{{"topology", torus ? "torus" : "switch"},
                        {"chips", s.chips_per_server},
                        {"link_gbps", s.link_gbps},
                        {"link_latency_ns", s.link_latency_ns}};
  if (torus) {
    server["torus_dims"] = s.torus_dims;
    server["outer_dims"] = s.outer_dims;
    server["outer_link_gbps"] = s.outer_link_gbps;
    server["outer_link_latency_ns"] = s.outer_link_latency_ns;
  } else {
    server["switch_port_gbps"] = s.switch_port_gbps;
    server["switch_latency_ns"] = s.switch_latency_ns;
  }
  return {{"name", s.name},
          {"title", s.title},
          {"description", s.description},
          {"status", s.status},
          {"chip", s.chip_name},
          {"chips", s.chips()},
          {"servers", s.servers},
          {"chips_per_server", s.chips_per_server},
          {"cores_per_chip", s.chip.chip.cores},
          {"lnc", s.lnc},
          {"server", server},
          {"cluster",
           {{"servers", s.servers},
            {"efa_gbps_per_server", s.efa_gbps_per_server},
            {"efa_latency_ns", s.efa_latency_ns}}},
          {"collective",
           {{"step_latency_ns", s.step_latency_ns},
            {"core_link_latency_ns", s.core_link_latency_ns},
            {"dma_engines_per_cc_core", s.dma_engines_per_cc_core},
            {"lnc", s.lnc}}},
          {"links", links},
          {"num_links", topo.num_links()},
          {"files", s.files},
          {"provenance", provenance_json(s.fields)}};
}

nlohmann::json runtime_json(const fabric::RuntimeSpec& r) {
  return {{"name", r.name},
          {"title", r.title},
          {"description", r.description},
          {"file", r.file},
          {"launch", {{"launch_us", r.launch_us}, {"overlap_us", r.overlap_us}}},
          {"select",
           {{"mesh_max_bytes", r.mesh_max_bytes},
            {"rdh_max_bytes", r.rdh_max_bytes},
            {"mesh_max_ranks", r.mesh_max_ranks},
            {"inter_ring_max_servers", r.inter_ring_max_servers}}},
          {"provenance", provenance_json(r.fields)}};
}

// The parts of a request Python passes; bytes are set per call.
struct RequestArgs {
  std::string op, dtype, algorithm, intra, inter;
  int32_t root = 0;
  std::vector<int32_t> perm;
  std::vector<std::vector<int64_t>> a2av;
  bool folded = true;
  int ring_directions = 2;
};

fabric::CollectiveRequest request_of(const RequestArgs& a) {
  fabric::CollectiveRequest req;
  req.op = fabric::parse_op(a.op);
  req.dtype = num::parse_format(a.dtype);
  req.algorithm = a.algorithm;
  req.intra = a.intra;
  req.inter = a.inter;
  req.root = a.root;
  req.perm = a.perm;
  req.a2av = a.a2av;
  req.folded = a.folded;
  req.ring_directions = a.ring_directions;
  return req;
}

RequestArgs args_of(const std::string& op, const std::string& dtype, const std::string& algorithm,
                    const std::string& intra, const std::string& inter, int32_t root,
                    const std::vector<int32_t>& perm, const std::vector<std::vector<int64_t>>& a2av,
                    bool folded, int ring_directions = 2) {
  return {op, dtype, algorithm, intra, inter, root, perm, a2av, folded, ring_directions};
}

// Codes of one rank's buffer: each element's `bytes` little-endian bytes, zero-extended (the
// layout convert() stores, numerics/convert.h).
std::vector<uint64_t> codes_of(const Codes& a, int bytes, size_t rank) {
  if (a.itemsize() != static_cast<size_t>(bytes))
    throw InputError("arrays[" + std::to_string(rank) + "]", "",
                     std::to_string(a.itemsize()) + "-byte elements given for a dtype stored in " +
                         std::to_string(bytes) + "-byte elements");
  std::vector<uint64_t> out(a.size(), 0);
  const auto* p = static_cast<const uint8_t*>(a.data());
  for (size_t i = 0; i < out.size(); ++i) std::memcpy(&out[i], p + i * bytes, bytes);
  return out;
}

nb::dlpack::dtype unsigned_container(int bytes) {
  switch (bytes) {
    case 1:
      return nb::dtype<uint8_t>();
    case 2:
      return nb::dtype<uint16_t>();
    case 4:
      return nb::dtype<uint32_t>();
    default:
      return nb::dtype<uint64_t>();
  }
}

OutArray array_of(const std::vector<uint64_t>& codes, int bytes) {
  auto buf = std::make_unique<uint8_t[]>(codes.size() * bytes + 1);
  for (size_t i = 0; i < codes.size(); ++i) std::memcpy(buf.get() + i * bytes, &codes[i], bytes);
  uint8_t* raw = buf.release();
  nb::capsule owner(raw, [](void* p) noexcept { delete[] static_cast<uint8_t*>(p); });
  const size_t shape[1] = {codes.size()};
  return OutArray(raw, 1, shape, owner, nullptr, unsigned_container(bytes));
}

// One group of a concurrent run as Python passes it: (op, bytes, dtype, algorithm, intra, inter,
// root, perm, a2av, ranks, ring_directions); root, perm and a2av in the group's own ranks,
// `ranks` the global rank of each group rank.
using GroupArgs =
    std::tuple<std::string, int64_t, std::string, std::string, std::string, std::string, int32_t,
               std::vector<int32_t>, std::vector<std::vector<int64_t>>, std::vector<int32_t>, int>;

fabric::GroupRequest group_request_of(const GroupArgs& g) {
  const auto& [op, bytes, dtype, algorithm, intra, inter, root, perm, a2av, ranks, dirs] = g;
  fabric::GroupRequest out;
  out.req = request_of(args_of(op, dtype, algorithm, intra, inter, root, perm, a2av, false, dirs));
  out.req.bytes = bytes;
  out.ranks = ranks;
  return out;
}

fabric::RankUnit parse_unit(const std::string& unit) {
  if (unit == "core") return fabric::RankUnit::kCore;
  if (unit == "chip") return fabric::RankUnit::kChip;
  throw InputError("rank_unit", unit, "expected core or chip");
}

}  // namespace

void bind_fabric(nb::module_& m) {
  nb::class_<fabric::SystemSpec>(m, "FabricSystem",
                                 "A system of Trainium chips as loaded (fabric/system.h).")
      .def(
          "json", [](const fabric::SystemSpec& s) { return dump(system_json(s)); },
          "The system, its topology and the provenance of every key, as JSON.");
  nb::class_<fabric::RuntimeSpec>(m, "FabricRuntime",
                                  "A collective runtime's software parameters (fabric/runtime.h).")
      .def(
          "json", [](const fabric::RuntimeSpec& r) { return dump(runtime_json(r)); },
          "The runtime's launch cost and selection thresholds, as JSON.");

  m.def(
      "fabric_load_system",
      [](const std::string& name, const std::vector<std::string>& sets) {
        return fabric::load_system(name, overrides_of(sets));
      },
      nb::arg("name"), nb::arg("sets") = std::vector<std::string>{},
      "A system by name (spec/systems) or .toml path with `key=value` overrides.");
  m.def(
      "fabric_load_runtime",
      [](const std::string& name, const std::vector<std::string>& sets) {
        return fabric::load_runtime(name, overrides_of(sets));
      },
      nb::arg("name"), nb::arg("sets") = std::vector<std::string>{},
      "A collective runtime by name (spec/runtime) or .toml path with `key=value` overrides.");
  m.def("fabric_split_sets", &split_sets, nb::arg("sets"),
        "`key=value` overrides split as `trnsim collective --set` splits them: (system, "
        "runtime), the runtime file's keys (launch.*, sync.*, select.*) going to the runtime.");
  m.def("fabric_systems", &fabric::list_systems, "Names of the systems in spec/systems.");
  m.def("fabric_runtimes", &fabric::list_runtimes, "Names of the runtimes in spec/runtime.");
  m.def("fabric_ops", &fabric::op_names, "The collectives, as the command names them.");
  m.def(
      "fabric_algorithms",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& a : fabric::algorithms()) out.emplace_back(a.name, a.doc);
        return out;
      },
      "(name, description) of every collective algorithm.");
  m.def("fabric_system_keys", &fabric::format_system_keys, "Every system key, as text.");
  m.def("fabric_runtime_keys", &fabric::format_runtime_keys, "Every runtime key, as text.");
  m.def(
      "fabric_format_sweep",
      [](const std::string& sweep) {
        return fabric::format_sweep_json(nlohmann::json::parse(sweep));
      },
      nb::arg("sweep"),
      "The command's table of a sweep document (the --json header with its rows), as text.");
  m.def("fabric_parse_sizes", &fabric::parse_sizes, nb::arg("text"),
        "Sizes in bytes of '8B:1GiB[:FACTOR]', 'A,B,C' or one size, as --sizes reads them.");
  m.def(
      "fabric_block_range",
      [](int64_t count, int64_t parts, int64_t b) {
        if (parts < 1 || b < 0 || b >= parts)
          throw InputError("block", "", "not a block of the parts");
        const fabric::Range r = fabric::block_range(count, parts, b);
        return std::make_pair(r.off, r.len);
      },
      nb::arg("count"), nb::arg("parts"), nb::arg("block"),
      "(offset, length) of block `block` when `count` elements split into `parts` (plan.h).");
  m.def(
      "fabric_split_ranks",
      [](int64_t ranks, int64_t groups, const std::string& layout) {
        return fabric::split_ranks(ranks, groups, layout);
      },
      nb::arg("ranks"), nb::arg("groups"), nb::arg("layout") = "contiguous",
      "`groups` equal groups of `ranks` ranks, as --groups / --group-layout split them "
      "(concurrent.h): contiguous or strided.");

  nb::class_<fabric::Fabric>(m, "Fabric", "A system, a runtime and ranks placed on the system.")
      .def(
          "__init__",
          [](fabric::Fabric* self, const fabric::SystemSpec& system,
             const fabric::RuntimeSpec& runtime, const std::string& unit, int64_t ranks, int lnc,
             int64_t ranks_per_server) {
            fabric::Placement pl;
            pl.unit = parse_unit(unit);
            pl.ranks = ranks;
            pl.lnc = lnc;
            pl.ranks_per_server = ranks_per_server;
            new (self) fabric::Fabric(system, runtime, pl);
          },
          nb::arg("system"), nb::arg("runtime"), nb::arg("rank_unit"), nb::arg("ranks"),
          nb::arg("lnc") = 0, nb::arg("ranks_per_server") = 0)
      .def(
          "info_json",
          [](const fabric::Fabric& f) {
            nlohmann::json j = fabric::sweep_json(f, {});
            j.erase("rows");
            const fabric::Network& net = f.network();
            j["ranks_per_server"] = net.ranks_per_server();
            j["servers_used"] = net.servers_used();
            return dump(j);
          },
          "The sweep header `trnsim collective --json` prints (system, chip, runtime, chips, "
          "ranks, ranks_per_chip, launch), plus ranks_per_server and servers_used.")
      .def("system", [](const fabric::Fabric& f) { return f.system(); })
      .def("runtime", [](const fabric::Fabric& f) { return f.runtime(); })
      .def(
          "chip_of",
          [](const fabric::Fabric& f, int64_t rank) {
            if (rank < 0 || rank >= f.network().ranks())
              throw InputError("rank", "", std::to_string(rank) + " is not a rank");
            return f.network().chip_of(rank);
          },
          nb::arg("rank"), "The chip (system-wide number) a rank is on.")
      .def(
          "simulate",
          [](const fabric::Fabric& f, const std::vector<int64_t>& sizes, const std::string& op,
             const std::string& dtype, const std::string& algorithm, const std::string& intra,
             const std::string& inter, int32_t root, const std::vector<int32_t>& perm,
             const std::vector<std::vector<int64_t>>& a2av, bool folded, int ring_directions) {
            fabric::CollectiveRequest req = request_of(args_of(
                op, dtype, algorithm, intra, inter, root, perm, a2av, folded, ring_directions));
            std::vector<std::string> rows;
            const SigintScope sigint(on_main_thread());
            nb::gil_scoped_release release;
            for (int64_t bytes : sizes) {
              check_interrupt();  // between sizes, as the command's sweep does
              req.bytes = bytes;
              rows.push_back(dump(fabric::sweep_row_json(f.simulate(req))));
            }
            return rows;
          },
          nb::arg("sizes"), nb::arg("op"), nb::arg("dtype") = "fp32", nb::arg("algorithm") = "auto",
          nb::arg("intra") = "", nb::arg("inter") = "", nb::arg("root") = 0,
          nb::arg("perm") = std::vector<int32_t>{},
          nb::arg("a2av") = std::vector<std::vector<int64_t>>{}, nb::arg("folded") = true,
          nb::arg("ring_directions") = 2,
          "Timing mode: one row per size (bytes of the full tensor), each the JSON text of a "
          "`trnsim collective --json` row.")
      .def(
          "concurrent",
          [](const fabric::Fabric& f, const std::vector<GroupArgs>& groups) {
            std::vector<fabric::GroupRequest> reqs;
            for (const GroupArgs& g : groups) reqs.push_back(group_request_of(g));
            fabric::ConcurrentResult c;
            {
              const SigintScope sigint(on_main_thread());
              nb::gil_scoped_release release;
              c = fabric::simulate_concurrent(f, reqs);
            }
            std::vector<std::string> rows;
            for (const auto& r : c.groups) rows.push_back(dump(fabric::sweep_row_json(r)));
            return std::make_pair(std::move(rows), static_cast<double>(c.makespan.v) * 1e-6);
          },
          nb::arg("groups"),
          "Concurrent groups (concurrent.h): each group (op, bytes, dtype, algorithm, intra, "
          "inter, root, perm, a2av, ranks, ring_directions), root/perm/a2av in the group's ranks, "
          "`ranks` its "
          "global ranks. Returns (one `trnsim collective --json` row per group as JSON text, "
          "makespan in us).")
      .def(
          "run",
          [](const fabric::Fabric& f, const std::vector<Codes>& data, const std::string& op,
             const std::string& dtype, const std::string& algorithm, const std::string& intra,
             const std::string& inter, int32_t root, const std::vector<int32_t>& perm,
             const std::vector<std::vector<int64_t>>& a2av,
             const std::optional<std::vector<int64_t>>& out_sizes, int ring_directions) {
            fabric::CollectiveRequest req = request_of(args_of(
                op, dtype, algorithm, intra, inter, root, perm, a2av, true, ring_directions));
            const int bytes = req.dtype.storage_bytes;
            fabric::Buffers buf;
            size_t count = 0;
            for (size_t r = 0; r < data.size(); ++r) {
              buf.data.push_back(codes_of(data[r], bytes, r));
              count = std::max(count, buf.data.back().size());
            }
            // The full tensor's size: every buffer's for the even collectives, the largest
            // for all-to-all-v (whose counts come from a2av).
            req.bytes = static_cast<int64_t>(count) * bytes;
            if (out_sizes) {
              if (out_sizes->size() != data.size())
                throw InputError("out_sizes", "", "one size per rank");
              for (int64_t n : *out_sizes) {
                if (n < 0) throw InputError("out_sizes", "", "a size is negative");
                buf.out.emplace_back(static_cast<size_t>(n), 0);
              }
            }
            std::string algo;
            {
              const SigintScope sigint(on_main_thread());
              nb::gil_scoped_release release;
              algo = f.run(req, buf);
            }
            std::vector<OutArray> data_out, out_out;
            for (const auto& d : buf.data) data_out.push_back(array_of(d, bytes));
            for (const auto& o : buf.out) out_out.push_back(array_of(o, bytes));
            return std::make_tuple(algo, std::move(data_out), std::move(out_out));
          },
          nb::arg("data"), nb::arg("op"), nb::arg("dtype") = "fp32", nb::arg("algorithm") = "auto",
          nb::arg("intra") = "", nb::arg("inter") = "", nb::arg("root") = 0,
          nb::arg("perm") = std::vector<int32_t>{},
          nb::arg("a2av") = std::vector<std::vector<int64_t>>{}, nb::arg("out_sizes") = nb::none(),
          nb::arg("ring_directions") = 2,
          "Functional mode: `data` one array of dtype codes per rank (the plan's buffer 0). "
          "Returns (algorithm, data buffers, out buffers) as unsigned code arrays.");
}

}  // namespace trnsim::bindings
