#include "validate/validate.h"

#include <fmt/format.h>

#include <cmath>

#include "base/error.h"

namespace trnsim::validate {

double Record::error() const { return measured == 0 ? 0.0 : (simulated - measured) / measured; }

bool Record::within() const { return std::abs(error()) <= tolerance; }

std::vector<Record> run_targets(const std::vector<std::string>& names) {
  const std::vector<Target> all = targets();
  std::vector<const Target*> chosen;
  for (const std::string& n : names) {
    const Target* hit = nullptr;
    for (const Target& t : all)
      if (t.name == n) hit = &t;
    if (hit == nullptr) {
      std::string known;
      for (const Target& t : all) known += fmt::format("{}{}", known.empty() ? "" : ", ", t.name);
      throw InputError("validate", n, "no such target; known: " + known);
    }
    chosen.push_back(hit);
  }
  if (names.empty())
    for (const Target& t : all) chosen.push_back(&t);
  std::vector<Record> out;
  for (const Target* t : chosen) {
    std::vector<Record> r = t->run();
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

std::string format_records(const std::vector<Record>& records) {
  std::string s =
      fmt::format("{:<18} {:<24} {:>14} {:>14} {:>5} {:>9} {:>7}  {:<7}  {}\n", "target", "case",
                  "published", "simulated", "unit", "error", "band", "role", "");
  size_t checked = 0, checked_ok = 0, fitted_ok = 0;
  double checked_abs = 0;
  for (const Record& r : records) {
    const bool fit = !r.fitted.empty();
    if (fit) {
      fitted_ok += r.within() ? 1 : 0;
    } else {
      ++checked;
      checked_ok += r.within() ? 1 : 0;
      checked_abs += std::abs(r.error());
    }
    s +=
        fmt::format("{:<18} {:<24} {:>14.4g} {:>14.4g} {:>5} {:>+8.1f}% {:>6.0f}%  {:<7}  {}\n",
                    r.target, r.case_name, r.measured, r.simulated, r.unit, 100.0 * r.error(),
                    100.0 * r.tolerance, fit ? "fitted" : "checked", r.within() ? "ok" : "OUTSIDE");
  }
  s += fmt::format("checked (nothing fitted on them): {} of {} within their band", checked_ok,
                   checked);
  if (checked > 0)
    s += fmt::format(", mean |error| {:.1f}%", 100.0 * checked_abs / static_cast<double>(checked));
  s += fmt::format("\nfitted (they set a parameter; see --json): {} of {} within their band\n",
                   fitted_ok, records.size() - checked);
  s += fmt::format("{} of {} cases within their band\n", checked_ok + fitted_ok, records.size());
  return s;
}

nlohmann::json records_json(const std::vector<Record>& records) {
  nlohmann::json j = nlohmann::json::array();
  for (const Record& r : records)
    j.push_back({{"target", r.target},
                 {"case", r.case_name},
                 {"measured", r.measured},
                 {"simulated", r.simulated},
                 {"unit", r.unit},
                 {"error", r.error()},
                 {"tolerance", r.tolerance},
                 {"within", r.within()},
                 {"source", r.source},
                 {"note", r.note},
                 {"fitted", r.fitted}});
  return j;
}

}  // namespace trnsim::validate
