#include "core/exec/exec_context.h"

#include <fmt/format.h>

#include "isa/op_table.h"

namespace trnsim::core {

mem::Tile& ExecContext::read(int slot) {
  mem::Tile& t = st_.operand_tiles[static_cast<size_t>(slot)];
  mem::read_tile(st_.memory, ap(slot), t, st_.io, st_.opts.policy);
  return t;
}

mem::Tile& ExecContext::temp(int k, int64_t r, int64_t c) {
  mem::Tile& t = st_.temp_tiles[static_cast<size_t>(k)];
  t.resize(r, c);
  return t;
}

num::RoundOptions ExecContext::round_options(int output) const {
  num::RoundOptions o;
  o.rounding = p.rounding;
  o.seed = st_.opts.seed;
  o.stream = sr_stream(engine, id, output);
  o.index_base = 0;
  o.policy = st_.opts.policy;
  return o;
}

void ExecContext::write(int slot, const mem::Tile& t, int output) {
  mem::write_tile(st_.memory, ap(slot), t, st_.io, round_options(output));
}

void ExecContext::read_pattern(const isa::AccessPattern& ap, mem::Tile& out) {
  mem::read_tile(st_.memory, ap, out, st_.io, st_.opts.policy);
}

void ExecContext::write_pattern(const isa::AccessPattern& ap, const mem::Tile& t,
                                uint64_t index_base) {
  num::RoundOptions o = round_options(0);
  o.index_base = index_base;
  mem::write_tile(st_.memory, ap, t, st_.io, o);
}

std::vector<uint8_t>& ExecContext::codes(int slot, int buffer_index) {
  std::vector<uint8_t>& b = buffer(buffer_index);
  mem::read_codes(st_.memory, ap(slot), b);
  return b;
}

void ExecContext::write_codes(int slot, const uint8_t* c) {
  mem::write_codes(st_.memory, ap(slot), c);
}

std::optional<ExecContext::Scalar> ExecContext::scalar(const isa::ScalarArg& a, int64_t r,
                                                       const char* what) {
  Scalar s;
  s.imm = a.imm;
  if (a.operand < 0) return s;
  if (!has(a.operand)) {
    fault(mem::FaultKind::kShape, fmt::format("{} names operand {} but the instruction has {}",
                                              what, a.operand, in.num_operands));
    return std::nullopt;
  }
  if (rows(a.operand) != r || cols(a.operand) != 1) {
    fault_at(mem::FaultKind::kShape, a.operand,
             fmt::format("{} must be a [{}, 1] column, got [{}, {}]", what, r, rows(a.operand),
                         cols(a.operand)));
    return std::nullopt;
  }
  s.col = read(a.operand).data.data();
  return s;
}

bool ExecContext::fault(mem::FaultKind k, std::string message) {
  mem::Fault f;
  f.kind = k;
  f.instruction_id = id;
  f.instruction = instruction_label(in, engine, id);
  f.message = std::move(message);
  st_.faults.add(std::move(f));
  failed_ = true;
  return false;
}

bool ExecContext::fault_at(mem::FaultKind k, int slot, std::string message) {
  const isa::AccessPattern& a = ap(slot);
  mem::Fault f;
  f.kind = k;
  f.instruction_id = id;
  f.instruction = instruction_label(in, engine, id);
  f.space = a.space;
  if (a.space != isa::Space::kHbm) {
    f.p_begin = a.start_partition;
    f.p_end = int64_t{a.start_partition} + a.num_partitions;
  }
  const auto r = mem::CoreMemory::byte_range(a);
  f.begin = r.lo;
  f.end = r.hi;
  f.message = fmt::format("operand {}: {}", slot, message);
  st_.faults.add(std::move(f));
  failed_ = true;
  return false;
}

bool ExecContext::same_shape(int a, int b) {
  if (rows(a) == rows(b) && cols(a) == cols(b)) return true;
  return fault_at(mem::FaultKind::kShape, a,
                  fmt::format("shape [{}, {}] differs from operand {}'s [{}, {}]", rows(a), cols(a),
                              b, rows(b), cols(b)));
}

bool ExecContext::shape_is(int slot, int64_t r, int64_t c) {
  if (rows(slot) == r && cols(slot) == c) return true;
  return fault_at(mem::FaultKind::kShape, slot,
                  fmt::format("must be [{}, {}], got [{}, {}]", r, c, rows(slot), cols(slot)));
}

std::string instruction_label(const isa::Instruction& in, isa::Engine engine, uint64_t id) {
  std::string s = fmt::format("#{} {} on {}", id, isa::mnemonic(in.op), isa::engine_name(engine));
  if (!in.name.empty()) s += fmt::format(" '{}'", in.name);
  if (in.source_line > 0) s += fmt::format(" (line {})", in.source_line);
  return s;
}

}  // namespace trnsim::core
