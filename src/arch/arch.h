// The arch layer's public API: load a Trainium generation (or a what-if chip) from its data file,
// with command-line overrides, and present it. The CLI (src/cli/cmd_spec.cc) and the Python
// bindings (src/bindings/) call only these functions; keep their signatures stable.
//
// Every function throws trnsim::InputError naming the file, line and dotted key (or `--set`) of
// a bad input; none exits.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "arch/chip_spec.h"

namespace trnsim::arch {

// One `--set key=value`. The value is parsed per the key's schema type: TOML syntax
// (3.0, 16, true, [128, 64]); strings may be written bare (numerics.overflow=saturate).
struct Override {
  std::string key;
  std::string value;
};
Override parse_override(std::string_view key_equals_value);

// Where chip names resolve: $TRNSIM_SPEC_DIR if set, else the source tree's spec/ directory.
// Chips are <spec_dir>/chips/<name>.toml.
std::filesystem::path spec_dir();

// Names of the chips in the spec directory, sorted ("trn1", "trn2", ...).
std::vector<std::string> list_chips();

// A chip by name ("trn2") or by path (contains '/' or ends in ".toml"), with its `inherits`
// chain applied, then `overrides` in order.
ChipSpec load_chip(std::string_view name_or_path, const std::vector<Override>& overrides = {});

// Applies one override to a loaded chip (provenance: override at "--set").
void apply_override(ChipSpec& spec, const Override& o);

// The full resolved spec: meta, typed values, per-key provenance and alternatives, and the
// derived figures next to the published ones they correspond to.
nlohmann::json chip_to_json(const ChipSpec& spec);

// Generation-over-generation ratios (seed 000's summary table) of the named chips, relative to
// the first, with absolute values and their sources.
nlohmann::json compare_json(const std::vector<std::string>& names);

// Every schema key with type, unit, range, required flag and help.
nlohmann::json schema_json();

// Human-readable, aligned text: `trnsim spec NAME`, `--compare`, `--keys`.
std::string format_spec(const ChipSpec& spec);
std::string format_compare(const std::vector<std::string>& names);
std::string format_keys();

}  // namespace trnsim::arch
