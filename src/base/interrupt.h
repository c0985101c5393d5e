// Stopping a run on request (Ctrl-C). A front end (the `trnsim` command, the Python bindings)
// turns SIGINT into request_interrupt(); long loops of the simulator (the event loop, the
// functional runner, the kernel builder, the race checker, collective sweeps) call
// check_interrupt() and unwind with Interrupted. The library never installs a signal handler
// of its own: SigintScope below is for front ends, around one call.
#pragma once

#include <signal.h>

#include <atomic>

#include "base/error.h"

namespace trnsim {

// A run stopped by request, not by a fault or a bad input. Front ends map it to exit code 130
// (the shell's code for SIGINT) or to Python's KeyboardInterrupt.
class Interrupted : public Error {
 public:
  Interrupted() : Error("interrupted") {}
};

namespace detail {
inline std::atomic<bool> g_interrupt_requested{false};
}  // namespace detail

// Async-signal-safe: a lock-free atomic store, nothing else.
inline void request_interrupt() noexcept {
  detail::g_interrupt_requested.store(true, std::memory_order_relaxed);
}
inline void clear_interrupt() noexcept {
  detail::g_interrupt_requested.store(false, std::memory_order_relaxed);
}
// One relaxed load: cheap enough for the event loop to ask every event.
inline bool interrupt_requested() noexcept {
  return detail::g_interrupt_requested.load(std::memory_order_relaxed);
}
// Throws Interrupted when one was requested, and consumes the request: the unwinding run is the
// answer to it.
inline void check_interrupt() {
  if (!interrupt_requested()) return;
  clear_interrupt();
  throw Interrupted();
}

// While alive, SIGINT requests an interrupt instead of what the process did before (Python's
// handler, the default termination); the previous handler comes back on destruction. A request
// that no check consumed (the signal came after the run's last check) is not lost: the
// destructor raises SIGINT again for the previous handler (Python then raises
// KeyboardInterrupt; the default handler ends the process as interrupted). Install it on the
// thread that receives signals (the main thread); `enabled` false makes it a no-op.
class SigintScope {
 public:
  explicit SigintScope(bool enabled = true);
  ~SigintScope();
  SigintScope(const SigintScope&) = delete;
  SigintScope& operator=(const SigintScope&) = delete;
  // True when SIGINT arrived while the scope was alive.
  bool fired() const { return interrupt_requested(); }

 private:
  bool enabled_;
  struct sigaction previous_ {};
};

}  // namespace trnsim
