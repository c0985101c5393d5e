#include "isa/program.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "base/error.h"
#include "base/int128.h"

namespace trnsim::isa {

namespace {

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

int64_t HbmTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t HbmTensor::row_elements() const {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

size_t Program::num_instructions() const {
  size_t n = 0;
  for (const auto& s : streams) n += s.size();
  return n;
}

std::string_view Program::symbol(int32_t i) const {
  if (i < 0 || static_cast<size_t>(i) >= symbols.size()) return {};
  return symbols[static_cast<size_t>(i)];
}

int32_t Program::append(Instruction inst) {
  auto& s = stream(inst.engine);
  s.push_back(std::move(inst));
  return static_cast<int32_t>(s.size() - 1);
}

const HbmTensor& Program::add_tensor(std::string name, num::Format dtype,
                                     std::vector<int64_t> shape, TensorKind kind, int64_t address) {
  if (!is_identifier(name) || kSpaceNames.find(name))
    throw InputError("", name, "a tensor name must be an identifier other than sbuf, psum, hbm");
  if (find_tensor(name)) throw InputError("", name, "tensor declared twice");
  // Bound the size so byte arithmetic on it cannot overflow (2^48 bytes = 256 TiB).
  int128 bytes = dtype.storage_bytes;
  for (int64_t d : shape) {
    if (d < 1) throw InputError("", name, fmt::format("dimension {} < 1", d));
    bytes *= d;
    if (bytes > (int128{1} << 48)) throw InputError("", name, "tensor larger than 2^48 bytes");
  }
  if (address > (int64_t{1} << 48))
    throw InputError("", name, fmt::format("address {} beyond 2^48 bytes", address));
  if (address < 0) {
    int64_t end = 0;
    for (const HbmTensor& t : tensors) end = std::max(end, t.address + t.bytes());
    address = (end + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  }
  tensors.push_back({std::move(name), dtype, std::move(shape), address, kind});
  return tensors.back();
}

const HbmTensor* Program::find_tensor(std::string_view name) const {
  for (const HbmTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

const HbmTensor* Program::tensor_at(int64_t address) const {
  for (const HbmTensor& t : tensors)
    if (address >= t.address && address < t.address + t.bytes()) return &t;
  return nullptr;
}

AccessPattern Program::rows(std::string_view tensor, int64_t row_begin, int64_t row_end) const {
  const HbmTensor* t = find_tensor(tensor);
  if (!t) throw InputError("", std::string(tensor), "unknown tensor");
  const int64_t nrows = t->shape.empty() ? 1 : t->shape[0];
  if (row_begin < 0 || row_end > nrows || row_begin >= row_end)
    throw InputError("", std::string(tensor),
                     fmt::format("rows [{}, {}) outside [0, {})", row_begin, row_end, nrows));
  AccessPattern ap;
  ap.space = Space::kHbm;
  ap.dtype = t->dtype;
  ap.num_partitions = static_cast<int32_t>(row_end - row_begin);
  ap.partition_stride = t->row_elements();
  ap.offset = t->address + row_begin * t->row_elements() * t->dtype.storage_bytes;
  ap.dims[0] = {1, t->row_elements()};
  ap.ndim = 1;
  return ap;
}

std::string source_of(const Program& p, const Instruction& in) {
  const std::string_view file = p.symbol(in.origin.file);
  if (in.source_line <= 0) return std::string(file);
  if (file.empty()) return "line " + std::to_string(in.source_line);
  return std::string(file) + ":" + std::to_string(in.source_line);
}

bool same_access(const AccessPattern& a, const AccessPattern& b) {
  if (a.space != b.space || a.dtype != b.dtype || a.start_partition != b.start_partition ||
      a.num_partitions != b.num_partitions || a.partition_stride != b.partition_stride ||
      a.offset != b.offset || a.ndim != b.ndim)
    return false;
  const int n = std::clamp(a.ndim, 0, kMaxFreeDims);
  return std::equal(a.dims.begin(), a.dims.begin() + n, b.dims.begin());
}

bool operator==(const Instruction& a, const Instruction& b) {
  if (a.op != b.op || a.engine != b.engine || a.num_operands != b.num_operands || !(a.p == b.p) ||
      a.waits != b.waits || a.signals != b.signals || a.name != b.name)
    return false;
  const int n = std::clamp<int>(a.num_operands, 0, kMaxOperands);
  for (int i = 0; i < n; ++i)
    if (!same_access(a.operands[static_cast<size_t>(i)], b.operands[static_cast<size_t>(i)]))
      return false;
  return true;
}

bool operator==(const Program& a, const Program& b) {
  return a.chip == b.chip && a.seed == b.seed && a.num_semaphores == b.num_semaphores &&
         a.tensors == b.tensors && a.streams == b.streams;
}

}  // namespace trnsim::isa
