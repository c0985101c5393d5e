// Host access to a program's HBM tensors by name (ARCHITECTURE.md: the host writes inputs and
// reads outputs), in a device HBM that a single-core run owns or the cores of a logical core
// share (chip/spmd_run.h). Names, sizes and bounds are checked: each mistake is an InputError
// naming the tensor. The _f32 forms cast with the chip's numeric policy, round-to-nearest-even.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "arch/chip_spec.h"
#include "isa/program.h"
#include "mem/hbm.h"
#include "numerics/policy.h"

namespace trnsim::core {

// The device HBM capacity of `chip` in bytes (chip.hbm.capacity_gib).
uint64_t device_hbm_bytes(const arch::ChipSpec& chip);

class HbmTensorIo {
 public:
  // `program` (its tensor table) and `hbm` must outlive this object.
  HbmTensorIo(const isa::Program& program, mem::Hbm& hbm, const num::NumericPolicy& policy)
      : program_(program), hbm_(hbm), policy_(policy) {}

  void write(std::string_view name, std::span<const uint8_t> bytes);
  void write_f32(std::string_view name, std::span<const float> values);
  // Elements [first, first + values.size()) of the tensor: inputs written in pieces need host
  // memory for one piece, not a float copy of the whole tensor.
  void write_f32_range(std::string_view name, int64_t first, std::span<const float> values);
  std::vector<uint8_t> read(std::string_view name) const;
  std::vector<float> read_f32(std::string_view name) const;

 private:
  const isa::HbmTensor& tensor(std::string_view name) const;

  const isa::Program& program_;
  mem::Hbm& hbm_;
  num::NumericPolicy policy_;
};

}  // namespace trnsim::core
