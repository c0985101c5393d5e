#include "core/exec/hbm_tensor_io.h"

#include <fmt/format.h>

#include <cmath>

#include "base/error.h"
#include "isa/validate.h"
#include "numerics/convert.h"

namespace trnsim::core {

uint64_t device_hbm_bytes(const arch::ChipSpec& chip) {
  return static_cast<uint64_t>(isa::hbm_capacity_bytes(chip));  // the bound validation checks
}

const isa::HbmTensor& HbmTensorIo::tensor(std::string_view name) const {
  const isa::HbmTensor* t = program_.find_tensor(name);
  if (t == nullptr) throw InputError("", std::string(name), "no such tensor in the program");
  if (t->address < 0 ||
      !hbm_.contains(static_cast<uint64_t>(t->address), static_cast<uint64_t>(t->bytes())))
    throw InputError("", std::string(name),
                     fmt::format("tensor at {} ({} bytes) is outside device memory ({} bytes)",
                                 t->address, t->bytes(), hbm_.capacity()));
  return *t;
}

void HbmTensorIo::write(std::string_view name, std::span<const uint8_t> bytes) {
  const isa::HbmTensor& t = tensor(name);
  if (static_cast<int64_t>(bytes.size()) != t.bytes())
    throw InputError("", std::string(name),
                     fmt::format("{} bytes given for a {}-byte tensor", bytes.size(), t.bytes()));
  hbm_.write(static_cast<uint64_t>(t.address), bytes.data(), bytes.size());
}

void HbmTensorIo::write_f32(std::string_view name, std::span<const float> values) {
  const isa::HbmTensor& t = tensor(name);
  if (static_cast<int64_t>(values.size()) != t.elements())
    throw InputError(
        "", std::string(name),
        fmt::format("{} values given for a {}-element tensor", values.size(), t.elements()));
  std::vector<uint8_t> bytes(static_cast<size_t>(t.bytes()));
  num::RoundOptions ro;
  ro.policy = policy_;
  num::convert(num::fp32(), values.data(), t.dtype, bytes.data(), values.size(), ro);
  hbm_.write(static_cast<uint64_t>(t.address), bytes.data(), bytes.size());
}

void HbmTensorIo::write_f32_range(std::string_view name, int64_t first,
                                  std::span<const float> values) {
  const isa::HbmTensor& t = tensor(name);
  const auto n = static_cast<int64_t>(values.size());
  if (first < 0 || n > t.elements() || first > t.elements() - n)
    throw InputError("", std::string(name),
                     fmt::format("elements [{}, {}) outside the {}-element tensor", first,
                                 first + n, t.elements()));
  const int64_t per = t.dtype.storage_bytes;
  std::vector<uint8_t> bytes(static_cast<size_t>(n * per));
  num::RoundOptions ro;
  ro.policy = policy_;
  num::convert(num::fp32(), values.data(), t.dtype, bytes.data(), values.size(), ro);
  hbm_.write(static_cast<uint64_t>(t.address + first * per), bytes.data(), bytes.size());
}

std::vector<uint8_t> HbmTensorIo::read(std::string_view name) const {
  const isa::HbmTensor& t = tensor(name);
  std::vector<uint8_t> bytes(static_cast<size_t>(t.bytes()));
  hbm_.read(static_cast<uint64_t>(t.address), bytes.data(), bytes.size());
  return bytes;
}

std::vector<float> HbmTensorIo::read_f32(std::string_view name) const {
  const isa::HbmTensor& t = tensor(name);
  const std::vector<uint8_t> bytes = read(name);
  std::vector<float> out(static_cast<size_t>(t.elements()));
  num::RoundOptions ro;
  ro.policy = policy_;
  num::convert(t.dtype, bytes.data(), num::fp32(), out.data(), out.size(), ro);
  return out;
}

}  // namespace trnsim::core
