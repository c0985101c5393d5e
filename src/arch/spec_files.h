// Internal to the loader: file resolution shared by load_chip and `inherits`.
#pragma once

#include <filesystem>
#include <string_view>

namespace trnsim::arch {

// True when a chip argument is a path (contains '/' or ends in ".toml") rather than a name.
bool names_a_path(std::string_view name_or_path);

// The data file of a chip name (in spec_dir()/chips) or path (relative paths against
// `relative_to` when given). Throws InputError("", name, ...) listing the known chips.
std::filesystem::path resolve_chip(std::string_view name_or_path,
                                   const std::filesystem::path& relative_to = {});

}  // namespace trnsim::arch
