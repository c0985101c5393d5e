// Errors of kernel API calls: an InputError that names the call, the operand and the view it
// got ("matmul: 'stationary': 'lhsT' sbuf[0:128] [128, 256] bf16: M = 256 exceeds 128").
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernel/view.h"

namespace trnsim::kernel {

[[noreturn]] void call_error(std::string_view call, std::string_view operand, const View& view,
                             const std::string& problem);
[[noreturn]] void call_error(std::string_view call, const std::string& problem);

// "dst 'res' psum[0:128] [128, 512] fp32; src ..." for messages about several operands.
std::string describe_operands(const std::vector<std::pair<std::string, View>>& operands);

}  // namespace trnsim::kernel
