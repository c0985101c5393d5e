#include "arch/sources.h"

#include <algorithm>

#include "arch/provenance.h"

namespace trnsim::arch {

const std::vector<std::string>& known_source_keys() {
  static const std::vector<std::string> keys = {
      // docs/HARDWARE.md section 0
      "HW-T1", "HW-T2", "HW-T3", "HW-NC2", "HW-NC3", "HW-NC4", "HW-I1", "HW-I2", "HW-I3", "AG2",
      "AG3", "AG4", "PG", "ISA", "ISA-OLD", "SHARED", "DT", "RM", "LNC", "NKI-LNC", "DMA-OV",
      "DMA-BW", "DGE", "MX", "COLL", "INTRA", "INTER", "NCCOM", "NRT", "BENCH", "TUT", "SIM", "DRV",
      "NXD-FP8", "KLR", "ERR", "T4",
      // seed documents and project docs
      "seed000", "seed001", "seed002", "VALIDATION s1"};
  return keys;
}

std::string first_unknown_source(std::string_view text) {
  Provenance p;
  p.kind = ProvenanceKind::kSource;
  p.text = std::string(text);
  const auto parts = p.sources();
  if (parts.empty()) return "(empty)";
  const auto& known = known_source_keys();
  for (const auto& s : parts) {
    if (std::find(known.begin(), known.end(), s) != known.end()) continue;
    if (s.rfind("https://", 0) == 0 || s.rfind("http://", 0) == 0) continue;
    // "HARDWARE.md s7": the fact sheet itself, by section.
    if (s.rfind("HARDWARE.md s", 0) == 0 && s.size() > 13) continue;
    return s;
  }
  return "";
}

}  // namespace trnsim::arch
