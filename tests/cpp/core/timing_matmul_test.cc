// Closed-form bounds for TensorE (STYLE.md 12): N back-to-back independent matmuls of moving
// size n take N x max(n, MM_INIT_LATENCY) PE cycles (HARDWARE.md s8.1), FP32 four times that,
// and the stationary loads hide behind the previous matmul ("background LS").
#include <gtest/gtest.h>

#include "core/timing/timing_run.h"
#include "core/timing_test_util.h"
#include "sim/clock.h"

namespace trnsim::core {
namespace {

using namespace testing;

struct Chain {
  int count = 0;
  int64_t n = 0;
  num::Format dtype = num::bf16();
  bool reload = false;  // a LoadStationary before every matmul
};

bool reload_needed(const Chain& c, int i) { return c.reload && i > 0; }

isa::Program chain_program(const Chain& c) {
  isa::Program p;
  p.append(load_stationary(sbuf(128, 128, c.dtype)));
  for (int i = 0; i < c.count; ++i) {
    if (reload_needed(c, i)) p.append(load_stationary(sbuf(128, 128, c.dtype)));
    p.append(matmul(psum(128, c.n), sbuf(128, c.n, c.dtype)));
  }
  return p;
}

TEST(TimingMatmul, BackToBackChainClosedForm) {
  const auto& spec = chip("trn2").core;
  const sim::Clock pe = sim::Clock::from_ghz(spec.tensor.clock_ghz);
  const uint64_t ls = 128 / 4;      // F / 4
  const uint64_t fixed = 100 + 60;  // static + access setup
  for (int64_t n : {16, 64, 128, 512}) {
    for (bool fp32 : {false, true}) {
      for (bool reload : {false, true}) {
        Chain c{200, n, fp32 ? num::fp32() : num::bf16(), reload};
        const TimingResult r = run_timing(chip("trn2"), chain_program(c));
        ASSERT_TRUE(r.ok()) << r.faults.to_string();
        const uint64_t ii = static_cast<uint64_t>(std::max<int64_t>(n, 64)) * (fp32 ? 4 : 1);
        const uint64_t ls_c = ls * (fp32 ? 4 : 1);
        // First LS, then one matmul every ii; the last one's latency adds the fixed overhead.
        // Reloaded stationaries load in the background while the previous matmul streams.
        const uint64_t expect = ls_c + c.count * ii + fixed;
        EXPECT_EQ(r.total, pe.cycles_to_ps(expect))
            << "n=" << n << " fp32=" << fp32 << " reload=" << reload;
        // The bound itself: N x max(n, 64) cycles, within the one-off fill and drain.
        const double bound = static_cast<double>(pe.cycles_to_ps(c.count * ii).v);
        EXPECT_NEAR(static_cast<double>(r.total.v) / bound, 1.0, 0.02);
        EXPECT_EQ(r.engines[0].instructions,
                  static_cast<uint64_t>(c.count + 1 + (reload ? c.count - 1 : 0)));
      }
    }
  }
}

TEST(TimingMatmul, UtilisationAgainstTheBf16Peak) {
  // 128x128x512 bf16 matmuls back to back: 512 columns per 512 cycles is the peak rate.
  const TimingResult r = run_timing(chip("trn2"), chain_program({1000, 512, num::bf16(), false}));
  EXPECT_NEAR(r.tensor_flops, 1000 * 2.0 * 128 * 128 * 512, 1.0);
  EXPECT_GT(r.tensor_utilisation(), 0.99);
  EXPECT_LE(r.tensor_utilisation(), 1.0);
  // FP32 runs at a quarter of the BF16 peak.
  const TimingResult f = run_timing(chip("trn2"), chain_program({1000, 512, num::fp32(), false}));
  EXPECT_NEAR(f.tensor_utilisation(), 0.25, 0.01);
}

}  // namespace
}  // namespace trnsim::core
