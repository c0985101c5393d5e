// Helpers of the functional-semantics tests: hand-built cores of each generation (so these
// tests do not depend on the spec files), a harness around one Executor, access-pattern and
// instruction builders, and the independent reference path: values go in and come out through
// numerics' scalar encode()/decode() (not the engines' bulk tile casts), and expected results
// are computed in double and rounded by encode().
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "arch/core_spec.h"
#include "core/exec/executor.h"
#include "isa/instruction.h"
#include "mem/hbm.h"
#include "numerics/convert.h"
#include "numerics/format.h"

namespace trnsim::core::testing {

// NC-v2 / v3 / v4 as far as the executor cares: 128 partitions, SBUF 192/224/256 KiB, PSUM
// 8 x 2 KiB, 128x128 PE array, the generation's feature flags and matmul limits.
arch::CoreSpec test_core(int version);

// An on-chip pattern: partitions [p0, p0 + parts), byte offset, row-major contiguous free dims
// of the given sizes (strides derived), or one element when sizes is empty.
isa::AccessPattern onchip(isa::Space s, num::Format f, int p0, int parts, int64_t offset,
                          std::initializer_list<int64_t> sizes);
inline isa::AccessPattern sbuf(num::Format f, int p0, int parts, int64_t offset,
                               std::initializer_list<int64_t> sizes) {
  return onchip(isa::Space::kSbuf, f, p0, parts, offset, sizes);
}
inline isa::AccessPattern psum(num::Format f, int p0, int parts, int64_t offset,
                               std::initializer_list<int64_t> sizes) {
  return onchip(isa::Space::kPsum, f, p0, parts, offset, sizes);
}
// HBM: `rows` rows of `cols` contiguous elements, row stride `cols`, from byte `address`.
isa::AccessPattern hbm(num::Format f, int64_t address, int rows, int64_t cols);

isa::Instruction make(isa::Opcode op, isa::Engine e, std::initializer_list<isa::AccessPattern> aps,
                      isa::Params p = {});

// Round-to-nearest-even of an exact value to a format, through encode()/decode().
double round_to(const num::Format& f, double v);
// The engines' output path: the exact value rounded to FP32, then to the destination format.
double fp32_then(const num::Format& f, double v);
// Whether two doubles are the same value (NaN equals NaN; +0 != -0).
bool same(double a, double b);

class Harness {
 public:
  explicit Harness(int version = 3, ExecOptions opts = {});

  Executor& exec() { return *exec_; }
  const mem::FaultList& faults() { return exec_->faults(); }
  // Runs one instruction on its own engine with the next id; true when it did not fault.
  bool run(const isa::Instruction& in);

  // Element values of a pattern in pattern order ([rows][free]), encoded with RNE.
  void put(const isa::AccessPattern& ap, const std::vector<double>& values);
  std::vector<double> get(const isa::AccessPattern& ap);
  void put_codes(const isa::AccessPattern& ap, const std::vector<uint64_t>& codes);
  std::vector<uint64_t> get_codes(const isa::AccessPattern& ap);

 private:
  std::unique_ptr<mem::Hbm> hbm_;
  std::unique_ptr<Executor> exec_;
  std::array<uint64_t, isa::kNumEngines> ids_{};
};

// splitmix64 with helpers for test data.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next();
  double uniform(double lo, double hi);
  // n random finite values of format f in [-range, range], already representable in f.
  std::vector<double> values(const num::Format& f, size_t n, double range);

 private:
  uint64_t s_;
};

// The float formats element-wise ops are tested in.
std::vector<num::Format> float_formats();

// The ALU ops the tests use, in double, written here from the ISA reference (independent of
// core/exec/alu.cc); of two fp32 inputs, the result rounded to fp32 is the engine's one step.
inline double ref_alu(isa::AluOp op, double a, double b) {
  using isa::AluOp;
  switch (op) {
    case AluOp::kAdd:
      return a + b;
    case AluOp::kSubtract:
      return a - b;
    case AluOp::kMult:
      return a * b;
    case AluOp::kDivide:
      return a / b;
    case AluOp::kMax:
      return a == b ? (std::signbit(a) ? b : a) : (a > b ? a : b);
    case AluOp::kMin:
      return a == b ? (std::signbit(a) ? a : b) : (a < b ? a : b);
    case AluOp::kIsGe:
      return a >= b ? 1 : 0;
    case AluOp::kAbsMax:
      return std::fabs(a) > std::fabs(b) ? std::fabs(a) : std::fabs(b);
    default:
      return a;
  }
}

}  // namespace trnsim::core::testing
