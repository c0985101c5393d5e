// A parsed data file as a plain tree with source lines, independent of the TOML library. The
// loader walks this against the schema; only toml_reader.cc knows toml++.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trnsim::arch {

struct RawNode {
  enum class Kind : uint8_t { kTable, kArray, kBool, kInt, kFloat, kString, kOther };

  Kind kind = Kind::kTable;
  std::string key;  // name within the parent table (empty for array elements and the root)
  int line = 0;     // 1-based source line; 0 when unknown (values built from `--set`)
  int column = 0;

  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<RawNode> children;  // table entries (ordered by key) or array elements

  const RawNode* child(std::string_view name) const {
    for (const auto& c : children) {
      if (c.key == name) return &c;
    }
    return nullptr;
  }
  bool is_table() const { return kind == Kind::kTable; }
};

// "table", "array", "bool", "integer", "float", "string", "date/time".
std::string_view raw_kind_name(RawNode::Kind k);

}  // namespace trnsim::arch
