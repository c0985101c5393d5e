// A cursor over one line of program text for the assembler's recursive-descent parser. Every
// error it raises is an InputError naming "file:line" and the offending token.
#pragma once

#include <string>
#include <string_view>

#include "base/error.h"

namespace trnsim::isa {

class LineCursor {
 public:
  LineCursor(std::string_view line, std::string where) : s_(line), where_(std::move(where)) {}

  const std::string& where() const { return where_; }
  size_t mark() const { return pos_; }
  void reset(size_t mark) { pos_ = mark; }
  void skip_ws();
  // True at the end of the line or at a '#' comment (after spaces).
  bool at_end();
  char peek();  // next non-space character, '\0' at the end
  bool eat(char c);
  bool eat(std::string_view s);
  void expect(char c, std::string_view context);
  // [A-Za-z_][A-Za-z0-9_]*; empty if none.
  std::string_view identifier();
  // Characters up to the next space, ',' or comment: a parameter value or a number.
  std::string_view word();
  // An optional sign and then [A-Za-z0-9_] (decimal or 0x hex integers); stops at ':' ',' ']'.
  std::string_view integer_text();
  // A double-quoted string with \" \\ \n escapes.
  std::string quoted();
  // The token at the cursor (for error messages), without consuming it.
  std::string next_token();

  [[noreturn]] void fail(std::string_view token, std::string detail) const {
    throw InputError(where_, std::string(token), std::move(detail));
  }
  // Rethrows an InputError of a helper (no where) with this line's position.
  template <typename F>
  auto with_where(F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const InputError& e) {
      if (!e.where().empty()) throw;
      throw InputError(where_, e.key(), e.detail());
    }
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  std::string where_;
};

}  // namespace trnsim::isa
