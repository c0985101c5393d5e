// Kernel API bindings (src/kernel/builder.h): Chip, View and KernelBuilder, one Python call per
// C++ call. Indices are converted here (ints, slices, Ellipsis), so that the NKI front end's
// hot path (a slice and an op per instruction) stays one crossing per Python call.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <limits>
#include <memory>
#include <string>

#include "arch/arch.h"
#include "base/error.h"
#include "bindings/bindings.h"
#include "bindings/kernel_types.h"
#include "isa/access_rules.h"
#include "isa/names.h"
#include "kernel/builder.h"

namespace trnsim::bindings {

namespace {

using kernel::Idx;
using kernel::KernelBuilder;
using kernel::View;

num::Format format_of(const std::string& name) { return num::parse_format(name); }

std::string py_type_name(nb::handle h) { return nb::inst_name(h).c_str(); }

// repr(h), cut to a length an error message can carry (10**400 has 401 digits).
std::string short_repr(nb::handle h) {
  std::string r = nb::repr(h).c_str();
  return r.size() <= 60 ? r : r.substr(0, 57) + "...";
}

// A Python integer (int, numpy integer: anything with __index__ but bool) as int64. The
// errors name what(): a TypeError for another type, a ValueError past int64 (nb::cast would
// throw std::bad_cast for both, which reached Python as a RuntimeError naming nothing).
// what() is called on errors only: indexing is on the NKI front end's hot path.
template <class What>
int64_t as_int64_lazy(nb::handle h, const What& what) {
  int overflow = 0;
  if (PyLong_CheckExact(h.ptr())) {  // the common case, without PyNumber_Index
    const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow == 0) return v;
    throw InputError("kernel view", what(), short_repr(h) + " does not fit a 64-bit integer");
  }
  if (PyBool_Check(h.ptr()) || !PyIndex_Check(h.ptr()))
    throw nb::type_error(
        (what() + ": expected an integer, got " + py_type_name(h) + " " + short_repr(h)).c_str());
  nb::object i = nb::steal(PyNumber_Index(h.ptr()));
  if (!i.is_valid()) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();  // its own message
    PyErr_Clear();  // numpy's "only integer scalar arrays ..." names nothing
    throw nb::type_error((what() + ": expected an integer, got " + py_type_name(h)).c_str());
  }
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0)
    throw InputError("kernel view", what(), short_repr(h) + " does not fit a 64-bit integer");
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

int64_t as_int64(nb::handle h, const std::string& what) {
  return as_int64_lazy(h, [&] { return what; });
}

// A sequence of integers (a list, tuple or numpy array of them).
std::vector<int64_t> as_int64s(nb::handle h, const std::string& what) {
  if (PyUnicode_Check(h.ptr()) || PyBytes_Check(h.ptr()) || !PySequence_Check(h.ptr()))
    throw nb::type_error((what + ": expected a list of integers, got " + py_type_name(h)).c_str());
  std::vector<int64_t> out;
  for (nb::handle x : nb::borrow<nb::sequence>(h))
    out.push_back(as_int64(x, what + "[" + std::to_string(out.size()) + "]"));
  return out;
}

// Python index (int, slice, Ellipsis or a tuple of them) -> Idx per dim, numpy rules for
// negative ints and open slices; a step < 1 is an error.
std::vector<Idx> indices(const View& v, nb::handle key) {
  std::vector<nb::handle> items;
  if (nb::isinstance<nb::tuple>(key))
    for (nb::handle h : nb::borrow<nb::tuple>(key)) items.push_back(h);
  else
    items.push_back(key);
  std::vector<Idx> out;
  size_t ellipsis = items.size();
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].is(Py_Ellipsis)) ellipsis = i;
  const size_t named = items.size() - (ellipsis < items.size() ? 1 : 0);
  for (size_t i = 0; i < items.size(); ++i) {
    const nb::handle h = items[i];
    if (i == ellipsis) {
      for (size_t k = named; k < static_cast<size_t>(v.rank()); ++k) out.emplace_back(kernel::all);
      continue;
    }
    const size_t d = out.size();
    if (d >= static_cast<size_t>(v.rank()))
      throw InputError(
          "kernel view", "index of " + v.describe(),
          std::to_string(named) + " indices for " + std::to_string(v.rank()) + " dims");
    const int64_t size = v.size(static_cast<int>(d));
    const auto what = [&] { return "index of " + v.describe() + ": dim " + std::to_string(d); };
    if (nb::isinstance<nb::slice>(h)) {
      // A stop past the dim is an error, as in NKI (numpy would clamp it): the view says so.
      const nb::handle stop = h.attr("stop");
      const auto stop_what = [&] { return what() + ": slice stop"; };
      if (!stop.is_none() && as_int64_lazy(stop, stop_what) > size) {
        const nb::handle start = h.attr("start");
        out.emplace_back(
            start.is_none() ? 0 : as_int64_lazy(start, [&] { return what() + ": slice start"; }),
            as_int64_lazy(stop, stop_what));
        continue;
      }
      auto [b, e, s, n] = nb::borrow<nb::slice>(h).compute(static_cast<size_t>(size));
      if (s < 1)
        throw InputError("kernel view", "index of " + v.describe(),
                         "dim " + std::to_string(d) + ": a slice step must be >= 1");
      if (n == 0)
        throw InputError("kernel view", "index of " + v.describe(),
                         "dim " + std::to_string(d) + ": an empty slice");
      if (b == 0 && e == size && s == 1)
        out.emplace_back(kernel::all);
      else
        out.emplace_back(static_cast<int64_t>(b), static_cast<int64_t>(b + (n - 1) * s + 1),
                         static_cast<int64_t>(s));
      continue;
    }
    if (h.is(Py_Ellipsis))
      throw InputError("kernel view", what(), "an index holds at most one '...'");
    if (h.is_none())
      throw nb::type_error((what() + ": None (numpy's newaxis) does not index a kernel view; "
                                     "use reshape or broadcast")
                               .c_str());
    if (PyBool_Check(h.ptr()) || !PyIndex_Check(h.ptr()))
      throw nb::type_error((what() + ": an index is an integer, a slice or '...', got " +
                            py_type_name(h) + " " + short_repr(h))
                               .c_str());
    int64_t ix = as_int64_lazy(h, what);
    if (ix < -size || ix >= size)
      throw InputError(
          "kernel view", what(),
          "index " + std::to_string(ix) + " is out of range for size " + std::to_string(size));
    if (ix < 0) ix += size;
    out.emplace_back(ix);
  }
  return out;
}

// [[step, num], ...] (NKI order) -> view dims [size, stride]. The farthest element it reaches
// must fit int64: the view's own bounds check computes it in int64, and an overflow there
// wrapped around and let a pattern far outside its tensor through.
std::vector<kernel::ViewDim> pattern_dims(nb::handle p, int64_t offset) {
  const std::string what = "pattern";
  if (PyUnicode_Check(p.ptr()) || !PySequence_Check(p.ptr()))
    throw nb::type_error("pattern: expected [[step, num], ...]");
  std::vector<kernel::ViewDim> d;
  __int128 lo = offset, hi = offset;
  for (nb::handle e : nb::borrow<nb::sequence>(p)) {
    const std::vector<int64_t> pair = as_int64s(e, what + "[" + std::to_string(d.size()) + "]");
    if (pair.size() != 2)
      throw InputError("kernel view", what, "each entry is [step, num], got " + short_repr(e));
    const auto [step, num] = std::pair(pair[0], pair[1]);
    if (num > 1) (step < 0 ? lo : hi) += static_cast<__int128>(step) * (num - 1);
    d.push_back({num, step});
  }
  constexpr __int128 kMax = std::numeric_limits<int64_t>::max();
  __int128 elements = 1;  // and so must its element count (stride-0 dims reach nothing)
  for (const kernel::ViewDim& x : d)
    if (x.size > 0 && (elements *= x.size) > kMax)
      throw InputError("kernel view", what, "has more than 2^63 elements");
  if (hi > kMax || lo < -kMax)
    throw InputError("kernel view", what,
                     "reaches past 2^63 elements (offset " + std::to_string(offset) + ")");
  return d;
}

// The shape a view would have with `n` more elements per existing one must count in int64.
void check_elements(const View& v, int64_t n, const char* what) {
  __int128 total = n;
  for (int64_t s : v.shape()) {
    total *= s;
    if (total > std::numeric_limits<int64_t>::max())
      throw InputError("kernel view", what, v.describe() + ": more than 2^63 elements");
  }
}

}  // namespace

kernel::Scalar scalar_of(nb::handle h, const char* what) {
  if (nb::isinstance<View>(h)) return kernel::Scalar(nb::cast<const View&>(h));
  // Numbers only: nb::cast<double> threw std::bad_cast (a RuntimeError naming nothing) for a
  // string or None, and PyFloat_AsDouble alone would parse no strings but take complex.
  PyObject* o = h.ptr();
  const PyNumberMethods* nm = Py_TYPE(o)->tp_as_number;
  if (!PyComplex_Check(o) && nm != nullptr &&
      (nm->nb_float != nullptr || nm->nb_index != nullptr)) {
    const double v = PyFloat_AsDouble(o);
    if (!(v == -1.0 && PyErr_Occurred())) return kernel::Scalar(v);
    if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
      PyErr_Clear();
      throw InputError("", what, short_repr(h) + " is too large for a float");
    }
    PyErr_Clear();
  }
  throw nb::type_error((std::string(what) + ": expected a number or a [P, 1] View, got " +
                        py_type_name(h) + " " + short_repr(h))
                           .c_str());
}

void bind_kernel(nb::module_& m) {
  // The addressing rules (isa/access_rules.h), for front ends that lower around them.
  m.def("start_partition_allowed", &isa::start_partition_allowed, nb::arg("start"),
        nb::arg("count"), "Whether an engine access of count partitions may start at start.");
  m.attr("MAX_FREE_SIZE") = isa::kMaxFreeSize;
  m.attr("VECTOR_FREE_MAX_SBUF") = isa::kVectorFreeMaxSbuf;
  m.attr("VECTOR_FREE_MAX_PSUM") = isa::kVectorFreeMaxPsum;
  nb::enum_<isa::Engine>(m, "Engine", "A NeuronCore instruction stream.")
      .value("tensor", isa::Engine::kTensor)
      .value("vector", isa::Engine::kVector)
      .value("scalar", isa::Engine::kScalar)
      .value("gpsimd", isa::Engine::kGpSimd)
      .value("sync", isa::Engine::kSync);
  {
    nb::enum_<isa::AluOp> alu(m, "AluOp", "Vector / GpSimd ALU operators (KLR names).");
    for (const auto& [e, n] : isa::kAluOpNames.entries) alu.value(std::string(n).c_str(), e);
    nb::enum_<isa::ActFunc> act(m, "ActFunc", "ScalarE activation functions (KLR names).");
    for (const auto& [e, n] : isa::kActFuncNames.entries) act.value(std::string(n).c_str(), e);
  }

  nb::class_<arch::ChipSpec>(m, "Chip", "A resolved generation spec, loaded once per name.")
      .def_prop_ro("name", [](const arch::ChipSpec& c) { return c.meta.name; })
      .def_prop_ro("sbuf_partitions",
                   [](const arch::ChipSpec& c) { return c.core.sbuf.partitions; })
      .def_prop_ro("sbuf_bytes_per_partition",
                   [](const arch::ChipSpec& c) {
                     return c.core.sbuf.usable_bytes_per_partition > 0
                                ? c.core.sbuf.usable_bytes_per_partition
                                : c.core.sbuf.bytes_per_partition;
                   })
      .def_prop_ro("psum_banks", [](const arch::ChipSpec& c) { return c.core.psum.banks; })
      .def_prop_ro("psum_bank_bytes",
                   [](const arch::ChipSpec& c) { return c.core.psum.bank_bytes; })
      .def_prop_ro("matmul_k_max",
                   [](const arch::ChipSpec& c) { return c.core.tensor.limits.k_max; })
      .def_prop_ro("matmul_m_max",
                   [](const arch::ChipSpec& c) { return c.core.tensor.limits.m_max; })
      .def_prop_ro("matmul_n_max",
                   [](const arch::ChipSpec& c) { return c.core.tensor.limits.n_max_fp32_psum; })
      .def_prop_ro("cores", [](const arch::ChipSpec& c) { return c.chip.cores; })
      .def_prop_ro(
          "lnc_degrees", [](const arch::ChipSpec& c) { return c.chip.lnc.degrees; },
          "LNC degrees the chip allows (chip.lnc.degrees).")
      .def_prop_ro(
          "lnc_default_degree", [](const arch::ChipSpec& c) { return c.chip.lnc.default_degree; },
          "The LNC degree when none is asked for (chip.lnc.default_degree).");
  m.def(
      "load_chip",
      [](const std::string& name, const std::vector<std::string>& sets) {
        std::vector<arch::Override> overrides;
        for (const auto& s : sets) overrides.push_back(arch::parse_override(s));
        return std::make_unique<arch::ChipSpec>(arch::load_chip(name, overrides));
      },
      nb::arg("name"), nb::arg("overrides") = std::vector<std::string>{},
      "Loads a generation (trn1, trn2, trn3, ...) or a what-if file, with `key=value` overrides.");

  nb::class_<View>(m, "View",
                   "A window on an HBM tensor or an on-chip tile: dims outermost first, dim 0 the "
                   "partition dim on chip.")
      .def_prop_ro("shape", &View::shape)
      .def_prop_ro("dtype", [](const View& v) { return v.dtype().name(); })
      .def_prop_ro("space", [](const View& v) { return std::string(isa::space_name(v.space())); })
      .def_prop_ro("name", &View::name)
      .def_prop_ro("start_partition", &View::start_partition)
      .def_prop_ro("offset", &View::offset)
      .def_prop_ro("strides",
                   [](const View& v) {
                     std::vector<int64_t> s;
                     for (const auto& d : v.dims()) s.push_back(d.stride);
                     return s;
                   })
      .def_prop_ro("region_shape", [](const View& v) { return v.region().shape; })
      // Arguments arrive as Python objects and are converted here, so that a wrong type is a
      // TypeError naming the argument (not nanobind's list of signatures).
      .def(
          "index", [](const View& v, nb::handle key) { return v.index(indices(v, key)); },
          nb::arg("key").none(),
          "numpy-style indexing: ints drop a dim (the partition dim stays, size 1), slices keep "
          "it.")
      .def(
          "__getitem__", [](const View& v, nb::handle key) { return v.index(indices(v, key)); },
          nb::arg("key").none())
      .def(
          "reshape",
          [](const View& v, nb::handle shape) {
            const std::vector<int64_t> s = as_int64s(shape, "reshape: shape");
            __int128 n = 1;
            for (int64_t x : s)
              if ((n *= (x > 0 ? x : 1)) > std::numeric_limits<int64_t>::max())
                throw InputError("kernel view", "reshape of " + v.describe(),
                                 "shape has more than 2^63 elements");
            return v.reshape(s);
          },
          nb::arg("shape").none())
      .def(
          "broadcast",
          [](const View& v, nb::handle axis, nb::handle n) {
            const int64_t a = as_int64(axis, "broadcast: axis");
            const int64_t k = as_int64(n, "broadcast: n");
            if (a < std::numeric_limits<int>::min() || a > std::numeric_limits<int>::max())
              throw InputError("kernel view", "broadcast: axis", "out of range");
            if (k > 0) check_elements(v, k, "broadcast");
            return v.broadcast(static_cast<int>(a), k);
          },
          nb::arg("axis").none(), nb::arg("n").none(),
          "A new dim of `n` repeats (stride 0) before `axis`.")
      .def(
          "pattern",
          [](const View& v, nb::handle p, nb::handle offset) {
            const int64_t off = as_int64(offset, "pattern: offset");
            return v.pattern(off, pattern_dims(p, off));
          },
          nb::arg("pattern").none(), nb::arg("offset").none() = 0,
          "NKI's .ap(): [[step, num], ...] over the region's elements from `offset`.")
      .def(
          "dynamic",
          [](const View& v, int32_t reg, int64_t step, int32_t max) {
            return v.dynamic(reg, step, max < 0 ? v.dynamic_limit(step) : max);
          },
          nb::arg("reg"), nb::arg("step"), nb::arg("max") = -1,
          "The view moved by r x step elements when the instruction runs, r = scalar register "
          "`reg` in 0..max (-1: as far as the tile or tensor allows).")
      .def_prop_ro("is_dynamic", &View::is_dynamic)
      .def(
          "bitcast",
          [](const View& v, nb::handle f) {
            if (nb::isinstance<nb::str>(f)) return v.bitcast(format_of(nb::cast<std::string>(f)));
            // A numpy / ml_dtypes dtype: its trnsim name, as the rest of the package maps it.
            nb::object name =
                nb::module_::import_("trnsim.numerics").attr("format_name")(f, "bitcast: dtype");
            return v.bitcast(format_of(nb::cast<std::string>(name)));
          },
          nb::arg("dtype").none(), "The same bytes read as another format.")
      .def(
          "same_region",
          [](const View& a, nb::handle b) {
            if (!nb::isinstance<View>(b))
              throw nb::type_error(
                  ("same_region: expected a View, got " + py_type_name(b)).c_str());
            return &a.region() == &nb::cast<const View&>(b).region();
          },
          nb::arg("other").none())
      .def("describe", &View::describe)
      .def("__repr__", &View::describe);

  bind_kernel_builder(m);
}

}  // namespace trnsim::bindings
