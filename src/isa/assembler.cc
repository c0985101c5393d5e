// The assembler: one pass over the lines, a recursive-descent parse of each (LineCursor),
// labels resolved per engine stream at the end. Syntax: docs/isa.md.
#include "isa/assembler.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "isa/line_cursor.h"
#include "isa/op_table.h"
#include "isa/operand_text.h"
#include "isa/sync_text.h"
#include "isa/text_numbers.h"

namespace trnsim::isa {

namespace {

class Assembler {
 public:
  explicit Assembler(std::string_view file) : file_(file) {}

  void line(std::string_view text, int lineno) {
    LineCursor cur(text, fmt::format("{}:{}", file_, lineno));
    if (cur.at_end()) return;
    if (cur.eat('.')) return directive(cur);
    const size_t m = cur.mark();
    std::string_view word = cur.identifier();
    if (!word.empty() && cur.eat(':')) {  // a label, maybe followed by an instruction
      define_label(cur, word);
      if (cur.at_end()) return;
      word = cur.identifier();
    } else if (word.empty()) {
      cur.reset(m);
      cur.fail(cur.next_token(), "expected a directive, a label or a mnemonic");
    }
    instruction(cur, word, lineno);
  }

  Program finish() {
    for (const LabelUse& u : uses_) {
      const auto& table = labels_[static_cast<size_t>(u.engine)];
      auto it = table.find(u.label);
      if (it == table.end())
        throw InputError(u.where, u.label,
                         fmt::format("undefined label in the {} stream", name_of(u.engine)));
      prog_.stream(u.engine)[static_cast<size_t>(u.index)].p.branch_target = it->second;
    }
    if (!saw_semaphores_) prog_.num_semaphores = max_sem_ + 1;
    return std::move(prog_);
  }

 private:
  struct LabelUse {
    Engine engine;
    int32_t index;
    std::string label, where;
  };

  void directive(LineCursor& cur) {
    const std::string_view d = cur.identifier();
    if (d == "chip") {
      once(cur, saw_chip_, d);
      prog_.chip = cur.peek() == '"' ? cur.quoted() : std::string(cur.word());
      if (prog_.chip.empty()) cur.fail(".chip", "expected the generation name (trn1, trn2, ...)");
    } else if (d == "seed") {
      once(cur, saw_seed_, d);
      const std::string_view w = cur.word();
      prog_.seed = cur.with_where([&] { return parse_uint64(w); });
    } else if (d == "semaphores") {
      once(cur, saw_semaphores_, d);
      const std::string_view w = cur.word();
      prog_.num_semaphores = cur.with_where([&] { return parse_integer<int32_t>(w); });
    } else if (d == "tensor") {
      tensor(cur);
    } else if (d == "engine") {
      const std::string_view name = cur.identifier();
      const auto e = find_engine(name);
      if (!e)
        cur.fail(name.empty() ? cur.next_token() : std::string(name),
                 "unknown engine; expected one of: " + kEngineNames.list() + " (or " +
                     kEngineLongNames.list() + ")");
      engine_ = *e;
    } else {
      cur.fail(fmt::format(".{}", d),
               "unknown directive; expected .chip, .seed, .semaphores, .tensor or .engine");
    }
    if (!cur.at_end()) cur.fail(cur.next_token(), "unexpected text after the directive");
  }

  void once(LineCursor& cur, bool& seen, std::string_view d) {
    if (seen) cur.fail("." + std::string(d), "directive given twice");
    seen = true;
  }

  // .tensor NAME hbm DTYPE [D0, D1, ...] input|output|inout|scratch [at=ADDRESS]
  void tensor(LineCursor& cur) {
    const std::string name(cur.identifier());
    if (name.empty()) cur.fail(cur.next_token(), "expected a tensor name");
    if (cur.identifier() != "hbm")
      cur.fail(cur.next_token(), "expected 'hbm' (tensors live in HBM)");
    const std::string_view dt = cur.identifier();
    if (dt.empty()) cur.fail(cur.next_token(), "expected the tensor's dtype");
    const num::Format dtype = cur.with_where([&] { return num::parse_format(dt); });
    std::vector<int64_t> shape;
    cur.expect('[', "to open the tensor's shape");
    if (!cur.eat(']')) {
      do {
        const std::string_view w = cur.integer_text();
        shape.push_back(cur.with_where([&] { return parse_integer<int64_t>(w); }));
      } while (cur.eat(','));
      cur.expect(']', "to close the tensor's shape");
    }
    const std::string_view kind_name = cur.identifier();
    const auto kind = kTensorKindNames.find(kind_name);
    if (!kind)
      cur.fail(kind_name.empty() ? cur.next_token() : std::string(kind_name),
               "expected the tensor kind: " + kTensorKindNames.list());
    int64_t address = -1;
    if (cur.eat("at=")) {
      const std::string_view w = cur.word();
      address = cur.with_where([&] { return parse_int64(w, 0, INT64_MAX); });
    }
    cur.with_where([&] { prog_.add_tensor(name, dtype, shape, *kind, address); });
  }

  void define_label(LineCursor& cur, std::string_view label) {
    require_engine(cur, label);
    auto& table = labels_[static_cast<size_t>(*engine_)];
    if (table.count(std::string(label))) cur.fail(label, "label defined twice in this stream");
    table[std::string(label)] = static_cast<int32_t>(prog_.stream(*engine_).size());
  }

  void require_engine(LineCursor& cur, std::string_view token) {
    if (!engine_) cur.fail(token, "before any .engine directive (which stream is this?)");
  }

  void instruction(LineCursor& cur, std::string_view word, int lineno) {
    const auto op = find_opcode(word);
    if (!op) cur.fail(word, "unknown mnemonic (`trnsim isa` lists them)");
    require_engine(cur, word);
    const OpInfo& info = op_info(*op);
    if (!info.engines.has(*engine_))
      cur.fail(word, fmt::format("not an op of the {} engine", name_of(*engine_)));
    Instruction inst;
    inst.op = *op;
    inst.engine = *engine_;
    inst.source_line = lineno;
    operands(cur, info, inst);
    params(cur, info, inst);
    if (const std::string err = check_operand_structure(inst); !err.empty()) cur.fail(word, err);
    prog_.append(std::move(inst));
  }

  bool operand_next(LineCursor& cur) {
    const size_t m = cur.mark();
    const bool yes = !cur.identifier().empty() && cur.peek() == '[';
    cur.reset(m);
    return yes;
  }

  void operands(LineCursor& cur, const OpInfo& info, Instruction& inst) {
    if (!operand_next(cur)) return;
    int arrow = -1;
    int n = 0;
    for (;;) {
      if (n == kMaxOperands) cur.fail(cur.next_token(), "too many operands");
      inst.operands[static_cast<size_t>(n++)] = parse_operand(cur, prog_);
      if (cur.eat("<-")) {
        if (arrow >= 0) cur.fail("<-", "'<-' given twice");
        arrow = n;
      } else if (!cur.eat(',')) {
        break;
      }
    }
    inst.num_operands = static_cast<int8_t>(n);
    const int nw = info.num_writes();
    const std::string_view m = mnemonic(inst.op);
    if (nw == 0 && arrow >= 0) cur.fail("<-", fmt::format("{} writes no operand; drop '<-'", m));
    if (nw > 0 && n > nw && arrow != nw)
      cur.fail(arrow >= 0 ? "<-" : std::string(m),
               fmt::format("{} writes {} operand(s): write them, then '<-', then the {} read", m,
                           nw, m));
  }

  void params(LineCursor& cur, const OpInfo& info, Instruction& inst) {
    ParamKeySet seen;
    while (!cur.at_end()) {
      const std::string_view key = cur.identifier();
      if (key.empty() || !cur.eat('='))
        cur.fail(key.empty() ? cur.next_token() : std::string(key), "expected key=value");
      if (key == "wait") {
        const std::string_view w = cur.word();
        inst.waits.push_back(cur.with_where([&] { return parse_wait(w); }));
        note_sem(inst.waits.back().sem);
      } else if (key == "signal") {
        const std::string_view w = cur.word();
        inst.signals.push_back(cur.with_where([&] { return parse_signal(w); }));
        note_sem(inst.signals.back().sem);
      } else if (key == "name") {
        inst.name = cur.peek() == '"' ? cur.quoted() : std::string(cur.word());
      } else {
        param(cur, info, inst, key, seen);
      }
    }
  }

  void param(LineCursor& cur, const OpInfo& info, Instruction& inst, std::string_view key,
             ParamKeySet& seen) {
    const auto k = find_param_key(key);
    if (!k || !info.params.has(*k)) {
      std::string takes;
      for (int i = 0; i < kNumParamKeys; ++i)
        if (info.params.has(static_cast<ParamKey>(i)))
          takes += std::string(takes.empty() ? "" : ", ") +
                   std::string(param_key_name(static_cast<ParamKey>(i)));
      cur.fail(key, fmt::format("unknown parameter for {}; it takes: {}wait, signal, name",
                                mnemonic(info.op), takes.empty() ? "" : takes + ", "));
    }
    if (seen.has(*k)) cur.fail(key, "parameter given twice");
    seen = seen | ParamKeySet{*k};
    const std::string_view value = cur.word();
    if (value.empty()) cur.fail(key, "missing value");
    const char c0 = value[0];
    if (*k == ParamKey::kTarget && !(std::isdigit(static_cast<unsigned char>(c0)) || c0 == '-')) {
      uses_.push_back({*engine_, static_cast<int32_t>(prog_.stream(*engine_).size()),
                       std::string(value), cur.where()});
      return;
    }
    cur.with_where([&] { parse_param(*k, value, inst.p); });
  }

  void note_sem(int sem) { max_sem_ = std::max(max_sem_, sem); }

  std::string file_;
  Program prog_;
  std::optional<Engine> engine_;
  std::array<std::map<std::string, int32_t>, kNumEngines> labels_;
  std::vector<LabelUse> uses_;
  bool saw_chip_ = false, saw_seed_ = false, saw_semaphores_ = false;
  int max_sem_ = -1;
};

}  // namespace

Program assemble(std::string_view text, std::string_view file_name) {
  Assembler a(file_name);
  int lineno = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    a.line(text.substr(0, nl), ++lineno);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  return a.finish();
}

Program assemble_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), "", "cannot open the program file");
  std::ostringstream ss;
  ss << in.rdbuf();
  Program p = assemble(ss.str(), path.string());
  // Lines point into the file: traces and profiles name it (Instruction::origin).
  p.symbols.push_back(path.string());
  const auto file = static_cast<int32_t>(p.symbols.size() - 1);
  for (Stream& s : p.streams)
    for (Instruction& ins : s)
      if (ins.source_line > 0) ins.origin.file = file;
  return p;
}

}  // namespace trnsim::isa
