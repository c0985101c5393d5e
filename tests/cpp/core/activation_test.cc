// ScalarE activation for every function, against the test's own double-precision formulas
// rounded by encode() (the documented precision: func in double, rounded once to FP32, then
// the output cast), with scale / bias as immediates and as [P,1] columns, the add-reduction,
// and the NC-v4 exponential with its running sum.
#include <cmath>
#include <numbers>

#include "exec_test_util.h"
#include "isa/names.h"

namespace trnsim::core::testing {
namespace {

using isa::ActFunc;
using isa::Engine;
using isa::Opcode;

double f32(double v) { return round_to(num::fp32(), v); }

// The functions, written independently of act_func.cc (different but equivalent formulas
// where one exists).
double ref(ActFunc fn, double x, double a) {
  const double pi = std::numbers::pi;
  auto sig = [](double t) { return std::exp(t) / (1.0 + std::exp(t)); };
  switch (fn) {
    case ActFunc::kCopy:
      return x;
    case ActFunc::kSquare:
      return x * x;
    case ActFunc::kSigmoid:
      return sig(x);
    case ActFunc::kRelu:
      return std::max(x, 0.0);
    case ActFunc::kPrelu:
      return x >= 0 ? x : a * x;
    case ActFunc::kGelu:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case ActFunc::kGeluDx:
      return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
             x * std::exp(-x * x / 2) / std::sqrt(2 * pi);
    case ActFunc::kGeluApprxTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715 * std::pow(x, 3))));
    case ActFunc::kGeluApprxSigmoid:
      return x * sig(1.702 * x);
    case ActFunc::kGeluApprxSigmoidDx:
      return sig(1.702 * x) * (1 + 1.702 * x * (1 - sig(1.702 * x)));
    case ActFunc::kSilu:
      return x * sig(x);
    case ActFunc::kSiluDx:
      return sig(x) + x * sig(x) * (1 - sig(x));
    case ActFunc::kTanh:
      return std::tanh(x);
    case ActFunc::kSoftplus:
      return std::log(1 + std::exp(x));
    case ActFunc::kMish:
      return x * std::tanh(std::log(1 + std::exp(x)));
    case ActFunc::kErf:
      return std::erf(x);
    case ActFunc::kErfDx:
      return 2 / std::sqrt(pi) * std::exp(-x * x);
    case ActFunc::kExp:
      return std::exp(x);
    case ActFunc::kLog:
      return std::log(x);
    case ActFunc::kSin:
      return std::sin(x);
    case ActFunc::kArctan:
      return std::atan(x);
    case ActFunc::kSqrt:
      return std::sqrt(x);
    case ActFunc::kRsqrt:
      return 1 / std::sqrt(x);
    case ActFunc::kReciprocal:
      return 1 / x;
    case ActFunc::kSign:
      return (x > 0) - (x < 0);
    case ActFunc::kAbs:
      return std::fabs(x);
  }
  return x;
}

bool positive_domain(ActFunc fn) {
  return fn == ActFunc::kLog || fn == ActFunc::kSqrt || fn == ActFunc::kRsqrt;
}

class ActivationTest : public ::testing::TestWithParam<num::Format> {};

TEST_P(ActivationTest, EveryFunctionWithinOneUlpAndMostlyExact) {
  const num::Format f = GetParam();
  for (int fi = 0; fi <= static_cast<int>(ActFunc::kAbs); ++fi) {
    const auto fn = static_cast<ActFunc>(fi);
    Harness h;
    Rng rng(static_cast<uint64_t>(fi) + 100);
    const auto x = sbuf(f, 0, 128, 0, {16});
    const auto bias = sbuf(num::fp32(), 0, 128, 1024, {1});
    const auto d = sbuf(num::fp32(), 0, 128, 2048, {16});
    std::vector<double> vx = rng.values(f, 128 * 16, 3);
    if (positive_domain(fn))
      for (double& v : vx) v = round_to(f, std::fabs(v) + 0.25);
    const auto vb = rng.values(num::fp32(), 128, positive_domain(fn) ? 0.0 : 0.5);
    h.put(x, vx);
    h.put(bias, vb);
    isa::Params p;
    p.func = fn;
    p.scale = {0.875f, -1};
    p.bias = {0, 2};
    p.alpha = 0.125f;
    ASSERT_TRUE(h.run(make(Opcode::kActivation, Engine::kScalar, {d, x, bias}, p)))
        << h.faults().to_string();
    const auto out = h.get(d);
    int inexact = 0;
    for (int r = 0; r < 128; ++r)
      for (int i = 0; i < 16; ++i) {
        const size_t k = static_cast<size_t>(r * 16 + i);
        const double want = ref(fn, vx[k] * 0.875 + vb[static_cast<size_t>(r)], 0.125);
        const double ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(want), 0x1p-126)) - 23);
        ASSERT_LE(std::fabs(out[k] - want), ulp) << isa::name_of(fn) << " x=" << vx[k];
        inexact += !same(out[k], f32(want));
      }
    // Different formulas agree with correct rounding except near rounding boundaries.
    EXPECT_LE(inexact, 128 * 16 / 50) << isa::name_of(fn);
  }
}

TEST_P(ActivationTest, ActivationReduceSumsFp32Results) {
  const num::Format f = GetParam();
  Harness h;
  Rng rng(77);
  const auto x = sbuf(f, 0, 32, 0, {50});
  const auto d = sbuf(f, 32, 32, 0, {50});
  const auto red = sbuf(num::fp32(), 32, 32, 512, {1});
  const auto vx = rng.values(f, 32 * 50, 2);
  h.put(x, vx);
  isa::Params p;
  p.func = ActFunc::kExp;
  p.scale = {-1.0f, -1};
  ASSERT_TRUE(h.run(make(Opcode::kActivationReduce, Engine::kScalar, {d, red, x}, p)))
      << h.faults().to_string();
  const auto out = h.get(d), rv = h.get(red);
  for (int r = 0; r < 32; ++r) {
    double acc = 0;
    for (int i = 0; i < 50; ++i) {
      const size_t k = static_cast<size_t>(r * 50 + i);
      const double y = f32(std::exp(-vx[k]));
      ASSERT_TRUE(same(out[k], round_to(f, y)));
      acc = i == 0 ? y : f32(acc + y);
    }
    ASSERT_TRUE(same(rv[static_cast<size_t>(r)], acc));
  }
}

TEST_P(ActivationTest, ExponentialSubtractsMaxAndKeepsRunningSum) {
  const num::Format f = GetParam();
  Harness h(4);
  Rng rng(5);
  const auto x = sbuf(f, 0, 64, 0, {40});
  const auto m = sbuf(num::fp32(), 0, 64, 1024, {1});
  const auto d = sbuf(f, 0, 64, 2048, {40});
  const auto vx = rng.values(f, 64 * 40, 4), vm = rng.values(num::fp32(), 64, 4);
  h.put(x, vx);
  h.put(m, vm);
  isa::Params p;
  p.arg0 = {0, 2};
  const auto in = make(Opcode::kExponential, Engine::kVector, {d, x, m}, p);
  ASSERT_TRUE(h.run(in)) << h.faults().to_string();
  ASSERT_TRUE(h.run(in));
  const auto out = h.get(d);
  const auto& acc = h.exec().vector_accumulator();
  for (int r = 0; r < 64; ++r) {
    double sum = 0;
    for (int i = 0; i < 40; ++i) {
      const size_t k = static_cast<size_t>(r * 40 + i);
      const double y = f32(std::exp(f32(vx[k] - vm[static_cast<size_t>(r)])));
      ASSERT_TRUE(same(out[k], round_to(f, y)));
      sum = i == 0 ? y : f32(sum + y);
    }
    ASSERT_TRUE(same(acc[static_cast<size_t>(r)], f32(f32(0 + sum) + sum)));  // two instructions
  }
  Harness v3(3);
  EXPECT_FALSE(v3.run(in));
  EXPECT_EQ(v3.faults()[0].kind, mem::FaultKind::kUnsupported);
}

INSTANTIATE_TEST_SUITE_P(Formats, ActivationTest, ::testing::ValuesIn(float_formats()),
                         [](const auto& info) { return info.param.name(); });

}  // namespace
}  // namespace trnsim::core::testing
