// stream_shuffle against a reference written here from the NKI API reference
// (nc_stream_shuffle): dst partition 32 q + i = src partition 32 q + mask[i] of the same
// quadrant, counted from each operand's first partition; 255 keeps dst; raw codes move, so every
// bit pattern survives; the text form carries the mask (validation: tests/cpp/isa).
#include <vector>

#include "base/error.h"
#include "exec_test_util.h"
#include "isa/param_keys.h"

namespace trnsim::core::testing {
namespace {

using isa::Engine;
using isa::Opcode;

isa::Instruction shuffle_op(const isa::AccessPattern& dst, const isa::AccessPattern& src,
                            const std::array<uint8_t, 32>& mask) {
  isa::Params p;
  p.shuffle = mask;
  return make(Opcode::kStreamShuffle, Engine::kVector, {dst, src}, p);
}

std::vector<uint64_t> reference(const std::vector<uint64_t>& src, const std::vector<uint64_t>& dst,
                                int64_t rows, int64_t f, const std::array<uint8_t, 32>& mask) {
  std::vector<uint64_t> out = dst;
  for (int64_t j = 0; j < rows; ++j) {
    const uint8_t m = mask[static_cast<size_t>(j % 32)];
    if (m == isa::kShuffleKeep) continue;
    for (int64_t c = 0; c < f; ++c)
      out[static_cast<size_t>(j * f + c)] = src[static_cast<size_t>((j / 32 * 32 + m) * f + c)];
  }
  return out;
}

TEST(StreamShuffle, EveryQuadrantMovesByTheMaskAndKeptPartitionsStay) {
  for (const num::Format f : {num::bf16(), num::fp32(), num::fp8_e4m3()}) {
    Harness h;
    Rng rng(11);
    const int64_t n = 50, rows = 128;
    const auto src = sbuf(f, 0, rows, 0, {n});
    const auto dst = sbuf(f, 0, rows, 4096, {n});
    std::array<uint8_t, 32> mask{};
    for (size_t i = 0; i < 32; ++i) mask[i] = static_cast<uint8_t>((i * 7 + 3) % 32);
    mask[5] = mask[30] = isa::kShuffleKeep;
    const uint64_t code_mask = (uint64_t{1} << (8 * f.storage_bytes)) - 1;
    std::vector<uint64_t> s(static_cast<size_t>(rows * n)), d(s.size());
    for (uint64_t& e : s) e = rng.next() & code_mask;  // any bit pattern, NaNs included
    for (uint64_t& e : d) e = rng.next() & code_mask;
    h.put_codes(src, s);
    h.put_codes(dst, d);
    ASSERT_TRUE(h.run(shuffle_op(dst, src, mask)));
    EXPECT_EQ(h.get_codes(dst), reference(s, d, rows, n, mask)) << f.name();
  }
}

TEST(StreamShuffle, InPlaceAndOneSourcePartitionBroadcast) {
  Harness h;
  const auto t = sbuf(num::fp32(), 32, 32, 0, {4});  // the second quadrant
  std::vector<uint64_t> v(32 * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0x3f800000u + i;
  h.put_codes(t, v);
  std::array<uint8_t, 32> rev{};
  for (size_t i = 0; i < 32; ++i) rev[i] = static_cast<uint8_t>(31 - i);
  ASSERT_TRUE(h.run(shuffle_op(t, t, rev)));
  EXPECT_EQ(h.get_codes(t), reference(v, v, 32, 4, rev));
  // One source partition (64) onto a quadrant starting at 96: a zero mask.
  const auto one = sbuf(num::fp32(), 64, 1, 0, {4});
  const auto q3 = sbuf(num::fp32(), 96, 32, 0, {4});
  h.put_codes(one, {1, 2, 3, 4});
  ASSERT_TRUE(h.run(shuffle_op(q3, one, std::array<uint8_t, 32>{})));
  const auto got = h.get_codes(q3);
  for (size_t j = 0; j < 32; ++j)
    for (size_t c = 0; c < 4; ++c) EXPECT_EQ(got[j * 4 + c], c + 1) << j;
}

TEST(StreamShuffle, TheTextFormCarriesTheMask) {
  std::array<uint8_t, 32> mask{};
  for (size_t i = 0; i < 32; ++i) mask[i] = static_cast<uint8_t>(i % 3 == 0 ? 255 : 31 - i);
  isa::Params p;
  p.shuffle = mask;
  const std::string text = isa::format_param(isa::ParamKey::kShuffle, p);
  isa::Params back;
  isa::parse_param(isa::ParamKey::kShuffle, text, back);
  EXPECT_EQ(back.shuffle, mask);
  EXPECT_THROW(isa::parse_param(isa::ParamKey::kShuffle, "1:2:3", back), trnsim::InputError);
}

}  // namespace
}  // namespace trnsim::core::testing
