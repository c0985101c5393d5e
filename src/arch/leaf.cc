#include "arch/leaf.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "arch/number_format.h"
#include "arch/sources.h"
#include "arch/units.h"
#include "base/error.h"

namespace trnsim::arch {

namespace {

constexpr std::array<std::string_view, 7> kLeafFields = {"v",    "src",  "assume", "derived",
                                                         "note", "unit", "alt"};

[[noreturn]] void fail(const LeafContext& ctx, const RawNode& n, const std::string& key,
                       const std::string& detail) {
  throw InputError(where_of(ctx, n), key, detail);
}

std::string shown(const RawNode& n) {
  switch (n.kind) {
    case RawNode::Kind::kString:
      return fmt::format("{} \"{}\"", raw_kind_name(n.kind), n.s);
    case RawNode::Kind::kInt:
      return fmt::format("integer {}", n.i);
    case RawNode::Kind::kFloat:
      return fmt::format("float {}", n.d);
    case RawNode::Kind::kBool:
      return n.b ? "bool true" : "bool false";
    default:
      return std::string(raw_kind_name(n.kind));
  }
}

std::string expected(const KeyInfo& k) {
  return k.unit.empty() ? std::string(type_name(k.type))
                        : fmt::format("{} ({})", type_name(k.type), k.unit);
}

void check_range(const KeyInfo& k, double x, const LeafContext& ctx, const RawNode& n) {
  if (!std::isfinite(x) || x < k.min || x > k.max) {
    fail(ctx, n, k.key,
         fmt::format("out of range: {} is outside {}{}", x, k.constraint_text(),
                     k.unit.empty() ? "" : " " + k.unit));
  }
}

void check_choice(const KeyInfo& k, const std::string& s, const LeafContext& ctx,
                  const RawNode& n) {
  if (k.choices.empty()) return;
  if (std::find(k.choices.begin(), k.choices.end(), s) == k.choices.end()) {
    fail(ctx, n, k.key, fmt::format("'{}' is not one of: {}", s, k.constraint_text()));
  }
}

// A number from an integer or float node, scaled to the key's canonical unit.
double number(const KeyInfo& k, const RawNode& n, double factor, const LeafContext& ctx,
              bool integral) {
  double x = 0;
  if (n.kind == RawNode::Kind::kInt) {
    x = static_cast<double>(n.i) * factor;
  } else if (n.kind == RawNode::Kind::kFloat && !integral) {
    x = n.d * factor;
  } else {
    fail(ctx, n, k.key, fmt::format("wrong type: expected {}, got {}", expected(k), shown(n)));
  }
  if (integral && x != std::floor(x)) {
    fail(ctx, n, k.key, fmt::format("{} is not a whole number of {}", x, k.unit));
  }
  check_range(k, x, ctx, n);
  return x;
}

Value convert(const KeyInfo& k, const RawNode& n, double factor, const LeafContext& ctx) {
  auto wrong = [&] {
    fail(ctx, n, k.key, fmt::format("wrong type: expected {}, got {}", expected(k), shown(n)));
  };
  switch (k.type) {
    case ValueType::kBool:
      if (n.kind != RawNode::Kind::kBool) wrong();
      return n.b;
    case ValueType::kInt:
      return static_cast<int64_t>(number(k, n, factor, ctx, true));
    case ValueType::kFloat:
      return number(k, n, factor, ctx, false);
    case ValueType::kString:
      if (n.kind != RawNode::Kind::kString) wrong();
      check_choice(k, n.s, ctx, n);
      return n.s;
    case ValueType::kIntList: {
      if (n.kind != RawNode::Kind::kArray) wrong();
      std::vector<int64_t> out;
      for (const auto& e : n.children)
        out.push_back(static_cast<int64_t>(number(k, e, 1, ctx, true)));
      return out;
    }
    case ValueType::kStringList: {
      if (n.kind != RawNode::Kind::kArray) wrong();
      std::vector<std::string> out;
      for (const auto& e : n.children) {
        if (e.kind != RawNode::Kind::kString) {
          fail(ctx, e, k.key,
               fmt::format("wrong type: expected a list of strings, got {}", shown(e)));
        }
        check_choice(k, e.s, ctx, e);
        out.push_back(e.s);
      }
      return out;
    }
  }
  return {};
}

const std::string& string_field(const KeyInfo& k, const RawNode& n, const LeafContext& ctx) {
  if (n.kind != RawNode::Kind::kString || n.s.empty()) {
    fail(ctx, n, k.key, fmt::format("'{}' must be a non-empty string, got {}", n.key, shown(n)));
  }
  return n.s;
}

// Value and provenance of a `{ v = ..., ... }` table (a leaf or one of its alternatives).
ParsedLeaf parse_table(const KeyInfo& k, const RawNode& t, const LeafContext& ctx, bool is_alt) {
  for (const auto& c : t.children) {
    const bool known =
        std::find(kLeafFields.begin(), kLeafFields.end(), c.key) != kLeafFields.end();
    if (!known || (is_alt && c.key == "alt")) {
      fail(ctx, c, k.key + "." + c.key,
           fmt::format("unknown field of a value (allowed: v, src, assume, derived, note, unit{})",
                       is_alt ? "" : ", alt"));
    }
  }
  const RawNode* v = t.child("v");
  if (v == nullptr) {
    fail(ctx, t, k.key, "expected a value or { v = ..., src = \"...\" }, got a table without 'v'");
  }
  ParsedLeaf out;
  Provenance& p = out.record.prov;
  p.where = where_of(ctx, t);

  double factor = 1;
  if (const RawNode* u = t.child("unit")) {
    const std::string& unit = string_field(k, *u, ctx);
    const auto f = k.unit.empty() ? std::nullopt : unit_factor(unit, k.unit);
    if (!f) {
      fail(ctx, *u, k.key,
           k.unit.empty() ? std::string("this key takes no unit")
                          : fmt::format("unit '{}' is not a unit of {} (use one of: {})", unit,
                                        k.unit, fmt::join(units_for(k.unit), ", ")));
    }
    factor = *f;
    if (unit != k.unit) {
      const double raw = v->kind == RawNode::Kind::kInt ? static_cast<double>(v->i) : v->d;
      p.as_published = fmt::format("{} {}", format_number(raw, 6), unit);
    }
  }
  out.value = convert(k, *v, factor, ctx);

  int kinds = 0;
  if (const RawNode* s = t.child("src")) {
    p.kind = ProvenanceKind::kSource;
    p.text = string_field(k, *s, ctx);
    const std::string bad = first_unknown_source(p.text);
    if (!bad.empty()) {
      fail(ctx, *s, k.key,
           fmt::format("unknown source '{}' (use the keys of HARDWARE.md s0, seed000..seed002, "
                       "'HARDWARE.md sN', 'VALIDATION s1' or a URL)",
                       bad));
    }
    ++kinds;
  }
  if (const RawNode* a = t.child("assume")) {
    p.kind = ProvenanceKind::kAssumption;
    p.text = string_field(k, *a, ctx);
    ++kinds;
  }
  if (const RawNode* d = t.child("derived")) {
    p.kind = ProvenanceKind::kDerivation;
    p.text = string_field(k, *d, ctx);
    ++kinds;
  }
  if (kinds > 1) fail(ctx, t, k.key, "give exactly one of src, assume, derived");
  if (kinds == 0 && (ctx.strict || is_alt) && k.sourced) {
    fail(ctx, t, k.key, "no source: add src = \"...\", assume = \"why\" or derived = \"how\"");
  }
  if (const RawNode* n = t.child("note")) p.note = string_field(k, *n, ctx);

  if (const RawNode* alts = t.child("alt")) {
    if (alts->kind != RawNode::Kind::kArray) {
      fail(ctx, *alts, k.key + ".alt", "expected an array of { v = ..., src = \"...\" }");
    }
    for (const auto& a : alts->children) {
      if (!a.is_table()) fail(ctx, a, k.key + ".alt", "expected { v = ..., src = \"...\" }");
      ParsedLeaf alt = parse_table(k, a, ctx, true);
      out.record.alts.push_back({std::move(alt.value), std::move(alt.record.prov)});
    }
  }
  return out;
}

}  // namespace

std::string where_of(const LeafContext& ctx, const RawNode& node) {
  if (ctx.file.empty()) return "--set";
  return fmt::format("{}:{}", ctx.file, node.line);
}

ParsedLeaf parse_leaf(const KeyInfo& k, const RawNode& node, const LeafContext& ctx) {
  if (node.is_table()) return parse_table(k, node, ctx, false);
  if (ctx.strict && k.sourced) {
    fail(ctx, node, k.key,
         fmt::format("no source: write {{ v = {}, src = \"...\" }} (or assume = \"why\" / "
                     "derived = \"how\")",
                     node.kind == RawNode::Kind::kString ? "\"" + node.s + "\"" : "..."));
  }
  ParsedLeaf out;
  out.value = convert(k, node, 1, ctx);
  out.record.prov.kind = ProvenanceKind::kOverride;
  out.record.prov.where = where_of(ctx, node);
  return out;
}

}  // namespace trnsim::arch
