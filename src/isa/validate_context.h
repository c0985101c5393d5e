// Internal to validate*.cc: what every rule needs while checking one instruction.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "arch/chip_spec.h"
#include "isa/diagnostic.h"
#include "isa/op_table.h"
#include "isa/program.h"

namespace trnsim::isa::detail {

struct Context {
  const Program& prog;
  const arch::CoreSpec& core;
  const arch::NumericsSpec& numerics;
  std::vector<Diagnostic>& out;
  // The generation's format lists, parsed once.
  std::vector<num::Dtype> tensor_fp8, psum_dtypes;
  // The instruction being checked.
  Engine engine = Engine::kSync;
  int32_t index = -1;
  const Instruction* inst = nullptr;

  const AccessPattern& operand(int i) const { return inst->operands[static_cast<size_t>(i)]; }
  template <typename... A>
  void report(RuleKind k, fmt::format_string<A...> f, A&&... a) {
    out.push_back({k, engine, index, inst ? inst->source_line : 0, inst ? inst->op : Opcode::kNop,
                   fmt::format(f, std::forward<A>(a)...)});
  }
};

// "operand 1 'moving'"
std::string operand_label(const Instruction& inst, int i);
// "[P=128, F=512]"
std::string shape_text(const AccessPattern& ap);

// TensorE state carried along the pe stream: the last load_stationary.
struct Stationary {
  int32_t partitions = 0;
  int64_t m = 0;
  num::Format dtype;
  MatmulPerfMode perf_mode = MatmulPerfMode::kNone;
};

void check_operands(Context& c);                                       // validate_access.cc
void check_shapes(Context& c);                                         // validate_shapes.cc
void check_matmul(Context& c, std::optional<Stationary>& stationary);  // validate_matmul.cc
void check_dma_queue(Context& c);     // validate_shapes.cc: queue= names one of the core's
void check_dma_indirect(Context& c);  // validate_dma_indirect.cc (dma_gather, dma_scatter)
void check_gather(Context& c);        // validate_gather.cc (GpSimd n_gather, local_gather, ...)
bool dtype_allowed(const Context& c, DtypeRule rule, const num::Format& f);

}  // namespace trnsim::isa::detail
