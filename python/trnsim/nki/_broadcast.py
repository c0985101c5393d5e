"""Partition broadcasts as NKI's compiler lowers them (docs/nki.md, "Lowering"): a [1, n] row
repeated over P partitions is a TensorE matmul of a ones row, per PSUM bank of columns; the
result is read in PSUM by its first user when it fits one bank (PsumBroadcast), else copied to
SBUF bank by bank."""

from __future__ import annotations

import numpy as np

from trnsim.nki import _ctx
from trnsim.nki._tensor import NkiTensor, np_dtype
from trnsim.numerics import format_name

# A broadcast stays in PSUM when it fits one bank (512 fp32) and few others wait for their
# first use: each holds a bank until then, and matmuls need the rest.
PSUM_RESIDENT_MAX_WAITING = 2


class PsumBroadcast(NkiTensor):
    """A partition broadcast where NKI's compiler leaves it: the TensorE result in PSUM (fp32),
    read there by the VectorE or ScalarE instruction that uses it first (a PSUM operand also
    makes a VectorE tensor_tensor one pass, HARDWARE.md s8.1). Every later use, and a first
    use by an engine that cannot read PSUM (TensorE operands, GpSimd, DMA), reads an SBUF
    copy made then: PSUM is held only from the matmul to the first use, as tiles are placed by
    live range, so a broadcast kept for a whole loop does not hold PSUM banks (docs/nki.md,
    "Lowering")."""

    __slots__ = ("_sbuf", "_first", "_ctx", "_kb")

    def __init__(self, psum_view, ctx):
        super().__init__(psum_view)
        self._sbuf = None
        self._first = None  # the instruction (builder count) of its first use, read in PSUM
        self._ctx = ctx
        self._kb = ctx.kb  # the builder itself: _cse.py swaps ctx.kb while it records a call
        ctx.fresh_broadcasts += 1

    def _count(self):
        return self._kb.num_instructions

    def _view(self):
        n = self._count()
        if self._first is None and self._sbuf is None:
            self._first = n
            self._ctx.fresh_broadcasts -= 1
        if self._sbuf is None and self._first == n:
            return self.v  # the first use (traced twice when _cse.py records it)
        return self.in_sbuf()

    @property
    def shape(self):
        return tuple(self.v.shape)

    @property
    def dtype(self):
        return np_dtype(self.v.dtype)

    def in_sbuf(self):
        """The SBUF copy's View, made at the first use that needs it."""
        if self._sbuf is None:
            from trnsim.nki import _ops

            if self._first is None:
                self._ctx.fresh_broadcasts -= 1
            self._first = -1  # PSUM is not read again
            t = _ops.alloc(self.v.shape, self.v.dtype)
            _ops.tensor_copy(t, NkiTensor(self.v))
            self._sbuf = t
        return self._sbuf.v


def partition_broadcast(x, shape):
    """x's single partition in every partition of `shape`: one TensorE matmul ones[1, P].T @
    x[1, cols] per PSUM bank of columns (exact: products with 1, FP32 accumulation of one
    term). An fp32 result of one bank stays there for its first use (PsumBroadcast); any other
    (another dtype, more than a bank, several broadcasts waiting for their first use) is
    copied bank by bank to an SBUF tile of x's dtype."""
    from trnsim.nki import _ops

    p, free = shape[0], list(shape[1:])
    n = int(np.prod(free))
    flat = x.reshape((1, n)) if len(free) != 1 else x
    ones = _ones_row(p, x.dtype)
    c = _ctx.ctx()
    step = c.chip.psum_bank_bytes // 4
    if format_name(x.dtype) == "fp32" and n <= step and \
            c.fresh_broadcasts < PSUM_RESIDENT_MAX_WAITING:
        ps = NkiTensor(c.kb.psum(c.name("bcast"), "fp32", [p, n]))
        _ops.nc_matmul(ps, ones, flat, accumulate=False)
        return PsumBroadcast(ps.v if len(free) == 1 else ps.v.reshape(list(shape)), c)
    out = _ops.alloc(shape, x.dtype)
    out_flat = out.reshape((p, n)) if len(free) != 1 else out
    for c0 in range(0, n, step):
        c1 = min(c0 + step, n)
        ps = _ops.alloc([p, c1 - c0], "fp32", "psum")
        _ops.nc_matmul(ps, ones, flat[:, c0:c1], accumulate=False)
        _ops.tensor_copy(out_flat[:, c0:c1], ps)
    return out


def _ones_row(p, dtype):
    """The [1, p] ones stationary of partition broadcasts: one per kernel, set once."""
    from trnsim.nki import _ops

    c = _ctx.ctx()
    key = (p, format_name(dtype))
    t = c.ones.get(key)
    if t is None:
        t = _ops.alloc([1, p], dtype, name="ones")
        _ops.memset(t, 1.0)
        c.ones[key] = t
    return t
