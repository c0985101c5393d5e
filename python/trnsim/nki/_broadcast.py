"""Partition broadcasts as NKI's compiler lowers them (docs/nki.md, "Lowering"): a [1, n] row
repeated over P partitions is a TensorE matmul of a ones row, per PSUM bank of columns; the
result is read in PSUM by its first user when it fits one bank (PsumBroadcast), else copied to
SBUF bank by bank. Integer rows, which TensorE does not take, go through DMA (an HBM scratch
row read back with a partition step of 0). Size-1 free dims of the row are broadcast after
that as a stride-0 view: the row is repeated over partitions as it is, never widened first."""

from __future__ import annotations

import numpy as np

from trnsim import _core
from trnsim.nki import _ctx
from trnsim.nki._tensor import NkiTensor, broadcast_view, np_dtype
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

    __slots__ = ("_sbuf", "_first", "_ctx", "_kb", "_rows")

    def __init__(self, psum_view, ctx, shape=None):
        # psum_view: [P, own free dims]; shape: the broadcast's shape when size-1 free dims
        # are repeated too (a stride-0 view of the PSUM rows, and later of their SBUF copy).
        self._rows = psum_view
        super().__init__(psum_view if shape is None else broadcast_view(psum_view, shape))
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
            t = _ops.alloc(self._rows.shape, self._rows.dtype)
            _ops.tensor_copy(t, NkiTensor(self._rows))
            self._sbuf = t.v if tuple(self.v.shape) == tuple(self._rows.shape) else \
                broadcast_view(t.v, tuple(self.v.shape))
        return self._sbuf


def broadcast(x, shape):
    """x [1, ...] on chip repeated to `shape` ([P, ...]): its partition to P (TensorE, or DMA for
    integers), then its size-1 free dims as a stride-0 view. Any shape numpy would broadcast to
    is right: a [1, 1] row used to be widened over the partition matmul's columns and left
    them unwritten (NaN) or was refused."""
    have = tuple(x.shape)
    broadcast_view(x._view(), shape, check_only=True)  # rank and size-1 dims, NKI's message
    rows = (shape[0], *have[1:])
    if is_integer(x.dtype):
        out = _dma_broadcast(x, rows)
    else:
        out = partition_broadcast(x, rows, shape)
    if isinstance(out, PsumBroadcast) or tuple(out.shape) == tuple(shape):
        return out
    return NkiTensor(broadcast_view(out.v, shape))


def is_integer(dtype):
    return np.dtype(dtype).kind in "iub"


def _dma_broadcast(x, rows):
    """An integer row in every partition, bit-exact: TensorE takes float inputs only, so the
    row goes to an HBM scratch tensor (one DMA) and comes back with a partition step of 0
    (one DMA): DMA reads any HBM pattern, while an SBUF partition cannot be read twice in one
    access pattern."""
    from trnsim.nki import _ops

    c = _ctx.ctx()
    fmt = format_name(x.dtype)
    scratch = NkiTensor(c.kb.scratch(c.name("bcast_row"), fmt, [1, *rows[1:]]))
    _ops.dma_copy(scratch, x)
    out = _ops.alloc(rows, fmt)
    _ops.dma_copy(out, NkiTensor(broadcast_view(scratch.v, list(rows))))
    return out


def partition_broadcast(x, shape, final=None):
    """x's single partition in every partition of `shape`: one TensorE matmul ones[1, P].T @
    x[1, cols] per PSUM bank of columns (exact but for the sign of zero: products with 1,
    FP32 accumulation of one term onto +0, so -0.0 arrives as +0.0). An fp32 result of one bank stays there for its first use (PsumBroadcast, seen with
    the `final` shape); any other (another dtype, more than a bank, several broadcasts waiting
    for their first use) is copied bank by bank to an SBUF tile of x's dtype. `shape` keeps
    x's own free dims."""
    from trnsim.nki import _ops

    p, free = shape[0], list(shape[1:])
    n = int(np.prod(free))
    v = x._view()
    if v.space == "sbuf" and not _core.start_partition_allowed(v.start_partition, 1):
        # A row where no engine access may start (t[k:k+1, :] of a loaded tile, k not 0, 32,
        # 64 or 96) is not a matmul operand: a DMA, which reaches every partition, moves it to
        # a row at partition 0 first.
        row = _ops.new_like(x)
        _ops.dma_copy(row, x)
        x = row
    flat = x.reshape((1, n)) if len(free) != 1 else x
    ones = _ones_row(p, x.dtype)
    c = _ctx.ctx()
    step = c.chip.psum_bank_bytes // 4
    if format_name(x.dtype) == "fp32" and n <= step and \
            c.fresh_broadcasts < PSUM_RESIDENT_MAX_WAITING:
        ps = NkiTensor(c.kb.psum(c.name("bcast"), "fp32", [p, n]))
        _ops.nc_matmul(ps, ones, flat, accumulate=False)
        rows = ps.v if len(free) == 1 else ps.v.reshape(list(shape))
        return PsumBroadcast(rows, c, None if final is None or tuple(final) == tuple(shape)
                             else tuple(final))
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
