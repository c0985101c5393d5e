// Moving operands between memory and working tiles.
//
//  - read_tile: decode every element of an access pattern into FP32, exactly for every format
//    of at most 24 significand bits (all floats but fp32 itself, which is copied bit for bit,
//    and integers up to 24 bits; wider integers round to nearest even, as the FP32 engines do).
//  - write_tile: cast an FP32 tile to the pattern's dtype through the numerics layer's funnel
//    (numerics/convert.h) with the caller's RoundOptions: rounding mode, generation policy and
//    stochastic-rounding key. Element (r, c) of the tile draws its random bits at index
//    opts.index_base + r * cols + c, so results depend only on (seed, stream, element).
//  - read_codes / write_codes: raw element codes, for bit-exact paths (same-dtype copies,
//    transposes, DMA without a cast).
//
// Every pattern must have passed CoreMemory::check(); elements are visited in pattern order
// (partition / row slowest, then free dims outermost first), and when a write pattern names
// one address twice the later element wins.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/access_pattern.h"
#include "mem/core_memory.h"
#include "mem/tile.h"
#include "numerics/convert.h"

namespace trnsim::mem {

// Reusable byte buffers, so that steady-state reads and writes do not allocate.
struct IoScratch {
  std::vector<uint8_t> bytes;
};

void read_tile(const CoreMemory& m, const isa::AccessPattern& ap, Tile& out, IoScratch& s,
               const num::NumericPolicy& policy = {});
void write_tile(CoreMemory& m, const isa::AccessPattern& ap, const Tile& in, IoScratch& s,
                const num::RoundOptions& opts);

// Codes of storage_bytes each, [rows][free][storage_bytes] in pattern order.
void read_codes(const CoreMemory& m, const isa::AccessPattern& ap, std::vector<uint8_t>& out);
void write_codes(CoreMemory& m, const isa::AccessPattern& ap, const uint8_t* codes);

}  // namespace trnsim::mem
