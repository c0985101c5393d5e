#include "core/timing/timing_ports.h"

#include <algorithm>

namespace trnsim::core {

bool SharedPorts::Port::queued(int e) const {
  for (int i = 0; i < queue_len; ++i)
    if (queue[static_cast<size_t>(i)] == e) return true;
  return false;
}

void SharedPorts::Port::push(int e) {
  if (!queued(e)) queue[queue_len++] = static_cast<int8_t>(e);
}

void SharedPorts::Port::remove(int e) {
  int j = 0;
  for (int i = 0; i < queue_len; ++i)
    if (queue[static_cast<size_t>(i)] != e)
      queue[static_cast<size_t>(j++)] = queue[static_cast<size_t>(i)];
  queue_len = static_cast<uint8_t>(j);
}

bool SharedPorts::available(uint8_t mask, int engine, Picoseconds now, Picoseconds& retry) {
  bool ok = true;
  retry = Picoseconds(INT64_MAX);
  for (int i = 0; i < kNumSharedPorts; ++i) {
    if (!(mask & (1u << i))) continue;
    Port& p = ports_[static_cast<size_t>(i)];
    const bool busy_other = p.owner != engine && p.busy_until > now;
    const bool someone_first = p.queue_len > 0 && p.queue[0] != engine;
    if (busy_other) {
      p.push(engine);
      retry = std::min(retry, p.busy_until);
      ok = false;
    } else if (someone_first) {
      p.push(engine);  // served after the earlier requester, which wakes it on acquire
      ok = false;
    }
  }
  return ok;
}

uint8_t SharedPorts::acquire(uint8_t mask, int engine, Picoseconds until) {
  uint8_t wake = 0;
  for (int i = 0; i < kNumSharedPorts; ++i) {
    if (!(mask & (1u << i))) continue;
    Port& p = ports_[static_cast<size_t>(i)];
    p.remove(engine);
    p.owner = engine;
    p.busy_until = std::max(p.busy_until, until);
    for (int k = 0; k < p.queue_len; ++k) wake |= uint8_t(1u << p.queue[static_cast<size_t>(k)]);
  }
  return wake;
}

uint8_t SharedPorts::withdraw_queued(int engine) {
  uint8_t wake = 0;
  for (Port& p : ports_) {
    if (!p.queued(engine)) continue;
    const bool was_first = p.queue[0] == engine;
    p.remove(engine);
    if (was_first && p.queue_len > 0) wake |= uint8_t(1u << p.queue[0]);
  }
  return wake;
}

}  // namespace trnsim::core
