// Bulk conversion: one loop per (source container, destination container) pair, instantiated
// from a template, with the funnel inlined and the target's constants computed once, so the
// per-element work has no virtual dispatch and no allocation. The fast paths below are bit
// arithmetic that equals the funnel for every input (checked exhaustively / on random bit patterns
// by tests/cpp/numerics/smoke_test.cc).
#include "numerics/convert.h"

#include <cstring>

#include "base/counter_rng.h"
#include "base/error.h"
#include "numerics/funnel.h"

namespace trnsim::num {

namespace {

template <typename T>
T load(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void store(void* base, size_t i, T v) {
  std::memcpy(static_cast<unsigned char*>(base) + i * sizeof(T), &v, sizeof(T));
}

// An IEEE-like source (fp16, bf16, fp32, tf32): finite codes go to the funnel as fields,
// without building a double; specials take the decode() + encode() route.
struct IeeeSource {
  const Format* f;
  int m, shift, exp_max, exp_offset;
  uint64_t sign, mag_mask, man_mask;

  explicit IeeeSource(const Format& from)
      : f(&from),
        m(from.man_bits),
        shift(from.code_shift),
        exp_max(static_cast<int>(detail::exp_all_ones(from))),
        exp_offset(from.bias + from.man_bits),
        sign(detail::sign_bit(from)),
        mag_mask(detail::mag_mask(from)),
        man_mask(detail::low_mask(from.man_bits)) {}

  uint64_t to(const detail::Target& t, uint64_t code, Rounding mode, uint32_t rnd,
              const NumericPolicy& p) const {
    code >>= shift;
    const uint64_t mag = code & mag_mask;
    const int ef = static_cast<int>(mag >> m);
    if (ef == exp_max) return detail::encode_to(t, decode(*f, code << shift), mode, rnd, p);
    const uint64_t sig = ef == 0 ? mag & man_mask : (mag & man_mask) | (man_mask + 1);
    return detail::round_pack_to(t, (code & sign) != 0, (ef == 0 ? 1 : ef) - exp_offset, sig, false,
                                 mode, rnd, p);
  }
};

template <typename Src, typename Dst, typename Encode>
void loop(const void* src, void* dst, size_t n, const RoundOptions& o, Encode&& encode_one) {
  if (o.rounding == Rounding::kStochastic) {
    for (size_t i = 0; i < n; ++i)
      store<Dst>(dst, i,
                 static_cast<Dst>(encode_one(load<Src>(src, i),
                                             random_u32(o.seed, o.stream, o.index_base + i))));
  } else {
    for (size_t i = 0; i < n; ++i)
      store<Dst>(dst, i, static_cast<Dst>(encode_one(load<Src>(src, i), 0)));
  }
}

template <typename Src, typename Dst>
void typed_convert(const Format& from, const void* src, const Format& to, void* dst, size_t n,
                   const RoundOptions& o) {
  const detail::Target t = detail::make_target(to);
  const Rounding mode = o.rounding;
  const NumericPolicy& p = o.policy;
  if constexpr (sizeof(Src) == 1) {
    // Every 1-byte source has at most 256 codes: decode each once.
    double table[256];
    for (unsigned c = 0; c < 256; ++c) table[c] = decode(from, c);
    return loop<Src, Dst>(src, dst, n, o, [&](Src c, uint32_t rnd) {
      return detail::encode_to(t, table[c], mode, rnd, p);
    });
  } else {
    if (from.kind == Kind::kFloat && from.specials == Specials::kIeee &&
        from.dtype != Dtype::kFp64) {
      const IeeeSource s(from);
      return loop<Src, Dst>(src, dst, n, o,
                            [&](Src c, uint32_t rnd) { return s.to(t, c, mode, rnd, p); });
    }
    return loop<Src, Dst>(src, dst, n, o, [&](Src c, uint32_t rnd) {
      return detail::encode_to(t, decode(from, c), mode, rnd, p);
    });
  }
}

template <typename Src>
void dispatch_dst(const Format& from, const void* src, const Format& to, void* dst, size_t n,
                  const RoundOptions& o) {
  switch (to.storage_bytes) {
    case 1:
      return typed_convert<Src, uint8_t>(from, src, to, dst, n, o);
    case 2:
      return typed_convert<Src, uint16_t>(from, src, to, dst, n, o);
    case 4:
      return typed_convert<Src, uint32_t>(from, src, to, dst, n, o);
    case 8:
      return typed_convert<Src, uint64_t>(from, src, to, dst, n, o);
  }
  TRNSIM_ASSERT(false && "container size");
}

// fp32 -> bf16, round to nearest even, overflow to inf, no flushing: adding 0x7FFF plus the
// kept LSB carries exactly when the funnel rounds up (ties to even), including into the
// exponent and from max to inf; bf16 subnormals are fp32 subnormals truncated the same way.
// NaN: sign and top payload kept, quiet bit forced (NanMode::kPropagate), or the default NaN.
void fp32_to_bf16(const void* src, void* dst, size_t n, NanMode nan) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = load<uint32_t>(src, i);
    uint16_t out;
    if ((b & 0x7FFFFFFFu) > 0x7F800000u)
      out = static_cast<uint16_t>(nan == NanMode::kPropagate ? (b >> 16) | 0x0040u
                                                             : ((b >> 16) & 0x8000u) | 0x7FC0u);
    else
      out = static_cast<uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
    store<uint16_t>(dst, i, out);
  }
}

// bf16 -> fp32 is exact (same exponent range, no flushing asked); NaNs are quieted as decode()
// does, payload kept.
void bf16_to_fp32(const void* src, void* dst, size_t n, NanMode nan) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t b = static_cast<uint32_t>(load<uint16_t>(src, i)) << 16;
    if ((b & 0x7FFFFFFFu) > 0x7F800000u)
      b = nan == NanMode::kPropagate ? b | 0x00400000u : (b & 0x80000000u) | 0x7FC00000u;
    store<uint32_t>(dst, i, b);
  }
}

bool try_fast_path(const Format& from, const void* src, const Format& to, void* dst, size_t n,
                   const RoundOptions& o) {
  if (o.policy.flush_subnormals) return false;
  if (from.dtype == Dtype::kFp32 && to.dtype == Dtype::kBf16 &&
      o.rounding == Rounding::kNearestEven && o.policy.overflow == Overflow::kInfinity) {
    fp32_to_bf16(src, dst, n, o.policy.nan);
    return true;
  }
  if (from.dtype == Dtype::kBf16 && to.dtype == Dtype::kFp32) {
    bf16_to_fp32(src, dst, n, o.policy.nan);
    return true;
  }
  return false;
}

}  // namespace

void convert(const Format& from, const void* src, const Format& to, void* dst, size_t n,
             const RoundOptions& opts) {
  if (n == 0) return;
  if (opts.rounding == Rounding::kStochastic) detail::check_sr_bits(opts.policy.sr_random_bits);
  if (try_fast_path(from, src, to, dst, n, opts)) return;
  switch (from.storage_bytes) {
    case 1:
      return dispatch_dst<uint8_t>(from, src, to, dst, n, opts);
    case 2:
      return dispatch_dst<uint16_t>(from, src, to, dst, n, opts);
    case 4:
      return dispatch_dst<uint32_t>(from, src, to, dst, n, opts);
    case 8:
      return dispatch_dst<uint64_t>(from, src, to, dst, n, opts);
  }
  TRNSIM_ASSERT(false && "container size");
}

}  // namespace trnsim::num
