#include "exec_test_util.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace trnsim::core::testing {

arch::CoreSpec test_core(int version) {
  arch::CoreSpec c;
  c.name = "test-v" + std::to_string(version);
  c.version = version;
  c.tensor.pe_rows = c.tensor.pe_cols = 128;
  c.tensor.row_tile_sizes =
      version == 2 ? std::vector<int>{128, 64} : std::vector<int>{128, 64, 32};
  c.tensor.col_tile_sizes = c.tensor.row_tile_sizes;
  c.tensor.limits.k_max = 128;
  c.tensor.limits.m_max = 128;
  c.tensor.limits.n_max_fp32_psum = version >= 4 ? 4096 : 512;
  if (version >= 4) {
    c.tensor.limits.n_max_bf16_psum = 8192;
    c.tensor.limits.mx_k_max = 512;
    c.tensor.limits.mx_n_max = 512;
  }
  c.sbuf.partitions = 128;
  c.sbuf.bytes_per_partition = (version == 2 ? 192 : version == 3 ? 224 : 256) * 1024;
  c.psum.partitions = 128;
  c.psum.banks = 8;
  c.psum.bank_bytes = 2048;
  c.dma.engines = 16;
  c.dma.queues_per_engine = 16;
  c.dma.transpose = version >= 3;
  auto& f = c.features;
  f.double_row_fp8 = version == 3;
  f.mx_matmul = f.bf16_psum = f.fast_exponential = f.quantize_mx = version >= 4;
  f.near_memory_accumulation = version >= 4;
  f.bit_exact_transpose = version >= 3;
  f.range_select = version >= 3;
  f.nonzero_with_count = version >= 3;
  f.activate2 = f.rand2 = version >= 4;
  return c;
}

isa::AccessPattern onchip(isa::Space s, num::Format f, int p0, int parts, int64_t offset,
                          std::initializer_list<int64_t> sizes) {
  isa::AccessPattern ap;
  ap.space = s;
  ap.dtype = f;
  ap.start_partition = p0;
  ap.num_partitions = parts;
  ap.offset = offset;
  ap.ndim = static_cast<int32_t>(sizes.size());
  int64_t stride = 1;
  std::vector<int64_t> sz(sizes);
  for (int d = ap.ndim - 1; d >= 0; --d) {
    ap.dims[d] = {stride, sz[static_cast<size_t>(d)]};
    stride *= sz[static_cast<size_t>(d)];
  }
  return ap;
}

isa::AccessPattern hbm(num::Format f, int64_t address, int rows, int64_t cols) {
  isa::AccessPattern ap;
  ap.space = isa::Space::kHbm;
  ap.dtype = f;
  ap.num_partitions = rows;
  ap.partition_stride = cols;
  ap.offset = address;
  ap.ndim = 1;
  ap.dims[0] = {1, cols};
  return ap;
}

isa::Instruction make(isa::Opcode op, isa::Engine e, std::initializer_list<isa::AccessPattern> aps,
                      isa::Params p) {
  isa::Instruction in;
  in.op = op;
  in.engine = e;
  for (const auto& a : aps) in.operands[static_cast<size_t>(in.num_operands++)] = a;
  in.p = p;
  return in;
}

double round_to(const num::Format& f, double v) {
  return num::decode(f, num::encode(f, v, num::Rounding::kNearestEven, 0, {}));
}

double fp32_then(const num::Format& f, double v) { return round_to(f, round_to(num::fp32(), v)); }

bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

Harness::Harness(int version, ExecOptions opts)
    : hbm_(std::make_unique<mem::Hbm>(uint64_t{1} << 34)),
      exec_(std::make_unique<Executor>(test_core(version), opts, *hbm_)) {}

bool Harness::run(const isa::Instruction& in) {
  const auto e = static_cast<size_t>(in.engine);
  return exec_->execute(in, in.engine, ids_[e]++).ok;
}

namespace {

// Byte address of element i (pattern order) of row r: partition / device address + offset.
template <typename Fn>
void for_each_element(const isa::AccessPattern& ap, Fn fn) {
  const int64_t es = ap.dtype.storage_bytes;
  int64_t n = 0;
  for (int64_t r = 0; r < ap.num_partitions; ++r) {
    int64_t idx[4] = {0, 0, 0, 0};
    const int64_t count = ap.free_elements();
    for (int64_t i = 0; i < count; ++i) {
      int64_t off = 0;
      for (int d = 0; d < ap.ndim; ++d) off += idx[d] * ap.dims[d].stride;
      if (ap.space == isa::Space::kHbm) off += r * ap.partition_stride;
      fn(r, ap.offset + off * es, n++);
      for (int d = ap.ndim - 1; d >= 0; --d) {
        if (++idx[d] < ap.dims[d].size) break;
        idx[d] = 0;
      }
    }
  }
}

}  // namespace

void Harness::put_codes(const isa::AccessPattern& ap, const std::vector<uint64_t>& codes) {
  const int es = ap.dtype.storage_bytes;
  auto& m = exec_->memory();
  for_each_element(ap, [&](int64_t r, int64_t byte, int64_t n) {
    uint8_t b[8];
    std::memcpy(b, &codes.at(static_cast<size_t>(n)), 8);
    if (ap.space == isa::Space::kHbm)
      m.hbm().write(static_cast<uint64_t>(byte), b, static_cast<uint64_t>(es));
    else
      std::memcpy(m.onchip(ap.space).row(static_cast<int>(ap.start_partition + r)) + byte, b,
                  static_cast<size_t>(es));
  });
}

std::vector<uint64_t> Harness::get_codes(const isa::AccessPattern& ap) {
  const int es = ap.dtype.storage_bytes;
  auto& m = exec_->memory();
  std::vector<uint64_t> out(static_cast<size_t>(ap.elements()));
  for_each_element(ap, [&](int64_t r, int64_t byte, int64_t n) {
    uint64_t v = 0;
    if (ap.space == isa::Space::kHbm)
      m.hbm().read(static_cast<uint64_t>(byte), &v, static_cast<uint64_t>(es));
    else
      std::memcpy(&v, m.onchip(ap.space).row(static_cast<int>(ap.start_partition + r)) + byte,
                  static_cast<size_t>(es));
    out[static_cast<size_t>(n)] = v;
  });
  return out;
}

void Harness::put(const isa::AccessPattern& ap, const std::vector<double>& values) {
  std::vector<uint64_t> codes(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    codes[i] = num::encode(ap.dtype, values[i], num::Rounding::kNearestEven, 0, {});
  put_codes(ap, codes);
}

std::vector<double> Harness::get(const isa::AccessPattern& ap) {
  std::vector<uint64_t> codes = get_codes(ap);
  std::vector<double> out(codes.size());
  for (size_t i = 0; i < codes.size(); ++i) out[i] = num::decode(ap.dtype, codes[i]);
  return out;
}

uint64_t Rng::next() {
  uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform(double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
}

std::vector<double> Rng::values(const num::Format& f, size_t n, double range) {
  std::vector<double> v(n);
  for (double& x : v) x = round_to(f, uniform(-range, range));
  return v;
}

std::vector<num::Format> float_formats() {
  return {num::fp32(), num::bf16(), num::fp16(), num::fp8_e4m3(), num::fp8_e5m2()};
}

}  // namespace trnsim::core::testing
