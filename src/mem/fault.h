// Simulated hardware faults: what a program did that the hardware would not allow (an access
// past the end of SBUF, a partition out of range, GpSimd touching PSUM, a deadlock). They are
// typed records collected in a list and shown to the user (ARCHITECTURE.md: the second of the
// three kinds of error), never exceptions and never undefined behaviour. The instruction that
// caused a fault is skipped: it writes nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "isa/access_pattern.h"

namespace trnsim::mem {

enum class FaultKind : uint8_t {
  kPartitionRange,    // partitions outside the memory (or an HBM row count below 1)
  kPartitionStart,    // start partition not allowed for the partition count (HARDWARE.md s3)
  kOutOfBounds,       // bytes outside SBUF / PSUM partition or device HBM
  kBadAccessPattern,  // malformed pattern: ndim, negative size, unaligned offset
  kEngineSpace,       // the engine cannot reach that memory (GpSimd on PSUM, TensorE on HBM, ...)
  kShape,             // operand shapes or counts that do not fit the instruction
  kDtype,             // a data type the instruction does not take
  kUnsupported,       // a feature the generation does not have
  kNoStationary,      // multiply_moving with no stationary loaded at that PE tile position
  kRegister,          // bad scalar register index, or division by zero in a register op
  kDeadlock,          // every unfinished stream waits on a semaphore that cannot change
  kStepLimit,         // the runner's instruction budget was exhausted (runaway loop)
  kTimeLimit,         // simulated time passed the run's limit (an endless DMA loop, ...)
  kPeer,              // core_barrier / sendrecv with no core to meet, or a mismatched peer
  kIndexRange,        // an indirect DMA's row number outside its tensor (NKI oob_mode.error), or
                      // a dynamic operand's register outside its range
};

std::string_view fault_kind_name(FaultKind k);

struct Fault {
  FaultKind kind = FaultKind::kOutOfBounds;
  // The faulting instruction: its per-engine issue number and a readable label
  // ("#12 tensor_tensor on dve 'x' (line 7)"); empty for faults not tied to one instruction.
  uint64_t instruction_id = 0;
  std::string instruction;
  // The memory involved, when there is one: space, partitions [p_begin, p_end) and byte range
  // [begin, end) within each partition (SBUF/PSUM) or device address range (HBM).
  std::optional<isa::Space> space;
  int64_t p_begin = 0, p_end = 0;
  int64_t begin = 0, end = 0;
  std::string message;

  // One line: "out_of_bounds: #12 tensor_tensor on dve: sbuf partitions [0,128) bytes
  // [196600,196728) past the end of the partition (196608 bytes)".
  std::string to_string() const;
};

// Faults in the order they happened.
class FaultList {
 public:
  void add(Fault f) { faults_.push_back(std::move(f)); }
  bool empty() const { return faults_.empty(); }
  size_t size() const { return faults_.size(); }
  const Fault& operator[](size_t i) const { return faults_[i]; }
  Fault& operator[](size_t i) { return faults_[i]; }
  const std::vector<Fault>& all() const { return faults_; }
  auto begin() const { return faults_.begin(); }
  auto end() const { return faults_.end(); }
  void clear() { faults_.clear(); }
  std::string to_string() const;  // one fault per line

 private:
  std::vector<Fault> faults_;
};

}  // namespace trnsim::mem
