#include "isa/diagnostic.h"

#include <fmt/format.h>

#include "base/error.h"
#include "isa/op_table.h"

namespace trnsim::isa {

std::string to_string(const Diagnostic& d) {
  std::string s;
  if (d.source_line > 0) s += fmt::format("line {}: ", d.source_line);
  if (d.index >= 0) s += fmt::format("{}[{}] {}: ", name_of(d.engine), d.index, mnemonic(d.op));
  return s + fmt::format("{}: {}", kRuleKindNames.name(d.kind), d.message);
}

void throw_if_any(const std::vector<Diagnostic>& diags, std::string_view file) {
  if (diags.empty()) return;
  const Diagnostic& d = diags.front();
  std::string where(file);
  if (d.source_line > 0) where += fmt::format("{}{}", where.empty() ? "line " : ":", d.source_line);
  if (where.empty() && d.index >= 0) where = fmt::format("{}[{}]", name_of(d.engine), d.index);
  const std::string key = d.index >= 0 ? std::string(mnemonic(d.op)) : "";
  std::string detail = fmt::format("{}: {}", kRuleKindNames.name(d.kind), d.message);
  if (diags.size() > 1) detail += fmt::format(" (and {} more)", diags.size() - 1);
  throw InputError(where, key, detail);
}

}  // namespace trnsim::isa
