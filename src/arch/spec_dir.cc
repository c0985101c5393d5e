// Finding chip data files by name or path.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "arch/arch.h"
#include "arch/spec_files.h"
#include "base/error.h"

namespace trnsim::arch {

std::filesystem::path spec_dir() {
  // Installed copies (the Python wheel) point here; a build uses its own source tree.
  if (const char* env = std::getenv("TRNSIM_SPEC_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return TRNSIM_SPEC_SOURCE_DIR;
}

std::vector<std::string> list_chips() {
  std::vector<std::string> out;
  const auto dir = spec_dir() / "chips";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".toml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool names_a_path(std::string_view name_or_path) {
  return name_or_path.find('/') != std::string_view::npos ||
         (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".toml");
}

std::filesystem::path resolve_chip(std::string_view name_or_path,
                                   const std::filesystem::path& relative_to) {
  const std::string name(name_or_path);
  if (names_a_path(name)) {
    std::filesystem::path p(name);
    if (p.is_relative() && !relative_to.empty()) p = relative_to / p;
    // The error_code overloads: a name too long for the file system is no such file, not a
    // std::filesystem::filesystem_error.
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec)) {
      throw InputError("", name, fmt::format("no such chip file: {}", p.string()));
    }
    return p;
  }
  const auto p = spec_dir() / "chips" / (name + ".toml");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) {
    throw InputError("", name,
                     fmt::format("no chip named '{}' in {} (known: {})", name,
                                 (spec_dir() / "chips").string(), fmt::join(list_chips(), ", ")));
  }
  return p;
}

}  // namespace trnsim::arch
