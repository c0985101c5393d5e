// `trnsim spec NAME` as text: the chip as the seed tables present it, each published figure with
// its source next to trnsim's derivation from the core (HARDWARE.md s10: they can differ).
#include <fmt/format.h>

#include "arch/arch.h"
#include "arch/derived.h"
#include "arch/number_format.h"
#include "arch/schema.h"
#include "arch/spec_view.h"
#include "arch/text_table.h"

namespace trnsim::arch {

namespace {

using A = TextTable::Align;

class SpecReport {
 public:
  explicit SpecReport(const ChipSpec& s)
      : s_(s),
        d_(derive(s)),
        t_({"Figure", "Published", "Source", "trnsim derivation; other published values"},
           {A::kLeft, A::kRight, A::kLeft, A::kLeft}),
        n_({"Numerics", "Value", "Source"}, {A::kLeft, A::kLeft, A::kLeft}) {}

  std::string run() {
    compute();
    memory();
    movement();
    interconnect();
    for (const auto& [level, sys] :
         {std::pair{"server", &s_.server}, std::pair{"ultraserver", &s_.ultraserver},
          std::pair{"ultracluster", &s_.ultracluster}}) {
      system(level, *sys);
    }
    numerics();
    return header() + t_.render() + "\n" + n_.render() + footer();
  }

 private:
  bool has(const std::string& key) const { return s_.fields.contains(key); }

  std::string derived_text(const std::string& key) const {
    const DerivedFigure* f = d_.find(key);
    if (f == nullptr) return "";
    return fmt::format("{} = {}", display(Value(f->value), f->unit, Provenance{}), f->how);
  }

  // A row: the published value of `key` (if any) and the derivation `derived_key` (if any).
  void figure(const std::string& label, const std::string& key, const std::string& derived_key = "",
              const std::string& extra = "") {
    const bool published = !key.empty() && has(key);
    const std::string derivation = derived_key.empty() ? "" : derived_text(derived_key);
    if (!published && derivation.empty()) return;
    std::vector<std::string> notes;
    if (!derivation.empty()) notes.push_back(derivation);
    if (published) {
      const std::string alts = alternatives_text(s_, key);
      if (!alts.empty()) notes.push_back(alts);
    }
    if (!extra.empty()) notes.push_back(extra);
    t_.row({"  " + label, published ? display_value(s_, key) : "-",
            published ? s_.fields.at(key).prov.label() : "",
            fmt::format("{}", fmt::join(notes, "; "))});
  }

  std::string header() const {
    const CoreSpec& c = s_.core;
    std::string h = fmt::format("{}: {} [{}]\n", s_.meta.name, s_.meta.title, s_.meta.status);
    if (!s_.meta.description.empty()) h += "  " + s_.meta.description + "\n";
    h += fmt::format("  {} x {}; TensorE {} GHz, {} x {} PEs; Vector/Scalar/GpSimd {}/{}/{} GHz\n",
                     s_.chip.cores, c.name, format_number(c.tensor.clock_ghz), c.tensor.pe_rows,
                     c.tensor.pe_cols, format_number(c.vector.clock_ghz),
                     format_number(c.scalar.clock_ghz), format_number(c.gpsimd.clock_ghz));
    h += fmt::format("  data: {}\n\n", fmt::join(s_.files, " <- "));
    return h;
  }

  std::string footer() const {
    return "\nPublished: the vendor's figure with its source (keys of docs/HARDWARE.md s0, seeds);"
           "\n'assume' marks a value no public source gives, 'via <chip>' one inherited from that"
           "\nchip's file. trnsim derivation: computed from the core (clock x PE array x rate,"
           "\ncores x per-core); where it differs from the published figure, both are shown.\n";
  }

  void compute() {
    t_.section("Compute per chip (dense unless named)");
    const std::string fp8 = s_.chip.fp8_label == "FP8" ? "" : " (" + s_.chip.fp8_label + ")";
    figure("FP8" + fp8 + " TFLOPS", "chip.tflops.fp8", "chip.tflops.fp8");
    figure("FP4 TFLOPS", "chip.tflops.fp4", "chip.tflops.fp4");
    figure("BF16/FP16/TF32 TFLOPS", "chip.tflops.bf16", "chip.tflops.bf16");
    figure("FP32 TFLOPS", "chip.tflops.fp32", "chip.tflops.fp32");
    figure("Sparse TFLOPS", "chip.tflops.sparse", "chip.tflops.sparse");
    figure("INT8 TOPS", "chip.int8_tops");
    figure("NeuronCores", "chip.cores", "",
           has("chip.dies") ? fmt::format("{} die{}", *s_.chip.dies, *s_.chip.dies == 1 ? "" : "s")
                            : "");
    t_.section("Per NeuronCore, TensorE peak");
    const std::string pub = "core.tensor.published_tflops.";
    figure("BF16/FP16/TF32 TFLOPS", pub + "bf16", "core.tflops.bf16");
    figure("FP8 (dense) TFLOPS", pub + "fp8", "core.tflops.fp8");
    figure("MXFP8 TFLOPS", pub + "mxfp8", "core.tflops.mxfp8");
    figure("MXFP4 TFLOPS", "", "core.tflops.mxfp4");
    figure("FP32 TFLOPS", pub + "fp32", "core.tflops.fp32");
    figure("Sparse TFLOPS", pub + "sparse", "core.tflops.sparse");
  }

  void memory() {
    t_.section("Memory");
    figure("HBM capacity", "chip.hbm.capacity_gib", "",
           s_.chip.hbm.stacks ? fmt::format("{} stacks", *s_.chip.hbm.stacks) : "");
    figure("HBM bandwidth", "chip.hbm.bandwidth_gbps");
    figure("SBUF per chip", "chip.sbuf_mib", "chip.sbuf_mib");
    figure("SBUF per core", "", "core.sbuf_mib",
           fmt::format("usable {} MiB", format_number(d_.at("core.sbuf_usable_mib"))));
    figure("PSUM per core", "", "core.psum_kib");
  }

  void movement() {
    t_.section("Data movement");
    const DerivedFigure* practical = d_.find("chip.dma.bandwidth_practical_gbps");
    figure("DMA bandwidth per chip", "chip.dma.bandwidth_gbps", "chip.dma.bandwidth_gbps",
           practical ? "practical " + display(Value(practical->value), "GB/s", Provenance{}) : "");
    figure("DMA engines per chip", "chip.dma.engines", "chip.dma.engines",
           s_.chip.dma.extra_engines ? fmt::format("+{} extra", *s_.chip.dma.extra_engines) : "");
    figure("DMA per core (theoretical)", "", "core.dma.bandwidth_theoretical_gbps");
    figure("DMA per core (practical)", "", "core.dma.bandwidth_practical_gbps");
  }

  void interconnect() {
    t_.section("Interconnect");
    const std::string ports = s_.chip.link.count ? fmt::format(" x {}", *s_.chip.link.count) : "";
    figure(s_.chip.link.version + ports + ", per chip", "chip.link.bandwidth_gbps");
    figure("CC-cores", "chip.cc_cores");
    figure("NVLink Fusion", "chip.link.nvlink_fusion");
    figure("Memory pool (chips)", "chip.memory_pool_chips");
  }

  void numerics() {
    const std::pair<const char*, const char*> rows[] = {
        {"Overflow", "numerics.overflow"},
        {"NaN", "numerics.nan"},
        {"Flush subnormals", "numerics.flush_subnormals"},
        {"Stochastic rounding", "numerics.stochastic_rounding"},
        {"SR random bits", "numerics.sr_random_bits"},
        {"TensorE FP8 formats", "numerics.tensor_fp8_formats"},
        {"TensorE MX formats", "numerics.tensor_mx_formats"}};
    for (const auto& [label, key] : rows) {
      if (has(key)) {
        n_.row({std::string("  ") + label, display_value(s_, key), s_.fields.at(key).prov.label()});
      }
    }
  }

  void system(const std::string& level, const SystemSpec& sys) {
    if (!sys.present) return;
    std::string title = fmt::format("{}: {}, {} chips", level, sys.name,
                                    format_number(static_cast<double>(sys.chips)));
    if (sys.topology) title += ", " + *sys.topology;
    if (has(level + ".efa_gbps")) title += ", EFA " + display_value(s_, level + ".efa_gbps");
    t_.section(title);
    const std::string pub = level + ".published.";
    figure("Chips", level + ".chips", level + ".chips");
    figure("HBM capacity", pub + "hbm_capacity_gib", level + ".hbm_capacity_gib");
    figure("HBM bandwidth", pub + "hbm_bandwidth_gbps", level + ".hbm_bandwidth_gbps");
    for (const auto& [cls, label] :
         {std::pair{"fp8", "FP8 PFLOPS"}, std::pair{"bf16", "BF16 PFLOPS"},
          std::pair{"fp32", "FP32 PFLOPS"}}) {
      const DerivedFigure* cores = d_.find(fmt::format("{}.{}_pflops_from_cores", level, cls));
      figure(label, fmt::format("{}{}_pflops", pub, cls), fmt::format("{}.{}_pflops", level, cls),
             cores ? "from cores " + display(Value(cores->value), "PFLOPS", Provenance{}) : "");
    }
  }

  const ChipSpec& s_;
  Derived d_;
  TextTable t_;  // figures
  TextTable n_;  // numerics policy: long list values would widen the figure columns
};

}  // namespace

std::string format_spec(const ChipSpec& spec) { return SpecReport(spec).run(); }

}  // namespace trnsim::arch
