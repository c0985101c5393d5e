// Functional mode: a plan run on data. Each rank's buffers hold codes of the collective's
// dtype (numerics/format.h: the bit pattern, as convert() stores it). A step reads every
// source before it writes anything (the transfers of a step are concurrent); a reduction adds
// in fp32 and rounds to the dtype (HARDWARE.md s4-5: DMA compute sums in fp32; integer
// all-reduce is computed in fp32), in the order the plan lists the transfers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fabric/plan.h"
#include "numerics/format.h"
#include "numerics/policy.h"

namespace trnsim::fabric {

struct Buffers {
  std::vector<std::vector<uint64_t>> data, out, scratch;  // per rank
};

// Runs `plan` on `buf` in place. `buf.out` and `buf.scratch` are sized like `buf.data` when
// empty.
void run_functional(const Plan& plan, const num::Format& dtype, const num::NumericPolicy& policy,
                    Buffers& buf);

// The reduction of two codes as the DMA computes it: fp32 sum, rounded to the dtype (RNE).
uint64_t reduce_codes(const num::Format& dtype, const num::NumericPolicy& policy, uint64_t a,
                      uint64_t b);
// The same for n operands (a multi-operand DMA): added left to right in fp32, each addition
// rounded to fp32, and the result rounded once to the dtype (assumed: the 3R1W reduction of
// KangaRing keeps its partial sum in the fp32 accumulator; docs/fabric.md).
uint64_t reduce_codes(const num::Format& dtype, const num::NumericPolicy& policy,
                      std::span<const uint64_t> codes);

}  // namespace trnsim::fabric
