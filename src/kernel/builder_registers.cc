// Scalar registers (builder.h): one number per register on every engine, a home in SBUF, and
// per engine whether its copy is current. The sequencers cannot read each other's registers,
// so a value reaches an engine through memory (reg_load from the home), as NKI's virtual
// registers do.
#include <fmt/format.h>

#include "kernel/builder.h"
#include "kernel/call_error.h"

namespace trnsim::kernel {

int32_t KernelBuilder::new_register() {
  for (int32_t r = 0; r < isa::kScalarRegisters; ++r) {
    RegisterRec& rec = regs_[static_cast<size_t>(r)];
    if (rec.used) continue;
    rec.used = true;
    rec.counter = false;
    if (!rec.home.valid())
      rec.home = sbuf(fmt::format("reg{}", r), num::int_format(num::Dtype::kInt32), {1, 1});
    stale_everywhere(r);
    return r;
  }
  call_error("register_alloc",
             fmt::format("all {} registers of the engines are in use", isa::kScalarRegisters));
}

void KernelBuilder::free_register(int32_t r) {
  check_register("register_free", r);
  regs_[static_cast<size_t>(r)].used = false;
}

void KernelBuilder::check_register(std::string_view call, int32_t r) const {
  if (r < 0 || r >= isa::kScalarRegisters || !regs_[static_cast<size_t>(r)].used)
    call_error(call, fmt::format("register {} is not allocated (new_register)", r));
}

void KernelBuilder::stale_everywhere(int32_t r) {
  for (auto& e : reg_fresh_) e[static_cast<size_t>(r)] = false;
}

void KernelBuilder::register_set(int32_t r, int64_t value) {
  check_register("register_set", r);
  RegisterRec& rec = regs_[static_cast<size_t>(r)];
  if (rec.counter) call_error("register_set", fmt::format("r{} is a loop's counter", r));
  if (value < INT32_MIN || value > UINT32_MAX)
    call_error("register_set", fmt::format("{} does not fit a 32-bit register", value));
  memset(rec.home, static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(value))));
  stale_everywhere(r);
}

void KernelBuilder::register_load(int32_t r, const View& src) {
  check_register("register_load", r);
  RegisterRec& rec = regs_[static_cast<size_t>(r)];
  if (rec.counter) call_error("register_load", fmt::format("r{} is a loop's counter", r));
  if (src.elements() != 1)
    call_error("register_load", fmt::format("{} has {} elements; a register takes one",
                                            src.describe(), src.elements()));
  if (src.space() == isa::Space::kPsum) {
    tensor_copy(rec.home, src);  // DMA does not reach PSUM
  } else if (src.space() == isa::Space::kSbuf) {
    // A DMA reads any partition (an engine copy starts at 0, 32, 64 or 96 only).
    dma_copy(rec.home, src);
  } else {
    if (src.dtype().storage_bytes != 4 || !(src.dtype() == num::int_format(num::Dtype::kInt32) ||
                                            src.dtype() == num::int_format(num::Dtype::kUint32)))
      call_error("register_load",
                 fmt::format("{}: a register loads a 32-bit integer from HBM", src.describe()));
    dma_copy(rec.home, src.bitcast(num::int_format(num::Dtype::kInt32)).reshape({1, 1}));
  }
  stale_everywhere(r);
}

void KernelBuilder::register_store(const View& dst, int32_t r) {
  check_register("register_store", r);
  if (dst.elements() != 1)
    call_error("register_store", fmt::format("{} has {} elements; a register fills one",
                                             dst.describe(), dst.elements()));
  isa::Instruction in = make(isa::Opcode::kRegStore, isa::Engine::kSync, {dst});
  in.p.reg_a = static_cast<int16_t>(r);
  emit("register_store", std::move(in), {{dst, true, "dst"}});
}

void KernelBuilder::materialize(int32_t r, isa::Engine e) {
  bool& fresh = reg_fresh_[static_cast<size_t>(e)][static_cast<size_t>(r)];
  if (fresh) return;
  const RegisterRec& rec = regs_[static_cast<size_t>(r)];
  if (!rec.used || rec.counter)
    call_error("register",
               fmt::format("r{} is read on {} but holds nothing there (a loop's counter outside "
                           "its loop, or a register not allocated)",
                           r, isa::engine_name(e)));
  fresh = true;  // before emitting: the reg_load reads no register itself
  isa::Instruction in = make(isa::Opcode::kRegLoad, e, {rec.home});
  in.p.reg_dst = static_cast<int16_t>(r);
  emit("register", std::move(in), {{rec.home, false, "src"}});
}

void KernelBuilder::materialize_registers(const isa::Instruction& in) {
  for (int i = 0; i < in.num_operands; ++i) {
    const isa::AccessPattern& ap = in.operands[static_cast<size_t>(i)];
    if (ap.dynamic()) materialize(ap.dyn_reg, in.engine);
  }
  if (in.op == isa::Opcode::kRegStore && in.p.reg_a >= 0) materialize(in.p.reg_a, in.engine);
}

}  // namespace trnsim::kernel
