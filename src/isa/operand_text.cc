#include "isa/operand_text.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/int128.h"
#include "isa/text_numbers.h"

namespace trnsim::isa {

namespace {

std::string signed_suffix(int64_t v) {
  if (v == 0) return "";
  return v > 0 ? fmt::format("+{}", v) : fmt::format("{}", v);
}

std::string dims_text(const AccessPattern& ap) {
  std::string s = "[";
  const int n = std::clamp(ap.ndim, 0, kMaxFreeDims);
  for (int i = 0; i < n; ++i)
    s += fmt::format("{}[{},{}]", i ? "," : "", ap.dims[static_cast<size_t>(i)].stride,
                     ap.dims[static_cast<size_t>(i)].size);
  return s + "]";
}

template <typename T>
T read_int(LineCursor& cur, std::string_view what) {
  const std::string_view t = cur.integer_text();
  if (t.empty() || t == "-" || t == "+")
    cur.fail(cur.next_token(), fmt::format("expected {}", what));
  return cur.with_where([&] { return parse_integer<T>(t); });
}

void parse_dims(LineCursor& cur, AccessPattern& ap) {
  cur.expect('[', "to open the free dims [[stride,size],...]");
  ap.ndim = 0;
  if (cur.eat(']')) return;
  do {
    if (ap.ndim == kMaxFreeDims)
      cur.fail(cur.next_token(), fmt::format("more than {} free dims", kMaxFreeDims));
    FreeDim& d = ap.dims[static_cast<size_t>(ap.ndim++)];
    cur.expect('[', "to open a free dim [stride,size]");
    d.stride = read_int<int64_t>(cur, "a stride (elements)");
    cur.expect(',', "between stride and size");
    d.size = read_int<int64_t>(cur, "a size (elements)");
    cur.expect(']', "to close a free dim");
  } while (cur.eat(','));
  cur.expect(']', "to close the free dims");
}

// A dtype name if one comes next (not a `key=` parameter).
std::optional<num::Format> maybe_dtype(LineCursor& cur) {
  const size_t m = cur.mark();
  const std::string_view id = cur.identifier();
  if (id.empty() || cur.peek() == '=') {
    cur.reset(m);
    return std::nullopt;
  }
  return cur.with_where([&] { return num::parse_format(id); });
}

// A dynamic operand's suffix, "+rN*STEP<=MAX": the offset moves by STEP per unit of register rN,
// in the offset's unit (bytes on chip, elements of a named tensor), for rN in 0..MAX.
std::string dynamic_text(const AccessPattern& ap, int64_t unit) {
  if (!ap.dynamic()) return "";
  return fmt::format("+r{}*{}<={}", ap.dyn_reg, ap.dyn_step / unit, ap.dyn_max);
}

bool parse_dynamic(LineCursor& cur, AccessPattern& ap) {
  const size_t m = cur.mark();
  if (!cur.eat('+')) return false;
  const std::string_view reg = cur.identifier();
  if (reg.size() < 2 || reg[0] != 'r') {
    cur.reset(m);
    return false;
  }
  const auto n = cur.with_where([&] { return parse_integer<int32_t>(reg.substr(1)); });
  if (n < 0 || n >= kScalarRegisters)
    cur.fail(reg, fmt::format("registers are r0..r{}", kScalarRegisters - 1));
  ap.dyn_reg = static_cast<int8_t>(n);
  cur.expect('*', "after a dynamic offset's register (+rN*STEP<=MAX)");
  ap.dyn_step = read_int<int64_t>(cur, "a dynamic offset's step");
  if (!cur.eat("<="))
    cur.fail(cur.next_token(),
             "expected <= before a dynamic offset's largest register value (+rN*STEP<=MAX)");
  ap.dyn_max = read_int<int32_t>(cur, "a dynamic offset's largest register value");
  return true;
}

}  // namespace

std::string format_operand(const AccessPattern& ap, const Program& prog) {
  std::string base = std::string(name_of(ap.space));
  int64_t off = ap.offset;
  int64_t natural_stride = 0;
  const int64_t esize = ap.dtype.storage_bytes;
  if (ap.space == Space::kHbm && esize > 0) {
    const HbmTensor* t = prog.tensor_at(ap.offset);
    if (t && (ap.offset - t->address) % esize == 0 && ap.dyn_step % esize == 0) {
      base = t->name;
      off = (ap.offset - t->address) / esize;
      natural_stride = t->row_elements();
    }
  }
  const int64_t end = int64_t{ap.start_partition} + ap.num_partitions;
  std::string s = fmt::format("{}[{}:{}", base, ap.start_partition, end);
  if (ap.partition_stride != natural_stride) s += fmt::format(":{}", ap.partition_stride);
  const int64_t unit = base == name_of(ap.space) || esize <= 0 ? 1 : esize;
  return s + "]" + signed_suffix(off) + dynamic_text(ap, unit) + " " + dims_text(ap) + " " +
         ap.dtype.name();
}

AccessPattern parse_operand(LineCursor& cur, const Program& prog) {
  AccessPattern ap;
  const std::string_view base = cur.identifier();
  if (base.empty())
    cur.fail(cur.next_token(),
             "expected an operand (sbuf[..], psum[..], hbm[..] "
             "or a tensor name)");
  const HbmTensor* tensor = nullptr;
  if (auto sp = kSpaceNames.find(base)) {
    ap.space = *sp;
  } else {
    tensor = prog.find_tensor(base);
    if (!tensor) cur.fail(base, "unknown tensor (declare it with .tensor before use)");
    ap.space = Space::kHbm;
    ap.partition_stride = tensor->row_elements();
  }
  cur.expect('[', "after the operand base");
  ap.start_partition = read_int<int32_t>(cur, "the first partition");
  cur.expect(':', "in [start:end]");
  const auto end = read_int<int64_t>(cur, "the end partition");
  const int64_t count = end - ap.start_partition;
  if (count < INT32_MIN || count > INT32_MAX)
    cur.fail(std::to_string(end), "partition count out of range");
  ap.num_partitions = static_cast<int32_t>(count);
  if (cur.eat(':')) ap.partition_stride = read_int<int64_t>(cur, "a row stride (elements)");
  cur.expect(']', "to close [start:end]");
  bool dynamic = parse_dynamic(cur, ap);
  const char c = cur.peek();
  const int64_t off = !dynamic && (c == '+' || c == '-') ? read_int<int64_t>(cur, "an offset") : 0;
  if (!dynamic) dynamic = parse_dynamic(cur, ap);
  parse_dims(cur, ap);
  const auto dtype = maybe_dtype(cur);
  if (!dtype && !tensor) cur.fail(cur.next_token(), "expected the operand's dtype");
  ap.dtype = dtype ? *dtype : tensor->dtype;
  if (!tensor) {
    ap.offset = off;
    return ap;
  }
  // Tensor operands count the offset (and a dynamic step) in elements of the operand's dtype.
  if (dynamic) {
    const int128 step = int128{ap.dyn_step} * ap.dtype.storage_bytes;
    if (step < INT64_MIN || step > INT64_MAX)
      cur.fail(std::to_string(ap.dyn_step), "dynamic step out of range");
    ap.dyn_step = static_cast<int64_t>(step);
  }
  const int128 addr = int128{tensor->address} + int128{off} * ap.dtype.storage_bytes;
  if (addr < INT64_MIN || addr > INT64_MAX) cur.fail(std::to_string(off), "offset out of range");
  ap.offset = static_cast<int64_t>(addr);
  return ap;
}

}  // namespace trnsim::isa
