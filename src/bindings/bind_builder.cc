// KernelBuilder bindings: one method per builder call, same names and operand order
// (src/kernel/builder.h documents each). Scalars are floats or [P, 1] Views.
#include <fmt/format.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "arch/chip_spec.h"
#include "base/error.h"
#include "bindings/kernel_types.h"
#include "isa/disassembler.h"
#include "isa/names.h"
#include "kernel/builder.h"
#include "kernels/registry.h"

namespace trnsim::bindings {

namespace {

using isa::ActFunc;
using isa::AluOp;
using isa::Engine;
using kernel::AluArg;
using kernel::KernelBuilder;
using kernel::View;

using Shape = std::vector<int64_t>;
using Make = View (KernelBuilder::*)(std::string, num::Format, Shape);

// Binds a builder method that declares a tensor or tile by (name, dtype name, shape).
template <Make M>
void declare(nb::class_<KernelBuilder>& c, const char* name, const char* doc) {
  c.def(
      name,
      [](KernelBuilder& kb, std::string n, const std::string& dtype, Shape shape) {
        return (kb.*M)(std::move(n), num::parse_format(dtype), std::move(shape));
      },
      nb::arg("name"), nb::arg("dtype"), nb::arg("shape"), doc);
}

}  // namespace

void bind_kernel_builder(nb::module_& m) {
  nb::class_<isa::Program>(m, "Program", "A built NeuronCore program (isa/program.h).")
      .def_prop_ro("chip", [](const isa::Program& p) { return p.chip; })
      .def_prop_ro("num_instructions", &isa::Program::num_instructions)
      .def_prop_ro(
          "tensors",
          [](const isa::Program& p) {
            std::vector<std::tuple<std::string, std::string, Shape, std::string>> out;
            for (const auto& t : p.tensors)
              out.emplace_back(t.name, t.dtype.name(), t.shape,
                               std::string(isa::kTensorKindNames.name(t.kind)));
            return out;
          },
          "(name, dtype, shape, kind) per HBM tensor.")
      .def(
          "text", [](const isa::Program& p) { return isa::disassemble(p); },
          "The program in trnsim's text form (docs/isa.md).");

  m.def(
      "build_example",
      [](const std::string& name, const arch::ChipSpec& chip, const std::vector<int64_t>& args) {
        return examples::build_kernel(name, chip, args);
      },
      nb::arg("name"), nb::arg("chip"), nb::arg("args") = std::vector<int64_t>{},
      "Builds a registered example kernel (examples/kernels, `trnsim run --list`).");
  m.def(
      "build_example_spmd",
      [](const std::string& name, const arch::ChipSpec& chip, const std::vector<int64_t>& args,
         int num_programs) { return examples::build_kernel_spmd(name, chip, args, num_programs); },
      nb::arg("name"), nb::arg("chip"), nb::arg("args") = std::vector<int64_t>{},
      nb::arg("num_programs") = 2,
      "The programs of a registered SPMD example kernel, one per program id (for run_spmd).");
  m.def(
      "example_kernels",
      [] {
        std::vector<std::string> names;
        for (const auto& e : examples::kernel_registry()) names.emplace_back(e.name);
        return names;
      },
      "Names of the registered example kernels.");

  nb::class_<KernelBuilder> kb(m, "KernelBuilder",
                               "Builds a NeuronCore program call by call (src/kernel/builder.h).");
  kb.def(nb::init<const arch::ChipSpec&>(), nb::arg("chip"), nb::keep_alive<1, 2>())
      .def("set_seed", &KernelBuilder::set_seed, nb::arg("seed"))
      .def(
          "set_dma_policy",
          [](KernelBuilder& b, std::vector<Engine> loads, Engine store) {
            b.set_dma_policy(kernel::DmaPolicy{std::move(loads), store});
          },
          nb::arg("load_triggers"), nb::arg("store_trigger") = Engine::kGpSimd,
          "Which streams trigger loads (round robin) and stores / on-chip copies.")
      .def("add_source_file", &KernelBuilder::add_source_file, nb::arg("path"),
           "Registers a source file for set_source; returns its number.")
      .def("set_source", &KernelBuilder::set_source, nb::arg("file"), nb::arg("line"),
           "The file (add_source_file's number, -1: none) and line (0: none) of the "
           "instructions emitted from now on (traces, profiles, diagnostics).")
      .def_prop_ro("num_instructions",
                   [](const KernelBuilder& b) { return b.program().num_instructions(); });
  declare<&KernelBuilder::input>(kb, "input", "An HBM tensor the host fills.");
  declare<&KernelBuilder::output>(kb, "output", "An HBM tensor the host reads.");
  declare<&KernelBuilder::inout>(kb, "inout", "An HBM tensor the host fills and reads.");
  declare<&KernelBuilder::scratch>(kb, "scratch", "Device-only HBM working memory.");
  declare<&KernelBuilder::sbuf>(kb, "sbuf", "An SBUF tile [partitions, free...].");
  declare<&KernelBuilder::psum>(kb, "psum", "A PSUM tile [partitions, free...].");
  kb.def(
        "dma_copy",
        [](KernelBuilder& b, const View& dst, const View& src, std::optional<Engine> trigger,
           bool accumulate) {
          b.dma_copy(dst, src, {trigger, accumulate});
        },
        nb::arg("dst"), nb::arg("src"), nb::arg("trigger") = nb::none(),
        nb::arg("accumulate") = false)
      .def(
          "dma_transpose",
          [](KernelBuilder& b, const View& dst, const View& src, std::optional<Engine> trigger) {
            b.dma_transpose(dst, src, {trigger, false});
          },
          nb::arg("dst"), nb::arg("src"), nb::arg("trigger") = nb::none())
      .def(
          "dma_gather",
          [](KernelBuilder& b, const View& dst, const View& table, const View& offsets,
             std::optional<Engine> trigger, bool skip_oob) {
            b.dma_gather(dst, table, offsets, {trigger, false, skip_oob});
          },
          nb::arg("dst"), nb::arg("table"), nb::arg("offsets"), nb::arg("trigger") = nb::none(),
          nb::arg("skip_oob") = false,
          "dst[p, :] = table[offsets[p], :]: rows of an HBM tensor picked by an SBUF [P, 1] "
          "int32 / uint32 tile at run time (software DGE on GpSimd); skip_oob: a row outside "
          "the table leaves its partition as it was (else a fault).")
      .def(
          "dma_scatter",
          [](KernelBuilder& b, const View& table, const View& src, const View& offsets,
             std::optional<Engine> trigger, bool accumulate, bool skip_oob) {
            b.dma_scatter(table, src, offsets, {trigger, accumulate, skip_oob});
          },
          nb::arg("table"), nb::arg("src"), nb::arg("offsets"), nb::arg("trigger") = nb::none(),
          nb::arg("accumulate") = false, nb::arg("skip_oob") = false,
          "table[offsets[p], :] = src[p, :] (accumulate: +=, partition by partition): the "
          "scatter of dma_gather.")
      .def(
          "matmul",
          [](KernelBuilder& b, const View& dst, const View& st, const View& mv, bool start,
             std::vector<int> pos, std::vector<int> size, bool double_row) {
            // tile_position / tile_size are (row, column) pairs or empty: another length was
            // dropped without a word.
            if ((pos.size() != 0 && pos.size() != 2) || (size.size() != 0 && size.size() != 2))
              throw InputError("matmul", "tile_position / tile_size",
                               "give two values (row, column) or none");
            kernel::MatmulOpts o;
            o.start = start;
            if (pos.size() == 2) o.tile_row = pos[0], o.tile_col = pos[1];
            if (size.size() == 2) o.tile_rows = size[0], o.tile_cols = size[1];
            o.double_row = double_row;
            b.matmul(dst, st, mv, o);
          },
          nb::arg("dst"), nb::arg("stationary"), nb::arg("moving"), nb::arg("start") = false,
          nb::arg("tile_position") = std::vector<int>{}, nb::arg("tile_size") = std::vector<int>{},
          nb::arg("double_row") = false, "dst[M, N] (PSUM) = stationary[K, M].T @ moving[K, N].")
      .def(
          "matmul_mx",
          [](KernelBuilder& b, const View& dst, const View& st, const View& mv,
             const View& st_scale, const View& mv_scale, bool start, std::vector<int> pos,
             std::vector<int> size) {
            if ((pos.size() != 0 && pos.size() != 2) || (size.size() != 0 && size.size() != 2))
              throw InputError("matmul_mx", "tile_position / tile_size",
                               "give two values (row, column) or none");
            kernel::MatmulOpts o;
            o.start = start;
            if (pos.size() == 2) o.tile_row = pos[0], o.tile_col = pos[1];
            if (size.size() == 2) o.tile_rows = size[0], o.tile_cols = size[1];
            b.matmul_mx(dst, st, mv, st_scale, mv_scale, o);
          },
          nb::arg("dst"), nb::arg("stationary"), nb::arg("moving"), nb::arg("stationary_scale"),
          nb::arg("moving_scale"), nb::arg("start") = false,
          nb::arg("tile_position") = std::vector<int>{}, nb::arg("tile_size") = std::vector<int>{},
          "NC-v4: dst[M, N] (PSUM) = dequant(stationary).T @ dequant(moving), MXFP8 operands "
          "[K/4, 4 M] / [K/4, 4 N] with E8M0 scales [K/4, M] / [K/4, N].")
      .def("quantize_mx", &KernelBuilder::quantize_mx, nb::arg("dst"), nb::arg("scale"),
           nb::arg("src"), "NC-v4: dst (MXFP8) and scale [P, F/4] (E8M0) of src (bf16/fp16).")
      .def("transpose", &KernelBuilder::transpose, nb::arg("dst"), nb::arg("src"),
           nb::arg("engine") = Engine::kTensor)
      .def(
          "stream_shuffle",
          [](KernelBuilder& b, const View& dst, const View& src, const std::vector<int64_t>& mask) {
            if (mask.size() != 32)
              throw InputError("stream_shuffle", "shuffle_mask",
                               fmt::format("{} entries; a quadrant has 32", mask.size()));
            std::array<uint8_t, 32> m{};
            for (size_t i = 0; i < m.size(); ++i) {
              if (mask[i] < 0 || mask[i] > 255)
                throw InputError(
                    "stream_shuffle", "shuffle_mask",
                    fmt::format("entry {} is {}: a partition 0..31, or 255", i, mask[i]));
              m[i] = static_cast<uint8_t>(mask[i]);
            }
            b.stream_shuffle(dst, src, m);
          },
          nb::arg("dst"), nb::arg("src"), nb::arg("mask"),
          "VectorE: dst partition 32 q + i <- src partition 32 q + mask[i] in each quadrant q "
          "(255: unchanged).")
      .def(
          "activation",
          [](KernelBuilder& b, const View& dst, const View& src, ActFunc f, nb::handle scale,
             nb::handle bias, float alpha) {
            b.activation(dst, src, f, scalar_of(scale, "scale"), scalar_of(bias, "bias"), alpha);
          },
          nb::arg("dst"), nb::arg("src"), nb::arg("func"), nb::arg("scale").none() = 1.0,
          nb::arg("bias").none() = 0.0, nb::arg("alpha") = 0.0f, "dst = func(src * scale + bias).")
      .def(
          "activation_reduce",
          [](KernelBuilder& b, const View& dst, const View& red, const View& src, ActFunc f,
             nb::handle scale, nb::handle bias) {
            b.activation_reduce(dst, red, src, f, scalar_of(scale, "scale"),
                                scalar_of(bias, "bias"));
          },
          nb::arg("dst"), nb::arg("reduce_dst"), nb::arg("src"), nb::arg("func"),
          nb::arg("scale").none() = 1.0, nb::arg("bias").none() = 0.0)
      .def(
          "activate2",
          [](KernelBuilder& b, const View& dst, const View& src, ActFunc f, AluOp op0,
             nb::handle arg0, bool reverse0, AluOp op1, nb::handle arg1, bool reverse1, float alpha,
             std::optional<View> reduce_dst, AluOp reduce_op) {
            const AluArg first{op0, scalar_of(arg0, "imm0"), reverse0};
            const AluArg second{op1, scalar_of(arg1, "imm1"), reverse1};
            if (reduce_dst)
              b.activate2_reduce(dst, *reduce_dst, src, f, first, second, reduce_op, alpha);
            else
              b.activate2(dst, src, f, first, second, alpha);
          },
          nb::arg("dst"), nb::arg("src"), nb::arg("func"), nb::arg("op0"), nb::arg("arg0").none(),
          nb::arg("reverse0") = false, nb::arg("op1") = AluOp::kBypass,
          nb::arg("arg1").none() = 0.0, nb::arg("reverse1") = false, nb::arg("alpha") = 0.0f,
          nb::arg("reduce_dst").none() = nb::none(), nb::arg("reduce_op") = AluOp::kAdd,
          "NC-v4: dst = func((src op0 arg0) op1 arg1); reduce_dst[P, 1] = reduce_op of each row.")
      .def("tensor_tensor", &KernelBuilder::tensor_tensor, nb::arg("dst"), nb::arg("in0"),
           nb::arg("in1"), nb::arg("op"), nb::arg("engine") = Engine::kVector)
      .def(
          "tensor_scalar",
          [](KernelBuilder& b, const View& dst, const View& src, AluOp op0, nb::handle arg0,
             bool reverse0, AluOp op1, nb::handle arg1, bool reverse1, Engine e) {
            b.tensor_scalar(dst, src, AluArg{op0, scalar_of(arg0, "arg0"), reverse0},
                            AluArg{op1, scalar_of(arg1, "arg1"), reverse1}, e);
          },
          nb::arg("dst"), nb::arg("src"), nb::arg("op0"), nb::arg("arg0").none(),
          nb::arg("reverse0") = false, nb::arg("op1") = AluOp::kBypass,
          nb::arg("arg1").none() = 0.0, nb::arg("reverse1") = false,
          nb::arg("engine") = Engine::kVector, "dst = (src op0 arg0) op1 arg1.")
      .def(
          "tensor_scalar_cumulative",
          [](KernelBuilder& b, const View& dst, const View& src, AluOp op0, nb::handle arg0,
             AluOp op1, nb::handle init, bool continue_acc, bool reverse0) {
            b.tensor_scalar_cumulative(dst, src, op0, scalar_of(arg0, "arg0"), op1,
                                       scalar_of(init, "init"), continue_acc, reverse0);
          },
          nb::arg("dst"), nb::arg("src"), nb::arg("op0"), nb::arg("arg0").none(), nb::arg("op1"),
          nb::arg("init").none() = 0.0, nb::arg("continue_acc") = false,
          nb::arg("reverse0") = false,
          "r = op1(src op0 arg0, r) along the free elements, dst = r; r from init or the "
          "VectorE accumulator.")
      .def(
          "scalar_tensor_tensor",
          [](KernelBuilder& b, const View& dst, const View& in0, AluOp op0, nb::handle arg0,
             bool reverse0, AluOp op1, const View& in1) {
            b.scalar_tensor_tensor(dst, in0, AluArg{op0, scalar_of(arg0, "arg0"), reverse0}, op1,
                                   in1);
          },
          nb::arg("dst"), nb::arg("in0"), nb::arg("op0"), nb::arg("arg0").none(),
          nb::arg("reverse0"), nb::arg("op1"), nb::arg("in1"), "dst = (in0 op0 arg0) op1 in1.")
      .def("tensor_reduce", &KernelBuilder::tensor_reduce, nb::arg("dst"), nb::arg("src"),
           nb::arg("op"), nb::arg("axes") = 1)
      .def("tensor_copy", &KernelBuilder::tensor_copy, nb::arg("dst"), nb::arg("src"),
           nb::arg("engine") = Engine::kVector)
      .def("memset", &KernelBuilder::memset, nb::arg("dst"), nb::arg("value"),
           nb::arg("engine") = Engine::kVector)
      .def("select", &KernelBuilder::select, nb::arg("dst"), nb::arg("predicate"),
           nb::arg("on_true"), nb::arg("on_false"))
      .def("bn_stats", &KernelBuilder::bn_stats, nb::arg("dst"), nb::arg("src"))
      .def("bn_aggr", &KernelBuilder::bn_aggr, nb::arg("dst"), nb::arg("src"))
      .def("reciprocal", &KernelBuilder::reciprocal, nb::arg("dst"), nb::arg("src"))
      .def("max8", &KernelBuilder::max8, nb::arg("dst"), nb::arg("src"))
      .def("find_index8", &KernelBuilder::find_index8, nb::arg("dst"), nb::arg("data"),
           nb::arg("vals"))
      .def("match_replace8", &KernelBuilder::match_replace8, nb::arg("dst"), nb::arg("dst_idx"),
           nb::arg("data"), nb::arg("vals"), nb::arg("value"))
      .def(
          "range_select",
          [](KernelBuilder& b, const View& dst, const View& reduce_res, const View& on_true,
             AluOp op0, nb::handle bound0, AluOp op1, nb::handle bound1, int64_t range_start,
             double on_false, bool accumulate) {
            b.range_select(dst, reduce_res, on_true, op0, scalar_of(bound0, "bound0"), op1,
                           scalar_of(bound1, "bound1"), range_start, on_false, accumulate);
          },
          nb::arg("dst"), nb::arg("reduce_res"), nb::arg("on_true"), nb::arg("op0"),
          nb::arg("bound0").none(), nb::arg("op1"), nb::arg("bound1").none(),
          nb::arg("range_start") = 0, nb::arg("on_false") = -3.4028234663852886e38,
          nb::arg("accumulate") = false,
          "NC-v3: dst = on_true where (range_start + i) op0 bound0 and op1 bound1, else "
          "on_false; reduce_res = the max (accumulate: with the VectorE accumulator's).")
      .def("rand_seed", &KernelBuilder::rand_seed, nb::arg("seeds"),
           nb::arg("engine") = Engine::kGpSimd)
      .def("rand", &KernelBuilder::rand, nb::arg("dst"), nb::arg("engine") = Engine::kGpSimd)
      .def("rng", &KernelBuilder::rng, nb::arg("dst"), nb::arg("engine") = Engine::kGpSimd,
           "dst = the generator's raw 32-bit words (low bits of an integer dst).")
      .def(
          "rand2",
          [](KernelBuilder& b, const View& dst, nb::handle lo, nb::handle hi) {
            b.rand2(dst, scalar_of(lo, "min"), scalar_of(hi, "max"));
          },
          nb::arg("dst"), nb::arg("min").none(), nb::arg("max").none(),
          "NC-v4 VectorE: dst = min + u (max - min), u uniform in [0, 1).")
      .def("new_register", &KernelBuilder::new_register,
           "A free scalar register (0..63) of every engine (NKI register_alloc).")
      .def("free_register", &KernelBuilder::free_register, nb::arg("r"))
      .def("register_set", &KernelBuilder::register_set, nb::arg("r"), nb::arg("value"))
      .def("register_load", &KernelBuilder::register_load, nb::arg("r"), nb::arg("src"),
           "r = src, one element (a float converts to int32).")
      .def("register_store", &KernelBuilder::register_store, nb::arg("dst"), nb::arg("r"))
      .def(
          "begin_for",
          [](KernelBuilder& b, int64_t start, int32_t start_reg, int64_t stop, int32_t stop_reg,
             int64_t step) {
            return b.begin_for({start, start_reg}, {stop, stop_reg}, step);
          },
          nb::arg("start"), nb::arg("start_reg"), nb::arg("stop"), nb::arg("stop_reg"),
          nb::arg("step"),
          "A hardware loop for (i = start; i < stop; i += step) until end_loop(); a bound is its "
          "register when *_reg >= 0. Returns i's register.")
      .def("begin_while", &KernelBuilder::begin_while, nb::arg("r"),
           "A hardware loop while (r != 0) until end_loop().")
      .def("end_loop", &KernelBuilder::end_loop)
      .def_prop_ro("loop_depth", &KernelBuilder::loop_depth)

      .def("rand_get_state", &KernelBuilder::rand_get_state, nb::arg("dst"),
           nb::arg("engine") = Engine::kGpSimd,
           "dst [lanes, 6 or 24] uint32 = the lanes' generator state (rand_seed restores it).")
      .def(
          "dropout",
          [](KernelBuilder& b, const View& dst, const View& src, nb::handle prob) {
            b.dropout(dst, src, scalar_of(prob, "prob"));
          },
          nb::arg("dst"), nb::arg("src"), nb::arg("prob").none(),
          "dst = src, or 0 where the VectorE lane's next draw is below prob.")
      .def(
          "exponential",
          [](KernelBuilder& b, const View& dst, const View& src, nb::handle max_value) {
            b.exponential(dst, src, scalar_of(max_value, "max_value"));
          },
          nb::arg("dst"), nb::arg("src"), nb::arg("max_value").none() = 0.0,
          "NC-v4: dst = exp(src - max_value) on VectorE.")
      .def("iota", &KernelBuilder::iota, nb::arg("dst"), nb::arg("base"),
           nb::arg("channel_multiplier"))
      .def("affine_select", &KernelBuilder::affine_select, nb::arg("dst"), nb::arg("src"),
           nb::arg("cmp"), nb::arg("base"), nb::arg("channel_multiplier"), nb::arg("fill"))
      .def("n_gather", &KernelBuilder::n_gather, nb::arg("dst"), nb::arg("data"),
           nb::arg("indices"), "GpSimd: dst[p, j] = data[p, indices[p, j]] (indices uint32).")
      .def("local_gather", &KernelBuilder::local_gather, nb::arg("dst"), nb::arg("src"),
           nb::arg("index"), nb::arg("elems") = 1, nb::arg("indices") = 0,
           "GpSimd: per 16-partition core, src[p, i .. i + elems) for each of its indices i.")
      .def("sequence_bounds", &KernelBuilder::sequence_bounds, nb::arg("dst"),
           nb::arg("segment_ids"), "GpSimd: dst [1, 2 n] = each id's run start, then end.")
      .def("nonzero_with_count", &KernelBuilder::nonzero_with_count, nb::arg("dst"), nb::arg("src"),
           nb::arg("offset") = 0, nb::arg("padding") = -1,
           "NC-v3 GpSimd: nonzero positions + offset, padding, count (partitions 0, 16, ...).")
      .def("partition_reduce", &KernelBuilder::partition_reduce, nb::arg("dst"), nb::arg("src"),
           nb::arg("op"))
      .def(
          "tensor_tensor_scan",
          [](KernelBuilder& b, const View& dst, const View& in0, const View& in1,
             nb::handle initial, AluOp op0, AluOp op1) {
            b.tensor_tensor_scan(dst, in0, in1, scalar_of(initial, "initial"), op0, op1);
          },
          nb::arg("dst"), nb::arg("in0"), nb::arg("in1"), nb::arg("initial").none(), nb::arg("op0"),
          nb::arg("op1"))
      .def(
          "tensor_scalar_reduce",
          [](KernelBuilder& b, const View& dst, const View& red, const View& src, AluOp op0,
             nb::handle arg0, bool reverse0, AluOp reduce_op) {
            b.tensor_scalar_reduce(dst, red, src, AluArg{op0, scalar_of(arg0, "arg0"), reverse0},
                                   reduce_op);
          },
          nb::arg("dst"), nb::arg("reduce_dst"), nb::arg("src"), nb::arg("op0"),
          nb::arg("arg0").none(), nb::arg("reverse0") = false, nb::arg("reduce_op") = AluOp::kAdd)
      .def("core_barrier", &KernelBuilder::core_barrier, nb::arg("data"),
           nb::arg("engine") = Engine::kGpSimd,
           "Logical cores: waits until every core of the logical core reached its barrier of "
           "the same index; `data` is the shared HBM tensor synchronised on.")
      .def(
          "sendrecv",
          [](KernelBuilder& b, const View& dst, const View& src, int send_to_rank,
             int recv_from_rank, int pipe_id, std::optional<Engine> trigger) {
            b.sendrecv(dst, src, send_to_rank, recv_from_rank, pipe_id, {trigger, false});
          },
          nb::arg("dst"), nb::arg("src"), nb::arg("send_to_rank"), nb::arg("recv_from_rank"),
          nb::arg("pipe_id") = 0, nb::arg("trigger") = nb::none(),
          "Logical cores: src (SBUF) goes to core send_to_rank's dst; core recv_from_rank's "
          "src arrives in dst (SBUF, same dtype and shape).")
      .def(
          "collective",
          [](KernelBuilder& b, const View& dst, const View& src, const std::string& kind, AluOp op,
             int group, int64_t outer, int send_to, int recv_from, std::optional<Engine> trigger) {
            const std::optional<isa::CollectiveKind> k = isa::kCollectiveNames.find(kind);
            if (!k)
              throw InputError("collective", "kind",
                               "'" + kind + "': expected one of " + isa::kCollectiveNames.list());
            b.collective(dst, src, {*k, op, group, outer, send_to, recv_from}, {trigger, false});
          },
          nb::arg("dst"), nb::arg("src"), nb::arg("kind"), nb::arg("op") = AluOp::kAdd,
          nb::arg("group") = 0, nb::arg("outer") = 1, nb::arg("send_to") = -1,
          nb::arg("recv_from") = -1, nb::arg("trigger") = nb::none(),
          "Ranks: a collective (all_reduce, all_gather, reduce_scatter, all_to_all, permute) "
          "with the ranks of replica group `group` of the rank run (run_ranks); `outer` the "
          "product of the dims before the collective dim; permute's send_to / recv_from are "
          "ranks (-1: none).")
      .def(
          "collective_v",
          [](KernelBuilder& b, const View& dst, const View& src, const View& metadata,
             const std::string& kind, int group, int flags, std::optional<Engine> trigger) {
            const std::optional<isa::CollectiveKind> k = isa::kCollectiveNames.find(kind);
            if (!k || flags < 0 || flags > 3)
              throw InputError(
                  "collective_v", !k ? "kind" : "flags",
                  !k ? "'" + kind + "': expected all_to_all_v or all_gather_v" : "flags are 0..3");
            b.collective_v(dst, src, metadata, *k, group, static_cast<uint8_t>(flags),
                           {trigger, false});
          },
          nb::arg("dst"), nb::arg("src"), nb::arg("metadata"), nb::arg("kind"),
          nb::arg("group") = 0, nb::arg("flags") = 0, nb::arg("trigger") = nb::none(),
          "Ranks: all_to_all_v / all_gather_v, sizes from the uint32 metadata when it runs "
          "(flags: 1 receive counts known, 2 receive displacements).")
      .def("build", &KernelBuilder::build,
           "Finishes the program (semaphores, validation); the builder is spent afterwards.");
}

}  // namespace trnsim::bindings
