// Loading spec/runtime/*.toml with the same grammar and errors as the system files.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "arch/toml_reader.h"
#include "base/error.h"
#include "fabric/keyed_rows.h"
#include "fabric/runtime.h"

namespace trnsim::fabric {

namespace fs = std::filesystem;

namespace {

using Row = KeyRow<RuntimeSpec>;

const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
      num_row<RuntimeSpec>("launch.launch_us", "us", 0, 1e7,
                           "software cost of one collective call, call to completion",
                           [](RuntimeSpec& r, double v) { r.launch_us = v; }),
      num_row<RuntimeSpec>("launch.overlap_us", "us", 0, 1e7,
                           "the part of launch_us that proceeds while the device moves data",
                           [](RuntimeSpec& r, double v) { r.overlap_us = v; }),
      num_row<RuntimeSpec>("sync.peer_us", "us", 0, 1e7,
                           "per step, a rank's semaphore round trip with one peer on its server",
                           [](RuntimeSpec& r, double v) { r.peer_sync_us = v; }),
      num_row<RuntimeSpec>("sync.efa_message_us", "us", 0, 1e7,
                           "per step, the server proxy's work for one exchange of one of its ranks "
                           "with a peer on another server (EFA)",
                           [](RuntimeSpec& r, double v) { r.efa_message_us = v; }),
      int_row<RuntimeSpec>("sync.ranks_per_proxy", 1, 1 << 20,
                           "ranks of a server served by one network proxy thread",
                           [](RuntimeSpec& r, int64_t v) { r.ranks_per_proxy = v; }),
      num_row<RuntimeSpec>("select.mesh_max_bytes", "bytes", 0, 1e18,
                           "mesh below this size (when the ranks allow it)",
                           [](RuntimeSpec& r, double v) { r.mesh_max_bytes = v; }),
      num_row<RuntimeSpec>("select.rdh_max_bytes", "bytes", 0, 1e18,
                           "recursive halving-doubling below this size (power-of-two ranks)",
                           [](RuntimeSpec& r, double v) { r.rdh_max_bytes = v; }),
      int_row<RuntimeSpec>("select.mesh_max_ranks", 1, 1 << 20,
                           "the most ranks mesh is chosen for (it sends r*(r-1) transfers)",
                           [](RuntimeSpec& r, int64_t v) { r.mesh_max_ranks = v; }),
      int_row<RuntimeSpec>("select.inter_ring_max_servers", 1, 1 << 30,
                           "hierarchical: above this many servers the inter-server stage is "
                           "rdh at every size (power-of-two servers)",
                           [](RuntimeSpec& r, int64_t v) { r.inter_ring_max_servers = v; }),
  };
  return table;
}

}  // namespace

std::vector<std::string> list_runtimes() { return list_toml_stems(arch::spec_dir() / "runtime"); }

RuntimeSpec load_runtime(std::string_view name_or_path,
                         const std::vector<arch::Override>& overrides) {
  const std::string s(name_or_path);
  fs::path file = s.find('/') != std::string::npos || s.ends_with(".toml")
                      ? fs::path(s)
                      : arch::spec_dir() / "runtime" / (s + ".toml");
  std::error_code ec;  // a name too long for the file system: no such file, not an exception
  if (!fs::is_regular_file(file, ec)) {  // /dev/zero or a FIFO would be read forever
    throw InputError("", s,
                     fmt::format("unknown runtime; known: {}", fmt::join(list_runtimes(), ", ")));
  }
  RuntimeSpec spec;
  spec.file = file.string();
  const arch::RawNode root = arch::read_toml_file(file);
  if (const arch::RawNode* meta = root.child("meta")) {
    // As in the system files: a [meta] table of strings (`name = 5` was read as "").
    if (!meta->is_table())
      throw InputError(fmt::format("{}:{}", spec.file, meta->line), "meta", "expected a table");
    for (const auto& m : meta->children) {
      if (m.kind != arch::RawNode::Kind::kString)
        throw InputError(fmt::format("{}:{}", spec.file, m.line), "meta." + m.key,
                         "expected a string");
      if (m.key == "name")
        spec.name = m.s;
      else if (m.key == "title")
        spec.title = m.s;
      else if (m.key == "description")
        spec.description = m.s;
      else
        throw InputError(fmt::format("{}:{}", spec.file, m.line), "meta." + m.key,
                         "unknown key; [meta] takes name, title, description");
    }
  }
  apply_tables(spec, spec.fields, rows(), root, arch::LeafContext{spec.file, true},
               "meta, launch, sync, select");
  for (const auto& r : rows()) {
    if (!spec.fields.contains(r.info.key)) throw InputError(spec.file, r.info.key, "required");
  }
  apply_overrides(spec, spec.fields, rows(), overrides);
  if (spec.overlap_us > spec.launch_us) {
    throw InputError(spec.file, "launch.overlap_us", "cannot exceed launch.launch_us");
  }
  return spec;
}

std::string format_runtime_keys() { return format_rows(rows()); }

bool is_runtime_key(std::string_view key) {
  for (const auto& r : rows()) {
    const std::string_view k = r.info.key;
    const size_t dot = k.find('.');
    if (key.substr(0, dot + 1) == k.substr(0, dot + 1)) return true;  // same table
  }
  return false;
}

}  // namespace trnsim::fabric
