// Shared by the fuzz targets (docs/fuzzing.md). A target feeds one input to a parsing surface;
// a bad input must come back as trnsim::InputError (or a diagnostic, or an exit code). Anything
// else escaping is a finding, and the target abort()s so that libFuzzer (or the replay driver,
// in the ordinary test suites) records it.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace trnsim::fuzz {

[[noreturn]] inline void finding(std::string_view surface, std::string_view what,
                                 std::string_view message) {
  std::fprintf(stderr, "\n== fuzz finding in %.*s: %.*s\n%.*s\n", static_cast<int>(surface.size()),
               surface.data(), static_cast<int>(what.size()), what.data(),
               static_cast<int>(message.size()), message.data());
  std::abort();
}

// Runs `body`; InputError is the clean rejection of a bad input, everything else is a finding.
template <class F>
void expect_clean(std::string_view surface, F&& body) {
  try {
    body();
  } catch (const InputError&) {
  } catch (const InternalError& e) {
    finding(surface, "InternalError (TRNSIM_ASSERT)", e.what());
  } catch (const std::exception& e) {
    finding(surface, "unexpected exception", e.what());
  } catch (...) {
    finding(surface, "unexpected exception", "(not a std::exception)");
  }
}

// A folder of this process's own for the files a path-only API needs; removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    // /dev/shm keeps the per-input file writes off the disk.
    std::filesystem::path base = "/dev/shm";
    std::error_code ec;
    if (!std::filesystem::is_directory(base, ec)) base = std::filesystem::temp_directory_path();
    auto d = base / ("trnsim-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    static const struct Cleanup {
      std::filesystem::path p;
      ~Cleanup() {
        std::error_code e;
        std::filesystem::remove_all(p, e);
      }
    } cleanup{d};
    return d;
  }();
  return dir;
}

// Writes `content` to scratch_dir()/name and returns the path.
inline std::filesystem::path scratch_file(std::string_view name, std::string_view content) {
  const auto p = scratch_dir() / std::string(name);
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!f) finding("harness", "cannot write", p.string());
  return p;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits on `sep`; every piece is kept, empty ones too.
inline std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

}  // namespace trnsim::fuzz
