#include "profile/trace.h"

#include <algorithm>
#include <tuple>

namespace trnsim::profile {

uint32_t Trace::add_track(std::string process, std::string name) {
  tracks_.push_back(Track{std::move(process), std::move(name)});
  return static_cast<uint32_t>(tracks_.size() - 1);
}

uint32_t Trace::add_label(Label label) {
  labels_.push_back(std::move(label));
  return static_cast<uint32_t>(labels_.size() - 1);
}

std::vector<Span> sorted_spans(const Trace& trace) {
  std::vector<Span> out = trace.spans();
  std::stable_sort(out.begin(), out.end(), [](const Span& a, const Span& b) {
    return std::tie(a.start, a.track, a.end, a.label) < std::tie(b.start, b.track, b.end, b.label);
  });
  return out;
}

}  // namespace trnsim::profile
