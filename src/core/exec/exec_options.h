// What the functional executor needs to know beyond the core's geometry: the generation's
// numeric policy, whether it has stochastic rounding, the run's seed, and a few rule switches.
#pragma once

#include <cstdint>

#include "arch/chip_spec.h"
#include "isa/engine.h"
#include "numerics/policy.h"

namespace trnsim::core {

struct ExecOptions {
  num::NumericPolicy policy{};      // casts on every output (chip spec [numerics])
  bool stochastic_rounding = true;  // the generation can round stochastically (RM)
  uint64_t seed = 0;                // stochastic-rounding seed (NEURON_RT_STOCHASTIC_ROUNDING_SEED)
  // ScalarE tensor_copy of equal dtypes copies bits (NC-v3+) instead of going through FP32,
  // which is not exact for 32-bit integers (HARDWARE.md s2.4).
  bool scalar_copy_bit_exact = true;
  // Fault engine accesses whose start partition breaks the quadrant rule (HARDWARE.md s3).
  bool enforce_start_partition = true;
};

// Options for a loaded chip. The spec has no dedicated flag for bit-exact ScalarE copies; it
// arrived in NC-v3 together with the bit-exact TensorE transpose, so that flag stands in.
ExecOptions exec_options_for(const arch::ChipSpec& chip, uint64_t seed = 0);

// The stochastic-rounding stream of one output of one executed instruction. ARCHITECTURE.md:
// random bits are keyed by (seed, engine, instruction, element); the element index is the
// RoundOptions index within the output tile. `instruction_id` is the engine's issue number
// (0, 1, 2, ... in the order the engine executes instructions, loop iterations included), so
// the functional runner and the timing model draw identical bits. 4 bits of engine, 4 bits of
// output slot.
constexpr uint64_t sr_stream(isa::Engine engine, uint64_t instruction_id, int output) {
  return (instruction_id << 8) | (static_cast<uint64_t>(engine) << 4) |
         static_cast<uint64_t>(output & 0xF);
}

}  // namespace trnsim::core
