#include "test_util.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "base/counter_rng.h"

namespace trnsim::num::testing {

FormatCase case_for(Dtype d) {
  switch (d) {
    case Dtype::kFp64:
      return {fp64(), oracle::spec_fp64()};
    case Dtype::kFp32:
      return {fp32(), oracle::spec_fp32()};
    case Dtype::kTf32:
      return {tf32(), oracle::spec_tf32()};
    case Dtype::kBf16:
      return {bf16(), oracle::spec_bf16()};
    case Dtype::kFp16:
      return {fp16(), oracle::spec_fp16()};
    case Dtype::kFp8E4M3:
      return {fp8_e4m3(), oracle::spec_e4m3()};
    case Dtype::kFp8E4M3Fn:
      return {fp8_e4m3fn(), oracle::spec_e4m3fn()};
    case Dtype::kFp8E5M2:
      return {fp8_e5m2(), oracle::spec_e5m2()};
    case Dtype::kFp8E3M4:
      return {fp8_e3m4(), oracle::spec_e3m4()};
    case Dtype::kCfp8:
      return case_cfp8(4, 8);
    case Dtype::kFp4E2M1:
      return {fp4_e2m1(), oracle::spec_e2m1()};
    case Dtype::kE8M0:
      return {e8m0(), oracle::spec_e8m0()};
    case Dtype::kInt8:
      return {int_format(d), oracle::spec_int(8, true)};
    case Dtype::kInt16:
      return {int_format(d), oracle::spec_int(16, true)};
    case Dtype::kInt32:
      return {int_format(d), oracle::spec_int(32, true)};
    case Dtype::kUint8:
      return {int_format(d), oracle::spec_int(8, false)};
    case Dtype::kUint16:
      return {int_format(d), oracle::spec_int(16, false)};
    case Dtype::kUint32:
      return {int_format(d), oracle::spec_int(32, false)};
  }
  throw std::logic_error("case_for: unknown dtype");
}

FormatCase case_cfp8(int exp_bits, int bias) {
  return {cfp8(exp_bits, bias), oracle::spec_cfp8(exp_bits, bias)};
}

std::vector<FormatCase> fp8_cases() {
  return {case_for(Dtype::kFp8E4M3), case_for(Dtype::kFp8E4M3Fn), case_for(Dtype::kFp8E5M2),
          case_for(Dtype::kFp8E3M4), case_for(Dtype::kCfp8)};
}

std::vector<FormatCase> narrow_cases() {
  std::vector<FormatCase> v = fp8_cases();
  v.push_back(case_for(Dtype::kFp4E2M1));
  v.push_back(case_for(Dtype::kE8M0));
  return v;
}

std::vector<FormatCase> cfp8_all_cases() {
  std::vector<FormatCase> v;
  for (int e : {4, 5}) {
    for (int b = 0; b <= 63; ++b) v.push_back(case_cfp8(e, b));
  }
  return v;
}

std::vector<FormatCase> int_cases() {
  std::vector<FormatCase> v;
  for (Dtype d : {Dtype::kInt8, Dtype::kInt16, Dtype::kInt32, Dtype::kUint8, Dtype::kUint16,
                  Dtype::kUint32}) {
    v.push_back(case_for(d));
  }
  return v;
}

bool nightly() {
  const char* level = std::getenv("TRNSIM_TEST_LEVEL");
  return level != nullptr && std::strcmp(level, "nightly") == 0;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

bool sanitized() { return kSanitized; }

size_t count_for_level(size_t ci, size_t nightly_count) {
  if (nightly()) return nightly_count;
  return kSanitized ? ci / 20 : ci;
}

size_t sample_stride(size_t sanitizer_stride) {
  return kSanitized && !nightly() ? sanitizer_stride : 1;
}

std::vector<uint64_t> thin(const std::vector<uint64_t>& v, size_t stride) {
  if (stride <= 1) return v;
  std::vector<uint64_t> out;
  for (size_t i = 0; i < v.size(); i += stride) out.push_back(v[i]);
  if (!v.empty() && (v.size() - 1) % stride != 0) out.push_back(v.back());
  return out;
}

std::vector<uint8_t> pack(const Format& f, const std::vector<uint64_t>& codes) {
  std::vector<uint8_t> buf(codes.size() * f.storage_bytes);
  for (size_t i = 0; i < codes.size(); ++i) {
    std::memcpy(buf.data() + i * f.storage_bytes, &codes[i], f.storage_bytes);  // little-endian
  }
  return buf;
}

std::vector<uint64_t> unpack(const Format& f, const std::vector<uint8_t>& buf, size_t n) {
  std::vector<uint64_t> codes(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(&codes[i], buf.data() + i * f.storage_bytes, f.storage_bytes);
  }
  return codes;
}

std::vector<uint64_t> convert_codes(const Format& from, const std::vector<uint64_t>& codes,
                                    const Format& to, const RoundOptions& opts) {
  const std::vector<uint8_t> src = pack(from, codes);
  // Pre-fill the destination with a pattern so that an element left unwritten shows up.
  std::vector<uint8_t> dst(codes.size() * to.storage_bytes + 1, 0xA5);
  convert(from, src.data(), to, dst.data(), codes.size(), opts);
  EXPECT_EQ(dst.back(), 0xA5) << "convert wrote past the end of dst";
  return unpack(to, dst, codes.size());
}

std::string mode_name(Rounding r) {
  switch (r) {
    case Rounding::kNearestEven:
      return "RNE";
    case Rounding::kTowardZero:
      return "RZ";
    case Rounding::kStochastic:
      return "SR";
  }
  return "?";
}

std::string overflow_name(Overflow o) { return o == Overflow::kInfinity ? "inf" : "sat"; }

std::string describe(const RoundOptions& o) {
  std::string s = mode_name(o.rounding) + "/" + overflow_name(o.policy.overflow);
  if (o.rounding == Rounding::kStochastic) {
    s += "/R=" + std::to_string(o.policy.sr_random_bits) + " seed=" + std::to_string(o.seed) +
         " stream=" + std::to_string(o.stream) + " base=" + std::to_string(o.index_base);
  }
  if (o.policy.flush_subnormals) s += "/flush";
  return s;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void Mismatches::add(const std::string& detail) {
  ++count_;
  if (first_.size() < 12) first_.push_back(detail);
}

std::string Mismatches::report() const {
  std::string s = what_ + ": " + std::to_string(count_) + " mismatches in " +
                  std::to_string(checked_) + " checks";
  for (const std::string& d : first_) s += "\n  " + d;
  if (count_ > first_.size()) s += "\n  ...";
  return s;
}

oracle::Expect expect_element(const oracle::Spec& to, const oracle::Exact& x,
                              const RoundOptions& opts, size_t i) {
  const uint32_t random = opts.rounding == Rounding::kStochastic
                              ? random_u32(opts.seed, opts.stream, opts.index_base + i)
                              : 0;
  return oracle::round(to, x, opts.rounding, random, opts.policy.overflow,
                       opts.policy.sr_random_bits, opts.policy.flush_subnormals);
}

void check_conversion(const FormatCase& from, const std::vector<uint64_t>& codes,
                      const FormatCase& to, const RoundOptions& opts, Mismatches& mm) {
  const std::vector<uint64_t> out = convert_codes(from.lib, codes, to.lib, opts);
  for (size_t i = 0; i < codes.size(); ++i) {
    const oracle::Exact x = oracle::decode(from.ref, codes[i]);
    const oracle::Expect e = expect_element(to.ref, x, opts, i);
    mm.checked();
    if (!oracle::satisfies(to.ref, e, out[i])) {
      mm.add(from.ref.name + " " + hex(codes[i]) + " = " + x.str() + " -> " + to.ref.name + " " +
             describe(opts) + " [i=" + std::to_string(i) + "]: expected " + e.str() + ", got " +
             hex(out[i]) + " = " + oracle::decode(to.ref, out[i]).str());
    }
  }
}

void check_encode(const FormatCase& to, double value, Rounding mode, uint32_t random,
                  const NumericPolicy& policy, Mismatches& mm) {
  const oracle::Exact x = oracle::from_double(value);
  const oracle::Expect e = oracle::round(to.ref, x, mode, random, policy.overflow,
                                         policy.sr_random_bits, policy.flush_subnormals);
  const uint64_t got = encode(to.lib, value, mode, random, policy);
  mm.checked();
  if (!oracle::satisfies(to.ref, e, got)) {
    mm.add("encode(" + to.ref.name + ", " + x.str() + ", " + mode_name(mode) +
           ", r=" + hex(random) + ", " + overflow_name(policy.overflow) +
           ", R=" + std::to_string(policy.sr_random_bits) + "): expected " + e.str() + ", got " +
           hex(got) + " = " + oracle::decode(to.ref, got).str());
  }
}

std::vector<RoundOptions> all_round_options(uint64_t seed, uint64_t stream) {
  std::vector<RoundOptions> v;
  for (Rounding r : {Rounding::kNearestEven, Rounding::kTowardZero, Rounding::kStochastic}) {
    for (Overflow o : {Overflow::kInfinity, Overflow::kSaturate}) {
      RoundOptions opts;
      opts.rounding = r;
      opts.policy.overflow = o;
      opts.seed = seed;
      opts.stream = stream;
      v.push_back(opts);
    }
  }
  return v;
}

}  // namespace trnsim::num::testing
