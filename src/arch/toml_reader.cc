#include "arch/toml_reader.h"

#include <fmt/format.h>

// toml++ 3.3 asserts that a table header's key starts with a key character before it reports
// the syntax error itself (`[!x]`): in builds without NDEBUG (Debug, sanitizers) that assertion
// aborted on bad input. Its assertions are off here, as in Release; the parser's errors stay.
#define TOML_ASSERT(expr) static_cast<void>(0)
#include <toml++/toml.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "base/error.h"

namespace trnsim::arch {

std::string_view raw_kind_name(RawNode::Kind k) {
  switch (k) {
    case RawNode::Kind::kTable:
      return "table";
    case RawNode::Kind::kArray:
      return "array";
    case RawNode::Kind::kBool:
      return "bool";
    case RawNode::Kind::kInt:
      return "integer";
    case RawNode::Kind::kFloat:
      return "float";
    case RawNode::Kind::kString:
      return "string";
    case RawNode::Kind::kOther:
      return "date/time";
  }
  return "?";
}

namespace {

RawNode convert(const toml::node& n, std::string key) {
  RawNode r;
  r.key = std::move(key);
  r.line = static_cast<int>(n.source().begin.line);
  r.column = static_cast<int>(n.source().begin.column);
  if (const auto* t = n.as_table()) {
    r.kind = RawNode::Kind::kTable;
    for (const auto& [k, v] : *t) r.children.push_back(convert(v, std::string(k.str())));
  } else if (const auto* a = n.as_array()) {
    r.kind = RawNode::Kind::kArray;
    for (const auto& v : *a) r.children.push_back(convert(v, ""));
  } else if (const auto* b = n.as_boolean()) {
    r.kind = RawNode::Kind::kBool;
    r.b = b->get();
  } else if (const auto* i = n.as_integer()) {
    r.kind = RawNode::Kind::kInt;
    r.i = i->get();
  } else if (const auto* f = n.as_floating_point()) {
    r.kind = RawNode::Kind::kFloat;
    r.d = f->get();
  } else if (const auto* s = n.as_string()) {
    r.kind = RawNode::Kind::kString;
    r.s = s->get();
  } else {
    r.kind = RawNode::Kind::kOther;
  }
  return r;
}

// toml++ 3.3.0 (Debian bookworm's) reaches __builtin_unreachable() when it tests some
// non-ASCII code points for whitespace (impl::is_non_ascii_horizontal_whitespace; upstream
// marzer/tomlplusplus#295, fixed after 3.3.0): undefined behaviour on user input. Those code
// points are refused before the parser sees them (docs/reliability.md, fuzz/open/README.md).
// Returns the line (1-based) and code point of the first, or line 0.
std::pair<int, uint32_t> tomlpp_unsafe_code_point(std::string_view s) {
  int line = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') ++line;
    uint32_t cp = 0;
    if (c >= 0xC0 && c < 0xE0 && i + 1 < s.size()) {
      cp = (c & 0x1Fu) << 6 | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
    } else if (c >= 0xE0 && c < 0xF0 && i + 2 < s.size()) {
      cp = (c & 0x0Fu) << 12 | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6 |
           (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
    } else {
      continue;
    }
    if ((cp >= 0xA1 && cp <= 0x499) || (cp >= 0x2C5E && cp <= 0x3057 && cp != 0x3000) ||
        (cp >= 0xFB26 && cp <= 0xFEFE))
      return {line, cp};
  }
  return {0, 0};
}

std::string unsafe_text(uint32_t cp) {
  return fmt::format(
      "character U+{:04X}: this build's TOML parser (toml++ 3.3.0) mishandles U+00A1..U+0499, "
      "U+2C5E..U+3057 and U+FB26..U+FEFE (a known bug); write the text in ASCII",
      cp);
}

}  // namespace

RawNode read_toml_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), "", "cannot open the file");
  std::stringstream text;
  text << in.rdbuf();
  if (const auto [line, cp] = tomlpp_unsafe_code_point(text.str()); line > 0)
    throw InputError(fmt::format("{}:{}", path.string(), line), "", unsafe_text(cp));
  try {
    const toml::table t = toml::parse(text.str(), path.string());
    RawNode root = convert(t, "");
    root.line = 1;
    return root;
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw InputError(fmt::format("{}:{}", path.string(), b.line), "",
                     fmt::format("TOML syntax error at column {}: {}", b.column, e.description()));
  }
}

RawNode parse_toml_value(std::string_view text, std::string_view where, std::string_view key) {
  if (const auto [line, cp] = tomlpp_unsafe_code_point(text); line > 0)
    throw InputError(std::string(where), std::string(key), unsafe_text(cp));
  try {
    const toml::table t = toml::parse(fmt::format("v = {}", text));
    const toml::node* v = t.get("v");
    if (v == nullptr || t.size() != 1) {
      throw InputError(std::string(where), std::string(key),
                       fmt::format("'{}' is not a single value", text));
    }
    RawNode r = convert(*v, "");
    r.line = 0;
    r.column = 0;
    return r;
  } catch (const toml::parse_error& e) {
    throw InputError(std::string(where), std::string(key),
                     fmt::format("'{}' is not a value: {}", text, e.description()));
  }
}

}  // namespace trnsim::arch
