// A hardware-rule violation found in a program: a typed record, not an exception
// (ARCHITECTURE.md: simulated hardware faults are diagnostics shown to the user). Static
// validation (isa/validate.h) produces them; the simulator reports the same kinds as faults.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "isa/engine.h"
#include "isa/names.h"
#include "isa/opcode.h"

namespace trnsim::isa {

enum class RuleKind : uint8_t {
  kMalformed,       // operand structure, parameters the op does not take, missing waits
  kEngine,          // op issued by an engine that cannot run it
  kFeature,         // op or parameter needs a feature the generation lacks
  kSpace,           // operand in a memory the op or engine cannot access
  kDtype,           // operand format the op or generation does not take
  kPartitions,      // partition range outside the memory (or an HBM row start)
  kStartPartition,  // start partition not allowed for the partition count (s3)
  kFreeDims,        // more than 4 free dims, size outside 1..65535, stride outside int16
  kFreeSize,        // elements per partition beyond what the engine streams
  kBounds,          // bytes outside the partition's SBUF / PSUM
  kPsumBank,        // a matmul output tile crossing a PSUM bank
  kHbmRange,        // HBM bytes outside every declared tensor
  kShape,           // operand shapes that do not fit together (counts, partitions)
  kMatmulShape,     // K, M, N beyond the TensorE limits
  kPeTile,          // PE tile position/size not allowed
  kDmaQueue,        // DMA queue outside the core's queues
  kSemaphore,       // semaphore index outside the program's semaphores
  kControl,         // branch target, scalar registers
  kTensor,          // HBM tensor declarations (address, overlap)
};
inline constexpr NameTable<RuleKind, 19> kRuleKindNames{{{
    {RuleKind::kMalformed, "malformed"},
    {RuleKind::kEngine, "engine"},
    {RuleKind::kFeature, "feature"},
    {RuleKind::kSpace, "space"},
    {RuleKind::kDtype, "dtype"},
    {RuleKind::kPartitions, "partitions"},
    {RuleKind::kStartPartition, "start_partition"},
    {RuleKind::kFreeDims, "free_dims"},
    {RuleKind::kFreeSize, "free_size"},
    {RuleKind::kBounds, "bounds"},
    {RuleKind::kPsumBank, "psum_bank"},
    {RuleKind::kHbmRange, "hbm_range"},
    {RuleKind::kShape, "shape"},
    {RuleKind::kMatmulShape, "matmul_shape"},
    {RuleKind::kPeTile, "pe_tile"},
    {RuleKind::kDmaQueue, "dma_queue"},
    {RuleKind::kSemaphore, "semaphore"},
    {RuleKind::kControl, "control"},
    {RuleKind::kTensor, "tensor"},
}}};

struct Diagnostic {
  RuleKind kind = RuleKind::kMalformed;
  Engine engine = Engine::kSync;
  int32_t index = -1;        // in the engine's stream; -1 for the program as a whole
  int32_t source_line = 0;   // 0 when not from text
  Opcode op = Opcode::kNop;  // meaningful when index >= 0
  std::string message;       // names the instruction's operand and the rule
};

// "line 12: pe[3] multiply_moving: psum_bank: dst ..." (the parts that are known).
std::string to_string(const Diagnostic& d);

// Throws InputError for the first diagnostic, if any: where = "file:line" (or the file, or
// "engine[index]"), key = the instruction's mnemonic, detail = the rule and message.
void throw_if_any(const std::vector<Diagnostic>& diags, std::string_view file = "");

}  // namespace trnsim::isa
