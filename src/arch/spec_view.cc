#include "arch/spec_view.h"

#include <fmt/format.h>

#include "arch/number_format.h"
#include "arch/schema.h"

namespace trnsim::arch {

std::string display(const Value& v, std::string_view unit, const Provenance& prov) {
  if (!prov.as_published.empty()) return prov.as_published;
  if (!is_number(v)) return to_string(v);
  const double x = as_number(v);
  if (unit == "GB/s") return format_bandwidth(x);
  if (unit == "GiB") return format_gib(x);
  if (unit.empty()) return format_number(x, 2);
  return fmt::format("{} {}", format_number(x, 2), unit);
}

std::string display_value(const ChipSpec& spec, std::string_view key) {
  const KeyInfo* k = schema().find(key);
  const auto rec = spec.fields.find(key);
  if (k == nullptr || rec == spec.fields.end()) return "-";
  const auto v = k->get(spec);
  return v ? display(*v, k->unit, rec->second.prov) : "-";
}

std::string alternatives_text(const ChipSpec& spec, std::string_view key) {
  const KeyInfo* k = schema().find(key);
  const auto rec = spec.fields.find(key);
  if (k == nullptr || rec == spec.fields.end() || rec->second.alts.empty()) return "";
  std::string out = "also ";
  for (size_t i = 0; i < rec->second.alts.size(); ++i) {
    const Alternative& a = rec->second.alts[i];
    if (i > 0) out += "; ";
    out += fmt::format("{} ({})", display(a.value, k->unit, a.prov), a.prov.label());
  }
  return out;
}

std::optional<Picked> pick(const ChipSpec& spec, std::string_view key,
                           std::string_view prefer_source) {
  const KeyInfo* k = schema().find(key);
  const auto rec = spec.fields.find(key);
  if (k == nullptr || rec == spec.fields.end()) return std::nullopt;
  const auto v = k->get(spec);
  if (!v) return std::nullopt;
  if (!prefer_source.empty() && !rec->second.prov.cites(prefer_source)) {
    for (const auto& a : rec->second.alts) {
      if (a.prov.cites(prefer_source)) return Picked{a.value, &a.prov, true};
    }
  }
  return Picked{*v, &rec->second.prov, false};
}

}  // namespace trnsim::arch
