// Semaphore waits and signals in text: `wait=s3>=2` (proceed when semaphore 3 >= 2) and
// `signal=s3+1` / `signal=s3-1` (add to semaphore 3 on completion).
#pragma once

#include <string>
#include <string_view>

#include "isa/instruction.h"

namespace trnsim::isa {

std::string format_wait(const SemWait& w);
std::string format_signal(const SemSignal& s);
// Throw InputError("", text, why) when malformed.
SemWait parse_wait(std::string_view text);
SemSignal parse_signal(std::string_view text);

}  // namespace trnsim::isa
