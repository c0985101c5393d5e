// `trnsim spec --keys`: the schema as a table, one row per key.
#include <fmt/format.h>

#include "arch/arch.h"
#include "arch/schema.h"
#include "arch/text_table.h"

namespace trnsim::arch {

std::string format_keys() {
  using A = TextTable::Align;
  TextTable t({"Key", "Type", "Unit", "Range / choices", "Need", "Meaning"},
              {A::kLeft, A::kLeft, A::kLeft, A::kLeft, A::kLeft, A::kLeft});
  std::string table;
  for (const auto& k : schema().keys()) {
    const std::string top = k.key.substr(0, k.key.find('.'));
    if (top != table) {
      table = top;
      t.section(fmt::format("[{}]", top));
    }
    std::string need = k.required ? "required" : "optional";
    if (!k.group.empty() && k.required) need = "with " + k.group;
    t.row(
        {"  " + k.key, std::string(type_name(k.type)), k.unit, k.constraint_text(), need, k.help});
  }
  return "Spec keys (spec/chips/*.toml; `--set KEY=VALUE`). Values in generation files are\n"
         "{ v = VALUE, src = \"SOURCE\" } | { v = ..., assume = \"why\" } | { v = ..., derived = "
         "\"how\" },\n"
         "optionally with unit = \"...\" (the published unit, converted to the key's), note = "
         "\"...\",\n"
         "alt = [{ v = ..., src = ... }] (other published values). [meta] keys take bare values.\n"
         "Bandwidth units are bytes per second, decimal: GB/s = 1e9 B/s (Gbit/s for bits).\n\n" +
         t.render();
}

}  // namespace trnsim::arch
