// GpSimd's index ops: each one instruction (isa/op_table.cc has the semantics).
#include <fmt/format.h>

#include "kernel/builder.h"
#include "kernel/call_error.h"

namespace trnsim::kernel {

using isa::Engine;
using isa::Opcode;
using isa::Params;

void KernelBuilder::n_gather(const View& dst, const View& data, const View& indices) {
  emit_op("n_gather", Opcode::kNGather, Engine::kGpSimd, {dst, data, indices});
}

void KernelBuilder::local_gather(const View& dst, const View& src, const View& index, int elems,
                                 int indices) {
  constexpr int kMaxIndices = 4096;  // per core (NKI local_gather)
  if (elems < 1 || elems > 32 || indices < 0 || indices > kMaxIndices)
    call_error("local_gather",
               fmt::format("num_elem_per_idx={}, num_valid_indices={}: 1..32 elements per index "
                           "and 0 (all) .. 4096 indices per core",
                           elems, indices));
  Params p;
  p.gather_elems = static_cast<int16_t>(elems);
  p.gather_indices = static_cast<int16_t>(indices);
  emit_op("local_gather", Opcode::kLocalGather, Engine::kGpSimd, {dst, src, index}, p);
}

void KernelBuilder::sequence_bounds(const View& dst, const View& segment_ids) {
  emit_op("sequence_bounds", Opcode::kSequenceBounds, Engine::kGpSimd, {dst, segment_ids});
}

void KernelBuilder::nonzero_with_count(const View& dst, const View& src, int32_t offset,
                                       int32_t padding) {
  isa::Instruction in = make(Opcode::kNonzeroWithCount, Engine::kGpSimd, {dst, src});
  in.p.iota_base = offset;
  in.p.value = padding;
  // Only each core's first partition is written; the others keep dst's values, so the write
  // is also a read of dst (placement keeps them, dependencies order it after their writers).
  emit("nonzero_with_count", std::move(in),
       {{dst, true, "dst"}, {src, false, "src"}, {dst, false, "dst"}});
}

}  // namespace trnsim::kernel
