// The spec schema: every key of a chip, declared once with its type, unit, allowed range, help
// text and the member it binds to (STYLE.md practices 7 and 10). Loading, validation, `--set`
// overrides, the JSON dump and `trnsim spec --keys` are all driven by this one table, so a key
// cannot be loadable but undocumented, or documented but ignored.
#pragma once

#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "arch/chip_spec.h"
#include "arch/value.h"

namespace trnsim::arch {

struct KeyInfo {
  std::string key;  // dotted: "core.tensor.clock_ghz"
  ValueType type = ValueType::kFloat;
  std::string unit;  // canonical unit ("GHz", "GB/s", ...); empty for counts, flags, names
  std::string help;
  bool required = true;  // must hold a value (within `group`, when the group is present)
  std::string group;     // "server" etc.: an optional table whose keys are required only together
  bool sourced = true;   // false for [meta]: file directives, not hardware facts
  double min = 0;        // numbers, and the elements of int lists
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // strings and string-list elements; empty = any

  std::function<void(ChipSpec&, const Value&)> set;
  std::function<std::optional<Value>(const ChipSpec&)> get;
  std::function<void(ChipSpec&)> clear;  // back to the default (for `meta.drop`)

  KeyInfo& range(double lo, double hi) {
    min = lo;
    max = hi;
    return *this;
  }
  KeyInfo& one_of(std::vector<std::string> c) {
    choices = std::move(c);
    return *this;
  }
  // "[0.1, 10]", "inf | saturate", "" when unconstrained.
  std::string constraint_text() const;
  nlohmann::json to_json() const;
};

class Schema {
 public:
  const KeyInfo* find(std::string_view key) const;
  // True when `prefix` names a table: some key starts with prefix + ".".
  bool is_table(std::string_view prefix) const;
  // " (did you mean 'x'?)" for a near miss among the keys and tables of the same parent, else "".
  std::string suggest(std::string_view key) const;
  const std::deque<KeyInfo>& keys() const { return keys_; }

  // Registers a key; asserts that it is new. The reference stays valid (deque). A number left
  // unbounded gets the bounds of its unit (bounds_for_unit), so no rate, capacity or time
  // accepts 0, infinity or a value that would overflow the simulator's integer picoseconds.
  KeyInfo& add(KeyInfo k);

 private:
  std::deque<KeyInfo> keys_;
  std::map<std::string, size_t, std::less<>> index_;
  std::set<std::string, std::less<>> tables_;
};

// The one schema, built on first use from schema_core.cc and schema_chip.cc.
const Schema& schema();

// Builders, one per part of the tree (called once by schema()).
void add_meta_keys(Schema& s);
void add_core_keys(Schema& s);
void add_chip_keys(Schema& s);
void add_system_keys(Schema& s);

}  // namespace trnsim::arch
