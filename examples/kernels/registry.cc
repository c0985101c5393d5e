#include "kernels/registry.h"

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/kernels.h"

namespace trnsim::examples {

namespace {

using Args = std::span<const int64_t>;

const std::vector<KernelParam> kMatmulParams{
    {"m", 4096, "rows of the result (free dim of lhsT)"},
    {"k", 8192, "contraction"},
    {"n", 8192, "columns of the result (free dim of rhs)"},
};

std::vector<KernelParam> fully_optimized_params() {
  std::vector<KernelParam> p = kMatmulParams;
  p.push_back({"tiles_m", 16, "128-row tiles per M block"});
  p.push_back({"tiles_n", 2, "512-column tiles per N block"});
  p.push_back({"tiles_k", 8, "128-row tiles per K block"});
  return p;
}

const std::vector<KernelParam> kRowParams{
    {"rows", 1024, "rows (tiled over partitions, 128 at a time)"},
    {"cols", 2048, "elements per row (the free dim)"},
};

std::vector<KernelEntry> make_registry() {
  return {
      {"matmul_tiled", "NKI tutorial matmul 1: 128x128x512 tiles, loads in the K loop",
       kMatmulParams,
       [](const arch::ChipSpec& c, Args a) { return matmul_tiled(c, a[0], a[1], a[2]); }},
      {"matmul_hoisted", "NKI tutorial matmul 2: K strips loaded once per M / N tile",
       kMatmulParams,
       [](const arch::ChipSpec& c, Args a) { return matmul_hoisted(c, a[0], a[1], a[2]); }},
      {"matmul_blocked", "NKI tutorial matmul 3: free dims blocked 2 x 2 tiles", kMatmulParams,
       [](const arch::ChipSpec& c, Args a) { return matmul_blocked(c, a[0], a[1], a[2]); }},
      {"matmul_fully_optimized", "NKI tutorial matmul 4: M, N, K blocked, large DMAs",
       fully_optimized_params(),
       [](const arch::ChipSpec& c, Args a) {
         return matmul_fully_optimized(c, a[0], a[1], a[2], {a[3], a[4], a[5]});
       }},
      {"softmax", "row-wise softmax (fp32)", kRowParams,
       [](const arch::ChipSpec& c, Args a) { return softmax(c, a[0], a[1]); }},
      {"layernorm", "LayerNorm with bn_stats / bn_aggr (fp32, eps 1e-5)", kRowParams,
       [](const arch::ChipSpec& c, Args a) { return layernorm(c, a[0], a[1]); }},
      {"rmsnorm", "RMSNorm (fp32, eps 1e-6)", kRowParams,
       [](const arch::ChipSpec& c, Args a) { return rmsnorm(c, a[0], a[1]); }},
      {"attention",
       "fused self-attention forward, online softmax (bf16 in, fp32 out)",
       {{"seq", 2048, "sequence length (multiple of 128)"},
        {"d_head", 128, "head dim (<= 128)"},
        {"causal", 0, "1: causal mask"}},
       [](const arch::ChipSpec& c, Args a) { return attention(c, a[0], a[1], a[2] != 0); }},
      {"matmul_lnc",
       "matmul split along K over a logical core's physical cores (run with --lnc 2): "
       "partial sums traded with sendrecv, core_barrier at the end",
       {{"m", 128, "rows of the result (<= 128)"},
        {"k", 4096, "contraction (a multiple of 128 x cores)"},
        {"n", 512, "columns of the result (<= 512)"}},
       [](const arch::ChipSpec& c, Args a) { return matmul_lnc(c, a[0], a[1], a[2]); },
       [](const arch::ChipSpec& c, Args a, int pid, int np) {
         return matmul_lnc(c, a[0], a[1], a[2], pid, np);
       }},
  };
}

}  // namespace

std::span<const KernelEntry> kernel_registry() {
  static const std::vector<KernelEntry> registry = make_registry();
  return registry;
}

const KernelEntry* find_kernel(std::string_view name) {
  for (const KernelEntry& e : kernel_registry())
    if (e.name == name) return &e;
  return nullptr;
}

namespace {

const KernelEntry& entry_with_args(std::string_view name, const std::vector<int64_t>& args,
                                   std::vector<int64_t>& full) {
  const KernelEntry* e = find_kernel(name);
  if (e == nullptr) {
    std::string known;
    for (const KernelEntry& k : kernel_registry())
      known += fmt::format("{}{}", known.empty() ? "" : ", ", k.name);
    throw InputError("run", std::string(name), "no such kernel; known: " + known);
  }
  if (args.size() > e->params.size())
    throw InputError(
        "run", std::string(name),
        fmt::format("{} arguments given; the kernel takes {}", args.size(), e->params.size()));
  full = args;
  for (size_t i = args.size(); i < e->params.size(); ++i)
    full.push_back(e->params[i].default_value);
  return *e;
}

}  // namespace

isa::Program build_kernel(std::string_view name, const arch::ChipSpec& chip,
                          const std::vector<int64_t>& args) {
  std::vector<int64_t> full;
  return entry_with_args(name, args, full).build(chip, full);
}

std::vector<isa::Program> build_kernel_spmd(std::string_view name, const arch::ChipSpec& chip,
                                            const std::vector<int64_t>& args, int num_programs) {
  std::vector<int64_t> full;
  const KernelEntry& e = entry_with_args(name, args, full);
  std::vector<isa::Program> programs;
  if (!e.build_spmd) {
    if (num_programs != 1) {
      std::string spmd;
      for (const KernelEntry& k : kernel_registry())
        if (k.build_spmd) spmd += fmt::format("{}{}", spmd.empty() ? "" : ", ", k.name);
      throw InputError(
          "run", std::string(name),
          fmt::format("does not split over {} cores; SPMD kernels: {}", num_programs, spmd));
    }
    programs.push_back(e.build(chip, full));
    return programs;
  }
  for (int pid = 0; pid < num_programs; ++pid)
    programs.push_back(e.build_spmd(chip, full, pid, num_programs));
  return programs;
}

std::string describe_kernels() {
  std::string s;
  for (const KernelEntry& e : kernel_registry()) {
    std::string params;
    for (const KernelParam& p : e.params)
      params += fmt::format("{}{}={}", params.empty() ? "" : ", ", p.name, p.default_value);
    s += fmt::format("{}({})  {}\n", e.name, params, e.doc);
  }
  return s;
}

}  // namespace trnsim::examples
