#include "core/exec/pe_array.h"

#include <algorithm>

namespace trnsim::core {

namespace {

bool overlaps(const StationaryTile& a, const StationaryTile& b) {
  return a.row < b.row + b.rows && b.row < a.row + a.rows && a.col < b.col + b.cols &&
         b.col < a.col + a.cols;
}

}  // namespace

StationaryTile& PeArray::slot(int row, int col, int rows, int cols) {
  StationaryTile probe;
  probe.row = row;
  probe.col = col;
  probe.rows = rows;
  probe.cols = cols;
  std::vector<float> reuse;
  for (StationaryTile& old : tiles_)
    if (old.row == row && old.col == col) reuse.swap(old.w);
  std::erase_if(tiles_, [&](const StationaryTile& old) { return overlaps(old, probe); });
  probe.w.swap(reuse);
  tiles_.push_back(std::move(probe));
  return tiles_.back();
}

const StationaryTile* PeArray::at(int row, int col) const {
  for (const StationaryTile& t : tiles_)
    if (t.row == row && t.col == col) return &t;
  return nullptr;
}

}  // namespace trnsim::core
