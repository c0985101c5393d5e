#include "core/cost/cost_operands.h"

#include <algorithm>

#include "core/cost/cost_constants.h"

namespace trnsim::core {

namespace {
bool is_bf16_fp16(const num::Format& f) {
  return f.dtype == num::Dtype::kBf16 || f.dtype == num::Dtype::kFp16;
}
bool is_fp8(const num::Format& f) {
  switch (f.dtype) {
    case num::Dtype::kFp8E4M3:
    case num::Dtype::kFp8E4M3Fn:
    case num::Dtype::kFp8E5M2:
    case num::Dtype::kFp8E3M4:
    case num::Dtype::kCfp8:
      return true;
    default:
      return false;
  }
}
}  // namespace

int64_t elements_per_partition(const isa::Instruction& ins) {
  int64_t n = 0;
  for (int i = 0; i < ins.num_operands; ++i) n = std::max(n, ins.operands[i].free_elements());
  return n;
}

const isa::AccessPattern* first_operand_in(const isa::Instruction& ins, isa::Space space) {
  for (int i = 0; i < ins.num_operands; ++i)
    if (ins.operands[i].space == space) return &ins.operands[i];
  return nullptr;
}

const isa::AccessPattern* last_operand_in(const isa::Instruction& ins, isa::Space space) {
  for (int i = ins.num_operands - 1; i >= 0; --i)
    if (ins.operands[i].space == space) return &ins.operands[i];
  return nullptr;
}

bool any_source_in(const isa::Instruction& ins, isa::Space space) {
  for (int i = 1; i < ins.num_operands; ++i)
    if (ins.operands[i].space == space) return true;
  return false;
}

bool all_operands_in(const isa::Instruction& ins, isa::Space space) {
  for (int i = 0; i < ins.num_operands; ++i)
    if (ins.operands[i].space != space) return false;
  return true;
}

bool all_contiguous(const isa::Instruction& ins) {
  for (int i = 0; i < ins.num_operands; ++i)
    if (!ins.operands[i].contiguous_inner()) return false;
  return true;
}

bool any_wide_stride(const isa::Instruction& ins) {
  for (int i = 0; i < ins.num_operands; ++i) {
    const isa::AccessPattern& ap = ins.operands[i];
    if (ap.space == isa::Space::kHbm) continue;  // engines read SBUF and PSUM only
    for (int d = ap.ndim - 1; d >= 0; --d) {
      if (ap.dims[d].size <= 1) continue;  // a dim of one element is not streamed along
      const int64_t step = ap.dims[d].stride < 0 ? -ap.dims[d].stride : ap.dims[d].stride;
      if (step * ap.dtype.storage_bytes > costk::kWideStrideBytes) return true;
      break;
    }
  }
  return false;
}

uint64_t streamed_elements(const isa::Instruction& ins) {
  const uint64_t n = static_cast<uint64_t>(std::max<int64_t>(elements_per_partition(ins), 1));
  return any_wide_stride(ins) ? n * costk::kWideStridePenalty : n;
}

bool all_bf16(const isa::Instruction& ins) {
  for (int i = 0; i < ins.num_operands; ++i)
    if (ins.operands[i].dtype.dtype != num::Dtype::kBf16) return false;
  return ins.num_operands > 0;
}

bool all_bf16_fp16(const isa::Instruction& ins) {
  for (int i = 0; i < ins.num_operands; ++i)
    if (!is_bf16_fp16(ins.operands[i].dtype)) return false;
  return ins.num_operands > 0;
}

bool all_fast_class(const isa::Instruction& ins, const arch::EngineSpec& eng) {
  for (int i = 0; i < ins.num_operands; ++i) {
    const num::Format& f = ins.operands[i].dtype;
    if (is_bf16_fp16(f)) continue;
    if (is_fp8(f) && eng.elements_per_cycle.fp8.has_value()) continue;
    return false;
  }
  return ins.num_operands > 0;
}

int elements_per_cycle(const arch::EngineSpec& eng, const num::Format& f) {
  const arch::ElementsPerCycle& e = eng.elements_per_cycle;
  if (is_bf16_fp16(f) && e.bf16) return *e.bf16;
  if (is_fp8(f) && e.fp8) return *e.fp8;
  return e.other;
}

uint64_t perf_factor(const arch::EngineSpec& eng, const num::Format& f, int lanes,
                     uint64_t mode_cap) {
  if (lanes <= 0) return 1;
  const int epc = elements_per_cycle(eng, f);
  const uint64_t datapath = epc > lanes ? static_cast<uint64_t>(epc / lanes) : 1;
  return std::max<uint64_t>(1, std::min(mode_cap, datapath));
}

}  // namespace trnsim::core
