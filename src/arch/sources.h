// The source keys a data file may cite in `src = "..."`: the keys of docs/HARDWARE.md section 0,
// the seed documents, "HARDWARE.md sN" (a fact-sheet figure without a named primary source),
// "VALIDATION s1", or a URL. Checking them catches a typo that would otherwise cite nothing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trnsim::arch {

const std::vector<std::string>& known_source_keys();

// Empty when every comma-separated part of `text` is a known key or a URL, else the first
// unknown part.
std::string first_unknown_source(std::string_view text);

}  // namespace trnsim::arch
