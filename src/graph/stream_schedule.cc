#include "graph/stream_schedule.h"

#include <algorithm>

namespace trnsim::graph {

Picoseconds StreamSchedule::inputs_ready(const Node& n) const {
  Picoseconds t(0);
  for (int v : n.inputs)
    if (v >= 0 && static_cast<size_t>(v) < ready_.size())
      t = std::max(t, ready_[static_cast<size_t>(v)]);
  return t;
}

Picoseconds StreamSchedule::place(bool collective, Picoseconds after, Picoseconds dur) {
  Picoseconds& free = collective ? collective_free_ : compute_free_;
  const Picoseconds start = std::max(after, free);
  free = start + dur;
  end_ = std::max(end_, free);
  spans_.push_back({start, free, collective});
  return start;
}

void StreamSchedule::finish(const Node& n, Picoseconds t) {
  for (int v : n.outputs)
    if (v >= 0 && static_cast<size_t>(v) < ready_.size())
      ready_[static_cast<size_t>(v)] = std::max(ready_[static_cast<size_t>(v)], t);
}

std::vector<Picoseconds> StreamSchedule::exposed() const {
  // The compute spans, in time order (the stream is in order, so they already are) and
  // disjoint; each collective's overlap with them found by binary search.
  std::vector<const Span*> compute;
  for (const Span& s : spans_)
    if (!s.collective) compute.push_back(&s);
  std::vector<Picoseconds> out;
  out.reserve(spans_.size());
  for (const Span& s : spans_) {
    if (!s.collective) {
      out.push_back(s.end - s.start);
      continue;
    }
    int64_t covered = 0;
    auto it = std::upper_bound(compute.begin(), compute.end(), s.start,
                               [](Picoseconds t, const Span* c) { return t < c->end; });
    for (; it != compute.end() && (*it)->start < s.end; ++it)
      covered += (std::min(s.end, (*it)->end) - std::max(s.start, (*it)->start)).v;
    out.push_back(Picoseconds(s.end.v - s.start.v - covered));
  }
  return out;
}

}  // namespace trnsim::graph
