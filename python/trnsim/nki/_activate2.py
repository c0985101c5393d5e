"""ScalarE's activate2 (NC-v4): an fp32 ALU stage of two tensor-scalar ops before the
activation function, with an optional row reduction; one instruction of the C++ kernel
builder (src/kernel/builder_compute.cc). docs/nki.md has its semantics."""

from __future__ import annotations

from trnsim.nki import _ops
from trnsim.nki._ctx import NkiError, unsupported
from trnsim.nki._ops import AluOp, alu, kb, scalar, tile, view

_ACTIVATE2_OPS = {AluOp.mult, AluOp.add, AluOp.subtract, AluOp.bypass}
_ACTIVATE2_REDUCE = {AluOp.add, AluOp.max, AluOp.min, AluOp.abs_max, AluOp.abs_min}


def activate2(dst, op, data, imm0, imm1, op0, op1, relu_param=0.0, reverse0=False,
              reverse1=False, reduce_op=None, reduce_res=None, reduce_cmd=None,
              call="nisa.activate2"):
    """NC-v4 ScalarE: dst = op((data op0 imm0) op1 imm1) (reverse0 / reverse1: imm first),
    the two ALU ops in fp32; reduce_res [P, 1] = reduce_op of each row of the result."""
    tile(dst, f"{call}: dst")
    tile(data, f"{call}: data")
    o0, o1 = alu(op0), alu(op1)
    for what, o in (("op0", o0), ("op1", o1)):
        if o not in _ACTIVATE2_OPS:
            raise NkiError(f"{call}: {what}={o.name}: the ALU stage takes nl.multiply, nl.add, "
                           "nl.subtract or nl.bypass")
    if o1 != AluOp.bypass and o0 == AluOp.bypass:
        raise NkiError(f"{call}: op1 requires op0 to be set")
    if (reverse0 and o0 == AluOp.bypass) or (reverse1 and o1 == AluOp.bypass):
        raise NkiError(f"{call}: reverse0 / reverse1 require op0 / op1 to be set")
    if isinstance(relu_param, _ops.NkiTensor):
        unsupported(f"{call}(relu_param=<tile>)", "give the function parameter as a number")
    _ops.check_reduce_cmd(reduce_cmd, reduce_res, call)
    red = None
    r_op = AluOp.add
    if reduce_res is not None:
        tile(reduce_res, f"{call}: reduce_res")
        r_op = alu(reduce_op if reduce_op is not None else "add")
        if r_op not in _ACTIVATE2_REDUCE:
            raise NkiError(f"{call}: reduce_op={r_op.name}: nl.add, nl.maximum, nl.minimum, "
                           "abs_max or abs_min")
        red = view(reduce_res)
    kb().activate2(view(dst), view(data), _ops.act(op), o0,
                   0.0 if imm0 is None else scalar(imm0), bool(reverse0), o1,
                   0.0 if imm1 is None else scalar(imm1), bool(reverse1),
                   float(scalar(relu_param)), red, r_op)
    return dst
