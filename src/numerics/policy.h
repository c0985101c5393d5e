// Per-generation numeric policy: the platform quirks of conversions, chosen at run time from
// the generation's spec data (spec/chips/*.toml, [numerics] table), in the spirit of
// SoftFloat's specialize.h but without recompiling. One binary serves trn1..trn4.
#pragma once

#include <cstdint>

namespace trnsim::num {

enum class Rounding : uint8_t {
  kNearestEven,  // IEEE roundTiesToEven (hardware default, RM)
  kStochastic,   // up with probability (x - lower) / (upper - lower), see sr_random_bits
  kTowardZero,   // truncation
};

// What a finite value beyond the target's largest finite value becomes.
enum class Overflow : uint8_t {
  kInfinity,  // +-inf where the format has it, else NaN where it has NaN, else +-max (HARDWARE.md s5:
              // FP32_MIN cast to bf16/fp16/fp8 becomes -inf: casts do not saturate)
  kSaturate,  // +-max finite (the compiler's --enable-saturate-infinity behaviour)
};

// What a NaN input becomes in a format that has NaN.
enum class NanMode : uint8_t {
  kPropagate,  // sign kept, quiet bit set, payload truncated from the top (IEEE-style)
  kCanonical,  // the format's default NaN, sign kept
};

struct NumericPolicy {
  Overflow overflow = Overflow::kInfinity;
  NanMode nan = NanMode::kPropagate;
  bool flush_subnormals = false;  // results below min normal become +-0 when set
  // Random bits compared against the discarded fraction in stochastic rounding. The hardware's
  // count is not public (HARDWARE.md s11 item 4); the probability of rounding up differs from
  // the exact distance ratio by less than 2^-sr_random_bits.
  int sr_random_bits = 16;
};

}  // namespace trnsim::num
