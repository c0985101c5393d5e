#include "arch/derived.h"

#include <fmt/format.h>

#include <optional>

#include "arch/number_format.h"
#include "arch/spec_view.h"
#include "base/error.h"
#include "base/units.h"

namespace trnsim::arch {

const DerivedFigure* Derived::find(std::string_view key) const {
  for (const auto& f : figures) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

double Derived::at(std::string_view key) const {
  const DerivedFigure* f = find(key);
  TRNSIM_ASSERT(f != nullptr);
  return f->value;
}

namespace {

// A number, or a number with its unit, in a derivation text.
std::string n(double x) { return format_number(x, 2); }
std::string q(double x, std::string_view unit) { return display(Value(x), unit, Provenance{}); }

class Resolver {
 public:
  explicit Resolver(const ChipSpec& s) : s_(s) {}

  Derived run() {
    core_compute();
    core_memory();
    chip();
    system("server", s_.server);
    system("ultraserver", s_.ultraserver);
    system("ultracluster", s_.ultracluster);
    return std::move(out_);
  }

 private:
  void add(std::string key, std::string unit, double value, std::string how,
           std::vector<std::string> inputs, std::string published_key = "") {
    out_.figures.push_back({std::move(key), std::move(unit), value, std::move(how),
                            std::move(inputs), std::move(published_key)});
  }

  void core_compute() {
    const TensorSpec& t = s_.core.tensor;
    const MatmulRate& r = t.matmul_rate;
    const PublishedCoreTflops& p = t.published_tflops;
    auto rate = [&](const char* cls, std::optional<double> k, bool published) {
      if (!k) return;
      add(fmt::format("core.tflops.{}", cls), "TFLOPS",
          t.clock_ghz * t.pe_rows * t.pe_cols * 2 * *k / 1000,
          fmt::format("{} GHz x {} x {} PEs x 2 FLOP/MAC x {} ({} rate)", n(t.clock_ghz), t.pe_rows,
                      t.pe_cols, n(*k), cls),
          {"core.tensor.clock_ghz", "core.tensor.pe_rows", "core.tensor.pe_cols",
           fmt::format("core.tensor.matmul_rate.{}", cls)},
          published ? fmt::format("core.tensor.published_tflops.{}", cls) : "");
    };
    rate("bf16", r.bf16, p.bf16.has_value());
    rate("fp16", r.fp16, false);
    rate("tf32", r.tf32, false);
    rate("fp32", r.fp32, p.fp32.has_value());
    rate("fp8", r.fp8, p.fp8.has_value());
    rate("mxfp8", r.mxfp8, p.mxfp8.has_value());
    rate("mxfp4", r.mxfp4, false);
    rate("sparse", r.sparse, p.sparse.has_value());
  }

  void core_memory() {
    const SbufSpec& sb = s_.core.sbuf;
    const PsumSpec& ps = s_.core.psum;
    const DmaSpec& dma = s_.core.dma;
    const auto partitions = static_cast<double>(sb.partitions);
    add("core.sbuf_mib", "MiB", partitions * static_cast<double>(sb.bytes_per_partition) / kMiB,
        fmt::format("{} partitions x {}", sb.partitions,
                    q(static_cast<double>(sb.bytes_per_partition) / kKiB, "KiB")),
        {"core.sbuf.partitions", "core.sbuf.bytes_per_partition"});
    add("core.sbuf_usable_mib", "MiB",
        partitions * static_cast<double>(sb.usable_bytes_per_partition) / kMiB,
        fmt::format("{} partitions x {} bytes", sb.partitions,
                    n(static_cast<double>(sb.usable_bytes_per_partition))),
        {"core.sbuf.partitions", "core.sbuf.usable_bytes_per_partition"});
    add("core.psum_kib", "KiB",
        static_cast<double>(ps.partitions) * ps.banks * static_cast<double>(ps.bank_bytes) / kKiB,
        fmt::format("{} partitions x {} banks x {} bytes", ps.partitions, ps.banks, ps.bank_bytes),
        {"core.psum.partitions", "core.psum.banks", "core.psum.bank_bytes"});
    add("core.dma.bandwidth_theoretical_gbps", "GB/s",
        dma.engines * dma.engine_bandwidth_theoretical_gbps,
        fmt::format("{} engines x {}", dma.engines,
                    q(dma.engine_bandwidth_theoretical_gbps, "GB/s")),
        {"core.dma.engines", "core.dma.engine_bandwidth_theoretical_gbps"});
    add("core.dma.bandwidth_practical_gbps", "GB/s",
        dma.engines * dma.engine_bandwidth_practical_gbps,
        fmt::format("{} engines x {}", dma.engines, q(dma.engine_bandwidth_practical_gbps, "GB/s")),
        {"core.dma.engines", "core.dma.engine_bandwidth_practical_gbps"});
  }

  // cores x a per-core figure.
  void per_chip(const std::string& key, const std::string& core_key,
                const std::string& published_key) {
    const DerivedFigure* f = out_.find(core_key);
    if (f == nullptr) return;
    add(key, f->unit, s_.chip.cores * f->value,
        fmt::format("{} cores x {}", s_.chip.cores, q(f->value, f->unit)), {"chip.cores", core_key},
        published_key);
  }

  void chip() {
    // The chip's headline FP8 figure is its fastest FP8 path: cFP8 (v2), double_row FP8 (v3),
    // MXFP8 (v4).
    const MatmulRate& r = s_.core.tensor.matmul_rate;
    const bool mx = r.mxfp8 && (!r.fp8 || *r.mxfp8 >= *r.fp8);
    per_chip("chip.tflops.fp8", mx ? "core.tflops.mxfp8" : "core.tflops.fp8", "chip.tflops.fp8");
    per_chip("chip.tflops.fp4", "core.tflops.mxfp4", "chip.tflops.fp4");
    per_chip("chip.tflops.bf16", "core.tflops.bf16", "chip.tflops.bf16");
    per_chip("chip.tflops.fp32", "core.tflops.fp32", "chip.tflops.fp32");
    per_chip("chip.tflops.sparse", "core.tflops.sparse", "chip.tflops.sparse");
    per_chip("chip.sbuf_mib", "core.sbuf_mib", "chip.sbuf_mib");
    add("chip.psum_mib", "MiB", s_.chip.cores * out_.at("core.psum_kib") / 1024,
        fmt::format("{} cores x {}", s_.chip.cores, q(out_.at("core.psum_kib"), "KiB")),
        {"chip.cores", "core.psum_kib"});
    add("chip.dma.engines", "", static_cast<double>(s_.chip.cores) * s_.core.dma.engines,
        fmt::format("{} cores x {} engines", s_.chip.cores, s_.core.dma.engines),
        {"chip.cores", "core.dma.engines"}, "chip.dma.engines");
    per_chip("chip.dma.bandwidth_gbps", "core.dma.bandwidth_theoretical_gbps",
             "chip.dma.bandwidth_gbps");
    per_chip("chip.dma.bandwidth_practical_gbps", "core.dma.bandwidth_practical_gbps", "");
  }

  void system(const std::string& level, const SystemSpec& sys) {
    if (!sys.present) return;
    const std::string pub = level + ".published.";
    const std::string chips_key = level + ".chips";
    if (sys.members && sys.chips_per_member) {
      add(chips_key, "", static_cast<double>(*sys.members) * *sys.chips_per_member,
          fmt::format("{} x {} chips", *sys.members, *sys.chips_per_member),
          {level + ".members", level + ".chips_per_member"}, chips_key);
    }
    const auto chips = static_cast<double>(sys.chips);
    auto times = [&](const std::string& name, const std::string& key, double per_chip,
                     const std::string& unit, double scale, const std::string& out_unit,
                     const std::string& published) {
      add(fmt::format("{}.{}", level, name), out_unit, chips * per_chip * scale,
          fmt::format("{} chips x {}", n(chips), q(per_chip, unit)), {chips_key, key}, published);
    };
    const ChipLevel& c = s_.chip;
    times("hbm_capacity_gib", "chip.hbm.capacity_gib", c.hbm.capacity_gib, "GiB", 1, "GiB",
          pub + "hbm_capacity_gib");
    times("hbm_bandwidth_gbps", "chip.hbm.bandwidth_gbps", c.hbm.bandwidth_gbps, "GB/s", 1, "GB/s",
          pub + "hbm_bandwidth_gbps");
    const std::pair<const char*, std::optional<double>> published[] = {
        {"fp8", c.tflops.fp8}, {"bf16", c.tflops.bf16}, {"fp32", c.tflops.fp32}};
    for (const auto& [cls, tflops] : published) {
      const std::string p = fmt::format("{}{}_pflops", pub, cls);
      if (tflops) {
        times(fmt::format("{}_pflops", cls), fmt::format("chip.tflops.{}", cls), *tflops, "TFLOPS",
              1e-3, "PFLOPS", p);
      }
      if (const DerivedFigure* f = out_.find(fmt::format("chip.tflops.{}", cls))) {
        const double v = f->value;
        const std::string key = f->key;
        times(fmt::format("{}_pflops_from_cores", cls), key, v, "TFLOPS", 1e-3, "PFLOPS", p);
      }
    }
  }

  const ChipSpec& s_;
  Derived out_;
};

}  // namespace

Derived derive(const ChipSpec& spec) { return Resolver(spec).run(); }

}  // namespace trnsim::arch
