// KernelBuilder: tensors, tiles, and the one place every instruction goes through (emit):
// validation at the call, dependency tracking, semaphore resolution.
#include "kernel/builder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>

#include "base/error.h"
#include "base/host_memory.h"
#include "base/interrupt.h"
#include "isa/dma_span.h"
#include "isa/op_table.h"
#include "isa/validate.h"
#include "kernel/call_error.h"

namespace trnsim::kernel {

namespace {

std::vector<ViewDim> row_major(const std::vector<int64_t>& shape, size_t first) {
  std::vector<ViewDim> dims(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > first;) {
    dims[i] = {shape[i], stride};
    stride *= shape[i];
  }
  if (first == 1 && !shape.empty()) dims[0] = {shape[0], 1};
  return dims;
}

}  // namespace

KernelBuilder::KernelBuilder(const arch::ChipSpec& chip)
    : KernelBuilder(chip.core, chip.numerics, chip.meta.name) {
  hbm_bytes_ = isa::hbm_capacity_bytes(chip);
}

KernelBuilder::KernelBuilder(const arch::CoreSpec& core, const arch::NumericsSpec& numerics,
                             std::string chip_name)
    : core_(core),
      numerics_(numerics),
      next_vbase_(kVirtualBase),
      id_(next_builder_id()),
      max_instructions_(default_max_instructions()) {
  sbuf_capacity_ = core.sbuf.usable_bytes_per_partition > 0 ? core.sbuf.usable_bytes_per_partition
                                                            : core.sbuf.bytes_per_partition;
  psum_capacity_ = int64_t{core.psum.banks} * core.psum.bank_bytes;
  prog_.chip = chip_name;
  scratch_.chip = std::move(chip_name);
}

KernelBuilder::~KernelBuilder() = default;

Tensor KernelBuilder::tensor(std::string name, num::Format dtype, std::vector<int64_t> shape,
                             isa::TensorKind kind) {
  std::string local;
  if (multi_kernel_) {
    if (auto it = kernel_bound_.find(name); it != kernel_bound_.end()) {
      if (kind != isa::TensorKind::kInput)
        call_error(fmt::format("output('{}')", name), "a bound tensor is an input of the kernel");
      if (it->second.shape() != shape || it->second.dtype() != dtype)
        call_error(fmt::format("input('{}')", name),
                   fmt::format("the kernel asks for {} [{}] but {} is bound to it", dtype.name(),
                               fmt::join(shape, ", "), it->second.describe()));
      return kernel_tensors_[name] = it->second;
    }
    local = name;
    name = kernel_prefix_ + name;
  }
  const isa::HbmTensor& t = prog_.add_tensor(name, dtype, shape, kind);
  if (hbm_bytes_ > 0 && t.address + t.bytes() > hbm_bytes_) {
    const std::string msg =
        fmt::format("tensor of {} bytes at HBM address {} does not fit the chip's {} bytes of HBM",
                    t.bytes(), t.address, hbm_bytes_);
    prog_.tensors.pop_back();
    throw InputError("kernel build", name, msg);
  }
  scratch_.tensors = prog_.tensors;
  tensor_symbols_.push_back(static_cast<int32_t>(prog_.symbols.size()));
  prog_.symbols.push_back(t.name);
  auto region = std::make_shared<Region>();
  region->space = isa::Space::kHbm;
  region->dtype = dtype;
  region->name = t.name;
  region->base = t.address;
  region->tensor = static_cast<int32_t>(prog_.tensors.size() - 1);
  region->builder = id_;
  region->row_elements = t.row_elements();
  region->shape = t.shape;
  View whole(std::move(region), 0, 0, row_major(t.shape, 0));
  if (multi_kernel_) kernel_tensors_[local] = whole;
  return whole;
}

void KernelBuilder::begin_kernel(std::string prefix, std::map<std::string, View> bound) {
  for (const auto& [name, v] : bound)
    if (!v.valid() || v.space() != isa::Space::kHbm || v.region().builder != id_)
      call_error("begin_kernel",
                 fmt::format("'{}' is not bound to an HBM tensor of this program", name));
  multi_kernel_ = true;
  kernel_prefix_ = std::move(prefix);
  kernel_bound_ = std::move(bound);
  kernel_tensors_.clear();
  dma_policy_ = DmaPolicy{};
  next_load_trigger_ = 0;
  rounding_ = num::Rounding::kNearestEven;
}

const View* KernelBuilder::kernel_tensor(const std::string& name) const {
  auto it = kernel_tensors_.find(name);
  return it == kernel_tensors_.end() ? nullptr : &it->second;
}

Tensor KernelBuilder::input(std::string name, num::Format dtype, std::vector<int64_t> shape) {
  return tensor(std::move(name), dtype, std::move(shape), isa::TensorKind::kInput);
}
Tensor KernelBuilder::output(std::string name, num::Format dtype, std::vector<int64_t> shape) {
  return tensor(std::move(name), dtype, std::move(shape), isa::TensorKind::kOutput);
}
Tensor KernelBuilder::inout(std::string name, num::Format dtype, std::vector<int64_t> shape) {
  return tensor(std::move(name), dtype, std::move(shape), isa::TensorKind::kInOut);
}
Tensor KernelBuilder::scratch(std::string name, num::Format dtype, std::vector<int64_t> shape) {
  return tensor(std::move(name), dtype, std::move(shape), isa::TensorKind::kScratch);
}

Tile KernelBuilder::tile(isa::Space space, std::string name, num::Format dtype,
                         std::vector<int64_t> shape) {
  const bool sbuf = space == isa::Space::kSbuf;
  const std::string call = fmt::format("{}('{}')", sbuf ? "sbuf" : "psum", name);
  const int parts = sbuf ? core_.sbuf.partitions : core_.psum.partitions;
  if (shape.size() < 2)
    call_error(call, "a tile is [partitions, free dims...]: give at least 2 dims");
  if (shape[0] < 1 || shape[0] > parts)
    call_error(
        call, fmt::format("{} partitions; the {} has {}", shape[0], sbuf ? "SBUF" : "PSUM", parts));
  int64_t bytes = dtype.storage_bytes;
  for (size_t i = 1; i < shape.size(); ++i) {
    if (shape[i] < 1) call_error(call, fmt::format("free dim {} has size {}", i, shape[i]));
    bytes *= shape[i];
    if (bytes > (int64_t{1} << 40)) call_error(call, "tile too large");
  }
  const int64_t capacity = sbuf ? sbuf_capacity_ : psum_capacity_;
  if (bytes > capacity)
    call_error(call, fmt::format("needs {} bytes per partition; a partition of the {} has {}",
                                 bytes, sbuf ? "SBUF" : "PSUM", capacity));
  if (tiles_.size() >= static_cast<size_t>(INT32_MAX)) call_error(call, "too many tiles");
  // A virtual base of its own, aligned as a PSUM bank (and so as SBUF), until build().
  const int64_t align = std::max<int64_t>(kSbufAlignment, core_.psum.bank_bytes);
  auto region = std::make_shared<Region>();
  region->space = space;
  region->dtype = dtype;
  region->name = std::move(name);
  region->base = next_vbase_;
  region->tile = static_cast<int32_t>(tiles_.size());
  region->shape = shape;
  region->builder = id_;
  next_vbase_ += (bytes + align - 1) / align * align;
  const auto symbol = static_cast<int32_t>(prog_.symbols.size());
  prog_.symbols.push_back(region->name);
  View whole(std::move(region), 0, 0, row_major(shape, 1));
  tiles_.push_back({whole, bytes, symbol});
  return whole;
}

int32_t KernelBuilder::add_source_file(std::string path) {
  prog_.symbols.push_back(std::move(path));
  return static_cast<int32_t>(prog_.symbols.size() - 1);
}

void KernelBuilder::set_source(int32_t file, int32_t line) {
  if (file < -1 || file >= static_cast<int32_t>(prog_.symbols.size()))
    call_error("set_source", fmt::format("file {} was not registered by add_source_file", file));
  if (line < 0) call_error("set_source", fmt::format("line {} is negative", line));
  source_file_ = file;
  source_line_ = line;
}

isa::Origin KernelBuilder::origin_of(const isa::Instruction& in,
                                     const std::vector<Use>& uses) const {
  isa::Origin o;
  o.file = source_file_;
  for (int j = 0; j < in.num_operands && j < isa::kMaxOperands; ++j) {
    const isa::AccessPattern& ap = in.operands[static_cast<size_t>(j)];
    for (const Use& u : uses) {
      const Region& r = u.view.region();
      if (r.space != ap.space) continue;
      int64_t bytes = 0;
      int32_t symbol = -1;
      if (r.tile >= 0) {
        const TileRec& t = tiles_[static_cast<size_t>(r.tile)];
        bytes = t.bytes;
        symbol = t.symbol;
      } else if (r.tensor >= 0) {
        bytes = prog_.tensors[static_cast<size_t>(r.tensor)].bytes();
        symbol = tensor_symbols_[static_cast<size_t>(r.tensor)];
      }
      if (ap.offset >= r.base && ap.offset < r.base + bytes) {
        o.operands[static_cast<size_t>(j)] = symbol;
        break;
      }
    }
  }
  return o;
}

int32_t KernelBuilder::tile_at(int64_t vaddr) const {
  auto it = std::upper_bound(tiles_.begin(), tiles_.end(), vaddr,
                             [](int64_t a, const TileRec& t) { return a < t.whole.region().base; });
  TRNSIM_ASSERT(it != tiles_.begin());
  return static_cast<int32_t>(it - tiles_.begin() - 1);
}

isa::Instruction KernelBuilder::at_zero(isa::Instruction in) const {
  for (int j = 0; j < in.num_operands; ++j) {
    isa::AccessPattern& ap = in.operands[static_cast<size_t>(j)];
    if (ap.space == isa::Space::kHbm || ap.offset < kVirtualBase) continue;
    ap.offset -= tiles_[static_cast<size_t>(tile_at(ap.offset))].whole.region().base;
  }
  return in;
}

Tile KernelBuilder::sbuf(std::string name, num::Format dtype, std::vector<int64_t> shape) {
  return tile(isa::Space::kSbuf, std::move(name), dtype, std::move(shape));
}
Tile KernelBuilder::psum(std::string name, num::Format dtype, std::vector<int64_t> shape) {
  return tile(isa::Space::kPsum, std::move(name), dtype, std::move(shape));
}

std::vector<Tile> KernelBuilder::sbuf_buffers(const std::string& name, num::Format dtype,
                                              const std::vector<int64_t>& shape, int n) {
  std::vector<Tile> out;
  for (int i = 0; i < n; ++i) out.push_back(sbuf(name + std::to_string(i), dtype, shape));
  return out;
}
std::vector<Tile> KernelBuilder::psum_buffers(const std::string& name, num::Format dtype,
                                              const std::vector<int64_t>& shape, int n) {
  std::vector<Tile> out;
  for (int i = 0; i < n; ++i) out.push_back(psum(name + std::to_string(i), dtype, shape));
  return out;
}

isa::Instruction KernelBuilder::make(isa::Opcode op, isa::Engine engine,
                                     const std::vector<View>& ops) const {
  isa::Instruction in;
  in.op = op;
  in.engine = engine;
  for (const View& v : ops) in.operands[static_cast<size_t>(in.num_operands++)] = v.access();
  return in;
}

void KernelBuilder::emit_op(std::string_view call, isa::Opcode op, isa::Engine engine,
                            const std::vector<View>& ops, isa::Params p,
                            std::initializer_list<ColumnArg> columns) {
  isa::Instruction in = make(op, engine, ops);
  in.p = p;
  std::vector<Use> uses;
  for (size_t i = 0; i < ops.size(); ++i) {
    const isa::OperandRole& role = isa::operand_role(op, static_cast<int>(i));
    uses.push_back({ops[i], role.access == isa::Access::kWrite, role.name});
  }
  for (auto [s, field] : columns) {
    isa::ScalarArg& arg = in.p.*field;
    if (!s->column) {
      arg.imm = s->imm;
      continue;
    }
    if (in.num_operands >= isa::kMaxOperands) call_error(call, "too many column operands");
    arg.operand = static_cast<int8_t>(in.num_operands);
    in.operands[static_cast<size_t>(in.num_operands++)] = s->column->access();
    uses.push_back({*s->column, false, "column"});
  }
  emit(call, std::move(in), uses);
}

void KernelBuilder::check(std::string_view call, const isa::Instruction& in,
                          const std::vector<Use>& uses) {
  for (const Use& u : uses)
    if (u.view.region().builder != id_)
      call_error(call, u.role, u.view,
                 "is memory of another kernel (a view from another KernelBuilder): its address "
                 "means nothing in this one");
  for (const Use& u : uses)
    if (u.write && u.view.has_zero_stride())
      call_error(call, u.role, u.view, "writes through a broadcast (stride 0) dim");
  for (isa::Engine e : isa::kAllEngines) scratch_.stream(e).clear();
  // Validated with every tile at address 0: its place is not known yet (build() validates the
  // placed program again).
  if (in.op == isa::Opcode::kMultiplyMoving && stationary_)
    scratch_.stream(isa::Engine::kTensor).push_back(at_zero(*stationary_));
  scratch_.stream(in.engine).push_back(at_zero(in));
  const std::vector<isa::Diagnostic> diags = isa::validate(scratch_, core_, numerics_);
  if (diags.empty()) return;
  std::vector<std::pair<std::string, View>> ops;
  for (const Use& u : uses) ops.emplace_back(std::string(u.role), u.view);
  const isa::Diagnostic& d = diags.front();
  call_error(call, fmt::format("{} on {} ({}): {} (operands: {})", isa::kRuleKindNames.name(d.kind),
                               prog_.chip, core_.name, d.message, describe_operands(ops)));
}

int32_t KernelBuilder::agent_of(const isa::Instruction& in) {
  return isa::is_dma(in.op)                      ? dma_agent(in)
         : in.op == isa::Opcode::kLoadStationary ? SyncResolver::kPeBackground
                                                 : SyncResolver::engine_agent(in.engine);
}

int32_t KernelBuilder::dma_agent(const isa::Instruction& in) {
  // Peers complete these (a collective when its rank list has met, chip or fabric layer), out
  // of order with the queue's own transfers: an agent of their own, in whose order they do
  // complete (fabric/rank_group.h keeps a rank's collectives in issue order).
  if (isa::is_peer_transfer(in.op)) return sync_.dma_agent(in.engine, in.p.dma_queue, 0, 0, true);
  const isa::AccessPattern &dst = in.operands[0], &src = in.operands[1];
  // The side that decides how the transfer splits over DMA engines (core/dma/dma_plan.h).
  const isa::AccessPattern& split = dst.space != isa::Space::kHbm   ? dst
                                    : src.space != isa::Space::kHbm ? src
                                                                    : dst;
  // Transfers of one queue on the same DMA engines complete in order, whatever partitions
  // they move: keying by the engines (not the partitions) keeps the agents, and so the
  // semaphores, few when a kernel moves many single partitions.
  const isa::DmaEngineSpan span = isa::dma_engine_span(
      split.space == isa::Space::kHbm, split.start_partition, split.num_partitions, core_);
  return sync_.dma_agent(in.engine, in.p.dma_queue, static_cast<int32_t>(span.first_group),
                         static_cast<int32_t>(span.pieces));
}

void KernelBuilder::emit(std::string_view call, isa::Instruction in, const std::vector<Use>& uses,
                         bool matmul) {
  if (built_) call_error(call, "the kernel was already built");
  materialize_registers(in);
  if ((++emitted_ & 1023) == 0) check_interrupt();  // Ctrl-C while a huge kernel builds
  if (emitted_ > max_instructions_)
    call_error(call,
               fmt::format("the kernel needs more than {} instructions ({} MiB of host "
                           "memory for the program; the limit is --max-instructions, or "
                           "half of the host's free memory); use smaller sizes",
                           max_instructions_, max_instructions_ * sizeof(isa::Instruction) >> 20));
  // set_rounding: before the check, so stochastic rounding where the chip lacks it is refused
  // by the call that asked for it.
  if (isa::op_info(in.op).params.has(isa::ParamKey::kRounding)) in.p.rounding = rounding_;
  check(call, in, uses);
  in.source_line = source_line_;
  in.origin = origin_of(in, uses);
  if (!matmul)
    for (const Use& u : uses)
      if (u.view.space() == isa::Space::kPsum) close_groups(u.view);
  // Dependencies are resolved at build(), on the tiles' final places: here the accesses are
  // recorded.
  std::vector<Footprint> where;
  order_.push_back({{in.engine, static_cast<int32_t>(prog_.stream(in.engine).size())},
                    static_cast<uint32_t>(uses.size())});
  for (const Use& u : uses) {
    where.push_back(footprint(u.view));
    const Region& r = u.view.region();
    bool whole = false;
    if (u.write && r.tile >= 0) {
      const TileRec& t = tiles_[static_cast<size_t>(r.tile)];
      // A write replaces the tile's value only if it writes every byte (not merely spans them).
      whole = where.back().rect.contains({0, t.whole.partitions(), r.base, r.base + t.bytes}) &&
              fills_footprint(u.view);
    }
    uses_.push_back({where.back(), r.tile, u.write, whole});
  }
  // A cached stationary that something overwrote must be loaded again.
  if (stationary_where_)
    for (size_t i = 0; i < uses.size(); ++i)
      if (uses[i].write && where[i].key == stationary_where_->key &&
          where[i].rect.overlaps(stationary_where_->rect)) {
        stationary_.reset();
        stationary_where_.reset();
        break;
      }
  prog_.append(std::move(in));
}

isa::Program KernelBuilder::build() {
  if (built_) call_error("build", "the kernel was already built");
  if (!open_loops_.empty()) call_error("build", "a loop was begun and not ended (end_loop)");
  close_all_groups();
  built_ = true;
  place();
  sync_.finalize(prog_);
  finish_loops();
  isa::throw_if_any(isa::validate(prog_, core_, numerics_), "kernel build");
  return std::move(prog_);
}

}  // namespace trnsim::kernel

namespace trnsim::kernel {

uint64_t next_builder_id() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

size_t default_max_instructions() {
  constexpr size_t kFloor = size_t{1} << 20;
  const size_t fit = available_host_memory() / 2 / sizeof(isa::Instruction);
  return std::max(fit, kFloor);
}

}  // namespace trnsim::kernel
