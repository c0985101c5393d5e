#include "arch/text_table.h"

#include <algorithm>

namespace trnsim::arch {

TextTable::TextTable(std::vector<std::string> header, std::vector<Align> align)
    : header_(std::move(header)), align_(std::move(align)) {
  align_.resize(header_.size(), Align::kLeft);
}

void TextTable::section(std::string title) { lines_.push_back({true, {std::move(title)}}); }

void TextTable::row(std::vector<std::string> cells) {
  cells.resize(header_.size());
  lines_.push_back({false, std::move(cells)});
}

std::string TextTable::render() const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) width[i] = std::max(width[i], cells[i].size());
  };
  measure(header_);
  for (const auto& l : lines_) {
    if (!l.is_section) measure(l.cells);
  }

  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string& c = cells[i];
      const size_t pad = width[i] - c.size();
      const bool last = i + 1 == cells.size();
      if (align_[i] == Align::kRight)
        line += std::string(pad, ' ') + c;
      else
        line += last ? c : c + std::string(pad, ' ');
      if (!last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  emit(header_);
  for (const auto& l : lines_) {
    if (l.is_section)
      out += l.cells[0] + "\n";
    else
      emit(l.cells);
  }
  return out;
}

}  // namespace trnsim::arch
