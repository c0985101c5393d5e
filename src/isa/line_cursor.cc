#include "isa/line_cursor.h"

#include <cctype>

namespace trnsim::isa {

namespace {
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
}  // namespace

void LineCursor::skip_ws() {
  while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
}

bool LineCursor::at_end() {
  skip_ws();
  return pos_ >= s_.size() || s_[pos_] == '#';
}

char LineCursor::peek() {
  skip_ws();
  return pos_ < s_.size() ? s_[pos_] : '\0';
}

bool LineCursor::eat(char c) {
  if (peek() != c) return false;
  ++pos_;
  return true;
}

bool LineCursor::eat(std::string_view s) {
  skip_ws();
  if (s_.substr(pos_).starts_with(s)) {
    pos_ += s.size();
    return true;
  }
  return false;
}

void LineCursor::expect(char c, std::string_view context) {
  if (!eat(c)) fail(next_token(), std::string("expected '") + c + "' " + std::string(context));
}

std::string_view LineCursor::identifier() {
  skip_ws();
  if (pos_ >= s_.size() || !is_ident_start(s_[pos_])) return {};
  const size_t b = pos_;
  while (pos_ < s_.size() && is_ident(s_[pos_])) ++pos_;
  return s_.substr(b, pos_ - b);
}

std::string_view LineCursor::word() {
  skip_ws();
  const size_t b = pos_;
  while (pos_ < s_.size() && !is_space(s_[pos_]) && s_[pos_] != ',' && s_[pos_] != '#') ++pos_;
  return s_.substr(b, pos_ - b);
}

std::string_view LineCursor::integer_text() {
  skip_ws();
  const size_t b = pos_;
  if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
  while (pos_ < s_.size() && is_ident(s_[pos_])) ++pos_;
  return s_.substr(b, pos_ - b);
}

std::string LineCursor::quoted() {
  skip_ws();
  if (pos_ >= s_.size() || s_[pos_] != '"') fail(next_token(), "expected a quoted string");
  std::string out;
  for (++pos_; pos_ < s_.size(); ++pos_) {
    char c = s_[pos_];
    if (c == '"') {
      ++pos_;
      return out;
    }
    if (c == '\\' && pos_ + 1 < s_.size()) {
      c = s_[++pos_];
      if (c == 'n') c = '\n';
    }
    out += c;
  }
  fail("\"", "unterminated string");
}

std::string LineCursor::next_token() {
  skip_ws();
  if (pos_ >= s_.size()) return "<end of line>";
  size_t e = pos_;
  while (e < s_.size() && !is_space(s_[e])) ++e;
  return std::string(s_.substr(pos_, e - pos_));
}

}  // namespace trnsim::isa
