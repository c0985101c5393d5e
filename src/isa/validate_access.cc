// Rules of a single operand (HARDWARE.md s2.2, s2.3, s3): the memory it may be in, its
// partitions and start partition, its free-dim pattern, the bytes it touches and its format.
#include "isa/access_rules.h"
#include "isa/validate_context.h"

namespace trnsim::isa::detail {

namespace {

// HBM sizes have no 16-bit field; 2^40 bounds them so extents stay exact in 128 bits.
constexpr int64_t kMaxHbmSize = int64_t{1} << 40;

bool contains(const std::vector<num::Dtype>& v, num::Dtype d) {
  return std::find(v.begin(), v.end(), d) != v.end();
}

std::string spaces_text(SpaceSet s) {
  std::string t;
  for (Space x : {Space::kSbuf, Space::kPsum, Space::kHbm})
    if (s.has(x)) t += (t.empty() ? "" : " or ") + std::string(name_of(x));
  return t;
}

// The MX element formats by the spec's names for them (numerics.tensor_mx_formats).
std::string_view mx_name(num::Dtype d) {
  switch (d) {
    case num::Dtype::kFp8E4M3Fn:
      return "mxfp8_e4m3fn";
    case num::Dtype::kFp8E5M2:
      return "mxfp8_e5m2";
    case num::Dtype::kFp4E2M1:
      return "mxfp4_e2m1fn";
    default:
      return "";
  }
}

bool check_dims(Context& c, const AccessPattern& ap, const std::string& label, bool on_chip) {
  if (ap.ndim < 0 || ap.ndim > kMaxFreeDims) {
    c.report(RuleKind::kFreeDims, "{}: {} free dims; at most {}", label, ap.ndim, kMaxFreeDims);
    return false;
  }
  bool ok = true;
  for (int i = 0; i < ap.ndim; ++i) {
    const FreeDim& d = ap.dims[static_cast<size_t>(i)];
    const int64_t max_size = on_chip ? kMaxFreeSize : kMaxHbmSize;
    if (d.size < 1 || d.size > max_size) {
      c.report(RuleKind::kFreeDims, "{}: free dim {} has size {}; sizes are 1..{}", label, i,
               d.size, max_size);
      ok = false;
    }
    if (on_chip && (d.stride < kMinFreeStride || d.stride > kMaxFreeStride))
      c.report(RuleKind::kFreeDims, "{}: free dim {} has stride {}; strides are {}..{} elements",
               label, i, d.stride, kMinFreeStride, kMaxFreeStride);
  }
  return ok;
}

void check_on_chip(Context& c, const AccessPattern& ap, const std::string& label, bool engine) {
  const bool sbuf = ap.space == Space::kSbuf;
  const int64_t parts = sbuf ? c.core.sbuf.partitions : c.core.psum.partitions;
  const int64_t start = ap.start_partition, count = ap.num_partitions;
  if (count < 1 || start < 0 || start + count > parts)
    c.report(RuleKind::kPartitions, "{}: partitions [{}, {}) outside [0, {})", label, start,
             start + count, parts);
  else if (engine && !start_partition_allowed(start, count))
    c.report(RuleKind::kStartPartition,
             "{}: {} partitions cannot start at partition {} (more than 64 start at 0; 33..64 at "
             "0 or 64; 1..32 at 0, 32, 64 or 96)",
             label, count, start);
  if (ap.partition_stride != 0)
    c.report(RuleKind::kMalformed, "{}: a row stride ({}) is for HBM operands only", label,
             ap.partition_stride);
  if (!check_dims(c, ap, label, true)) return;
  const int64_t capacity =
      sbuf ? c.core.sbuf.bytes_per_partition : int64_t{c.core.psum.banks} * c.core.psum.bank_bytes;
  const ByteExtent x = byte_extent(ap);
  if (x.lo < 0 || x.hi > capacity)
    c.report(RuleKind::kBounds, "{}: bytes [{}, {}) outside the {} bytes of a {} partition", label,
             static_cast<int64_t>(x.lo), static_cast<int64_t>(x.hi), capacity, name_of(ap.space));
  if (c.engine == Engine::kVector && engine) {
    const int64_t max = sbuf ? kVectorFreeMaxSbuf : kVectorFreeMaxPsum;
    if (ap.free_elements() > max)
      c.report(RuleKind::kFreeSize,
               "{}: {} elements per partition; VectorE streams at most {} "
               "from {}",
               label, ap.free_elements(), max, name_of(ap.space));
  }
}

void check_hbm(Context& c, const AccessPattern& ap, const std::string& label) {
  if (ap.start_partition != 0)
    c.report(RuleKind::kPartitions,
             "{}: HBM operands start at row 0 (got {}); put the start in "
             "the offset",
             label, ap.start_partition);
  if (ap.num_partitions < 1) {
    c.report(RuleKind::kPartitions, "{}: {} rows", label, ap.num_partitions);
    return;
  }
  if (!check_dims(c, ap, label, false)) return;
  const ByteExtent x = byte_extent(ap);
  for (const HbmTensor& t : c.prog.tensors)
    if (x.lo >= t.address && x.hi <= int128{t.address} + t.bytes()) return;
  c.report(RuleKind::kHbmRange, "{}: HBM bytes [{}, {}) are not inside one declared tensor", label,
           static_cast<int64_t>(x.lo), static_cast<int64_t>(x.hi));
}

void check_placed(Context& c, const AccessPattern& ap, const std::string& label, bool engine) {
  if (ap.space == Space::kHbm)
    check_hbm(c, ap, label);
  else
    check_on_chip(c, ap, label, engine);
}

// Both ends of a dynamic HBM operand inside one tensor, not one end in each.
void check_one_tensor(Context& c, const AccessPattern& ap, const std::string& label) {
  const ByteExtent a = byte_extent(ap.at(0)), b = byte_extent(ap.at(ap.dyn_max));
  const int128 lo = std::min(a.lo, b.lo), hi = std::max(a.hi, b.hi);
  for (const HbmTensor& t : c.prog.tensors)
    if (lo >= t.address && hi <= int128{t.address} + t.bytes()) return;
  c.report(RuleKind::kHbmRange,
           "{}: its register's range reaches HBM bytes [{}, {}), not inside "
           "one declared tensor",
           label, static_cast<int64_t>(lo), static_cast<int64_t>(hi));
}

}  // namespace

bool dtype_allowed(const Context& c, DtypeRule rule, const num::Format& f) {
  using num::Dtype;
  const Dtype d = f.dtype;
  switch (rule) {
    case DtypeRule::kAny:
      return true;
    case DtypeRule::kMatmulIn:
      return d == Dtype::kFp32 || d == Dtype::kTf32 || d == Dtype::kBf16 || d == Dtype::kFp16 ||
             contains(c.tensor_fp8, d);
    case DtypeRule::kPsumOut:
      return d == Dtype::kFp32 || contains(c.psum_dtypes, d);
    case DtypeRule::kMxData: {
      if (mx_name(d).empty()) return false;
      const auto& mx = c.numerics.tensor_mx_formats;  // absent: no MX matmul
      return mx && std::find(mx->begin(), mx->end(), mx_name(d)) != mx->end();
    }
    case DtypeRule::kMxScale:
      return d == Dtype::kE8M0 || d == Dtype::kUint8;
    case DtypeRule::kBf16Fp16:
      return d == Dtype::kBf16 || d == Dtype::kFp16;
    case DtypeRule::kMxFp8:
      return d == Dtype::kFp8E4M3Fn || d == Dtype::kFp8E5M2;
    case DtypeRule::kRowIndex:
      return d == Dtype::kInt32 || d == Dtype::kUint32;
    case DtypeRule::kIndex8:
      return d == Dtype::kUint16 || d == Dtype::kUint32;
    case DtypeRule::kSeed:
      return d == Dtype::kInt32 || d == Dtype::kUint32;
    case DtypeRule::kUint32:
      return d == Dtype::kUint32;
    case DtypeRule::kUint16:
      return d == Dtype::kUint16;
    case DtypeRule::kFp32Int32:
      return d == Dtype::kFp32 || d == Dtype::kInt32;
    case DtypeRule::kInt32:
      return d == Dtype::kInt32;
    case DtypeRule::kInteger:
      return d == Dtype::kInt8 || d == Dtype::kUint8 || d == Dtype::kInt16 || d == Dtype::kUint16 ||
             d == Dtype::kInt32 || d == Dtype::kUint32;
  }
  return false;
}

void check_operands(Context& c) {
  const Instruction& in = *c.inst;
  // DMAs and the sequencer's register loads and stores do not go through an engine's datapath.
  const bool engine_access =
      !is_dma(in.op) && in.op != Opcode::kRegLoad && in.op != Opcode::kRegStore;
  for (int i = 0; i < in.num_operands; ++i) {
    const AccessPattern& ap = c.operand(i);
    const OperandRole& role = operand_role(in.op, i);
    const std::string label = operand_label(in, i);
    if (!role.spaces.has(ap.space))
      c.report(RuleKind::kSpace, "{} is in {}; {} takes {} there", label, name_of(ap.space),
               mnemonic(in.op), spaces_text(role.spaces));
    else if (c.engine == Engine::kGpSimd && ap.space == Space::kPsum && engine_access)
      c.report(RuleKind::kSpace, "{}: GpSimd cannot access PSUM", label);
    if (!dtype_allowed(c, role.dtype, ap.dtype))
      c.report(RuleKind::kDtype, "{} is {}; {} takes {} formats on {}", label, ap.dtype.name(),
               mnemonic(in.op), kDtypeRuleNames.name(role.dtype), c.core.name);
    // MX block scales are read by TensorE one quadrant at a time, four partitions each:
    // NKI's MX tutorial keeps a second operand's scales at partitions 4..7 of every
    // quadrant (scales[4:, ...]), so the engines' start-partition rule does not bind them.
    const bool engine_rules = engine_access && role.dtype != DtypeRule::kMxScale;
    if (!ap.dynamic()) {
      check_placed(c, ap, label, engine_rules);
      continue;
    }
    // A dynamic operand moves linearly with its register, so checking both ends of 0..dyn_max
    // covers every address it can reach.
    if (ap.dyn_reg >= kScalarRegisters || ap.dyn_max < 0) {
      c.report(RuleKind::kMalformed,
               "{}: dynamic offset r{} x {} bytes, r in 0..{}: registers are "
               "r0..r{} and the range is not empty",
               label, ap.dyn_reg, ap.dyn_step, ap.dyn_max, kScalarRegisters - 1);
      continue;
    }
    check_placed(c, ap.at(0), label + " (register at 0)", engine_rules);
    check_placed(c, ap.at(ap.dyn_max), fmt::format("{} (register at {})", label, ap.dyn_max),
                 engine_rules);
    if (ap.space == Space::kHbm) check_one_tensor(c, ap, label);
  }
}

}  // namespace trnsim::isa::detail
