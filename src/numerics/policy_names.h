// Names of the policy enums as they appear in spec files, the CLI and Python
// ("rne" / "stochastic" / "rz", "inf" / "saturate", "propagate" / "canonical").
#pragma once

#include <string_view>

#include "numerics/policy.h"

namespace trnsim::num {

// Each parse_* throws InputError naming `what` (the key or argument) and the bad value.
Rounding parse_rounding(std::string_view name, std::string_view what = "rounding");
Overflow parse_overflow(std::string_view name, std::string_view what = "overflow");
NanMode parse_nan_mode(std::string_view name, std::string_view what = "nan");

std::string_view name_of(Rounding r);
std::string_view name_of(Overflow o);
std::string_view name_of(NanMode n);

}  // namespace trnsim::num
