// The key tables of the fabric's data files (systems, runtimes): one row per key with its type,
// unit, range and meaning (arch::KeyInfo) and the member it sets. Leaves use the chip files'
// grammar (arch/leaf.h), so provenance, units and errors naming file, line and key are shared.
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "arch/arch.h"
#include "arch/leaf.h"
#include "arch/raw_node.h"
#include "arch/toml_reader.h"
#include "base/error.h"

namespace trnsim::fabric {

template <typename Spec>
struct KeyRow {
  arch::KeyInfo info;
  std::function<void(Spec&, const arch::Value&)> set;
};

template <typename Spec>
KeyRow<Spec> num_row(std::string key, std::string unit, double lo, double hi, std::string help,
                     std::function<void(Spec&, double)> set) {
  KeyRow<Spec> r;
  r.info.key = std::move(key);
  r.info.type = arch::ValueType::kFloat;
  r.info.unit = std::move(unit);
  r.info.min = lo;
  r.info.max = hi;
  r.info.help = std::move(help);
  r.set = [set](Spec& s, const arch::Value& v) { set(s, arch::as_number(v)); };
  return r;
}

template <typename Spec>
KeyRow<Spec> int_row(std::string key, double lo, double hi, std::string help,
                     std::function<void(Spec&, int64_t)> set) {
  KeyRow<Spec> r;
  r.info.key = std::move(key);
  r.info.type = arch::ValueType::kInt;
  r.info.min = lo;
  r.info.max = hi;
  r.info.help = std::move(help);
  r.set = [set](Spec& s, const arch::Value& v) { set(s, std::get<int64_t>(v)); };
  return r;
}

template <typename Spec>
const KeyRow<Spec>* find_row(const std::vector<KeyRow<Spec>>& rows, std::string_view key) {
  for (const auto& r : rows) {
    if (r.info.key == key) return &r;
  }
  return nullptr;
}

// Parses one leaf against its row, sets the member and records the provenance.
template <typename Spec>
void apply_row(Spec& spec, arch::FieldRecords& fields, const KeyRow<Spec>& row,
               const arch::RawNode& node, const arch::LeafContext& ctx) {
  arch::ParsedLeaf leaf = arch::parse_leaf(row.info, node, ctx);
  row.set(spec, leaf.value);
  leaf.record.prov.where = arch::where_of(ctx, node);
  fields[row.info.key] = std::move(leaf.record);
}

// Every table of `root` except [meta]: each entry must be a key of `rows`.
template <typename Spec>
void apply_tables(Spec& spec, arch::FieldRecords& fields, const std::vector<KeyRow<Spec>>& rows,
                  const arch::RawNode& root, const arch::LeafContext& ctx,
                  std::string_view tables_hint) {
  for (const auto& table : root.children) {
    if (table.key == "meta") continue;
    if (!table.is_table()) {
      throw InputError(fmt::format("{}:{}", ctx.file, table.line), table.key,
                       fmt::format("unknown top-level key; tables are {}", tables_hint));
    }
    for (const auto& leaf : table.children) {
      const std::string key = table.key + "." + leaf.key;
      const KeyRow<Spec>* row = find_row(rows, key);
      if (row == nullptr) {
        throw InputError(fmt::format("{}:{}", ctx.file, leaf.line), key,
                         "unknown key (see `trnsim collective --keys`)");
      }
      apply_row(spec, fields, *row, leaf, ctx);
    }
  }
}

// `--set key=value` overrides, in order (provenance: override at "--set").
template <typename Spec>
void apply_overrides(Spec& spec, arch::FieldRecords& fields, const std::vector<KeyRow<Spec>>& rows,
                     const std::vector<arch::Override>& overrides) {
  for (const auto& o : overrides) {
    const KeyRow<Spec>* row = find_row(rows, o.key);
    if (row == nullptr) throw InputError("--set", o.key, "unknown key");
    apply_row(spec, fields, *row, arch::parse_toml_value(o.value, "--set", o.key),
              arch::LeafContext{"", false});
  }
}

// The stems of the .toml files in a spec directory, sorted.
std::vector<std::string> list_toml_stems(const std::filesystem::path& dir);

template <typename Spec>
std::string format_rows(const std::vector<KeyRow<Spec>>& rows) {
  std::string out;
  for (const auto& r : rows) {
    out += fmt::format("  {:<38} {:<6} {}\n", r.info.key, r.info.unit, r.info.help);
  }
  return out;
}

}  // namespace trnsim::fabric
