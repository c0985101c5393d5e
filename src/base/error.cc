#include "base/error.h"

#include <fmt/format.h>

namespace trnsim {

namespace {
std::string compose(const std::string& where, const std::string& key, const std::string& detail) {
  std::string msg;
  if (!where.empty()) msg += where + ": ";
  if (!key.empty()) msg += "'" + key + "': ";
  return msg + detail;
}
}  // namespace

InputError::InputError(std::string where, std::string key, std::string detail)
    : Error(compose(where, key, detail)),
      where_(std::move(where)),
      key_(std::move(key)),
      detail_(std::move(detail)) {}

void assertion_failed(const char* expr, const char* file, int line) {
  throw InternalError(fmt::format("internal error: assertion '{}' failed at {}:{}", expr, file, line));
}

}  // namespace trnsim
