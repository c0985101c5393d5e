// Indexing a view, numpy / NKI style: an integer picks one position (and drops the dim, except
// the on-chip partition dim, which stays with size 1), a {begin, end} or {begin, end, step}
// pair picks a range, `all` keeps the whole dim. Dims not named are kept whole.
//
//   tile({0, 128}, k, {0, 512})   // partitions 0..127, position k of free dim 1, 512 columns
#pragma once

#include <cstdint>

namespace trnsim::kernel {

struct All {};
inline constexpr All all{};

struct Idx {
  int64_t begin = 0, end = 0, step = 1;
  bool single = false;  // one position: the dim is dropped (kept with size 1 on partitions)
  bool whole = false;

  Idx(All) : whole(true) {}  // NOLINT(google-explicit-constructor): reads like numpy's ':'
  Idx(int64_t i) : begin(i), end(i + 1), single(true) {}  // NOLINT
  Idx(int i) : Idx(static_cast<int64_t>(i)) {}            // NOLINT
  Idx(int64_t b, int64_t e, int64_t s = 1) : begin(b), end(e), step(s) {}
};

}  // namespace trnsim::kernel
