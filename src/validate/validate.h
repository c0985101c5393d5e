// Calibration against published hardware measurements (docs/VALIDATION.md in ../shared): each
// target runs trnsim on the measured setup and returns one record per case, with the published
// figure, the simulated one and the relative error. `trnsim validate` prints them; later layers
// add their targets to the list in targets.cc (one file per target: target_<name>.cc).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trnsim::validate {

struct Record {
  std::string target;       // "matmul-tutorial"
  std::string case_name;    // "fully_optimized"
  std::string unit;         // "ms", "ns", "us"
  double measured = 0;      // the published figure, in `unit`
  double simulated = 0;     // trnsim's figure, in `unit`
  double tolerance = 0.15;  // the target's acceptance band, as a fraction of `measured`
  std::string source;       // where the published figure comes from ("VALIDATION.md s2")
  std::string note;         // setup details (chip, shape, dtype)
  // The spec parameters this figure calibrated ("core.dma.core_bandwidth_gbps (trn1)"); empty
  // when nothing was fitted on it, so that it checks the model.
  std::string fitted;

  double error() const;  // (simulated - measured) / measured
  bool within() const;   // |error()| <= tolerance
};

struct Target {
  std::string name;
  std::string doc;
  std::function<std::vector<Record>()> run;
};

// Every target, in the order `trnsim validate` runs them: the built-in ones (targets.cc), then
// the added ones.
std::vector<Target> targets();
// Adds a target after the built-in ones (the Python package adds those that run NKI kernels);
// one of the same name replaces it. clear_added_targets() drops them (before the interpreter
// that holds their functions ends).
void add_target(Target t);
void clear_added_targets();

// Runs the named targets (all of them when `names` is empty). Throws InputError naming an
// unknown target and listing the known ones.
std::vector<Record> run_targets(const std::vector<std::string>& names);

// One line per record (target, case, published, simulated, error, band, fitted or checked),
// then the counts of checked and of fitted cases within their band.
std::string format_records(const std::vector<Record>& records);
// A list of objects with target, case, measured, simulated, unit, error, tolerance, within,
// source, note and fitted.
nlohmann::json records_json(const std::vector<Record>& records);

}  // namespace trnsim::validate
