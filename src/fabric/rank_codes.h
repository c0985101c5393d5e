// What the rank run's collectives read and write (rank_group.cc, rank_group_v.cc): a
// collective's operands, and element codes between the memories' bytes and 64-bit words.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "isa/instruction.h"
#include "isa/opcode.h"

namespace trnsim::fabric::rank_codes {

inline const isa::AccessPattern& dst_of(const isa::Instruction& ins) { return ins.operands[0]; }
// collective_v: dst, metadata, src (its writes first, as every op's).
inline const isa::AccessPattern& src_of(const isa::Instruction& ins) {
  return ins.operands[ins.op == isa::Opcode::kCollectiveV ? 2 : 1];
}
inline const isa::AccessPattern& meta_of(const isa::Instruction& ins) { return ins.operands[1]; }

// Codes of `width` bytes each, little-endian as the memories store them.
inline std::vector<uint64_t> to_codes(const std::vector<uint8_t>& bytes, int width) {
  std::vector<uint64_t> out(bytes.size() / static_cast<size_t>(width), 0);
  for (size_t i = 0; i < out.size(); ++i)
    std::memcpy(&out[i], bytes.data() + i * static_cast<size_t>(width), static_cast<size_t>(width));
  return out;
}

inline std::vector<uint8_t> to_bytes(const std::vector<uint64_t>& codes, int width) {
  std::vector<uint8_t> out(codes.size() * static_cast<size_t>(width));
  for (size_t i = 0; i < codes.size(); ++i)
    std::memcpy(out.data() + i * static_cast<size_t>(width), &codes[i], static_cast<size_t>(width));
  return out;
}

}  // namespace trnsim::fabric::rank_codes
