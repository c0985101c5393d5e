#include "mem/fault.h"

#include <fmt/format.h>

namespace trnsim::mem {

std::string_view fault_kind_name(FaultKind k) {
  switch (k) {
    case FaultKind::kPartitionRange:
      return "partition_range";
    case FaultKind::kPartitionStart:
      return "partition_start";
    case FaultKind::kOutOfBounds:
      return "out_of_bounds";
    case FaultKind::kBadAccessPattern:
      return "bad_access_pattern";
    case FaultKind::kEngineSpace:
      return "engine_space";
    case FaultKind::kShape:
      return "shape";
    case FaultKind::kDtype:
      return "dtype";
    case FaultKind::kUnsupported:
      return "unsupported";
    case FaultKind::kNoStationary:
      return "no_stationary";
    case FaultKind::kRegister:
      return "register";
    case FaultKind::kDeadlock:
      return "deadlock";
    case FaultKind::kStepLimit:
      return "step_limit";
    case FaultKind::kTimeLimit:
      return "time_limit";
    case FaultKind::kPeer:
      return "peer";
    case FaultKind::kIndexRange:
      return "index_range";
  }
  return "unknown";
}

std::string Fault::to_string() const {
  std::string s(fault_kind_name(kind));
  s += ": ";
  if (!instruction.empty()) s += instruction + ": ";
  if (space) {
    if (*space == isa::Space::kHbm)
      s += fmt::format("hbm bytes [{},{}) ", begin, end);
    else
      s += fmt::format("{} partitions [{},{}) bytes [{},{}) ", isa::space_name(*space), p_begin,
                       p_end, begin, end);
  }
  s += message;
  return s;
}

std::string FaultList::to_string() const {
  std::string s;
  for (const Fault& f : faults_) s += f.to_string() + "\n";
  return s;
}

}  // namespace trnsim::mem
