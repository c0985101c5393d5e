// VectorE scans and fused element-wise + reduce: one instruction each, as NKI's
// nisa.tensor_tensor_scan and nisa.tensor_scalar_reduce (semantics in core/exec/exec_reduce.cc).
#include "kernel/builder.h"

namespace trnsim::kernel {

void KernelBuilder::tensor_tensor_scan(const View& dst, const View& in0, const View& in1,
                                       Scalar initial, isa::AluOp op0, isa::AluOp op1) {
  isa::Params p;
  p.op0 = op0;
  p.op1 = op1;
  emit_op("tensor_tensor_scan", isa::Opcode::kTensorTensorScan, isa::Engine::kVector,
          {dst, in0, in1}, p, {{&initial, &isa::Params::arg0}});
}

void KernelBuilder::tensor_scalar_reduce(const View& dst, const View& reduce_dst, const View& src,
                                         AluArg first, isa::AluOp reduce_op) {
  isa::Params p;
  p.op0 = first.op;
  p.reverse0 = first.reverse;
  p.reduce_op = reduce_op;
  emit_op("tensor_scalar_reduce", isa::Opcode::kTensorScalarReduce, isa::Engine::kVector,
          {dst, reduce_dst, src}, p, {{&first.arg, &isa::Params::arg0}});
}

}  // namespace trnsim::kernel
