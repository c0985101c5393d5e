// The instruction structs the timing model compares as bytes (isa/instruction.h,
// isa/access_pattern.h, numerics/format.h) have no implicit padding: their members, the
// `reserved` ones included, add up to the whole struct. A new field that opens a gap fails
// here (add a reserved member), and one left out of these lists fails too.
#include <gtest/gtest.h>

#include <limits>
#include <type_traits>

#include "isa/instruction.h"

namespace trnsim::isa {
namespace {

template <class... Sizes>
constexpr size_t sum(Sizes... s) {
  return (size_t{0} + ... + s);
}

#define F(T, m) sizeof(T::m)

TEST(Layout, ScalarArgHasNoPadding) {
  static_assert(std::is_trivially_copyable_v<ScalarArg>);
  EXPECT_EQ(sum(F(ScalarArg, imm), F(ScalarArg, operand), F(ScalarArg, reserved)),
            sizeof(ScalarArg));
}

TEST(Layout, ParamsHasNoPadding) {
  static_assert(std::is_trivially_copyable_v<Params>);
  using P = Params;
  const size_t members =
      sum(F(P, op0), F(P, op1), F(P, reduce_op), F(P, reserved0), F(P, arg0), F(P, arg1),
          F(P, reverse0), F(P, reverse1), F(P, reduce_axes), F(P, func), F(P, scale), F(P, bias),
          F(P, alpha), F(P, acc), F(P, perf_mode), F(P, tile_row), F(P, tile_col), F(P, tile_rows),
          F(P, tile_cols), F(P, transpose), F(P, reserved1), F(P, value), F(P, iota_base),
          F(P, channel_multiplier), F(P, rounding), F(P, reserved2), F(P, dma_queue),
          F(P, dma_accumulate), F(P, dma_skip_oob), F(P, send_to), F(P, recv_from), F(P, pipe),
          F(P, reg_dst), F(P, reg_a), F(P, reg_b), F(P, reserved4), F(P, reg_imm),
          F(P, branch_target), F(P, gather_elems), F(P, gather_indices), F(P, shuffle),
          F(P, collective), F(P, collective_flags), F(P, replica_group), F(P, collective_outer));
  EXPECT_EQ(members, sizeof(Params));
}

TEST(Layout, FormatHasNoPadding) {
  using N = num::Format;
  static_assert(std::is_trivially_copyable_v<N>);
  EXPECT_EQ(
      sum(F(N, dtype), F(N, kind), F(N, storage_bytes), F(N, bits), F(N, exp_bits), F(N, man_bits),
          F(N, code_shift), F(N, reserved), F(N, bias), F(N, specials), F(N, is_signed)),
      sizeof(N));
}

TEST(Layout, AccessPatternHasNoPadding) {
  using A = AccessPattern;
  static_assert(std::is_trivially_copyable_v<A>);
  EXPECT_EQ(sum(F(A, space), F(A, dyn_reg), F(A, dtype), F(A, reserved1), F(A, start_partition),
                F(A, num_partitions), F(A, partition_stride), F(A, offset), F(A, dims), F(A, ndim),
                F(A, dyn_max), F(A, dyn_step)),
            sizeof(A));
  EXPECT_EQ(sum(F(FreeDim, stride), F(FreeDim, size)), sizeof(FreeDim));
}

#undef F

// Byte equality is field equality with floats by bits: every field counts, -0 differs from +0,
// and a NaN equals the same NaN.
TEST(Layout, ParamsEqualityIsFieldByField) {
  const Params base;
  EXPECT_EQ(base, Params{});
  Params p = base;
  p.reg_imm = 1;
  EXPECT_FALSE(p == base);
  p = base;
  p.branch_target = 7;
  EXPECT_FALSE(p == base);
  p = base;
  p.arg1.operand = 2;
  EXPECT_FALSE(p == base);
  p = base;
  p.value = -0.0;
  EXPECT_FALSE(p == base);
  p = base;
  p.alpha = std::numeric_limits<float>::quiet_NaN();
  Params q = p;
  EXPECT_EQ(p, q);
  q.alpha = -q.alpha;  // the sign bit of a NaN: a different bit pattern
  EXPECT_FALSE(p == q);
}

TEST(Layout, ScalarArgEqualityIsByBits) {
  EXPECT_EQ((ScalarArg{1.5f, 2}), (ScalarArg{1.5f, 2}));
  EXPECT_FALSE((ScalarArg{0.0f, -1}) == (ScalarArg{-0.0f, -1}));
  EXPECT_FALSE((ScalarArg{1.0f, -1}) == (ScalarArg{1.0f, 0}));
}

}  // namespace
}  // namespace trnsim::isa
