#include "fabric/functional.h"

#include <array>

#include "base/error.h"
#include "numerics/convert.h"

namespace trnsim::fabric {

uint64_t reduce_codes(const num::Format& dtype, const num::NumericPolicy& policy,
                      std::span<const uint64_t> codes) {
  static const num::Format f32 = num::fp32();
  TRNSIM_ASSERT(!codes.empty());
  // A sum of two fp32 values is exact in double, so rounding it to fp32 is one fp32 addition.
  double acc = num::decode(dtype, codes[0]);
  for (size_t i = 1; i < codes.size(); ++i) {
    const double sum = acc + num::decode(dtype, codes[i]);
    acc = num::decode(f32, num::encode(f32, sum, num::Rounding::kNearestEven, 0, policy));
  }
  return num::encode(dtype, acc, num::Rounding::kNearestEven, 0, policy);
}

uint64_t reduce_codes(const num::Format& dtype, const num::NumericPolicy& policy, uint64_t a,
                      uint64_t b) {
  const std::array<uint64_t, 2> codes{a, b};
  return reduce_codes(dtype, policy, codes);
}

void run_functional(const Plan& plan, const num::Format& dtype, const num::NumericPolicy& policy,
                    Buffers& buf) {
  for (auto* v : {&buf.out, &buf.scratch}) {
    if (!v->empty()) continue;
    v->resize(buf.data.size());
    for (size_t r = 0; r < buf.data.size(); ++r) (*v)[r].assign(buf.data[r].size(), 0);
  }
  auto& bufs = buf;
  auto at = [&bufs](int32_t rank, uint8_t which) -> std::vector<uint64_t>& {
    auto& v = which == 0 ? bufs.data : which == 1 ? bufs.out : bufs.scratch;
    TRNSIM_ASSERT(rank >= 0 && static_cast<size_t>(rank) < v.size());
    return v[static_cast<size_t>(rank)];
  };
  std::vector<Transfer> xfers;
  // Per transfer, its source operands' codes (count x sources, source-major).
  std::vector<std::vector<uint64_t>> staged;
  for (const Phase& ph : plan.phases) {
    for (int64_t k = 0; k < ph.steps; ++k) {
      xfers.clear();
      ph.emit(k, xfers);
      staged.resize(xfers.size());
      for (size_t i = 0; i < xfers.size(); ++i) {
        const Transfer& x = xfers[i];
        staged[i].clear();
        for (auto [rank, which] : {std::pair{x.src, x.src_buf}, std::pair{x.src2, x.src2_buf},
                                   std::pair{x.src3, x.src3_buf}}) {
          if (rank < 0) continue;
          const auto& src = at(rank, which);
          TRNSIM_ASSERT(x.src_off >= 0 && x.src_off + x.count <= static_cast<int64_t>(src.size()));
          staged[i].insert(staged[i].end(), src.begin() + x.src_off,
                           src.begin() + x.src_off + x.count);
        }
      }
      std::array<uint64_t, 4> ops{};
      for (size_t i = 0; i < xfers.size(); ++i) {
        const Transfer& x = xfers[i];
        const auto sources = static_cast<int64_t>(staged[i].size()) / std::max<int64_t>(x.count, 1);
        auto& dst = at(x.dst, x.dst_buf);
        auto* dst2 = x.dst2 >= 0 ? &at(x.dst2, x.dst2_buf) : nullptr;
        TRNSIM_ASSERT(x.dst_off >= 0 && x.dst_off + x.count <= static_cast<int64_t>(dst.size()));
        TRNSIM_ASSERT(dst2 == nullptr || x.dst_off + x.count <= static_cast<int64_t>(dst2->size()));
        for (int64_t e = 0; e < x.count; ++e) {
          const auto d = static_cast<size_t>(x.dst_off + e);
          size_t n = 0;
          if (x.reduce) ops[n++] = dst[d];
          for (int64_t s = 0; s < sources; ++s)
            ops[n++] = staged[i][static_cast<size_t>(s * x.count + e)];
          const uint64_t v = n == 1 ? ops[0] : reduce_codes(dtype, policy, {ops.data(), n});
          dst[d] = v;
          if (dst2 != nullptr) (*dst2)[d] = v;
        }
      }
    }
  }
}

}  // namespace trnsim::fabric
