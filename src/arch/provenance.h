// Where each spec value comes from. Every key of a loaded chip carries one FieldRecord, so a
// report can say "2.9 TB/s (HW-T2; AG3 says 3 TB/s)" and a reader can tell a published figure
// from an assumption, a derivation or a what-if override.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "arch/value.h"

namespace trnsim::arch {

enum class ProvenanceKind : uint8_t {
  kSource,      // a published source: `src = "AG3"` (keys of docs/HARDWARE.md s0, seeds, URLs)
  kAssumption,  // nothing public gives it: `assume = "why"`
  kDerivation,  // a documented derivation from published figures: `derived = "how"`
  kOverride,    // a what-if value: a bare value in a what-if file, or `--set key=value`
};

std::string_view kind_name(ProvenanceKind k);  // "source", "assumption", "derivation", "override"

struct Provenance {
  ProvenanceKind kind = ProvenanceKind::kOverride;
  std::string text;            // the source keys, the assumption's reason or the derivation
  std::string where;           // "path/trn2.toml:41" or "--set"
  std::string note;            // optional context from the data file (`note = "..."`)
  std::string as_published;    // the figure in its published unit ("820 GiB/s"); may be empty
  std::string inherited_from;  // chip whose file set the value, when it is not the loaded one

  // The source keys of a kSource provenance ("HW-T2, seed000" -> {"HW-T2", "seed000"}).
  std::vector<std::string> sources() const;
  bool cites(std::string_view source_key) const;
  // Short label for tables: "HW-T2", "assume", "derived", "override", plus " via trn3".
  std::string label() const;
  nlohmann::json to_json() const;
};

// Another published value of the same key where sources disagree (HARDWARE.md s10).
struct Alternative {
  Value value;
  Provenance prov;
};

struct FieldRecord {
  Provenance prov;
  std::vector<Alternative> alts;
};

// Keyed by dotted schema key; present exactly for the keys that hold a value.
using FieldRecords = std::map<std::string, FieldRecord, std::less<>>;

}  // namespace trnsim::arch
