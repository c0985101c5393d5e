#include "validate/validate.h"

#include <fmt/format.h>

#include <cmath>

#include "base/error.h"

namespace trnsim::validate {

double Record::error() const { return measured == 0 ? 0.0 : (simulated - measured) / measured; }

bool Record::within() const { return std::abs(error()) <= tolerance; }

std::vector<Record> run_targets(const std::vector<std::string>& names) {
  std::vector<const Target*> chosen;
  for (const std::string& n : names) {
    const Target* hit = nullptr;
    for (const Target& t : targets())
      if (t.name == n) hit = &t;
    if (hit == nullptr) {
      std::string known;
      for (const Target& t : targets())
        known += fmt::format("{}{}", known.empty() ? "" : ", ", t.name);
      throw InputError("validate", n, "no such target; known: " + known);
    }
    chosen.push_back(hit);
  }
  if (names.empty())
    for (const Target& t : targets()) chosen.push_back(&t);
  std::vector<Record> out;
  for (const Target* t : chosen) {
    std::vector<Record> r = t->run();
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

std::string format_records(const std::vector<Record>& records) {
  std::string s = fmt::format("{:<18} {:<24} {:>14} {:>14} {:>5} {:>9} {:>7}  {}\n", "target",
                              "case", "published", "simulated", "unit", "error", "band", "");
  size_t ok = 0;
  for (const Record& r : records) {
    ok += r.within() ? 1 : 0;
    s += fmt::format("{:<18} {:<24} {:>14.4g} {:>14.4g} {:>5} {:>+8.1f}% {:>6.0f}%  {}\n", r.target,
                     r.case_name, r.measured, r.simulated, r.unit, 100.0 * r.error(),
                     100.0 * r.tolerance, r.within() ? "ok" : "OUTSIDE");
  }
  s += fmt::format("{} of {} cases within their band\n", ok, records.size());
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
                 {"note", r.note}});
  return j;
}

}  // namespace trnsim::validate
