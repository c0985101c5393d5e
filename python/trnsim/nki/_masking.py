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


_CMP = {"<": "is_lt", "<=": "is_le", ">": "is_gt", ">=": "is_ge"}

# Why a mask that is not a box is refused where it is.
_NOT_A_BOX = ("mask= keeping elements that are not a box of nl.arange values (comparisons "
              "over several ranges, such as i_p + i_f < n) on this instruction")


class Masking:
    """An instruction's ``mask=`` applied (legacy dialect). As in NKI, tiles keep their full
    shape and the mask limits which elements an instruction touches.

    NKI's mask is "an execution predicate known at compile-time, which informs the compiler
    to skip generating the instruction or generate the instruction with a smaller input tile
    shape" (NKI API Masking). It is evaluated over its ranges when traced (Cond.plan):

    * True (a plain bool, such as a comparison of loop indices), or comparisons that keep
      every element, is no mask; False, or comparisons that keep none, skip the instruction
      (``skip``): its result is never written (a destination keeps its values).
    * Comparisons that keep a box (values lo..hi-1 of each range: ``i < n``, ``i >= k``)
      shorten the access: operands indexed by nl.arange are resolved with the box, plain
      tiles cut to the same region, and a result tile has the full shape with that region
      written.
    * Other masks (``i_p * 512 + i_f < n``): an elementwise instruction (``pointwise``) runs
      over the box holding the kept elements into a scratch tile, merged into its result
      under a predicate built on GpSimd (memset, one affine_select per comparison over
      several ranges) by one VectorE select, so the elements the mask drops keep their
      values. DMAs and reductions (``split``) become one instruction per box of a set of
      boxes holding exactly the kept elements (``parts``). Other instructions refuse them.
    """

    __slots__ = ("xs", "shape", "full", "lo", "skip", "preds", "dim_of", "box", "parts")

    def __init__(self, mask, xs, pointwise=False, split=None):
        self.shape = self.full = self.lo = self.parts = None
        self.skip = False
        self.preds, self.dim_of, self.box = [], {}, {}
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
        plan = mask.plan()
        if plan.empty:
            self._skip()
        elif plan.everything:
            return
        elif plan.exact:
            self._apply(plan.box)
        elif split is not None:
            # Ranges along the dims a reduction reduces stay whole within each part.
            dim_of = _dims_of(self.xs)
            whole = {r for r in plan.box
                     if split is not True and dim_of.get(r, r.axis) in split}
            self.parts = []
            for box in plan.boxes(whole):
                part = Masking(None, xs)
                part._apply(box)
                self.parts.append(part)
            # The caller sees the operands whole (shapes, dtypes); the parts hold them cut.
            self.xs = [Void(x) if isinstance(x, Lazy) else x for x in self.xs]
        elif pointwise:
            try:
                self._apply(plan.box)
            except NkiError:
                raise
            except ValueError as e:  # the box reaches outside an operand (padding)
                _ctx.unsupported(_NOT_A_BOX + " whose bounding box reads outside an operand",
                                 str(e))
            self.preds = plan.preds
        else:
            _ctx.unsupported(_NOT_A_BOX, "elementwise instructions, DMAs and reductions "
                             "take it")

    def _apply(self, box):
        """Operands limited to `box` (range -> (lo, hi)): nl.arange-indexed ones resolved
        with it, plain tiles cut to the region it gives the first one's dims."""
        self.box = box
        used, resolved = set(), set()
        for i, x in enumerate(self.xs):
            if isinstance(x, Lazy):
                ranges = {r for k in x.key if isinstance(k, Expr) for r, _ in k.terms}
                used |= ranges
                box = _same_grid_positions(self.box, ranges)
                base = x.base._view()
                if self.shape is None:
                    dims = resolve_index(base, x.key, box, dims=True)
                    self.full = tuple(f for f, _, _, _ in dims)
                    self.lo = tuple(lo for _, lo, _, _ in dims)
                    self.shape = tuple(n for _, _, n, _ in dims)
                    self.dim_of = {r: j for j, (*_, rs) in enumerate(dims) for r in rs}
                self.xs[i] = NkiTensor(resolve_index(base, x.key, box))
                resolved.add(i)
        missing = [r for r in box if r not in used]
        if missing:
            self._mask_plain(missing, box)
        self.xs = [x if i in resolved else self.cut(x) for i, x in enumerate(self.xs)]

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

    def _mask_plain(self, ranges, box):
        # A range that indexes no operand (the operands are whole tiles) limits the dim of
        # its grid axis (nl.mgrid / [:, None] position), as the tile's index grid would.
        tiles = [x for x in self.xs if isinstance(x, NkiTensor)]
        if not tiles:
            _ctx.unsupported("mask= on an instruction without tile operands")
        full = self.full or tiles[0].shape
        shape, lo = list(self.shape or full), list(self.lo or [0] * len(full))
        for r in ranges:
            if r.axis is None or r.axis >= len(shape) or full[r.axis] != r.n:
                _ctx.unsupported("mask= over an nl.arange that indexes none of the "
                                 "instruction's operands and is not one of the tile's grid "
                                 "axes")
            a = r.axis
            start, end = max(lo[a], box[r][0]), min(lo[a] + shape[a], box[r][1])
            if end <= start:
                raise NkiError("mask= leaves no element of an nl.arange")
            lo[a], shape[a] = start, end - start
            self.dim_of.setdefault(r, a)
        self.shape, self.full, self.lo = tuple(shape), tuple(full), tuple(lo)

    def cut(self, x):
        """A plain tile operand limited to the masked region: dims of the full shape to the
        region, others (a [P, 1] column) to as much of its start as fits."""
        if self.shape is None or not isinstance(x, NkiTensor) or x.shape == self.shape:
            return x
        if len(x.shape) != len(self.shape):
            return x
        return x[tuple(slice(lo, lo + n) if size == f else slice(0, min(n, size))
                       for lo, n, f, size in zip(self.lo, self.shape, self.full, x.shape))]

    def region(self, d, dims):
        """The region of result `d` this (box) mask writes: result dim j is operand dim
        dims[j] (None: all of it)."""
        return d[tuple(slice(None) if j is None else
                       slice(self.lo[j], self.lo[j] + self.shape[j]) for j in dims)]

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
        if self.preds:
            if pending.pshape != self.full:
                _ctx.unsupported(_NOT_A_BOX + " when its result is not its operands' shape")
            pending.emit = lambda d, *acc: self._merge(emit, NkiTensor(d), acc)
        else:
            pending.emit = lambda d, *acc: emit(self.cut(NkiTensor(d))._view(), *acc)
        return pending

    def each(self, *xs):
        """The operands of each instruction: every part's (a split mask), else `xs`."""
        return [tuple(p.xs) for p in self.parts] if self.parts is not None else [xs]

    def split_result(self, emit, shape, dtype, dims=None, buffer="sbuf"):
        """The result (full `shape`) of an instruction run once per part of a split mask:
        emit(region, *operands) with each part's operands into the region it writes (result
        dim j is operand dim dims[j], None: all of it; default the operand's dims)."""
        dims = list(range(len(shape))) if dims is None else dims
        parts = self.parts

        def run(d):
            d = NkiTensor(d)
            for part in parts:
                emit(part.region(d, dims), *part.xs)

        return Pending(run, shape, dtype, buffer)

    def _merge(self, emit, d, acc):
        """emit over the box into a scratch tile, merged into d's region where the mask's
        comparisons hold (the dropped elements of d keep their values)."""
        from trnsim.nki import _ops

        if acc:
            _ctx.unsupported(_NOT_A_BOX + " accumulating into its result")
        region = self.cut(d)
        tmp = _ops.alloc(region.shape, _ops.view(region).dtype)
        emit(tmp.v)
        _ops.tensor_copy_predicated(region, tmp, self._predicate(region.shape))

    def _predicate(self, shape):
        """A uint8 tile of `shape` (the box), 1 where every comparison over several ranges
        holds: a GpSimd memset, then one GpSimd affine_select per comparison (its value's
        steps along the box's dims: the coefficients of the ranges moving along each)."""
        from trnsim.nki import _ops

        pred = _ops.alloc(shape, "uint8")
        _ops.memset(pred, 1, _ops.Engine.gpsimd)
        for terms, k, op in self.preds:
            offset, steps = k, [0] * len(shape)
            for r, c in terms.items():
                j = self.dim_of.get(r)
                if j is None:  # a range of one value (it moves along no dim)
                    if self.box[r][1] - self.box[r][0] != 1:
                        _ctx.unsupported("mask= comparing an nl.arange that moves along none "
                                         "of the instruction's dims")
                    offset += c * (r.start + self.box[r][0])
                    continue
                offset += c * (r.start + self.lo[j])
                steps[j] += c
            _ops.affine_select(pred, [[s, n] for s, n in zip(steps[1:], shape[1:])], offset,
                               steps[0], pred, 0, _CMP[op])
        return pred


def _same_grid_positions(box, ranges):
    """`box` with the operand's other ranges limited alike: a mask keeps positions of the
    instruction's index grid, so a range on the same grid axis with as many values as one
    the mask limits (out[i_p_hbm, ...] = t[i_p_tile, ...], mask=i_p_hbm < n) keeps the same
    positions (NKI masks apply to every operand of the instruction)."""
    extra = {}
    for r in ranges:
        if r in box or r.axis is None:
            continue
        for m, lohi in box.items():
            if m.axis == r.axis and m.n == r.n:
                extra[r] = lohi
                break
    return {**box, **extra} if extra else box


def _dims_of(xs):
    """Range -> the dim of the first nl.arange-indexed operand it moves along (its grid axis
    when no operand is indexed so), from the unmasked index (no bounds check: a split
    mask's box may reach outside the tensor)."""
    for x in xs:
        if isinstance(x, Lazy):
            dims = resolve_index(x.base._view(), x.key, None, dims=True)
            return {r: j for j, (*_, rs) in enumerate(dims) for r in rs}
    return {}
