// `trnsim spec --compare A B ...` as text.
#include <fmt/format.h>

#include "arch/compare.h"
#include "arch/text_table.h"

namespace trnsim::arch {

namespace {

// One character that says a cell is not a plain published figure.
std::string marker(const CompareCell& c) {
  if (c.alternative) return " ^";
  switch (c.kind) {
    case ProvenanceKind::kAssumption:
      return " *";
    case ProvenanceKind::kDerivation:
      return " ~";
    case ProvenanceKind::kOverride:
      return " !";
    case ProvenanceKind::kSource:
      break;
  }
  return "  ";
}

}  // namespace

std::string format_comparison(const Comparison& c) {
  if (c.chips.empty()) return "no chips to compare\n";
  using A = TextTable::Align;
  std::vector<std::string> header{"Figure"};
  std::vector<A> align{A::kLeft};
  for (const auto& name : c.chips) {
    header.push_back(name);
    header.push_back("");
    align.push_back(A::kRight);
    align.push_back(A::kRight);
  }
  TextTable t(header, align);
  std::vector<std::string> status{""};
  for (const auto& s : c.status) {
    status.push_back("(" + s + ")");
    status.push_back("");
  }
  t.row(status);

  bool in_seed = true;
  t.section(fmt::format("Seed 000 summary: ratios to {}", c.chips[0]));
  for (const auto& r : c.rows) {
    if (in_seed && !r.seed_summary) {
      in_seed = false;
      t.section("Further published figures");
    }
    std::vector<std::string> cells{"  " + r.label};
    for (const auto& cell : r.cells) {
      cells.push_back(cell ? cell->shown + marker(*cell) : "-  ");
      cells.push_back(cell && cell->ratio ? fmt::format("{:.1f}x", ratio_one_decimal(*cell->ratio))
                                          : "");
    }
    t.row(cells);
  }

  std::string out =
      fmt::format("Trainium generations relative to {} ({})\n\n", c.chips[0], c.titles[0]);
  out += t.render();
  out +=
      "\nValues are published chip figures. ^ another published value (see notes), "
      "* assumption, ~ documented derivation, ! what-if override.\n"
      "Ratios are rounded to one decimal, as seed 000 prints them.\n";
  if (!c.notes.empty()) {
    out += "Notes:\n";
    for (const auto& n : c.notes) out += "  " + n + "\n";
  }
  return out;
}

}  // namespace trnsim::arch
