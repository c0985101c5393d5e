#include "fabric/functional.h"

#include "base/error.h"
#include "numerics/convert.h"

namespace trnsim::fabric {

uint64_t reduce_codes(const num::Format& dtype, const num::NumericPolicy& policy, uint64_t a,
                      uint64_t b) {
  static const num::Format f32 = num::fp32();
  const double sum = num::decode(dtype, a) + num::decode(dtype, b);
  // Round once to fp32 (the DMA's accumulator), then to the dtype.
  const double in_fp32 =
      num::decode(f32, num::encode(f32, sum, num::Rounding::kNearestEven, 0, policy));
  return num::encode(dtype, in_fp32, num::Rounding::kNearestEven, 0, policy);
}

void run_functional(const Plan& plan, const num::Format& dtype, const num::NumericPolicy& policy,
                    Buffers& buf) {
  if (buf.out.empty()) {
    buf.out.resize(buf.data.size());
    for (size_t r = 0; r < buf.data.size(); ++r) buf.out[r].assign(buf.data[r].size(), 0);
  }
  auto& bufs = buf;
  auto at = [&bufs](int32_t rank, uint8_t which) -> std::vector<uint64_t>& {
    auto& v = which == 0 ? bufs.data : bufs.out;
    TRNSIM_ASSERT(rank >= 0 && static_cast<size_t>(rank) < v.size());
    return v[static_cast<size_t>(rank)];
  };
  std::vector<Transfer> xfers;
  std::vector<std::vector<uint64_t>> staged;
  for (const Phase& ph : plan.phases) {
    for (int64_t k = 0; k < ph.steps; ++k) {
      xfers.clear();
      ph.emit(k, xfers);
      staged.resize(xfers.size());
      for (size_t i = 0; i < xfers.size(); ++i) {
        const Transfer& x = xfers[i];
        const auto& src = at(x.src, x.src_buf);
        TRNSIM_ASSERT(x.src_off >= 0 && x.src_off + x.count <= static_cast<int64_t>(src.size()));
        staged[i].assign(src.begin() + x.src_off, src.begin() + x.src_off + x.count);
      }
      for (size_t i = 0; i < xfers.size(); ++i) {
        const Transfer& x = xfers[i];
        auto& dst = at(x.dst, x.dst_buf);
        TRNSIM_ASSERT(x.dst_off >= 0 && x.dst_off + x.count <= static_cast<int64_t>(dst.size()));
        for (int64_t e = 0; e < x.count; ++e) {
          uint64_t& d = dst[static_cast<size_t>(x.dst_off + e)];
          const uint64_t s = staged[i][static_cast<size_t>(e)];
          d = x.reduce ? reduce_codes(dtype, policy, d, s) : s;
        }
      }
    }
  }
}

}  // namespace trnsim::fabric
