#include "core/exec/exec_options.h"

namespace trnsim::core {

ExecOptions exec_options_for(const arch::ChipSpec& chip, uint64_t seed) {
  ExecOptions o;
  o.policy = chip.numerics.policy();
  o.stochastic_rounding = chip.numerics.stochastic_rounding;
  o.seed = seed;
  o.scalar_copy_bit_exact = chip.core.features.bit_exact_transpose;
  return o;
}

}  // namespace trnsim::core
