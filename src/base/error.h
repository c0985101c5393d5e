// Error types shared by every layer. Three kinds of failure, none of them exit():
//  - InputError: a bad input (config, spec file, program, kernel argument). The message names
//    where: file, line and key, or the instruction.
//  - (later layers) simulated hardware faults are typed diagnostics, not exceptions.
//  - InternalError: a broken invariant of the simulator itself (TRNSIM_ASSERT).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace trnsim {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad input. `where` is "file:line" (or a path such as "--set"), `key` the dotted key or
// argument name; either may be empty. what() is the full message "where: key: detail".
class InputError : public Error {
 public:
  InputError(std::string where, std::string key, std::string detail);
  explicit InputError(std::string detail) : InputError("", "", std::move(detail)) {}

  const std::string& where() const noexcept { return where_; }
  const std::string& key() const noexcept { return key_; }
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string where_, key_, detail_;
};

class InternalError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void assertion_failed(const char* expr, const char* file, int line);

}  // namespace trnsim

// Invariant of the simulator (not of user input): throws InternalError with file and line.
#define TRNSIM_ASSERT(cond) \
  ((cond) ? static_cast<void>(0) : ::trnsim::assertion_failed(#cond, __FILE__, __LINE__))
