// DMA calls. Which stream triggers a transfer and which queue it goes on (the rule):
//   - trigger: DmaOpts::trigger, else the DmaPolicy's stream for its direction (loads from
//     HBM: Sync, or round-robin over the policy's load streams; the rest: GpSimd; operands.h
//     says why);
//   - queue: each triggering stream has its own queue id on every DMA engine (Sync 0, Scalar 1,
//     GpSimd 2, Vector 3, Tensor 4), so one queue is fed by one stream, in program order;
//   - engines: the timing model spreads a transfer over ceil(partitions / 8) DMA engines
//     (core/dma/dma_plan.h). A transfer that needs all of them gets rotation 0; narrower ones
//     rotate round-robin over the engines per triggering stream (dma_queue / queues_per_engine
//     is the rotation), so that small transfers do not pile onto one engine.
#include <fmt/format.h>

#include "isa/names.h"
#include "kernel/builder.h"
#include "kernel/call_error.h"

namespace trnsim::kernel {

namespace {

int queue_slot(isa::Engine e) {
  switch (e) {
    case isa::Engine::kSync:
      return 0;
    case isa::Engine::kScalar:
      return 1;
    case isa::Engine::kGpSimd:
      return 2;
    case isa::Engine::kVector:
      return 3;
    case isa::Engine::kTensor:
      return 4;
  }
  return 0;
}

}  // namespace

void KernelBuilder::set_dma_policy(const DmaPolicy& p) {
  if (p.load_triggers.empty()) call_error("set_dma_policy", "no stream to trigger loads from");
  dma_policy_ = p;
  next_load_trigger_ = 0;
}

isa::Engine KernelBuilder::dma_trigger(const View& src, const DmaOpts& opts) {
  if (opts.trigger) return *opts.trigger;
  if (src.space() != isa::Space::kHbm) return dma_policy_.store_trigger;
  const auto& loads = dma_policy_.load_triggers;
  return loads[next_load_trigger_++ % loads.size()];
}

void KernelBuilder::assign_dma_queue(isa::Instruction& in, isa::Engine trigger) {
  const int engines = std::max(core_.dma.engines, 1);
  const int queues = std::max(core_.dma.queues_per_engine, 1);
  const int per_engine = std::max(core_.sbuf.partitions / engines, 1);
  const isa::AccessPattern& split =
      in.operands[0].space != isa::Space::kHbm || in.operands[1].space == isa::Space::kHbm
          ? in.operands[0]
          : in.operands[1];
  const int64_t pieces =
      std::min<int64_t>(engines, (split.num_partitions + per_engine - 1) / per_engine);
  int32_t& rot = dma_rotation_[static_cast<size_t>(trigger)];
  const int32_t rotation = pieces < engines ? rot : 0;
  if (pieces < engines) rot = static_cast<int32_t>((rot + pieces) % engines);
  in.p.dma_queue = static_cast<int16_t>(rotation * queues + queue_slot(trigger) % queues);
}

void KernelBuilder::dma_copy(const View& dst, const View& src, DmaOpts opts) {
  constexpr std::string_view call = "dma_copy";
  if (dst.space() == isa::Space::kPsum || src.space() == isa::Space::kPsum)
    call_error(call, dst.space() == isa::Space::kPsum ? "dst" : "src",
               dst.space() == isa::Space::kPsum ? dst : src,
               "DMA does not reach PSUM: copy PSUM to SBUF with an engine first");
  if (dst.elements() != src.elements())
    call_error(call, fmt::format("dst has {} elements, src {} (operands: {})", dst.elements(),
                                 src.elements(), describe_operands({{"dst", dst}, {"src", src}})));
  const isa::Engine trigger = dma_trigger(src, opts);
  isa::Instruction in = make(isa::Opcode::kDmaCopy, trigger, {dst, src});
  in.p.dma_accumulate = opts.accumulate;

  assign_dma_queue(in, trigger);

  std::vector<Use> uses{{dst, true, "dst"}, {src, false, "src"}};
  if (opts.accumulate) uses.push_back({dst, false, "dst"});
  emit(call, std::move(in), uses);
}

void KernelBuilder::dma_transpose(const View& dst, const View& src, DmaOpts opts) {
  const isa::Engine trigger = dma_trigger(src, opts);
  isa::Instruction in = make(isa::Opcode::kDmaTranspose, trigger, {dst, src});
  in.p.dma_queue =
      static_cast<int16_t>(queue_slot(trigger) % std::max(core_.dma.queues_per_engine, 1));
  emit("dma_transpose", std::move(in), {{dst, true, "dst"}, {src, false, "src"}});
}

void KernelBuilder::core_barrier(const View& data, isa::Engine engine) {
  constexpr std::string_view call = "core_barrier";
  if (data.space() != isa::Space::kHbm)
    call_error(call, "data", data, "is the shared HBM tensor the cores synchronise on");
  // The barrier has no operands; `data` orders it against this core's accesses (as a write:
  // earlier reads and writes come first, later ones wait for it).
  emit(call, make(isa::Opcode::kCoreBarrier, engine, {}), {{data, true, "data"}});
}

void KernelBuilder::sendrecv(const View& dst, const View& src, int send_to, int recv_from, int pipe,
                             DmaOpts opts) {
  constexpr std::string_view call = "sendrecv";
  if (dst.space() != isa::Space::kSbuf || src.space() != isa::Space::kSbuf)
    call_error(call, dst.space() != isa::Space::kSbuf ? "dst" : "src",
               dst.space() != isa::Space::kSbuf ? dst : src, "sendrecv moves SBUF to SBUF");
  const auto small = [](int v) { return v >= 0 && v <= INT16_MAX; };
  if (!small(send_to) || !small(recv_from) || !small(pipe))
    call_error(call, fmt::format("send_to={} recv_from={} pipe={}: ranks and pipes are 0..{}",
                                 send_to, recv_from, pipe, INT16_MAX));
  const isa::Engine trigger = opts.trigger.value_or(dma_policy_.store_trigger);
  isa::Instruction in = make(isa::Opcode::kSendRecv, trigger, {dst, src});
  in.p.send_to = static_cast<int16_t>(send_to);
  in.p.recv_from = static_cast<int16_t>(recv_from);
  in.p.pipe = static_cast<int16_t>(pipe);
  in.p.dma_queue =
      static_cast<int16_t>(queue_slot(trigger) % std::max(core_.dma.queues_per_engine, 1));
  emit(call, std::move(in), {{dst, true, "dst"}, {src, false, "src"}});
}

void KernelBuilder::collective(const View& dst, const View& src, const CollectiveArgs& args,
                               DmaOpts opts) {
  constexpr std::string_view call = "collective";
  const auto dma_end = [](const View& v) {
    return v.space() == isa::Space::kSbuf || v.space() == isa::Space::kHbm;
  };
  if (!dma_end(dst) || !dma_end(src) || dst.space() != src.space())
    call_error(call, !dma_end(dst) ? "dst" : "src", !dma_end(dst) ? dst : src,
               "a collective's tensors are all in SBUF or all in HBM");
  const bool reduces = args.kind == isa::CollectiveKind::kAllReduce ||
                       args.kind == isa::CollectiveKind::kReduceScatter;
  if (reduces && args.op != isa::AluOp::kAdd && args.op != isa::AluOp::kMax &&
      args.op != isa::AluOp::kMin)
    call_error(call, fmt::format("op={}: a collective reduces with add, max or min",
                                 isa::name_of(args.op)));
  const auto rank = [](int v) { return v >= -1 && v <= INT16_MAX; };
  if (args.group < 0 || args.group > INT16_MAX || !rank(args.send_to) || !rank(args.recv_from))
    call_error(call, fmt::format("group={} send_to={} recv_from={}: groups are 0..{}, ranks "
                                 "-1..{}",
                                 args.group, args.send_to, args.recv_from, INT16_MAX, INT16_MAX));
  if (args.outer < 1 || args.outer > INT32_MAX || dst.elements() % args.outer != 0 ||
      src.elements() % args.outer != 0)
    call_error(call, fmt::format("outer={}: the dims before the collective dim must divide dst "
                                 "({} elements) and src ({})",
                                 args.outer, dst.elements(), src.elements()));
  const isa::Engine trigger = opts.trigger.value_or(dma_policy_.store_trigger);
  isa::Instruction in = make(isa::Opcode::kCollective, trigger, {dst, src});
  in.p.collective = args.kind;
  in.p.reduce_op = args.op;
  in.p.replica_group = static_cast<int16_t>(args.group);
  in.p.collective_outer = static_cast<int32_t>(args.outer);
  in.p.send_to = static_cast<int16_t>(args.send_to);
  in.p.recv_from = static_cast<int16_t>(args.recv_from);
  in.p.dma_queue =
      static_cast<int16_t>(queue_slot(trigger) % std::max(core_.dma.queues_per_engine, 1));
  emit(call, std::move(in), {{dst, true, "dst"}, {src, false, "src"}});
}

void KernelBuilder::collective_v(const View& dst, const View& src, const View& metadata,
                                 isa::CollectiveKind kind, int group, uint8_t flags, DmaOpts opts) {
  constexpr std::string_view call = "collective_v";
  if (dst.space() != isa::Space::kHbm || src.space() != isa::Space::kHbm)
    call_error(call, dst.space() != isa::Space::kHbm ? "dst" : "src",
               dst.space() != isa::Space::kHbm ? dst : src,
               "variable-size collectives move HBM tensors");
  if (kind != isa::CollectiveKind::kAllToAllV && kind != isa::CollectiveKind::kAllGatherV)
    call_error(call, fmt::format("kind {}: all_to_all_v or all_gather_v", isa::name_of(kind)));
  if (group < 0 || group > INT16_MAX)
    call_error(call, fmt::format("group={}: groups are 0..{}", group, INT16_MAX));
  const isa::Engine trigger = opts.trigger.value_or(dma_policy_.store_trigger);
  isa::Instruction in = make(isa::Opcode::kCollectiveV, trigger, {dst, metadata, src});
  in.p.collective = kind;
  in.p.replica_group = static_cast<int16_t>(group);
  in.p.collective_flags = flags;
  in.p.dma_queue =
      static_cast<int16_t>(queue_slot(trigger) % std::max(core_.dma.queues_per_engine, 1));
  emit(call, std::move(in),
       {{dst, true, "dst"}, {metadata, true, "metadata"}, {src, false, "src"}});
}

}  // namespace trnsim::kernel
