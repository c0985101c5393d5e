// Ctrl-C as the front ends see it: SigintScope turns SIGINT into a request the simulator's
// checks consume; a request no check consumed goes to the previous handler when the scope ends.
#include "base/interrupt.h"

#include <gtest/gtest.h>

#include <atomic>

namespace trnsim {
namespace {

std::atomic<int> g_previous_calls{0};
void previous_handler(int /*signal*/) { ++g_previous_calls; }

TEST(SigintScope, ARequestIsConsumedByTheCheckOrPassedOn) {
  struct sigaction mine {};
  mine.sa_handler = previous_handler;
  sigemptyset(&mine.sa_mask);
  struct sigaction before {};
  ASSERT_EQ(sigaction(SIGINT, &mine, &before), 0);
  g_previous_calls = 0;
  {
    const SigintScope scope;
    raise(SIGINT);
    EXPECT_TRUE(interrupt_requested());
    EXPECT_THROW(check_interrupt(), Interrupted);
    EXPECT_FALSE(interrupt_requested());  // consumed: the unwinding run answers it
  }
  EXPECT_EQ(g_previous_calls, 0);
  {
    const SigintScope scope;
    raise(SIGINT);  // after the run's last check: nobody consumes it
  }
  EXPECT_EQ(g_previous_calls, 1);  // the previous handler got it when the scope ended
  EXPECT_FALSE(interrupt_requested());
  {
    const SigintScope off(false);  // another thread's scope: the handler stays as it was
    raise(SIGINT);
    EXPECT_FALSE(interrupt_requested());
  }
  EXPECT_EQ(g_previous_calls, 2);
  sigaction(SIGINT, &before, nullptr);
}

}  // namespace
}  // namespace trnsim
