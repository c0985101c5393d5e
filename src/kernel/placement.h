// Placement of on-chip tiles by live range, as a compiler's allocator does it: after the whole
// kernel is traced, each tile occupies memory only from the first to the last instruction that
// uses it, so a tile whose name is rebound in a loop holds one generation, and one whose name
// lives on after its last use holds nothing.
//
// The rule (one memory at a time: SBUF or PSUM). Instructions are walked in program order (the
// order the kernel emitted them). At each instruction, the tiles it uses that are not resident
// are given a range over the free ranges by oldest fit (allocator.h: alignment and PSUM banks;
// a ring, so that bytes a tile freed are taken again as late as possible and loop iterations
// overlap while memory is plentiful, as with the compiler's multi-buffering; where memory is
// tight, the bytes given back longest ago, not those of a store still in flight);
// after it, the tiles it used for the last time give their range back, and so do the tiles
// whose next use overwrites all of them without reading (a kill: the value is dead until then,
// and a new live range starts there, as a compiler's values in SSA form). When no free range
// fits:
//   - SBUF spills: a resident tile not used by this instruction leaves memory: one that needs
//     no store if there is one, and of those the one whose next use is furthest away (Belady). If
//     it was written since it last came from HBM, it is stored to an HBM scratch tensor right after
//     its last write (SpillOp store); before its next use it comes back (SpillOp reload) into
//     whatever range is free then, unless that use writes the whole tile without reading it.
//     Victims are taken until the range fits.
//   - PSUM does not spill (DMA does not reach PSUM), nor does anything when the instruction's
//     own tiles cannot fit together: that is a PlacementError naming the instruction, the
//     tiles and their bytes.
// In place: a tile an element-wise instruction writes whole takes the bytes of a source of the
// same size it reads at the same places, when that source dies at this instruction (the
// compiler writes an element-wise result over its dying input), instead of new bytes: a chain
// x -> f(x) -> g(f(x)) then needs one tile, not two.
// Different ranges of one tile over time (residencies) are fine: every use is given the base of
// the residency it falls in (Placement::use_base).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace trnsim::kernel {

struct PlaceTile {
  std::string name;
  int64_t bytes = 0;  // per partition
};

// One use of a tile by an instruction. Uses are given sorted by instruction.
struct PlaceUse {
  int64_t instr = 0;
  int32_t tile = 0;
  bool write = false;
  bool whole = false;  // a write that covers every byte of the tile
  // A write that may take the bytes of tile `reuse`, which the same instruction reads at the
  // same places (an element-wise op: each element is read before it is written), when that
  // tile dies there. -1: none.
  int32_t reuse = -1;
};

struct PlaceMemory {
  std::string name;  // "sbuf", "psum": for messages
  int64_t capacity = 0, alignment = 1, bank = 0;
  bool can_spill = false;
};

struct SpillOp {
  bool store = false;  // store: HBM <- tile after instruction `at`; reload: tile <- HBM before it
  int32_t tile = 0;
  int64_t at = 0;
  int64_t base = 0;  // the tile's range (bytes within a partition)
};

struct Placement {
  std::vector<int64_t> use_base;  // per PlaceUse, in the order given
  std::vector<SpillOp> spills;    // in program order of their positions
  int64_t high_water = 0;         // one past the highest byte ever given
  int32_t spilled_tiles = 0;
};

// Describes one instruction for error messages ("instruction 12 (tensor_tensor on vector)").
using DescribeInstr = std::function<std::string(int64_t instr)>;

// Throws InputError (kernel build) when a tile is larger than the memory or an instruction's
// tiles cannot be resident together.
Placement place_tiles(const PlaceMemory& mem, const std::vector<PlaceTile>& tiles,
                      const std::vector<PlaceUse>& uses, const DescribeInstr& describe = {});

}  // namespace trnsim::kernel
