// Helpers the graph tests share: the InputError a call throws (a test failure when it throws
// nothing or something else), and substring search in messages.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "base/error.h"

namespace trnsim::graph {

template <class F>
InputError input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected an InputError, got: " << e.what();
    return InputError("?");
  }
  ADD_FAILURE() << "expected an InputError, nothing was thrown";
  return InputError("?");
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace trnsim::graph
