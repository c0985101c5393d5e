#include "kernel_test_util.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <memory>

#include "arch/arch.h"
#include "core/exec/functional_runner.h"

namespace trnsim::kernel_test {

const arch::ChipSpec& chip(const std::string& name) {
  static std::map<std::string, std::unique_ptr<arch::ChipSpec>> cache;
  auto& slot = cache[name];
  if (!slot) slot = std::make_unique<arch::ChipSpec>(arch::load_chip(name));
  return *slot;
}

std::map<std::string, std::vector<float>> run(const arch::ChipSpec& spec, const isa::Program& prog,
                                              const std::map<std::string, std::vector<float>>& in) {
  core::FunctionalRunner runner(spec, prog);
  for (const auto& [name, values] : in) runner.write_tensor_f32(name, values);
  const core::RunResult r = runner.run();
  EXPECT_TRUE(r.ok) << "faults: " << runner.faults().size();
  for (size_t i = 0; i < runner.faults().size() && i < 5; ++i)
    ADD_FAILURE() << runner.faults()[i].instruction << ": " << runner.faults()[i].message;
  std::map<std::string, std::vector<float>> out;
  for (const isa::HbmTensor& t : prog.tensors)
    if (t.is_output()) out[t.name] = runner.read_tensor_f32(t.name);
  return out;
}

void expect_same_timing(const core::TimingResult& a, const core::TimingResult& b) {
  EXPECT_EQ(a.total, b.total);
  EXPECT_EQ(a.instructions, b.instructions);
  EXPECT_EQ(a.dma.transfers, b.dma.transfers);
  EXPECT_EQ(a.dma.pieces, b.dma.pieces);
  EXPECT_EQ(a.dma.bytes, b.dma.bytes);
  EXPECT_EQ(a.dma.hbm_read_bytes, b.dma.hbm_read_bytes);
  EXPECT_EQ(a.dma.hbm_write_bytes, b.dma.hbm_write_bytes);
  EXPECT_EQ(a.dma.finish, b.dma.finish);
  EXPECT_EQ(a.dma.engine_busy, b.dma.engine_busy);
  for (size_t e = 0; e < a.engines.size(); ++e) {
    EXPECT_EQ(a.engines[e].instructions, b.engines[e].instructions) << "engine " << e;
    EXPECT_EQ(a.engines[e].finish, b.engines[e].finish) << "engine " << e;
    EXPECT_EQ(a.engines[e].busy, b.engines[e].busy) << "engine " << e;
    EXPECT_EQ(a.engines[e].background_busy, b.engines[e].background_busy) << "engine " << e;
  }
  EXPECT_EQ(a.tensor_flops, b.tensor_flops);
  EXPECT_EQ(a.sbuf_high_water, b.sbuf_high_water);
  EXPECT_EQ(a.psum_high_water, b.psum_high_water);
}

float round_bf16(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t lsb = (u >> 16) & 1u;
  u += 0x7FFFu + lsb;  // ties to even
  return std::bit_cast<float>(u & 0xFFFF0000u);
}

namespace {
// splitmix64: a small, well-known generator, independent of trnsim's RNG.
uint64_t next(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

std::vector<float> small_ints(size_t n, int lo, int hi, uint64_t seed) {
  std::vector<float> v(n);
  const uint64_t span = static_cast<uint64_t>(hi - lo + 1);
  for (float& x : v) x = static_cast<float>(lo + static_cast<int>(next(seed) % span));
  return v;
}

std::vector<float> sixty_fourths(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(static_cast<int>(next(seed) % 129) - 64) / 64.0f;
  return v;
}

ErrorStats compare(const std::vector<float>& got, const std::vector<double>& want,
                   double rel_floor) {
  ErrorStats e;
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(d <= e.max_abs)) e.max_abs = d;  // NaN propagates into the stats
    const double r = d / std::max(std::fabs(want[i]), rel_floor);
    if (!(r <= e.max_rel)) e.max_rel = r;
  }
  return e;
}

}  // namespace trnsim::kernel_test
