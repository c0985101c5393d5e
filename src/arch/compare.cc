#include "arch/compare.h"

#include <fmt/format.h>

#include <cmath>

#include "arch/arch.h"
#include "arch/schema.h"
#include "arch/spec_view.h"

namespace trnsim::arch {

namespace {

struct RowDef {
  const char* id;
  const char* label;
  const char* key;
  bool seed_summary;
};

// Seed 000's summary rows first, in its order, then other published chip figures.
constexpr RowDef kRows[] = {
    {"fp8", "FP8 TFLOPS", "chip.tflops.fp8", true},
    {"bf16", "BF16/FP16/TF32 TFLOPS", "chip.tflops.bf16", true},
    {"hbm_capacity", "HBM capacity", "chip.hbm.capacity_gib", true},
    {"hbm_bandwidth", "HBM bandwidth", "chip.hbm.bandwidth_gbps", true},
    {"interconnect", "Chip interconnect", "chip.link.bandwidth_gbps", true},
    {"neuroncores", "NeuronCores", "chip.cores", true},
    {"fp32", "FP32 TFLOPS", "chip.tflops.fp32", false},
    {"fp4", "FP4 TFLOPS", "chip.tflops.fp4", false},
    {"sparse", "Sparse TFLOPS", "chip.tflops.sparse", false},
    {"sbuf", "SBUF per chip", "chip.sbuf_mib", false},
    {"dma", "DMA bandwidth", "chip.dma.bandwidth_gbps", false},
    {"cc_cores", "CC-cores", "chip.cc_cores", false},
};

}  // namespace

double ratio_one_decimal(double ratio) { return std::round(ratio * 10) / 10; }

Comparison compare(const std::vector<ChipSpec>& chips, const std::string& prefer_source) {
  Comparison c;
  for (const auto& s : chips) {
    c.chips.push_back(s.meta.name);
    c.titles.push_back(s.meta.title);
    c.status.push_back(s.meta.status);
  }
  for (const RowDef& def : kRows) {
    CompareRow row{def.id, def.label, def.key, def.seed_summary, {}};
    const KeyInfo* k = schema().find(def.key);
    std::optional<double> base;
    for (size_t i = 0; i < chips.size(); ++i) {
      const auto p = pick(chips[i], def.key, prefer_source);
      if (!p) {
        row.cells.emplace_back();
        continue;
      }
      CompareCell cell;
      cell.value = as_number(p->value);
      cell.shown = display(p->value, k->unit, *p->prov);
      cell.source = p->prov->label();
      cell.kind = p->prov->kind;
      cell.alternative = p->is_alternative;
      if (i == 0) base = cell.value;
      if (base && *base != 0) cell.ratio = cell.value / *base;
      if (p->is_alternative) {
        c.notes.push_back(fmt::format("{} {}: {} as {} gives it; the primary value is {} ({}).",
                                      chips[i].meta.name, def.label, cell.shown, cell.source,
                                      display_value(chips[i], def.key),
                                      chips[i].fields.at(def.key).prov.label()));
      }
      row.cells.push_back(std::move(cell));
    }
    bool any = false;
    for (const auto& cell : row.cells) any = any || cell.has_value();
    if (any) c.rows.push_back(std::move(row));
  }
  return c;
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows) {
    nlohmann::json cells = nlohmann::json::array();
    for (size_t i = 0; i < r.cells.size(); ++i) {
      if (!r.cells[i]) {
        cells.push_back({{"chip", c.chips[i]}, {"value", nullptr}});
        continue;
      }
      const CompareCell& x = *r.cells[i];
      nlohmann::json j{{"chip", c.chips[i]},
                       {"value", x.value},
                       {"shown", x.shown},
                       {"source", x.source},
                       {"kind", std::string(kind_name(x.kind))},
                       {"alternative", x.alternative}};
      j["ratio"] = x.ratio ? nlohmann::json(*x.ratio) : nlohmann::json(nullptr);
      j["ratio_one_decimal"] = x.ratio ? nlohmann::json(ratio_one_decimal(*x.ratio)) : nullptr;
      cells.push_back(std::move(j));
    }
    rows.push_back({{"id", r.id},
                    {"label", r.label},
                    {"key", r.key},
                    {"seed_summary", r.seed_summary},
                    {"cells", std::move(cells)}});
  }
  return {{"baseline", c.chips.empty() ? "" : c.chips[0]},
          {"chips", c.chips},
          {"titles", c.titles},
          {"status", c.status},
          {"rows", std::move(rows)},
          {"notes", c.notes}};
}

nlohmann::json compare_json(const std::vector<std::string>& names) {
  std::vector<ChipSpec> chips;
  for (const auto& n : names) chips.push_back(load_chip(n));
  return comparison_json(compare(chips));
}

std::string format_compare(const std::vector<std::string>& names) {
  std::vector<ChipSpec> chips;
  for (const auto& n : names) chips.push_back(load_chip(n));
  return format_comparison(compare(chips));
}

}  // namespace trnsim::arch
