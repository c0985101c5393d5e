// Numerics bindings: whole arrays cross the boundary as raw element containers (uint8/16/32,
// float32/64, ints); the Python layer views them as numpy / ml_dtypes dtypes. All per-element
// work is the C++ converter, with the GIL released.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstring>
#include <memory>
#include <vector>

#include "base/error.h"
#include "bindings/bindings.h"
#include "numerics/convert.h"
#include "numerics/mx.h"
#include "numerics/policy_names.h"

namespace trnsim::bindings {

namespace {

using InArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::numpy>;

nb::dlpack::dtype container_dtype(const num::Format& f) {
  if (f.kind == num::Kind::kFloat) {
    if (f.dtype == num::Dtype::kFp64) return nb::dtype<double>();
    if (f.dtype == num::Dtype::kFp32 || f.dtype == num::Dtype::kTf32) return nb::dtype<float>();
  } else if (f.is_signed) {
    switch (f.storage_bytes) {
      case 1: return nb::dtype<int8_t>();
      case 2: return nb::dtype<int16_t>();
      default: return nb::dtype<int32_t>();
    }
  }
  switch (f.storage_bytes) {
    case 1: return nb::dtype<uint8_t>();
    case 2: return nb::dtype<uint16_t>();
    case 4: return nb::dtype<uint32_t>();
    default: return nb::dtype<uint64_t>();
  }
}

// A fresh C-contiguous array of `shape` holding elements of `bytes` each, owned by Python.
template <typename Fill>
OutArray make_array(const std::vector<size_t>& shape, size_t bytes, nb::dlpack::dtype dt,
                    Fill&& fill) {
  size_t n = 1;
  for (size_t s : shape) n *= s;
  auto buf = std::make_unique<uint8_t[]>(n * bytes + 1);
  {
    nb::gil_scoped_release release;
    fill(buf.get(), n);
  }
  uint8_t* raw = buf.release();
  nb::capsule owner(raw, [](void* p) noexcept { delete[] static_cast<uint8_t*>(p); });
  return OutArray(raw, shape.size(), shape.data(), owner, nullptr, dt);
}

std::vector<size_t> shape_of(const InArray& a) {
  std::vector<size_t> s(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) s[i] = a.shape(i);
  return s;
}

void check_container(const InArray& a, const num::Format& f, const char* what) {
  if (a.itemsize() != f.storage_bytes)
    throw InputError("", what,
                     "array of " + std::to_string(a.itemsize()) + "-byte elements given for format '" +
                         f.name() + "', which is stored in " + std::to_string(f.storage_bytes) +
                         "-byte elements");
}

num::RoundOptions round_options(const std::string& rounding, uint64_t seed, uint64_t stream,
                                const std::string& overflow, const std::string& nan,
                                int sr_bits, bool flush) {
  num::RoundOptions o;
  o.rounding = num::parse_rounding(rounding);
  o.seed = seed;
  o.stream = stream;
  o.policy.overflow = num::parse_overflow(overflow);
  o.policy.nan = num::parse_nan_mode(nan);
  if (sr_bits < 1 || sr_bits > 32)
    throw InputError("", "sr_random_bits", "must be in 1..32, got " + std::to_string(sr_bits));
  o.policy.sr_random_bits = sr_bits;
  o.policy.flush_subnormals = flush;
  return o;
}

num::MxScaleRule parse_rule(const std::string& r) {
  if (r == "trainium") return num::MxScaleRule::kTrainium;
  if (r == "ocp") return num::MxScaleRule::kOcp;
  throw InputError("", "scale_rule", "unknown value '" + r + "' (accepted: trainium, ocp)");
}

}  // namespace

void bind_numerics(nb::module_& m) {
  m.def(
      "convert",
      [](InArray src, const std::string& from, const std::string& to, const std::string& rounding,
         uint64_t seed, uint64_t stream, const std::string& overflow, const std::string& nan,
         int sr_bits, bool flush) {
        const num::Format ff = num::parse_format(from), ft = num::parse_format(to);
        check_container(src, ff, "array");
        const num::RoundOptions o = round_options(rounding, seed, stream, overflow, nan, sr_bits, flush);
        const void* in = src.data();
        return make_array(shape_of(src), ft.storage_bytes, container_dtype(ft),
                          [&](uint8_t* out, size_t n) { num::convert(ff, in, ft, out, n, o); });
      },
      nb::arg("src"), nb::arg("from_format"), nb::arg("to_format"), nb::arg("rounding") = "rne",
      nb::arg("seed") = 0, nb::arg("stream") = 0, nb::arg("overflow") = "inf",
      nb::arg("nan") = "propagate", nb::arg("sr_random_bits") = 16,
      nb::arg("flush_subnormals") = false,
      "Convert raw element containers from one format to another; returns the raw container.");

  m.def(
      "format_info",
      [](const std::string& name) {
        const num::Format f = num::parse_format(name);
        nb::dict d;
        d["name"] = f.name();
        d["kind"] = f.kind == num::Kind::kFloat ? "float" : "int";
        d["bits"] = f.bits;
        d["storage_bytes"] = f.storage_bytes;
        d["signed"] = f.is_signed;
        if (f.kind == num::Kind::kFloat) {
          d["exp_bits"] = f.exp_bits;
          d["man_bits"] = f.man_bits;
          d["bias"] = f.bias;
          d["has_inf"] = f.has_inf();
          d["has_nan"] = f.has_nan();
          d["max"] = f.max_finite();
          d["min_normal"] = f.min_normal();
          d["min_subnormal"] = f.min_subnormal();
        }
        return d;
      },
      nb::arg("name"), "Descriptor of a number format as a dict.");

  m.def(
      "quantize_mx",
      [](nb::ndarray<nb::ro, float, nb::c_contig, nb::device::cpu> x, const std::string& elem,
         const std::string& rule, const std::string& rounding, uint64_t seed, uint64_t stream) {
        const num::Format fe = num::parse_format(elem);
        const num::MxScaleRule r = parse_rule(rule);
        num::RoundOptions o = round_options(rounding, seed, stream, "inf", "propagate", 16, false);
        if (x.ndim() == 0 || x.shape(x.ndim() - 1) % num::kMxBlockSize != 0)
          throw InputError("", "x", "the last dimension must be a multiple of 32 (one MX block)");
        std::vector<size_t> shape(x.ndim());
        for (size_t i = 0; i < x.ndim(); ++i) shape[i] = x.shape(i);
        std::vector<size_t> sshape = shape;
        sshape.back() /= num::kMxBlockSize;
        std::vector<uint8_t> scales(x.size() / num::kMxBlockSize);
        const float* in = x.data();
        OutArray elems = make_array(shape, 1, nb::dtype<uint8_t>(), [&](uint8_t* out, size_t n) {
          num::quantize_mx(in, n, fe, r, o, out, scales.data());
        });
        OutArray sc = make_array(sshape, 1, nb::dtype<uint8_t>(), [&](uint8_t* out, size_t n) {
          std::memcpy(out, scales.data(), n);
        });
        return nb::make_tuple(elems, sc);
      },
      nb::arg("x"), nb::arg("elem_format"), nb::arg("scale_rule") = "trainium",
      nb::arg("rounding") = "rne", nb::arg("seed") = 0, nb::arg("stream") = 0,
      "MX-quantise float32 values (blocks of 32 along the last axis): (element codes, E8M0 scales).");

  m.def(
      "dequantize_mx",
      [](nb::ndarray<nb::ro, uint8_t, nb::c_contig, nb::device::cpu> elems,
         nb::ndarray<nb::ro, uint8_t, nb::c_contig, nb::device::cpu> scales, const std::string& elem) {
        const num::Format fe = num::parse_format(elem);
        if (elems.size() % num::kMxBlockSize != 0 || scales.size() * num::kMxBlockSize != elems.size())
          throw InputError("", "scales", "need one scale per 32 elements");
        std::vector<size_t> shape(elems.ndim());
        for (size_t i = 0; i < elems.ndim(); ++i) shape[i] = elems.shape(i);
        const uint8_t* e = elems.data();
        const uint8_t* s = scales.data();
        return make_array(shape, 4, nb::dtype<float>(), [&](uint8_t* out, size_t n) {
          num::dequantize_mx(e, s, n, fe, reinterpret_cast<float*>(out));
        });
      },
      nb::arg("elems"), nb::arg("scales"), nb::arg("elem_format"),
      "Dequantise MX element codes with their E8M0 scales to float32.");
}

}  // namespace trnsim::bindings
