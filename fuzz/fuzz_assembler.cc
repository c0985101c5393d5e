// Fuzz target: a program in the text form (docs/isa.md) through isa::assemble, then, when it
// assembles, static validation against its generation, the round trip of the disassembler
// (assemble(disassemble(p)) == p for programs validation finds well formed) and, when it
// validates clean, the race checker. Findings: any exception but InputError, a round trip that
// does not hold, a sanitizer report, a hang.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "arch/arch.h"
#include "core/race/race_check.h"
#include "fuzz_util.h"
#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/validate.h"

namespace {

using namespace trnsim;

// Loaded once: a program's `.chip` picks one of these (trn2 for any other name: the fuzzer
// must not make the loader read files named by the input).
const arch::ChipSpec& chip_for(const std::string& name) {
  static const std::array<arch::ChipSpec, 4> chips = {
      arch::load_chip("trn1"), arch::load_chip("trn2"), arch::load_chip("trn3"),
      arch::load_chip("trn4-projected")};
  for (const auto& c : chips)
    if (c.meta.name == name) return c;
  return chips[1];
}

void round_trip(const isa::Program& prog) {
  const std::string text = isa::disassemble(prog);
  isa::Program again;
  try {
    again = isa::assemble(text, "<disassembly>");
  } catch (const InputError& e) {
    fuzz::finding("assembler", "the disassembly does not assemble",
                  std::string(e.what()) + "\n--- disassembly:\n" + text);
  }
  if (!(again == prog))
    fuzz::finding("assembler", "assemble(disassemble(p)) != p", "--- disassembly:\n" + text);
  const std::string text2 = isa::disassemble(again);
  if (text2 != text)
    fuzz::finding("assembler", "disassemble is not a fixed point",
                  "--- first:\n" + text + "--- second:\n" + text2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Longer programs add no new syntax, only time per input.
  if (size > 16384) return -1;
  fuzz::expect_clean("assembler", [&] {
    const isa::Program prog = isa::assemble(fuzz::as_text(data, size), "fuzz.s");
    const arch::ChipSpec& chip = chip_for(prog.chip);
    const std::vector<isa::Diagnostic> diags = isa::validate(prog, chip);
    bool malformed = false;
    for (const auto& d : diags) malformed = malformed || d.kind == isa::RuleKind::kMalformed;
    if (!malformed) round_trip(prog);
    if (diags.empty()) {
      // Small limits: a loop can unroll to millions of instructions, and the race checker's
      // cost grows with the product of two operands' byte runs (open finding, fuzz/open).
      core::RaceCheckOptions opts;
      opts.max_instructions = 2000;
      opts.max_operand_elements = int64_t{1} << 12;
      (void)core::check_races(prog, chip, opts);
    }
  });
  return 0;
}
