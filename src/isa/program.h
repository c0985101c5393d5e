// A NeuronCore program: the HBM tensors it declares, one in-order instruction stream per
// engine, the semaphores the streams share, and what it was written for (generation, seed).
// Built by the kernel API (src/kernel) or read from text (isa/assembler.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/large_allocator.h"
#include "isa/access_pattern.h"
#include "isa/engine.h"
#include "isa/instruction.h"
#include "isa/names.h"
#include "numerics/format.h"

namespace trnsim::isa {

// Semaphores per core (DRV: 256 per NeuronCore on every generation so far).
inline constexpr int kMaxSemaphores = 256;
// Where add_tensor places a tensor given no address: after the highest one, aligned to this.
// trnsim's choice (no placement rule is public); 4 KiB keeps DMA rows away from small splits.
inline constexpr int64_t kTensorAlignment = 4096;

enum class TensorKind : uint8_t {
  kInput,    // the host fills it before the run
  kOutput,   // the host reads it after the run
  kInOut,    // both
  kScratch,  // neither: device-only working memory
};
inline constexpr NameTable<TensorKind, 4> kTensorKindNames{{{
    {TensorKind::kInput, "input"},
    {TensorKind::kOutput, "output"},
    {TensorKind::kInOut, "inout"},
    {TensorKind::kScratch, "scratch"},
}}};

struct HbmTensor {
  std::string name;
  num::Format dtype = num::fp32();
  std::vector<int64_t> shape;  // row-major, outermost first
  int64_t address = 0;         // bytes, in the core's device HBM
  TensorKind kind = TensorKind::kScratch;

  int64_t elements() const;
  int64_t bytes() const { return elements() * dtype.storage_bytes; }
  // Elements from one index of the outermost dim to the next (1 for rank <= 1).
  int64_t row_elements() const;
  bool is_input() const { return kind == TensorKind::kInput || kind == TensorKind::kInOut; }
  bool is_output() const { return kind == TensorKind::kOutput || kind == TensorKind::kInOut; }
  bool operator==(const HbmTensor&) const = default;
};

// One engine's instruction stream: an unrolled kernel's are tens of MB, walked end to end by
// every run, so they live on huge pages where the system offers them (base/large_allocator.h).
using Stream = std::vector<Instruction, LargeAllocator<Instruction>>;

// What the kernel builder added to move tiles through HBM when SBUF was short
// (kernel/placement.h); the DMAs themselves are ordinary instructions of the streams. Not part
// of the text form nor of equality.
struct SpillSummary {
  int32_t tiles = 0;  // tiles stored at least once
  int64_t stores = 0, reloads = 0;
  int64_t bytes_spilled = 0, bytes_reloaded = 0;
};

struct Program {
  std::string chip;  // target generation ("trn2"); empty: not stated
  uint64_t seed = 0;
  int32_t num_semaphores = 0;
  std::vector<HbmTensor> tensors;
  std::array<Stream, kNumEngines> streams;
  SpillSummary spill;
  // Names Instruction::origin refers to (source files, tiles, tensors); not part of equality.
  std::vector<std::string> symbols;

  Stream& stream(Engine e) { return streams[static_cast<size_t>(e)]; }
  const Stream& stream(Engine e) const { return streams[static_cast<size_t>(e)]; }
  size_t num_instructions() const;
  // symbols[i], or "" for -1 and indices out of range.
  std::string_view symbol(int32_t i) const;

  // Appends to the stream of inst.engine; returns the instruction's index in that stream.
  int32_t append(Instruction inst);

  // Declares a tensor. address < 0: placed after every tensor so far, aligned to
  // kTensorAlignment. Throws InputError for a name that is not an identifier, is a space name
  // (sbuf, psum, hbm) or is already declared, and for a dimension < 1.
  const HbmTensor& add_tensor(std::string name, num::Format dtype, std::vector<int64_t> shape,
                              TensorKind kind, int64_t address = -1);
  const HbmTensor* find_tensor(std::string_view name) const;
  // The first declared tensor whose bytes contain `address`, or nullptr.
  const HbmTensor* tensor_at(int64_t address) const;

  // An HBM operand over rows [row_begin, row_end) of a tensor (its outermost dim), the rest of
  // each row as one free dim. Throws InputError for an unknown tensor or rows out of range.
  AccessPattern rows(std::string_view tensor, int64_t row_begin, int64_t row_end) const;
};

// Where `in` came from: "file:line", "line N" (a line with no file), "file", or "" (unknown).
std::string source_of(const Program& p, const Instruction& in);

// Equality of meaning: everything but source lines, operand slots past num_operands and free
// dims past ndim. Floats compare by bits. assemble(disassemble(p)) == p holds with this.
bool same_access(const AccessPattern& a, const AccessPattern& b);
bool operator==(const Instruction& a, const Instruction& b);
bool operator==(const Program& a, const Program& b);

}  // namespace trnsim::isa
