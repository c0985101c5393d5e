// Generation-over-generation comparison, as seed 000's summary table ("総合性能向上率まとめ"):
// FP8, BF16, HBM capacity, HBM bandwidth, chip interconnect and NeuronCores relative to the
// first chip, followed by further published figures. Values are the chips' published figures;
// where a primary value does not cite seed 000 but an alternative does, the alternative is shown
// (and a note says so), so the seed's own ratios follow from the data.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "arch/chip_spec.h"

namespace trnsim::arch {

struct CompareCell {
  double value = 0;
  std::string shown;            // value for people, with unit
  std::optional<double> ratio;  // value / first chip's value
  std::string source;           // provenance label
  ProvenanceKind kind = ProvenanceKind::kSource;
  bool alternative = false;  // an alternative value was shown instead of the primary
};

struct CompareRow {
  std::string id;                                 // "fp8", "hbm_bandwidth", ...
  std::string label;                              // "FP8 TFLOPS"
  std::string key;                                // spec key the values come from
  bool seed_summary = false;                      // one of seed 000's six summary rows
  std::vector<std::optional<CompareCell>> cells;  // one per chip; nullopt when not published
};

struct Comparison {
  std::vector<std::string> chips;  // names
  std::vector<std::string> titles;
  std::vector<std::string> status;  // "shipped", "projected", ...
  std::vector<CompareRow> rows;
  std::vector<std::string> notes;  // which alternatives and assumptions the table shows
};

inline constexpr const char* kSeedSummarySource = "seed000";

Comparison compare(const std::vector<ChipSpec>& chips,
                   const std::string& prefer_source = kSeedSummarySource);

// The ratio as the seed prints it: one decimal.
double ratio_one_decimal(double ratio);

nlohmann::json comparison_json(const Comparison& c);
std::string format_comparison(const Comparison& c);

}  // namespace trnsim::arch
