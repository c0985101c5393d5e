#include "kernel/call_error.h"

#include <fmt/format.h>

#include "base/error.h"

namespace trnsim::kernel {

void call_error(std::string_view call, std::string_view operand, const View& view,
                const std::string& problem) {
  throw InputError(std::string(call), std::string(operand),
                   fmt::format("{}: {}", view.describe(), problem));
}

void call_error(std::string_view call, const std::string& problem) {
  throw InputError(std::string(call), "", problem);
}

std::string describe_operands(const std::vector<std::pair<std::string, View>>& operands) {
  std::string s;
  for (const auto& [name, view] : operands)
    s += fmt::format("{}{} {}", s.empty() ? "" : "; ", name, view.describe());
  return s;
}

}  // namespace trnsim::kernel
