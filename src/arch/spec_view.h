// Reading a loaded chip for presentation: a key's value as a table cell, its alternatives, and
// the choice between a primary value and an alternative that a report prefers.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "arch/chip_spec.h"

namespace trnsim::arch {

// A value with its unit for people: as published when the data file stated it in another unit
// ("820 GiB/s"), else in the key's unit ("2.9 TB/s", "1,299 TFLOPS", "16"). "-" when unset.
std::string display_value(const ChipSpec& spec, std::string_view key);
std::string display(const Value& v, std::string_view unit, const Provenance& prov);

// "also 3 TB/s (AG3); 20 (AG4)", or "" without alternatives.
std::string alternatives_text(const ChipSpec& spec, std::string_view key);

struct Picked {
  Value value;
  const Provenance* prov = nullptr;
  bool is_alternative = false;
};

// The key's value, or, when the primary value does not cite `prefer_source` and an alternative
// does, that alternative (how `--compare` reproduces seed 000's table: its Trn1 HBM bandwidth is
// 0.8 TB/s, not HW-T1's 820 GiB/s). nullopt when the key holds no value.
std::optional<Picked> pick(const ChipSpec& spec, std::string_view key,
                           std::string_view prefer_source = "");

}  // namespace trnsim::arch
