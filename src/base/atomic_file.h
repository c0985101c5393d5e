// Output files appear whole or not at all: written to a temporary file beside the target, then
// renamed over it (rename is atomic within a file system), so Ctrl-C, SIGTERM or a full disk
// during the write leaves the previous file intact, never a truncated one.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string_view>

namespace trnsim {

// Calls `write` with a stream on "<path>.tmp-<pid>", then renames it to `path`. Throws
// InputError naming `path` and `what` (the option or purpose, e.g. "--trace") when the file
// cannot be created, written or renamed; the temporary file is removed on every failure,
// including an exception from `write`.
void write_file_atomically(const std::filesystem::path& path, std::string_view what,
                           const std::function<void(std::ostream&)>& write);

}  // namespace trnsim
