// ScalarE, VectorE and GpSimd calls: each one instruction (isa/op_table.cc has the semantics).
#include <fmt/format.h>

#include <algorithm>

#include "kernel/builder.h"
#include "kernel/call_error.h"

namespace trnsim::kernel {

using isa::Engine;
using isa::Opcode;
using isa::Params;

void KernelBuilder::activation(const View& dst, const View& src, isa::ActFunc func, Scalar scale,
                               Scalar bias, float alpha) {
  Params p;
  p.func = func;
  p.alpha = alpha;
  emit_op("activation", Opcode::kActivation, Engine::kScalar, {dst, src}, p,
          {{&scale, &Params::scale}, {&bias, &Params::bias}});
}

void KernelBuilder::activation_reduce(const View& dst, const View& reduce_dst, const View& src,
                                      isa::ActFunc func, Scalar scale, Scalar bias) {
  Params p;
  p.func = func;
  emit_op("activation_reduce", Opcode::kActivationReduce, Engine::kScalar, {dst, reduce_dst, src},
          p, {{&scale, &Params::scale}, {&bias, &Params::bias}});
}

namespace {

Params activate2_params(isa::ActFunc func, const AluArg& first, const AluArg& second, float alpha) {
  Params p;
  p.func = func;
  p.alpha = alpha;
  p.op0 = first.op;
  p.reverse0 = first.reverse;
  p.op1 = second.op;
  p.reverse1 = second.reverse;
  return p;
}

}  // namespace

void KernelBuilder::activate2(const View& dst, const View& src, isa::ActFunc func, AluArg first,
                              AluArg second, float alpha) {
  emit_op("activate2", Opcode::kActivate2, Engine::kScalar, {dst, src},
          activate2_params(func, first, second, alpha),
          {{&first.arg, &Params::arg0}, {&second.arg, &Params::arg1}});
}

void KernelBuilder::activate2_reduce(const View& dst, const View& reduce_dst, const View& src,
                                     isa::ActFunc func, AluArg first, AluArg second,
                                     isa::AluOp reduce_op, float alpha) {
  Params p = activate2_params(func, first, second, alpha);
  p.reduce_op = reduce_op;
  emit_op("activate2_reduce", Opcode::kActivate2Reduce, Engine::kScalar, {dst, reduce_dst, src}, p,
          {{&first.arg, &Params::arg0}, {&second.arg, &Params::arg1}});
}

void KernelBuilder::tensor_tensor(const View& dst, const View& in0, const View& in1, isa::AluOp op,
                                  Engine engine) {
  Params p;
  p.op0 = op;
  emit_op("tensor_tensor", Opcode::kTensorTensor, engine, {dst, in0, in1}, p);
}

void KernelBuilder::tensor_scalar(const View& dst, const View& src, AluArg first, AluArg second,
                                  Engine engine) {
  Params p;
  p.op0 = first.op;
  p.reverse0 = first.reverse;
  const AluArg& s = second;
  p.op1 = s.op;
  p.reverse1 = s.reverse;
  emit_op("tensor_scalar", Opcode::kTensorScalar, engine, {dst, src}, p,
          {{&first.arg, &Params::arg0}, {&s.arg, &Params::arg1}});
}

void KernelBuilder::scalar_tensor_tensor(const View& dst, const View& in0, AluArg first,
                                         isa::AluOp op1, const View& in1) {
  Params p;
  p.op0 = first.op;
  p.reverse0 = first.reverse;
  p.op1 = op1;
  emit_op("scalar_tensor_tensor", Opcode::kScalarTensorTensor, Engine::kVector, {dst, in0, in1}, p,
          {{&first.arg, &Params::arg0}});
}

void KernelBuilder::tensor_reduce(const View& dst, const View& src, isa::AluOp op, int axes) {
  const int free_dims = src.rank() - 1;
  if (!src.on_chip() || axes < 1 || axes > free_dims)
    call_error("tensor_reduce", "src", src,
               fmt::format("reduces {} innermost free dims of {}", axes, free_dims));
  // The reduced dims merge among themselves only, so reduce_axes counts what they became.
  std::vector<int> group_dims;
  isa::Instruction in = make(Opcode::kTensorReduce, Engine::kVector, {dst});
  in.operands[1] = src.access({free_dims - axes}, &group_dims);
  in.num_operands = 2;
  in.p.reduce_op = op;
  in.p.reduce_axes = static_cast<int8_t>(group_dims.back());
  emit("tensor_reduce", std::move(in), {{dst, true, "dst"}, {src, false, "src"}});
}

void KernelBuilder::tensor_copy(const View& dst, const View& src, Engine engine) {
  emit_op("tensor_copy", Opcode::kTensorCopy, engine, {dst, src});
}

void KernelBuilder::memset(const View& dst, double value, Engine engine) {
  Params p;
  p.value = value;
  emit_op("memset", Opcode::kMemset, engine, {dst}, p);
}

void KernelBuilder::select(const View& dst, const View& predicate, const View& on_true,
                           const View& on_false) {
  emit_op("select", Opcode::kSelect, Engine::kVector, {dst, predicate, on_true, on_false});
}

void KernelBuilder::bn_stats(const View& dst, const View& src) {
  emit_op("bn_stats", Opcode::kBnStats, Engine::kVector, {dst, src});
}

void KernelBuilder::bn_aggr(const View& dst, const View& src) {
  emit_op("bn_aggr", Opcode::kBnAggr, Engine::kVector, {dst, src});
}

void KernelBuilder::reciprocal(const View& dst, const View& src) {
  emit_op("reciprocal", Opcode::kReciprocal, Engine::kVector, {dst, src});
}

void KernelBuilder::max8(const View& dst, const View& src) {
  emit_op("max8", Opcode::kMax8, Engine::kVector, {dst, src});
}

void KernelBuilder::find_index8(const View& dst, const View& data, const View& vals) {
  emit_op("find_index8", Opcode::kFindIndex8, Engine::kVector, {dst, data, vals});
}

void KernelBuilder::match_replace8(const View& dst, const View& dst_idx, const View& data,
                                   const View& vals, double value) {
  Params p;
  p.value = value;
  emit_op("match_replace8", Opcode::kMatchReplace8, Engine::kVector, {dst, dst_idx, data, vals}, p);
}

void KernelBuilder::rand_seed(const View& seeds, Engine engine) {
  emit_op("rand_seed", Opcode::kRandSeed, engine, {seeds});
}

void KernelBuilder::rand(const View& dst, Engine engine) {
  emit_op("rand", Opcode::kRand, engine, {dst});
}

void KernelBuilder::rng(const View& dst, Engine engine) {
  emit_op("rng", Opcode::kRng, engine, {dst});
}

void KernelBuilder::rand2(const View& dst, Scalar min, Scalar max) {
  emit_op("rand2", Opcode::kRand2, Engine::kVector, {dst}, {},
          {{&min, &Params::arg0}, {&max, &Params::arg1}});
}

void KernelBuilder::rand_get_state(const View& dst, Engine engine) {
  emit_op("rand_get_state", Opcode::kRandState, engine, {dst});
}

void KernelBuilder::dropout(const View& dst, const View& src, Scalar prob) {
  emit_op("dropout", Opcode::kDropout, Engine::kVector, {dst, src}, {}, {{&prob, &Params::arg0}});
}

void KernelBuilder::range_select(const View& dst, const View& reduce_res, const View& on_true,
                                 isa::AluOp op0, Scalar bound0, isa::AluOp op1, Scalar bound1,
                                 int64_t range_start, double on_false, bool accumulate) {
  Params p;
  p.op0 = op0;
  p.op1 = op1;
  p.iota_base = range_start;
  p.value = on_false;
  p.reduce_op = isa::AluOp::kMax;
  p.dma_accumulate = accumulate;
  emit_op("range_select", Opcode::kRangeSelect, Engine::kVector, {dst, reduce_res, on_true}, p,
          {{&bound0, &Params::arg0}, {&bound1, &Params::arg1}});
}

void KernelBuilder::exponential(const View& dst, const View& src, Scalar max_value) {
  emit_op("exponential", Opcode::kExponential, Engine::kVector, {dst, src}, {},
          {{&max_value, &Params::arg0}});
}

void KernelBuilder::quantize_mx(const View& dst, const View& scale, const View& src) {
  emit_op("quantize_mx", Opcode::kQuantizeMx, Engine::kVector, {dst, scale, src});
}

void KernelBuilder::iota(const View& dst, int64_t base, int64_t channel_multiplier) {
  Params p;
  p.iota_base = base;
  p.channel_multiplier = channel_multiplier;
  emit_op("iota", Opcode::kIota, Engine::kGpSimd, {dst}, p);
}

void KernelBuilder::affine_select(const View& dst, const View& src, isa::AluOp cmp, int64_t base,
                                  int64_t channel_multiplier, double fill) {
  Params p;
  p.op0 = cmp;
  p.iota_base = base;
  p.channel_multiplier = channel_multiplier;
  p.value = fill;
  emit_op("affine_select", Opcode::kAffineSelect, Engine::kGpSimd, {dst, src}, p);
}

void KernelBuilder::partition_reduce(const View& dst, const View& src, isa::AluOp op) {
  Params p;
  p.reduce_op = op;
  emit_op("partition_reduce", Opcode::kPartitionReduce, Engine::kGpSimd, {dst, src}, p);
}

void KernelBuilder::stream_shuffle(const View& dst, const View& src,
                                   const std::array<uint8_t, 32>& mask) {
  isa::Instruction in = make(isa::Opcode::kStreamShuffle, isa::Engine::kVector, {dst, src});
  in.p.shuffle = mask;
  std::vector<Use> uses{{dst, true, "dst"}, {src, false, "src"}};
  // A kept partition (255) keeps dst's value: the write is then also a read of dst, so its
  // earlier contents stay live (placement) and ordered before it (dependencies).
  if (std::find(mask.begin(), mask.end(), isa::kShuffleKeep) != mask.end())
    uses.push_back({dst, false, "dst"});
  emit("stream_shuffle", std::move(in), uses);
}

void KernelBuilder::tensor_scalar_cumulative(const View& dst, const View& src, isa::AluOp op0,
                                             Scalar arg0, isa::AluOp op1, Scalar init,
                                             bool continue_acc, bool reverse0) {
  Params p;
  p.op0 = op0;
  p.reverse0 = reverse0;
  p.op1 = op1;
  p.dma_accumulate = continue_acc;
  emit_op("tensor_scalar_cumulative", Opcode::kTensorScalarCumulative, Engine::kVector, {dst, src},
          p, {{&arg0, &Params::arg0}, {&init, &Params::arg1}});
}

}  // namespace trnsim::kernel
