// TOML in, RawNode out. Syntax errors become InputError("file:line", "", "TOML syntax error ...")
// with toml++'s own line, column and description.
#pragma once

#include <filesystem>
#include <string_view>

#include "arch/raw_node.h"

namespace trnsim::arch {

// The whole file as a table. Throws InputError when it cannot be read or parsed.
RawNode read_toml_file(const std::filesystem::path& path);

// One TOML value written on the command line (`--set key=3.0`, `--set key=[128, 64]`).
// Throws InputError(where, key, ...) when `text` is not a TOML value.
RawNode parse_toml_value(std::string_view text, std::string_view where, std::string_view key);

}  // namespace trnsim::arch
