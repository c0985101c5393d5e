// The eager attention kernels (ops.h AttentionSpec::eager: attention_eager.cc and
// attention_eager_backward.cc) against an fp64 reference of the torch ops they stand for,
// written here: scores = q k^T / sqrt(d) rounded to bf16 (baddbmm's output), probs =
// softmax(scores + mask) rounded (torch's softmax), out = probs v rounded (bmm); backward
// dP = dout v^T rounded, dv = P^T dout, dS = (dP - rowsum(P dP)) P rounded, dq = dS k /
// sqrt(d), dk = dS^T q / sqrt(d) (rotated back with RoPE), each rounded when it leaves.
//
// Tolerances as the flash kernels' (ops_test_util.h, attention_backward_test.cc): both sides
// round the same values, so they differ by one ulp of a result where fp32 and fp64 fall on
// either side of a rounding boundary, and where an intermediate (a score, a probability, a
// dS) flips, which moves one term of a sum by one ulp of itself; the floors hold outputs
// near 0 to the magnitude of their terms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/timing/timing_run.h"
#include "ops/ops.h"
#include "ops/train_ops.h"
#include "ops_test_util.h"

namespace trnsim::kernel_test {
namespace {

class AttentionEagerTest : public OpsTest {};

struct EagerCase {
  int64_t batch, seq, q_heads, kv_heads, head_dim;
  bool causal, rope, qk_norm = false;
};

ops::AttentionSpec spec_of(const EagerCase& c, bool save) {
  ops::AttentionSpec s = attention_shape(c.batch, c.seq, c.q_heads, c.kv_heads, c.head_dim);
  s.causal = c.causal;
  s.rope = c.rope;
  s.qk_norm = c.qk_norm;
  s.save_lse = save;
  s.eager = true;
  return s;
}

Inputs inputs_of(const EagerCase& c) {
  const int64_t rows = c.batch * c.seq, d = c.head_dim;
  Inputs in;
  in["q"] = values(rows * c.q_heads * d, 91, 2.0f);
  in["k"] = values(rows * c.kv_heads * d, 92, 2.0f);
  in["v"] = values(rows * c.kv_heads * d, 93, 1.0f);
  in["dout"] = values(rows * c.q_heads * d, 94, 1.0f);
  if (c.qk_norm) {
    in["q_gamma"] = values(d, 95, 0.25f, 1.0f);
    in["k_gamma"] = values(d, 96, 0.25f, 1.0f);
  }
  if (c.rope) add_rope_tables(in, c.seq, d);
  return in;
}

struct Reference {
  std::vector<double> out, probs;               // the forward's
  std::vector<float> probs_in;                  // probs as the backward reads them (bf16 values)
  std::vector<double> dq, dk, dv;               // the backward's, rounded as the kernel rounds them
  std::vector<double> dq_m, dk_m, dv_m, out_m;  // magnitudes of the terms / 8
};

Reference reference(const EagerCase& c, const Inputs& in) {
  const int64_t B = c.batch, S = c.seq, Hq = c.q_heads, Hkv = c.kv_heads, d = c.head_dim;
  const int64_t group = Hq / Hkv, h2 = d / 2;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  auto at = [](int64_t row, int64_t heads, int64_t h) {
    return static_cast<size_t>(row * heads + h);
  };
  auto trig = [&](const char* t, int64_t pos, int64_t i) { return double{in.at(t)[pos * d + i]}; };
  auto prep = [&](const std::string& name, int64_t heads, int64_t b, int64_t pos, int64_t h) {
    const float* x = &in.at(name)[at(b * S + pos, heads, h) * d];
    std::vector<double> v(x, x + d);
    if (c.qk_norm) v = norm_row(Norm::kRms, 1e-6, x, d, in.at(name + "_gamma"), nullptr);
    if (c.rope) {
      std::vector<double> r(static_cast<size_t>(d));
      for (int64_t i = 0; i < d; ++i)
        r[i] = v[i] * trig("cos", pos, i) + (i < h2 ? -v[i + h2] : v[i - h2]) * trig("sin", pos, i);
      v = r;
    }
    if (c.qk_norm || c.rope)
      for (double& e : v) e = bf(e);
    return v;
  };
  auto rotate_back = [&](std::vector<double> g, int64_t pos) {
    if (!c.rope) return g;
    std::vector<double> r(g.size());
    for (int64_t i = 0; i < d; ++i)
      r[i] = g[i] * trig("cos", pos, i) + (i < h2 ? g[i + h2] * trig("sin", pos, i + h2)
                                                  : -g[i - h2] * trig("sin", pos, i - h2));
    return r;
  };
  const std::vector<float>&v = in.at("v"), &dout = in.at("dout");
  Reference r;
  const size_t qn = static_cast<size_t>(B * S * Hq * d), kn = static_cast<size_t>(B * S * Hkv * d);
  r.out.assign(qn, 0.0);
  r.out_m = r.dq = r.dq_m = r.out;
  r.dk.assign(kn, 0.0);
  r.dk_m = r.dv = r.dv_m = r.dk;
  r.probs.assign(static_cast<size_t>(B * Hq * S * S), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < Hkv; ++g) {
      std::vector<std::vector<double>> ks;
      for (int64_t j = 0; j < S; ++j) ks.push_back(prep("k", Hkv, b, j, g));
      std::vector<double> dk_acc(static_cast<size_t>(S * d), 0.0), dk_m = dk_acc, dv_acc = dk_acc,
                                                                   dv_m = dk_acc;
      for (int64_t h = g * group; h < (g + 1) * group; ++h) {
        std::vector<std::vector<double>> qs;
        for (int64_t i = 0; i < S; ++i) qs.push_back(prep("q", Hq, b, i, h));
        for (int64_t i = 0; i < S; ++i) {
          double* P = &r.probs[static_cast<size_t>(((b * Hq + h) * S + i) * S)];
          const int64_t keys = c.causal ? i + 1 : S;
          std::vector<double> sc(static_cast<size_t>(keys));
          double mx = -1e300, sum = 0;
          for (int64_t j = 0; j < keys; ++j) {
            double dot = 0;
            for (int64_t e = 0; e < d; ++e) dot += qs[i][e] * ks[j][e];
            sc[j] = bf(dot * scale);
            mx = std::max(mx, sc[j]);
          }
          for (const double x : sc) sum += std::exp(x - mx);
          for (int64_t j = 0; j < keys; ++j) P[j] = bf(std::exp(sc[j] - mx) / sum);
          const size_t o = at(b * S + i, Hq, h) * d;
          for (int64_t e = 0; e < d; ++e) {
            double acc = 0, mag = 0;
            for (int64_t j = 0; j < keys; ++j) {
              acc += P[j] * v[at(b * S + j, Hkv, g) * d + e];
              mag += std::fabs(P[j] * v[at(b * S + j, Hkv, g) * d + e]);
            }
            r.out[o + e] = bf(acc);
            r.out_m[o + e] = mag / 8;
          }
          // Backward from these probabilities.
          const float* dO = &dout[o];
          std::vector<double> dP(static_cast<size_t>(S), 0.0);
          double D = 0;
          for (int64_t j = 0; j < S; ++j) {
            double acc = 0;
            for (int64_t e = 0; e < d; ++e) acc += double{dO[e]} * v[at(b * S + j, Hkv, g) * d + e];
            dP[j] = bf(acc);
            D += P[j] * dP[j];
          }
          std::vector<double> dq_i(static_cast<size_t>(d), 0.0), dq_mi = dq_i;
          for (int64_t j = 0; j < S; ++j) {
            const double dS = bf((dP[j] - D) * P[j]);
            for (int64_t e = 0; e < d; ++e) {
              const size_t je = static_cast<size_t>(j * d + e);
              dv_acc[je] += P[j] * dO[e];
              dv_m[je] += std::fabs(P[j] * dO[e]);
              dk_acc[je] += dS * qs[i][e];
              dk_m[je] += std::fabs(dS * qs[i][e]);
              dq_i[e] += dS * ks[j][e];
              dq_mi[e] += std::fabs(dS * ks[j][e]);
            }
          }
          for (double& x : dq_i) x *= scale;
          dq_i = rotate_back(dq_i, i);
          for (int64_t e = 0; e < d; ++e) {
            r.dq[o + e] = bf(dq_i[e]);
            r.dq_m[o + e] = dq_mi[e] * scale / 8;
          }
        }
      }
      for (int64_t j = 0; j < S; ++j) {
        std::vector<double> dkj(&dk_acc[j * d], &dk_acc[j * d] + d);
        for (double& x : dkj) x *= scale;
        dkj = rotate_back(dkj, j);
        for (int64_t e = 0; e < d; ++e) {
          const size_t o = at(b * S + j, Hkv, g) * d + e, je = static_cast<size_t>(j * d + e);
          r.dk[o] = bf(dkj[e]);
          r.dk_m[o] = dk_m[je] * scale / 8;
          r.dv[o] = bf(dv_acc[je]);
          r.dv_m[o] = dv_m[je] / 8;
        }
      }
    }
  r.probs_in.assign(r.probs.begin(), r.probs.end());
  return r;
}

void check_forward(const arch::ChipSpec& spec, const EagerCase& c) {
  SCOPED_TRACE(::testing::Message()
               << "batch " << c.batch << " seq " << c.seq << " heads " << c.q_heads << "/"
               << c.kv_heads << " d " << c.head_dim << " causal " << c.causal << " rope " << c.rope
               << " qk_norm " << c.qk_norm);
  Inputs in = inputs_of(c);
  const Reference want = reference(c, in);
  in.erase("dout");
  auto got = run(spec, ops::attention(spec, spec_of(c, true)), in);
  EXPECT_TRUE(close(got["out"], want.out, c.q_heads * c.head_dim, 2e-2, 1e-2, &want.out_m))
      << "out";
  EXPECT_TRUE(close(got["probs"], want.probs, c.seq, 2e-2, 2e-3)) << "probs";
}

void check_backward(const arch::ChipSpec& spec, const EagerCase& c) {
  SCOPED_TRACE(::testing::Message()
               << "backward: batch " << c.batch << " seq " << c.seq << " heads " << c.q_heads << "/"
               << c.kv_heads << " causal " << c.causal << " rope " << c.rope);
  Inputs in = inputs_of(c);
  const Reference want = reference(c, in);
  in["probs"] = want.probs_in;
  auto got = run(spec, ops::attention_backward(spec, spec_of(c, false)), in);
  const int64_t qw = c.q_heads * c.head_dim, kw = c.kv_heads * c.head_dim;
  EXPECT_TRUE(close(got["dq"], want.dq, qw, 2e-2, 1e-2, &want.dq_m)) << "dq";
  EXPECT_TRUE(close(got["dk"], want.dk, kw, 2e-2, 1e-2, &want.dk_m)) << "dk";
  EXPECT_TRUE(close(got["dv"], want.dv, kw, 2e-2, 1e-2, &want.dv_m)) << "dv";
}

// Causal, GQA, RoPE over a partial last tile and two sequences; not causal; q/k norm.
TEST_P(AttentionEagerTest, Forward) {
  const arch::ChipSpec& spec = chip(GetParam());
  check_forward(spec, {2, 200, 4, 2, 64, true, true});
  check_forward(spec, {1, 256, 2, 2, 128, false, false});
  check_forward(spec, {1, 130, 2, 1, 32, true, true, true});
}

// Rows longer than a softmax chunk (4096): read three times (max, sum, normalise).
TEST_P(AttentionEagerTest, ForwardLongRows) {
  check_forward(chip(GetParam()), {1, 4160, 1, 1, 16, true, false});
}

TEST_P(AttentionEagerTest, Backward) {
  const arch::ChipSpec& spec = chip(GetParam());
  check_backward(spec, {1, 640, 4, 2, 64, true, true});
  check_backward(spec, {1, 256, 2, 2, 128, false, false});
  check_backward(spec, {2, 130, 2, 1, 32, true, true});
}

TEST_P(AttentionEagerTest, BackwardLongRows) {
  check_backward(chip(GetParam()), {1, 4160, 1, 1, 16, true, false});
}

// A kv head whose [S, d] fp32 gradient does not fit half of PSUM (S d > 2048 x 128): dv and dk
// accumulate in SBUF.
TEST_P(AttentionEagerTest, BackwardSbufAccumulators) {
  check_backward(chip(GetParam()), {1, 2100, 1, 1, 128, true, true});
}

TEST_P(AttentionEagerTest, RaceFree) {
  const arch::ChipSpec& spec = chip(GetParam());
  expect_race_free(ops::attention(spec, spec_of({1, 256, 4, 2, 64, true, true}, true)), spec);
  expect_race_free(ops::attention_backward(spec, spec_of({2, 200, 2, 2, 32, true, true}, false)),
                   spec);
}

TEST_P(AttentionEagerTest, RefusesKvCacheAndQkNormInBackward) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::AttentionSpec s = spec_of({1, 128, 2, 1, 64, true, false}, false);
  s.kv_cache = true;
  s.kv_seq = 256;
  EXPECT_THROW(ops::attention(spec, s), InputError);
  EXPECT_THROW(ops::attention_backward(spec, s), InputError);
  ops::AttentionSpec norm = spec_of({1, 128, 2, 1, 64, true, false, true}, false);
  EXPECT_NO_THROW(ops::attention(spec, norm));
  EXPECT_THROW(ops::attention_backward(spec, norm), InputError);
}

// A GPT-3 6.7B shard's attention (tensor parallel 8: 4 heads of 128, 2048 causal tokens, the
// Megatron-LM run of VALIDATION.md s8) against two closed-form bounds: the HBM bytes of the
// [S, S] tensors (forward: the scores written and read, the probabilities written and read;
// backward: P read twice, dP written and read, dS written and read twice) at the core's
// share of the chip's HBM bandwidth, and TensorE's work (the whole S x S, masked blocks
// included: 2 matmuls forward, 4 and the dS transposes backward) at the bf16 peak.
TEST_P(AttentionEagerTest, TimingGpt3Shard) {
  const arch::ChipSpec& spec = chip(GetParam());
  const EagerCase c{1, 2048, 4, 4, 128, true, false};
  const double S = 2048, pairs = S * S * 4, bytes_per = 2;
  // Bytes per second a core moves: its share of the chip's HBM, or its DMA engines' practical
  // peak (HARDWARE.md s4), whichever is less.
  const double hbm = std::min(spec.chip.hbm.bandwidth_gbps / static_cast<double>(spec.chip.cores),
                              spec.core.dma.engine_bandwidth_practical_gbps *
                                  static_cast<double>(spec.core.dma.engines)) *
                     1e9;
  for (const bool backward : {false, true}) {
    const ops::AttentionSpec a = spec_of(c, !backward);
    const isa::Program p = backward ? ops::attention_backward(spec, a) : ops::attention(spec, a);
    EXPECT_EQ(p.spill.tiles, 0);
    const core::TimingResult r = core::run_timing(spec, p);
    ASSERT_TRUE(r.ok()) << r.summary();
    const double hbm_us = (backward ? 7.0 : 4.0) * pairs * bytes_per / hbm * 1e6;
    const double pe_us = (backward ? 5.0 : 2.0) * 2.0 * 128 * pairs / r.tensor_peak_flops * 1e6;
    const double sim_us = static_cast<double>(r.total.v) * 1e-6;
    const double bound = std::max(hbm_us, pe_us);
    std::printf(
        "eager attention %s %s: %.1f us simulated, HBM bound %.1f us, TensorE bound %.1f "
        "us, ratio %.2f (PE %.0f%% ACT %.0f%% DVE %.0f%% POOL %.0f%% busy)\n",
        backward ? "backward" : "forward", GetParam().c_str(), sim_us, hbm_us, pe_us,
        sim_us / bound, r.busy_percent(isa::Engine::kTensor), r.busy_percent(isa::Engine::kScalar),
        r.busy_percent(isa::Engine::kVector), r.busy_percent(isa::Engine::kGpSimd));
    if (std::getenv("EAGER_SUMMARY") != nullptr) std::printf("%s\n", r.summary().c_str());
    EXPECT_GT(sim_us / bound, 1.0);
    EXPECT_LT(sim_us / bound, 3.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Generations, AttentionEagerTest, ::testing::ValuesIn(kGenerations));

}  // namespace
}  // namespace trnsim::kernel_test
