#include "mem/access_rules.h"

#include <fmt/format.h>

#include "isa/access_rules.h"

namespace trnsim::mem {

namespace {

std::optional<Fault> space_fault(const isa::AccessPattern& ap, std::string msg) {
  Fault f;
  f.kind = FaultKind::kEngineSpace;
  f.space = ap.space;
  f.p_begin = ap.start_partition;
  f.p_end = int64_t{ap.start_partition} + ap.num_partitions;
  f.message = std::move(msg);
  return f;
}

}  // namespace

std::optional<Fault> check_engine_space(isa::Engine e, const isa::AccessPattern& ap, Access a) {
  const std::string_view eng = isa::engine_name(e);
  if (e == isa::Engine::kSync)
    return space_fault(ap, "the sync engine (sp) has no datapath; it only starts DMA transfers");
  if (ap.space == isa::Space::kHbm)
    return space_fault(ap, fmt::format("{} cannot address hbm (only DMA can)", eng));
  if (e == isa::Engine::kGpSimd && ap.space == isa::Space::kPsum)
    return space_fault(ap, "gpsimd (pool) has no psum access");
  if (e == isa::Engine::kTensor) {
    if (a == Access::kRead && ap.space != isa::Space::kSbuf)
      return space_fault(ap, "tensor engine (pe) reads only sbuf");
    if (a == Access::kWrite && ap.space != isa::Space::kPsum)
      return space_fault(ap, "tensor engine (pe) writes only psum");
  }
  return std::nullopt;
}

std::optional<Fault> check_dma_space(const isa::AccessPattern& ap) {
  if (ap.space == isa::Space::kPsum)
    return space_fault(ap, "psum is not a DMA endpoint (copy through sbuf)");
  return std::nullopt;
}

std::optional<Fault> check_start_partition(const isa::AccessPattern& ap) {
  if (ap.space == isa::Space::kHbm ||
      isa::start_partition_allowed(ap.start_partition, ap.num_partitions))
    return std::nullopt;
  Fault f;
  f.kind = FaultKind::kPartitionStart;
  f.space = ap.space;
  f.p_begin = ap.start_partition;
  f.p_end = int64_t{ap.start_partition} + ap.num_partitions;
  f.message =
      fmt::format("an engine access of {} partitions cannot start at partition {} (allowed: {})",
                  ap.num_partitions, ap.start_partition,
                  ap.num_partitions > 64   ? "0"
                  : ap.num_partitions > 32 ? "0 or 64"
                                           : "0, 32, 64 or 96");
  return f;
}

}  // namespace trnsim::mem
