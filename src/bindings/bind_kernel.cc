// Kernel API bindings (src/kernel/builder.h): Chip, View and KernelBuilder, one Python call per
// C++ call. Indices are converted here (ints, slices, Ellipsis), so that the NKI front end's
// hot path (a slice and an op per instruction) stays one crossing per Python call.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "arch/arch.h"
#include "base/error.h"
#include "bindings/bindings.h"
#include "bindings/kernel_types.h"
#include "isa/names.h"
#include "kernel/builder.h"

namespace trnsim::bindings {

namespace {

using kernel::Idx;
using kernel::KernelBuilder;
using kernel::View;

num::Format format_of(const std::string& name) { return num::parse_format(name); }

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
    if (nb::isinstance<nb::slice>(h)) {
      // A stop past the dim is an error, as in NKI (numpy would clamp it): the view says so.
      const nb::handle stop = h.attr("stop");
      if (!stop.is_none() && nb::cast<int64_t>(stop) > size) {
        const nb::handle start = h.attr("start");
        out.emplace_back(start.is_none() ? 0 : nb::cast<int64_t>(start), nb::cast<int64_t>(stop));
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
    int64_t ix = nb::cast<int64_t>(h);
    if (ix < 0) ix += size;
    out.emplace_back(ix);
  }
  return out;
}

// [[step, num], ...] (NKI order) -> view dims [size, stride].
std::vector<kernel::ViewDim> pattern_dims(const std::vector<std::pair<int64_t, int64_t>>& p) {
  std::vector<kernel::ViewDim> d;
  for (auto [step, num] : p) d.push_back({num, step});
  return d;
}

}  // namespace

kernel::Scalar scalar_of(nb::handle h) {
  if (nb::isinstance<View>(h)) return kernel::Scalar(nb::cast<const View&>(h));
  return kernel::Scalar(nb::cast<double>(h));
}

void bind_kernel(nb::module_& m) {
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
      .def(
          "index", [](const View& v, nb::handle key) { return v.index(indices(v, key)); },
          "numpy-style indexing: ints drop a dim (the partition dim stays, size 1), slices keep "
          "it.")
      .def("__getitem__", [](const View& v, nb::handle key) { return v.index(indices(v, key)); })
      .def("reshape", &View::reshape, nb::arg("shape"))
      .def("broadcast", &View::broadcast, nb::arg("axis"), nb::arg("n"),
           "A new dim of `n` repeats (stride 0) before `axis`.")
      .def(
          "pattern",
          [](const View& v, const std::vector<std::pair<int64_t, int64_t>>& p, int64_t offset) {
            return v.pattern(offset, pattern_dims(p));
          },
          nb::arg("pattern"), nb::arg("offset") = 0,
          "NKI's .ap(): [[step, num], ...] over the region's elements from `offset`.")
      .def(
          "bitcast", [](const View& v, const std::string& f) { return v.bitcast(format_of(f)); },
          nb::arg("dtype"), "The same bytes read as another format.")
      .def("same_region", [](const View& a, const View& b) { return &a.region() == &b.region(); })
      .def("describe", &View::describe)
      .def("__repr__", &View::describe);

  bind_kernel_builder(m);
}

}  // namespace trnsim::bindings
