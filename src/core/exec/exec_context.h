// What one semantics function sees while it executes one instruction: the operands as access
// patterns and as decoded FP32 tiles, the output cast with this instruction's rounding key,
// per-partition scalar arguments, and fault reporting.
//
// Contract of a semantics function: check everything first (shapes, dtypes, features) and
// report a fault by returning after ctx.fault(...); only then compute and write. An
// instruction that faults writes nothing. Bounds, engine-space and start-partition rules of
// every operand are checked by the Executor before the function is called.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/exec/exec_state.h"

namespace trnsim::core {

class ExecContext {
 public:
  ExecContext(ExecState& st, const isa::Instruction& instr, isa::Engine eng, uint64_t iid)
      : in(instr), p(instr.p), engine(eng), id(iid), st_(st) {}

  const isa::Instruction& in;
  const isa::Params& p;
  isa::Engine engine;
  uint64_t id;
  std::optional<int32_t> jump;  // set by a taken branch: next index in the engine's stream

  const arch::CoreSpec& core() const { return st_.core; }
  const ExecOptions& opts() const { return st_.opts; }
  mem::CoreMemory& mem() { return st_.memory; }
  PeArray& pe() { return st_.pe; }
  RegisterFile& regs() { return st_.regs[static_cast<size_t>(engine)]; }
  std::vector<float>& vector_accumulator() { return st_.vector_accumulator; }
  // This engine's random generator lanes, started from the run's seed on first use.
  std::vector<ExecState::RngLane>& rng_lanes() {
    std::vector<ExecState::RngLane>& lanes = st_.rng[static_cast<size_t>(engine)];
    if (lanes.empty())
      lanes.assign(static_cast<size_t>(st_.core.sbuf.partitions), {st_.opts.seed, 0});
    return lanes;
  }

  bool has(int slot) const { return slot >= 0 && slot < in.num_operands; }
  const isa::AccessPattern& ap(int slot) const { return in.operands[static_cast<size_t>(slot)]; }
  int64_t rows(int slot) const { return ap(slot).num_partitions; }
  int64_t cols(int slot) const { return ap(slot).free_elements(); }
  const num::Format& dtype(int slot) const { return ap(slot).dtype; }

  // Operand `slot` decoded to FP32 [rows][cols] (tile_io.h: exact for <= 24-bit formats).
  mem::Tile& read(int slot);
  // Scratch tile k (0..3), resized.
  mem::Tile& temp(int k, int64_t rows, int64_t cols);
  // Cast `t` (shaped as the operand) to operand `slot`'s dtype with this instruction's rounding
  // mode and stochastic key (seed, sr_stream(engine, id, output), element).
  void write(int slot, const mem::Tile& t, int output = 0);
  num::RoundOptions round_options(int output) const;
  // The same for a pattern that is not an operand (a row an indirect DMA picks at run time):
  // the caller has checked it lies inside the operand it was derived from. `index_base`: the
  // stochastic-rounding element index of its first element.
  void read_pattern(const isa::AccessPattern& ap, mem::Tile& out);
  void write_pattern(const isa::AccessPattern& ap, const mem::Tile& t, uint64_t index_base);
  // Raw element codes of an operand, in pattern order (bit-exact paths).
  std::vector<uint8_t>& codes(int slot, int buffer);
  void write_codes(int slot, const uint8_t* codes);
  std::vector<uint8_t>& buffer(int k) { return st_.byte_buffers[static_cast<size_t>(k)]; }

  // A per-partition scalar: an immediate, or column 0 of a [rows, 1] operand.
  struct Scalar {
    float imm = 0;
    const float* col = nullptr;
    float at(int64_t r) const { return col ? col[r] : imm; }
  };
  // Faults (and returns nullopt) if the operand is not [rows, 1]. Reads into the operand's tile.
  std::optional<Scalar> scalar(const isa::ScalarArg& a, int64_t rows, const char* what);

  // Record a fault of this instruction; always returns false so callers can `return fault(..)`.
  bool fault(mem::FaultKind k, std::string message);
  bool fault_at(mem::FaultKind k, int slot, std::string message);
  // Shape checks that fault with a message naming the slots.
  bool same_shape(int a, int b);
  bool shape_is(int slot, int64_t rows, int64_t cols);
  bool failed() const { return failed_; }

 private:
  ExecState& st_;
  bool failed_ = false;
};

// "#12 tensor_tensor on dve 'name' (line 7)": how faults name an instruction.
std::string instruction_label(const isa::Instruction& in, isa::Engine engine, uint64_t id);

}  // namespace trnsim::core
