#include "isa/sync_text.h"

#include <fmt/format.h>

#include "base/error.h"
#include "isa/text_numbers.h"

namespace trnsim::isa {

namespace {

// "sN" then the rest; N is the semaphore index.
std::pair<uint16_t, std::string_view> split_sem(std::string_view text, std::string_view form) {
  if (!text.starts_with('s'))
    throw InputError("", std::string(text), "expected " + std::string(form));
  size_t i = 1;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == 1) throw InputError("", std::string(text), "expected " + std::string(form));
  return {parse_integer<uint16_t>(text.substr(1, i - 1)), text.substr(i)};
}

}  // namespace

std::string format_wait(const SemWait& w) { return fmt::format("s{}>={}", w.sem, w.value); }

std::string format_signal(const SemSignal& s) {
  return s.delta >= 0 ? fmt::format("s{}+{}", s.sem, s.delta)
                      : fmt::format("s{}{}", s.sem, s.delta);
}

SemWait parse_wait(std::string_view text) {
  auto [sem, rest] = split_sem(text, "sN>=VALUE");
  if (!rest.starts_with(">=")) throw InputError("", std::string(text), "expected sN>=VALUE");
  return {sem, parse_integer<int64_t>(rest.substr(2))};
}

SemSignal parse_signal(std::string_view text) {
  auto [sem, rest] = split_sem(text, "sN+DELTA or sN-DELTA");
  if (!rest.starts_with('+') && !rest.starts_with('-'))
    throw InputError("", std::string(text), "expected sN+DELTA or sN-DELTA");
  return {sem, parse_integer<int64_t>(rest)};
}

}  // namespace trnsim::isa
