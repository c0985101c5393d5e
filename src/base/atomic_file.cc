#include "base/atomic_file.h"

#include <unistd.h>

#include <fstream>
#include <string>
#include <system_error>

#include "base/error.h"

namespace trnsim {

void write_file_atomically(const std::filesystem::path& path, std::string_view what,
                           const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  const std::string where = path.string();
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw InputError(where, std::string(what), "is a directory; expected a file name");
  fs::path tmp = path;
  tmp += ".tmp-" + std::to_string(static_cast<long>(getpid()));
  struct Cleanup {  // removes the temporary file unless it was renamed
    fs::path p;
    bool armed = true;
    ~Cleanup() {
      std::error_code ignore;
      if (armed) fs::remove(p, ignore);
    }
  } cleanup{tmp};
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw InputError(where, std::string(what), "cannot open the file for writing");
    write(f);
    f.flush();
    if (!f) throw InputError(where, std::string(what), "writing the file failed (disk full?)");
  }
  fs::rename(tmp, path, ec);
  if (ec) throw InputError(where, std::string(what), "cannot replace the file: " + ec.message());
  cleanup.armed = false;
}

}  // namespace trnsim
