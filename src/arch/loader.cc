// Loading a chip: the file's [meta], its `inherits` chain (base first), `meta.drop`, then every
// leaf checked against the schema, then the required keys. Every failure is an InputError naming
// file:line and the dotted key.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

#include "arch/arch.h"
#include "arch/leaf.h"
#include "arch/schema.h"
#include "arch/spec_files.h"
#include "arch/toml_reader.h"
#include "base/error.h"

namespace trnsim::arch {

namespace {

namespace fs = std::filesystem;

struct FileMeta {
  MetaSpec meta;
  int inherits_line = 1;
  int drop_line = 1;
};

std::string at(const fs::path& file, int line) { return fmt::format("{}:{}", file.string(), line); }

// A bare string on the command line is bytes; the files' strings are UTF-8 (toml++ checks), and
// the JSON report cannot print anything else. Well-formed UTF-8 per Unicode table 3-7.
bool is_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;                        // continuation bytes
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the first of them
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      lo = c == 0xE0 ? 0xA0 : 0x80;
      hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      lo = c == 0xF0 ? 0x90 : 0x80;
      hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
      return false;
    }
    if (s.size() - i <= n) return false;  // truncated
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return false;
    }
    i += n + 1;
  }
  return true;
}

FileMeta read_meta(const RawNode& root, const fs::path& file) {
  FileMeta fm;
  ChipSpec scratch;
  const LeafContext ctx{file.string(), false};
  if (const RawNode* meta = root.child("meta")) {
    if (!meta->is_table()) throw InputError(at(file, meta->line), "meta", "expected a table");
    for (const auto& c : meta->children) {
      const std::string key = "meta." + c.key;
      const KeyInfo* k = schema().find(key);
      if (k == nullptr) {
        throw InputError(at(file, c.line), key, "unknown key" + schema().suggest(key));
      }
      k->set(scratch, parse_leaf(*k, c, ctx).value);
      if (c.key == "inherits") fm.inherits_line = c.line;
      if (c.key == "drop") fm.drop_line = c.line;
    }
  }
  fm.meta = scratch.meta;
  MetaSpec& m = fm.meta;
  if (m.kind.empty()) m.kind = "what-if";
  if (m.kind == "generation") {
    const std::pair<const char*, const std::string*> required[] = {
        {"name", &m.name}, {"title", &m.title}, {"status", &m.status}};
    for (const auto& [name, value] : required) {
      if (value->empty()) {
        throw InputError(at(file, root.child("meta") ? root.child("meta")->line : 1),
                         std::string("meta.") + name, "missing required key of a generation file");
      }
    }
  }
  if (m.name.empty()) m.name = file.stem().string();
  if (m.title.empty()) m.title = m.name;
  if (m.status.empty()) m.status = m.kind == "what-if" ? "what-if" : "shipped";
  return fm;
}

void apply_leaves(ChipSpec& spec, const RawNode& table, const std::string& prefix,
                  const LeafContext& ctx) {
  for (const auto& c : table.children) {
    const std::string key = prefix.empty() ? c.key : prefix + "." + c.key;
    if (key == "meta") continue;  // read by read_meta
    if (const KeyInfo* k = schema().find(key)) {
      ParsedLeaf leaf = parse_leaf(*k, c, ctx);
      k->set(spec, leaf.value);
      spec.fields[key] = std::move(leaf.record);
    } else if (schema().is_table(key)) {
      if (!c.is_table()) {
        throw InputError(where_of(ctx, c), key, "is a table of keys, not a value");
      }
      apply_leaves(spec, c, key, ctx);
    } else {
      throw InputError(where_of(ctx, c), key, "unknown key" + schema().suggest(key));
    }
  }
}

bool group_present(const ChipSpec& spec, std::string_view group) {
  const std::string prefix = std::string(group) + ".";
  const auto it = spec.fields.lower_bound(prefix);
  return it != spec.fields.end() && it->first.starts_with(prefix);
}

// The line of the innermost table of `key` that the file has: where the key should have been.
int expected_line(const RawNode& root, std::string_view key) {
  int line = 1;
  const RawNode* node = &root;
  size_t pos = 0;
  while (node != nullptr && node->is_table()) {
    line = std::max(line, node->line);
    const size_t dot = key.find('.', pos);
    if (dot == std::string_view::npos) break;
    node = node->child(key.substr(pos, dot - pos));
    pos = dot + 1;
  }
  return line;
}

void check_required(const ChipSpec& spec, const std::string& where_prefix, const RawNode* root) {
  for (const auto& k : schema().keys()) {
    if (!k.sourced || !k.required || spec.fields.contains(k.key)) continue;
    if (!k.group.empty() && !group_present(spec, k.group)) continue;
    const std::string where = root == nullptr
                                  ? where_prefix
                                  : fmt::format("{}:{}", where_prefix, expected_line(*root, k.key));
    throw InputError(where, k.key, fmt::format("missing required key ({})", k.help));
  }
}

void apply_drops(ChipSpec& spec, const FileMeta& fm, const fs::path& file) {
  for (const auto& d : fm.meta.drop) {
    bool known = false;
    for (const auto& k : schema().keys()) {
      if (!k.sourced || (k.key != d && !k.key.starts_with(d + "."))) continue;
      known = true;
      if (spec.fields.erase(k.key) > 0) k.clear(spec);
    }
    if (!known) {
      throw InputError(at(file, fm.drop_line), "meta.drop",
                       fmt::format("'{}' is not a key or table{}", d, schema().suggest(d)));
    }
  }
}

ChipSpec load_file(const fs::path& file, std::vector<fs::path>& stack) {
  const RawNode root = read_toml_file(file);
  const FileMeta fm = read_meta(root, file);
  ChipSpec spec;
  if (fm.meta.inherits) {
    fs::path parent;
    try {
      parent = resolve_chip(*fm.meta.inherits, file.parent_path());
    } catch (const InputError& e) {
      throw InputError(at(file, fm.inherits_line), "meta.inherits", e.detail());
    }
    const fs::path canon = fs::weakly_canonical(parent);
    if (std::find(stack.begin(), stack.end(), canon) != stack.end()) {
      std::string chain;
      for (const auto& p : stack) chain += p.filename().string() + " -> ";
      throw InputError(at(file, fm.inherits_line), "meta.inherits",
                       fmt::format("inheritance cycle: {}{}", chain, canon.filename().string()));
    }
    stack.push_back(canon);
    spec = load_file(parent, stack);
    stack.pop_back();
    for (auto& [key, rec] : spec.fields) {
      if (rec.prov.inherited_from.empty()) rec.prov.inherited_from = spec.meta.name;
    }
    apply_drops(spec, fm, file);
  } else if (!fm.meta.drop.empty()) {
    throw InputError(at(file, fm.drop_line), "meta.drop", "drop needs meta.inherits");
  }
  apply_leaves(spec, root, "", LeafContext{file.string(), fm.meta.kind == "generation"});
  spec.meta = fm.meta;
  spec.files.push_back(file.string());
  spec.lineage.push_back(fm.meta.name);
  check_required(spec, file.string(), &root);
  return spec;
}

void finish(ChipSpec& spec) {
  spec.server.present = group_present(spec, "server");
  spec.ultraserver.present = group_present(spec, "ultraserver");
  spec.ultracluster.present = group_present(spec, "ultracluster");
}

// A number with a unit, "9.8TB/s" or "1.2 GHz", becomes { v = 9.8, unit = "TB/s" } for the leaf
// parser to convert to the key's unit (arch/units.h; a unit of another kind is refused there);
// "x2" or "*0.5" is the key's current value times the factor. Anything else: nullopt (a plain
// TOML value, in the key's own unit, which --keys shows).
std::optional<RawNode> number_with_unit(const KeyInfo& k, const ChipSpec& spec, const Override& o) {
  if (k.type != ValueType::kFloat && k.type != ValueType::kInt) return std::nullopt;
  std::string_view v = o.value;
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  if (v.empty()) return std::nullopt;
  auto number = [&](std::string_view t) -> std::optional<double> {
    double x = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), x);
    if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(x)) return std::nullopt;
    return x;
  };
  RawNode n;
  if (v.front() == 'x' || v.front() == '*') {
    const std::optional<double> f = number(v.substr(1));
    if (!f || *f < 0) throw InputError("--set", o.key, "expected xFACTOR (a non-negative number)");
    const std::optional<Value> cur = k.get ? k.get(spec) : std::nullopt;
    double base = 0;
    if (cur && std::holds_alternative<double>(*cur))
      base = std::get<double>(*cur);
    else if (cur && std::holds_alternative<int64_t>(*cur))
      base = static_cast<double>(std::get<int64_t>(*cur));
    else
      throw InputError("--set", o.key, "has no value to scale (give a number)");
    const double x = base * *f;
    if (!std::isfinite(x)) throw InputError("--set", o.key, "the scaled value is not finite");
    if (k.type == ValueType::kInt) {
      if (x != std::floor(x) || std::abs(x) > 9.0e18)
        throw InputError("--set", o.key, fmt::format("{} x {} is not a whole number", base, *f));
      n.kind = RawNode::Kind::kInt;
      n.i = static_cast<int64_t>(x);
    } else {
      n.kind = RawNode::Kind::kFloat;
      n.d = x;
    }
    return n;
  }
  // The longest numeric prefix, then a unit made of letters, '/' and '%'.
  size_t cut = v.size();
  while (cut > 0 && (std::isalpha(static_cast<unsigned char>(v[cut - 1])) || v[cut - 1] == '/' ||
                     v[cut - 1] == '%'))
    --cut;
  if (cut == v.size() || cut == 0) return std::nullopt;
  std::string_view num = v.substr(0, cut), unit = v.substr(cut);
  while (!num.empty() && num.back() == ' ') num.remove_suffix(1);
  const std::optional<double> x = number(num);
  if (!x) return std::nullopt;
  RawNode val;
  val.key = "v";
  val.kind = RawNode::Kind::kFloat;
  val.d = *x;
  RawNode u;
  u.key = "unit";
  u.kind = RawNode::Kind::kString;
  u.s = std::string(unit);
  n.kind = RawNode::Kind::kTable;
  n.children = {std::move(u), std::move(val)};
  return n;
}

}  // namespace

Override parse_override(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw InputError("--set", std::string(text), "expected key=value");
  }
  return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

void apply_override(ChipSpec& spec, const Override& o) {
  const KeyInfo* k = schema().find(o.key);
  if (k == nullptr || !k->sourced) {
    throw InputError("--set", o.key, "unknown key" + schema().suggest(o.key));
  }
  // Strings may be written bare on a command line; everything else is a TOML value.
  RawNode node;
  if (k->type == ValueType::kString && !o.value.starts_with('"')) {
    if (!is_utf8(o.value)) throw InputError("--set", o.key, "the value is not UTF-8 text");
    node.kind = RawNode::Kind::kString;
    node.s = o.value;
  } else if (std::optional<RawNode> n = number_with_unit(*k, spec, o)) {
    node = std::move(*n);
  } else {
    node = parse_toml_value(o.value, "--set", o.key);
  }
  ParsedLeaf leaf = parse_leaf(*k, node, LeafContext{});
  leaf.record.prov.text = fmt::format("--set {}={}", o.key, o.value);
  k->set(spec, leaf.value);
  spec.fields[o.key] = std::move(leaf.record);
  check_required(spec, "--set", nullptr);
  finish(spec);
}

ChipSpec load_chip(std::string_view name_or_path, const std::vector<Override>& overrides) {
  const fs::path file = resolve_chip(name_or_path);
  std::vector<fs::path> stack{fs::weakly_canonical(file)};
  ChipSpec spec = load_file(file, stack);
  finish(spec);
  for (const auto& o : overrides) apply_override(spec, o);
  return spec;
}

}  // namespace trnsim::arch
