// The engines' random generators: rand_seed, rand and dropout (NKI nl.random_seed /
// rand_set_state / set_rng_seed, nl.rand, nisa.dropout). The hardware keeps a pseudo-random
// generator per lane inside VectorE and GpSimd (XORWOW, NKI rand_set_state), seeded by the
// kernel and persistent between instructions; how it turns state into values is not public.
// trnsim keeps the same structure, a seed per lane and the count of values drawn since it was
// set, and draws with its counter-based generator (base/counter_rng.h): value k of lane p is
// Philox(seed_p; stream: engine and lane; index k). Same seeds, same sequences, as NKI
// promises; the values do not match the hardware's (docs/nki.md). rng gives the raw words,
// rand2 a range, rand_get_state the (seed, count) state as words that rand_seed restores.
#include <fmt/format.h>

#include <vector>

#include "base/counter_rng.h"
#include "core/exec/int_path.h"
#include "core/exec/semantics.h"

namespace trnsim::core {

namespace {

// Streams of the generators: bit 63 keeps them apart from the stochastic-rounding streams
// (sr_stream), which are keyed by instruction.
constexpr uint64_t kRngStreamBit = uint64_t{1} << 63;
constexpr float kTwoToMinus24 = 1.0f / 16777216.0f;

uint64_t mix64(uint64_t x) {  // splitmix64's finaliser: every seed word moves every bit
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The next 32-bit word of lane `lane`.
uint32_t draw_bits(ExecContext& ctx, std::vector<ExecState::RngLane>& lanes, int64_t lane) {
  ExecState::RngLane& l = lanes[static_cast<size_t>(lane)];
  const uint64_t stream =
      kRngStreamBit | (static_cast<uint64_t>(ctx.engine) << 32) | static_cast<uint64_t>(lane);
  return random_u32(l.seed, stream, l.drawn++);
}

// The next value of lane `lane`, uniform in [0, 1) on a 2^-24 grid (exact in fp32).
float draw(ExecContext& ctx, std::vector<ExecState::RngLane>& lanes, int64_t lane) {
  return static_cast<float>(draw_bits(ctx, lanes, lane) >> 8) * kTwoToMinus24;
}

// rand_get_state's words: seed (low, high), draws since (low, high), this marker, zeros. A
// seed row that carries the marker restores the lane exactly (rand_set_state of saved state).
constexpr uint32_t kStateMarker = 0x534e5254;  // "TRNS"
constexpr size_t kStateWords = 5;

}  // namespace

// Operand: src [1 or P, k] int32 / uint32. Lane p takes row p (or row 0 for a one-row src),
// its k words mixed into one seed; every lane's draws start again.
void exec_rand_seed(ExecContext& ctx) {
  std::vector<uint32_t> words;
  read_bits(ctx, 0, words);
  std::vector<ExecState::RngLane>& lanes = ctx.rng_lanes();
  const int64_t rows = ctx.rows(0), k = ctx.cols(0), first = ctx.ap(0).start_partition;
  for (int64_t lane = 0; lane < static_cast<int64_t>(lanes.size()); ++lane) {
    const int64_t r = rows == 1 ? 0 : lane - first;
    if (r < 0 || r >= rows) continue;  // lanes outside src keep their state
    const uint32_t* w = words.data() + r * k;
    if (k >= static_cast<int64_t>(kStateWords) && w[4] == kStateMarker) {
      lanes[static_cast<size_t>(lane)] = {w[0] | uint64_t{w[1]} << 32, w[2] | uint64_t{w[3]} << 32};
      continue;
    }
    uint64_t seed = 0;
    for (int64_t i = 0; i < k; ++i) seed = mix64(seed ^ w[i]);
    lanes[static_cast<size_t>(lane)] = {seed, 0};
  }
}

// Operand: dst [P, F]: F draws of each of its lanes, in free-element order.
void exec_rand(ExecContext& ctx) {
  std::vector<ExecState::RngLane>& lanes = ctx.rng_lanes();
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0), first = ctx.ap(0).start_partition;
  mem::Tile& out = ctx.temp(0, rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i) out.at(r, i) = draw(ctx, lanes, first + r);
  ctx.write(0, out);
}

// Operand: dst [P, F] of an integer type: F 32-bit words of each lane, the low bits kept
// (NKI rng: "truncates each 32-bit random value ... taking the least significant bits").
void exec_rng(ExecContext& ctx) {
  std::vector<ExecState::RngLane>& lanes = ctx.rng_lanes();
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0), first = ctx.ap(0).start_partition;
  std::vector<uint32_t> bits(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i)
      bits[static_cast<size_t>(r * cols + i)] = draw_bits(ctx, lanes, first + r);
  write_bits(ctx, 0, bits.data());
}

// Operand: dst [P, F]; arg0 / arg1 the range (numbers or [P, 1] columns): dst = a + u (b - a),
// each an fp32 operation, u the lane's next uniform [0, 1) draw.
void exec_rand2(ExecContext& ctx) {
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0), first = ctx.ap(0).start_partition;
  const auto lo = ctx.scalar(ctx.p.arg0, rows, "min (arg0)");
  const auto hi = ctx.scalar(ctx.p.arg1, rows, "max (arg1)");
  if (!lo || !hi) return;
  std::vector<ExecState::RngLane>& lanes = ctx.rng_lanes();
  mem::Tile& out = ctx.temp(0, rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float a = lo->at(r), width = hi->at(r) - a;
    for (int64_t i = 0; i < cols; ++i) out.at(r, i) = a + draw(ctx, lanes, first + r) * width;
  }
  ctx.write(0, out);
}

// Operand: dst [P, 6 or 24] uint32 from partition 0: row p = lane p's state words.
void exec_rand_state(ExecContext& ctx) {
  std::vector<ExecState::RngLane>& lanes = ctx.rng_lanes();
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0), first = ctx.ap(0).start_partition;
  std::vector<uint32_t> w(static_cast<size_t>(rows * cols), 0);
  for (int64_t r = 0; r < rows && first + r < static_cast<int64_t>(lanes.size()); ++r) {
    const ExecState::RngLane& l = lanes[static_cast<size_t>(first + r)];
    const uint32_t state[kStateWords] = {
        static_cast<uint32_t>(l.seed), static_cast<uint32_t>(l.seed >> 32),
        static_cast<uint32_t>(l.drawn), static_cast<uint32_t>(l.drawn >> 32), kStateMarker};
    for (size_t i = 0; i < kStateWords && static_cast<int64_t>(i) < cols; ++i)
      w[static_cast<size_t>(r * cols) + i] = state[i];
  }
  write_bits(ctx, 0, w.data());
}

// Operands: dst, src [P, F]; arg0 the drop probability (a number or a [P, 1] column). Each
// element takes one draw of its lane and is dropped (0) when the draw is below the
// probability: probability 0 keeps everything, 1 drops everything.
void exec_dropout(ExecContext& ctx) {
  if (!ctx.same_shape(0, 1)) return;
  const int64_t rows = ctx.rows(1), cols = ctx.cols(1), first = ctx.ap(1).start_partition;
  const std::optional<ExecContext::Scalar> prob = ctx.scalar(ctx.p.arg0, rows, "prob");
  if (!prob) return;
  mem::Tile& x = ctx.read(1);
  std::vector<ExecState::RngLane>& lanes = ctx.rng_lanes();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i)
      if (draw(ctx, lanes, first + r) < prob->at(r)) x.at(r, i) = 0.0f;
  ctx.write(0, x);
}

}  // namespace trnsim::core
