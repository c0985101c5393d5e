// Counter-based random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as
// easy as 1, 2, 3", SC'11). A draw is a pure function of (seed, stream, index), so a result
// never depends on call order or host thread count, which is the determinism contract of
// docs/ARCHITECTURE.md. `stream` names the consumer (engine, instruction, cast call) and
// `index` the element.
#pragma once

#include <array>
#include <cstdint>

namespace trnsim {

using Philox4x32 = std::array<uint32_t, 4>;

// One Philox4x32-10 block: 128 random bits for the counter (stream, index) under key `seed`.
constexpr Philox4x32 philox4x32_10(uint64_t seed, uint64_t stream, uint64_t index) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32);
  uint32_t c2 = static_cast<uint32_t>(stream), c3 = static_cast<uint32_t>(stream >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return {c0, c1, c2, c3};
}

// 32 random bits for one element.
constexpr uint32_t random_u32(uint64_t seed, uint64_t stream, uint64_t index) {
  return philox4x32_10(seed, stream, index)[0];
}

}  // namespace trnsim
