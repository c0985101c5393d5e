"""An instruction's ``mask=`` (legacy dialect) applied to its operands and result."""

from __future__ import annotations

import numpy as np

from trnsim.nki import _ctx
from trnsim.nki._ctx import NkiError
from trnsim.nki._index import Cond, Expr, resolve_index
from trnsim.nki._tensor import Lazy, NkiTensor, Pending, np_dtype


class Void(NkiTensor):
    """An nl.arange-indexed operand of a skipped instruction: its unmasked shape and its
    dtype, which the result takes, but no View (the index may lie outside the tensor, as a
    masked tail's does)."""

    __slots__ = ("vshape", "vdtype", "space")

    def __init__(self, lazy):
        super().__init__(None)
        base = lazy.base._view()
        self.vshape = resolve_index(base, lazy.key, None, shape_only=True)
        self.vdtype, self.space = base.dtype, base.space

    shape = property(lambda self: tuple(self.vshape))
    dtype = property(lambda self: np_dtype(self.vdtype))

    def _view(self):
        raise NkiError("an instruction that mask= skips has no operand to read (trnsim bug)")


def _skipped(*args):
    """The emission of an instruction its mask skips: nothing."""


class Masking:
    """An instruction's ``mask=`` applied (legacy dialect). As in NKI, tiles keep their full
    shape and the mask limits which elements an instruction touches: operands indexed by
    nl.arange are resolved with the mask's shortened ranges, plain tiles are cut to the same
    (leading) region, and a result tile has the full shape with that region written.

    NKI's mask is "an execution predicate known at compile-time, which informs the compiler
    to skip generating the instruction or generate the instruction with a smaller input tile
    shape" (NKI API Masking): True (a plain bool, such as a comparison of loop indices) is no
    mask; False, or comparisons that leave no element, skip the instruction (``skip``): its
    result is never written (a destination keeps its values)."""

    __slots__ = ("xs", "shape", "full", "skip")

    def __init__(self, mask, xs):
        self.shape = self.full = None
        self.skip = False
        self.xs = list(xs)
        if mask is None:
            return
        if isinstance(mask, (bool, np.bool_)):
            if not mask:
                self._skip()
            return
        if not isinstance(mask, Cond):
            raise NkiError("mask= takes a bool, or comparisons of nl.arange expressions "
                           "joined by &")
        ext = mask.extents()
        if any(n < 1 for n in ext.values()):
            self._skip()
            return
        used = set()
        for i, x in enumerate(self.xs):
            if isinstance(x, Lazy):
                used |= {r for k in x.key if isinstance(k, Expr) for r, _ in k.terms}
                v = x.resolve(ext)
                if self.shape is None:
                    self.shape = tuple(v.shape)
                    self.full = resolve_index(x.base._view(), x.key, None, shape_only=True)
                self.xs[i] = NkiTensor(v)
        missing = [r for r in ext if r not in used]
        if missing:
            self._mask_plain(missing, ext)
        self.xs = [self.cut(x) for x in self.xs]

    def _skip(self):
        self.skip = True
        self.xs = [Void(x) if isinstance(x, Lazy) else x for x in self.xs]

    def void(self, shape, dtype, buffer="sbuf", kind=""):
        """The result of a skipped instruction: a tile no instruction writes."""
        return Pending(_skipped, shape, dtype, buffer, kind)

    def gate(self, pending):
        """`pending` as it is, or emitting nothing if the mask skips its instruction (for
        results whose shape is not the operands', which result() would restore wrongly)."""
        if self.skip:
            pending.emit = _skipped
        return pending

    def _mask_plain(self, ranges, ext):
        # A range that indexes no operand (the operands are whole tiles) limits the dim of
        # its grid axis (nl.mgrid / [:, None] position), as the tile's index grid would.
        tiles = [x for x in self.xs if isinstance(x, NkiTensor)]
        if not tiles:
            _ctx.unsupported("mask= on an instruction without tile operands")
        full = self.full or tiles[0].shape
        shape = list(self.shape or full)
        for r in ranges:
            if r.axis is None or r.axis >= len(shape) or full[r.axis] != r.n:
                _ctx.unsupported("mask= over an nl.arange that indexes none of the "
                                 "instruction's operands and is not one of the tile's grid "
                                 "axes")
            shape[r.axis] = min(shape[r.axis], ext[r])
        self.shape, self.full = tuple(shape), tuple(full)

    def cut(self, x):
        """A plain tile operand limited to the masked region (its leading elements)."""
        if self.shape is None or not isinstance(x, NkiTensor) or x.shape == self.shape:
            return x
        if len(x.shape) != len(self.shape):
            return x
        return x[tuple(slice(0, min(a, b)) for a, b in zip(self.shape, x.shape))]

    def result(self, pending):
        """A result with the full shape whose instruction writes only the masked region (or
        nothing, when the mask skips it)."""
        if self.skip:
            pending.emit = _skipped
            return pending
        if self.shape is None:
            return pending
        if len(pending.pshape) == len(self.shape):  # dims the mask shortened: full again
            pending.pshape = tuple(f if p == m else p for p, m, f in
                                   zip(pending.pshape, self.shape, self.full))
        emit = pending.emit
        pending.emit = lambda d, *acc: emit(self.cut(NkiTensor(d))._view(), *acc)
        return pending
