#include "arch/units.h"

#include <array>

namespace trnsim::arch {

namespace {

// One row per unit: its quantity and its size in that quantity's base unit.
struct UnitRow {
  std::string_view name;
  std::string_view quantity;
  double size;
};

constexpr double kKi = 1024.0;
constexpr std::array kUnits = {
    UnitRow{"GHz", "frequency", 1e9},
    UnitRow{"MHz", "frequency", 1e6},
    UnitRow{"GB/s", "bandwidth", 1e9},
    UnitRow{"B/ns", "bandwidth", 1e9},
    UnitRow{"TB/s", "bandwidth", 1e12},
    UnitRow{"GiB/s", "bandwidth", kKi* kKi* kKi},
    UnitRow{"TiB/s", "bandwidth", kKi* kKi* kKi* kKi},
    UnitRow{"Gbit/s", "bandwidth", 1e9 / 8},
    UnitRow{"Tbit/s", "bandwidth", 1e12 / 8},
    UnitRow{"bytes", "size", 1},
    UnitRow{"KiB", "size", kKi},
    UnitRow{"MiB", "size", kKi* kKi},
    UnitRow{"GiB", "size", kKi* kKi* kKi},
    UnitRow{"TiB", "size", kKi* kKi* kKi* kKi},
    UnitRow{"GB", "size", 1e9},
    UnitRow{"TB", "size", 1e12},
    UnitRow{"TFLOPS", "flops", 1e12},
    UnitRow{"PFLOPS", "flops", 1e15},
    UnitRow{"ns", "time", 1e-9},
    UnitRow{"us", "time", 1e-6},
    UnitRow{"W", "power", 1},
    UnitRow{"kW", "power", 1e3},
    UnitRow{"pJ/B", "energy per byte", 1e-12},
    UnitRow{"pJ/bit", "energy per byte", 8e-12},
};

const UnitRow* find(std::string_view name) {
  for (const auto& u : kUnits) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

}  // namespace

std::optional<double> unit_factor(std::string_view from, std::string_view canonical) {
  if (from == canonical) return 1.0;
  const UnitRow* f = find(from);
  const UnitRow* c = find(canonical);
  if (f == nullptr || c == nullptr || f->quantity != c->quantity) return std::nullopt;
  return f->size / c->size;
}

std::vector<std::string> units_for(std::string_view canonical) {
  std::vector<std::string> out{std::string(canonical)};
  const UnitRow* c = find(canonical);
  if (c == nullptr) return out;
  for (const auto& u : kUnits) {
    if (u.quantity == c->quantity && u.name != canonical) out.emplace_back(u.name);
  }
  return out;
}

}  // namespace trnsim::arch
