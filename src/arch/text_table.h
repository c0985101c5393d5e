// An aligned plain-text table with section headings, for the spec reports. Cells are ASCII;
// columns are as wide as their widest cell; the last column is never padded.
#pragma once

#include <string>
#include <vector>

namespace trnsim::arch {

class TextTable {
 public:
  enum class Align { kLeft, kRight };

  TextTable(std::vector<std::string> header, std::vector<Align> align);

  // A heading line between rows (not aligned to the columns).
  void section(std::string title);
  // Cells beyond the header's count are ignored; missing cells are empty.
  void row(std::vector<std::string> cells);

  std::string render() const;

 private:
  struct Line {
    bool is_section = false;
    std::vector<std::string> cells;
  };
  std::vector<std::string> header_;
  std::vector<Align> align_;
  std::vector<Line> lines_;
};

}  // namespace trnsim::arch
