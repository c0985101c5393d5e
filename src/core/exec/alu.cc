#include "core/exec/alu.h"

#include <cmath>
#include <limits>

namespace trnsim::core {

using isa::AluOp;

namespace {

float fmax_nan(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? b : a;  // +0 above -0
  return a > b ? a : b;
}

float fmin_nan(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

float floored_mod(float a, float b) {
  double r = std::fmod(static_cast<double>(a), static_cast<double>(b));  // exact
  if (r != 0 && (r < 0) != (b < 0)) r += b;
  return static_cast<float>(r);
}

}  // namespace

int32_t to_i32(float x) {
  if (std::isnan(x)) return 0;
  if (x >= 2147483648.0f) return std::numeric_limits<int32_t>::max();
  if (x < -2147483648.0f) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(x);
}

bool is_bitvec(AluOp op) {
  switch (op) {
    case AluOp::kBypass:
    case AluOp::kBitwiseAnd:
    case AluOp::kBitwiseOr:
    case AluOp::kBitwiseXor:
    case AluOp::kBitwiseNot:
    case AluOp::kShiftLeft:
    case AluOp::kShiftRightLogical:
      return true;
    default:
      return false;
  }
}

bool is_comparison(AluOp op) {
  switch (op) {
    case AluOp::kIsEqual:
    case AluOp::kNotEqual:
    case AluOp::kIsGe:
    case AluOp::kIsGt:
    case AluOp::kIsLe:
    case AluOp::kIsLt:
      return true;
    default:
      return false;
  }
}

uint32_t alu_bits(AluOp op, uint32_t a, uint32_t b) {
  switch (op) {
    case AluOp::kBitwiseAnd:
      return a & b;
    case AluOp::kBitwiseOr:
      return a | b;
    case AluOp::kBitwiseXor:
      return a ^ b;
    case AluOp::kBitwiseNot:
      return ~a;
    case AluOp::kShiftLeft:
      return a << (b & 31u);
    case AluOp::kShiftRightLogical:
      return a >> (b & 31u);
    default:
      return a;
  }
}

float alu(AluOp op, float a, float b) {
  switch (op) {
    case AluOp::kBypass:
      return a;
    case AluOp::kAdd:
      return a + b;
    case AluOp::kSubtract:
      return a - b;
    case AluOp::kMult:
      return a * b;
    case AluOp::kDivide:
      return a / b;
    case AluOp::kMax:
      return fmax_nan(a, b);
    case AluOp::kMin:
      return fmin_nan(a, b);
    case AluOp::kAbsMax:
      return fmax_nan(std::fabs(a), std::fabs(b));
    case AluOp::kAbsMin:
      return fmin_nan(std::fabs(a), std::fabs(b));
    case AluOp::kPow:
      return static_cast<float>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    case AluOp::kMod:
      return floored_mod(a, b);
    case AluOp::kAverage:
      return static_cast<float>((static_cast<double>(a) + static_cast<double>(b)) * 0.5);
    case AluOp::kIsEqual:
      return a == b ? 1.0f : 0.0f;
    case AluOp::kNotEqual:
      return a != b ? 1.0f : 0.0f;
    case AluOp::kIsGe:
      return a >= b ? 1.0f : 0.0f;
    case AluOp::kIsGt:
      return a > b ? 1.0f : 0.0f;
    case AluOp::kIsLe:
      return a <= b ? 1.0f : 0.0f;
    case AluOp::kIsLt:
      return a < b ? 1.0f : 0.0f;
    case AluOp::kLogicalAnd:
      return (a != 0 && b != 0) ? 1.0f : 0.0f;
    case AluOp::kLogicalOr:
      return (a != 0 || b != 0) ? 1.0f : 0.0f;
    case AluOp::kLogicalXor:
      return ((a != 0) != (b != 0)) ? 1.0f : 0.0f;
    case AluOp::kBitwiseAnd:
    case AluOp::kBitwiseOr:
    case AluOp::kBitwiseXor:
    case AluOp::kBitwiseNot:
    case AluOp::kShiftLeft:
    case AluOp::kShiftRightLogical:
      return static_cast<float>(static_cast<int32_t>(
          alu_bits(op, static_cast<uint32_t>(to_i32(a)), static_cast<uint32_t>(to_i32(b)))));
    case AluOp::kRsqrt:
      return static_cast<float>(1.0 / std::sqrt(static_cast<double>(a)));
    case AluOp::kAbs:
      return std::fabs(a);
  }
  return a;
}

namespace {

template <typename F>
void map2(const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n, F f) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const float s = *b;
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], s);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i * sa], b[i * sb]);
  }
}

}  // namespace

void alu_array(AluOp op, const float* a, int64_t sa, const float* b, int64_t sb, float* out,
               int64_t n) {
  // The common ops get their own loops (vectorisable, no per-element dispatch).
  switch (op) {
    case AluOp::kAdd:
      return map2(a, sa, b, sb, out, n, [](float x, float y) { return x + y; });
    case AluOp::kSubtract:
      return map2(a, sa, b, sb, out, n, [](float x, float y) { return x - y; });
    case AluOp::kMult:
      return map2(a, sa, b, sb, out, n, [](float x, float y) { return x * y; });
    case AluOp::kBypass:
      return map2(a, sa, b, sb, out, n, [](float x, float) { return x; });
    default:
      return map2(a, sa, b, sb, out, n, [op](float x, float y) { return alu(op, x, y); });
  }
}

bool alu_reg(AluOp op, int32_t a, int32_t b, int32_t& out) {
  const auto ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
  switch (op) {
    case AluOp::kBypass:
      out = a;
      return true;
    case AluOp::kAdd:
      out = static_cast<int32_t>(ua + ub);
      return true;
    case AluOp::kSubtract:
      out = static_cast<int32_t>(ua - ub);
      return true;
    case AluOp::kMult:
      out = static_cast<int32_t>(ua * ub);
      return true;
    case AluOp::kDivide:
    case AluOp::kMod:
      if (b == 0) return false;
      if (a == std::numeric_limits<int32_t>::min() && b == -1) {  // wraps, as the hardware would
        out = op == AluOp::kDivide ? a : 0;
        return true;
      }
      out = op == AluOp::kDivide ? a / b : a % b;
      return true;
    case AluOp::kMax:
      out = a > b ? a : b;
      return true;
    case AluOp::kMin:
      out = a < b ? a : b;
      return true;
    case AluOp::kIsEqual:
      out = a == b;
      return true;
    case AluOp::kNotEqual:
      out = a != b;
      return true;
    case AluOp::kIsGe:
      out = a >= b;
      return true;
    case AluOp::kIsGt:
      out = a > b;
      return true;
    case AluOp::kIsLe:
      out = a <= b;
      return true;
    case AluOp::kIsLt:
      out = a < b;
      return true;
    case AluOp::kLogicalAnd:
      out = (a != 0) && (b != 0);
      return true;
    case AluOp::kLogicalOr:
      out = (a != 0) || (b != 0);
      return true;
    case AluOp::kLogicalXor:
      out = (a != 0) != (b != 0);
      return true;
    case AluOp::kBitwiseAnd:
    case AluOp::kBitwiseOr:
    case AluOp::kBitwiseXor:
    case AluOp::kBitwiseNot:
    case AluOp::kShiftLeft:
    case AluOp::kShiftRightLogical:
      out = static_cast<int32_t>(alu_bits(op, ua, ub));
      return true;
    case AluOp::kAbs:
      out = a == std::numeric_limits<int32_t>::min() ? a : (a < 0 ? -a : a);
      return true;
    default:
      return false;
  }
}

float alu_reduce(isa::AluOp op, const float* x, int64_t n) {
  float acc = x[0];
  for (int64_t i = 1; i < n; ++i) acc = alu(op, acc, x[i]);
  return acc;
}

}  // namespace trnsim::core
