#include "arch/provenance.h"

#include <algorithm>

namespace trnsim::arch {

std::string_view kind_name(ProvenanceKind k) {
  switch (k) {
    case ProvenanceKind::kSource:
      return "source";
    case ProvenanceKind::kAssumption:
      return "assumption";
    case ProvenanceKind::kDerivation:
      return "derivation";
    case ProvenanceKind::kOverride:
      return "override";
  }
  return "?";
}

std::vector<std::string> Provenance::sources() const {
  std::vector<std::string> out;
  if (kind != ProvenanceKind::kSource) return out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string_view part(text.data() + pos, comma - pos);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (!part.empty()) out.emplace_back(part);
    pos = comma + 1;
  }
  return out;
}

bool Provenance::cites(std::string_view source_key) const {
  const auto s = sources();
  return std::find(s.begin(), s.end(), source_key) != s.end();
}

std::string Provenance::label() const {
  std::string out;
  switch (kind) {
    case ProvenanceKind::kSource: {
      // URLs are too long for a table cell; the JSON dump keeps them whole.
      for (const auto& s : sources()) {
        if (!out.empty()) out += ", ";
        out += s.rfind("https://", 0) == 0 ? std::string("web") : s;
      }
      break;
    }
    case ProvenanceKind::kAssumption:
      out = "assume";
      break;
    case ProvenanceKind::kDerivation:
      out = "derived";
      break;
    case ProvenanceKind::kOverride:
      out = "override";
      break;
  }
  if (!inherited_from.empty()) out += " via " + inherited_from;
  return out;
}

nlohmann::json Provenance::to_json() const {
  nlohmann::json j;
  j["kind"] = std::string(kind_name(kind));
  if (!text.empty()) j["text"] = text;
  if (kind == ProvenanceKind::kSource) j["sources"] = sources();
  j["where"] = where;
  if (!note.empty()) j["note"] = note;
  if (!as_published.empty()) j["as_published"] = as_published;
  if (!inherited_from.empty()) j["inherited_from"] = inherited_from;
  return j;
}

}  // namespace trnsim::arch
