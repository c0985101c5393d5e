#include "fabric/keyed_rows.h"

#include <algorithm>

namespace trnsim::fabric {

std::vector<std::string> list_toml_stems(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".toml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace trnsim::fabric
