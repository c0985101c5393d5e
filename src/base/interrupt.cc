#include "base/interrupt.h"

namespace trnsim {

namespace {
void on_sigint(int /*signal*/) { request_interrupt(); }
}  // namespace

static_assert(std::atomic<bool>::is_always_lock_free,
              "request_interrupt() runs in a signal handler: the flag must be lock-free");

SigintScope::SigintScope(bool enabled) : enabled_(enabled) {
  if (!enabled_) return;
  clear_interrupt();
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  // No SA_RESTART: a blocking read in the front end should see EINTR, not wait on.
  action.sa_flags = 0;
  if (sigaction(SIGINT, &action, &previous_) != 0) enabled_ = false;
}

SigintScope::~SigintScope() {
  if (!enabled_) return;
  sigaction(SIGINT, &previous_, nullptr);
  if (interrupt_requested()) {
    clear_interrupt();
    raise(SIGINT);  // not consumed: the previous handler answers it
  }
}

}  // namespace trnsim
