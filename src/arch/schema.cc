#include "arch/schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace trnsim::arch {

namespace {

std::string number_text(double d) {
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  return fmt::format("{}", d);
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string_view parent_of(std::string_view key) {
  const size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : key.substr(0, dot);
}

}  // namespace

std::string KeyInfo::constraint_text() const {
  if (!choices.empty()) return fmt::format("{}", fmt::join(choices, " | "));
  const bool numeric =
      type == ValueType::kInt || type == ValueType::kFloat || type == ValueType::kIntList;
  if (!numeric) return "";
  return fmt::format("[{}, {}]", number_text(min), number_text(max));
}

namespace {

// Physical bounds by unit, for keys declared without a range of their own. Rates and sizes are
// positive (0 GB/s or 0 GHz would stall every transfer or engine; 0 GiB of HBM holds no
// tensor), from 1 MB/s, 1 MHz, 1 GFLOPS, and at most ~1000x today's largest published figure
// (HARDWARE.md s1: 4.9 TB/s HBM, 2,517 FP8 TFLOPS per chip); fixed times are at most a
// second. Together they keep every time the model derives far inside int64 picoseconds.
struct UnitBounds {
  std::string_view unit;
  double min, max;
};
constexpr UnitBounds kUnitBounds[] = {
    {"GHz", 1e-3, 10},   {"GB/s", 1e-3, 1e7},    {"TFLOPS", 1e-3, 1e7},  {"PFLOPS", 1e-6, 1e6},
    {"TOPS", 1e-3, 1e7}, {"GiB", 1e-6, 1 << 20}, {"MiB", 1e-3, 1 << 30}, {"bytes", 1, 1LL << 48},
    {"ns", 0, 1e9},      {"us", 0, 1e6},         {"cycles", 0, 1e9},
};

void apply_unit_bounds(KeyInfo& k) {
  const bool numeric = k.type == ValueType::kInt || k.type == ValueType::kFloat;
  if (!numeric || k.min != 0 || !std::isinf(k.max) || !k.choices.empty()) return;
  for (const UnitBounds& b : kUnitBounds)
    if (k.unit == b.unit) {
      k.min = b.min;
      k.max = b.max;
      return;
    }
}

}  // namespace

nlohmann::json KeyInfo::to_json() const {
  nlohmann::json j;
  j["key"] = key;
  j["type"] = std::string(type_name(type));
  j["unit"] = unit;
  j["required"] = required;
  if (!group.empty()) j["group"] = group;
  j["sourced"] = sourced;
  if (!choices.empty()) {
    j["choices"] = choices;
  } else if (type == ValueType::kInt || type == ValueType::kFloat || type == ValueType::kIntList) {
    j["min"] = min;
    j["max"] = std::isinf(max) ? nlohmann::json(nullptr) : nlohmann::json(max);
  }
  j["help"] = help;
  return j;
}

KeyInfo& Schema::add(KeyInfo k) {
  TRNSIM_ASSERT(!index_.contains(k.key));
  TRNSIM_ASSERT(!k.help.empty());
  apply_unit_bounds(k);
  for (std::string_view p = parent_of(k.key); !p.empty(); p = parent_of(p)) {
    tables_.emplace(p);
  }
  index_.emplace(k.key, keys_.size());
  keys_.push_back(std::move(k));
  return keys_.back();
}

const KeyInfo* Schema::find(std::string_view key) const {
  const auto it = index_.find(key);
  return it == index_.end() ? nullptr : &keys_[it->second];
}

bool Schema::is_table(std::string_view prefix) const { return tables_.contains(prefix); }

std::string Schema::suggest(std::string_view key) const {
  const std::string_view parent = parent_of(key);
  const std::string_view leaf = key.substr(parent.empty() ? 0 : parent.size() + 1);
  std::string best;
  size_t best_d = std::max<size_t>(2, leaf.size() / 3) + 1;
  auto consider = [&](std::string_view candidate) {
    if (parent_of(candidate) != parent) return;
    const std::string_view c_leaf = candidate.substr(parent.empty() ? 0 : parent.size() + 1);
    const size_t d = edit_distance(leaf, c_leaf);
    if (d < best_d) {
      best_d = d;
      best = std::string(candidate);
    }
  };
  for (const auto& k : keys_) consider(k.key);
  for (const auto& t : tables_) consider(t);
  return best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
}

const Schema& schema() {
  static const Schema s = [] {
    Schema built;
    add_meta_keys(built);
    add_core_keys(built);
    add_chip_keys(built);
    add_system_keys(built);
    return built;
  }();
  return s;
}

}  // namespace trnsim::arch
