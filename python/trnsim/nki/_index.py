"""Legacy NKI index expressions: ``nl.arange`` / ``nl.mgrid`` ranges, the affine expressions
over them (``i_p * 2 + 1``), the comparisons that make an instruction's ``mask=``, and the
resolution of an index holding them into an explicit access pattern of a View."""

from __future__ import annotations

import math

import numpy as np

from trnsim.nki import _ctx
from trnsim.nki._ctx import NkiError


def abs_pattern(v):
    """(steps per dim, offset) of a view over its whole tensor, in elements, as .ap() takes
    them: on chip the partition step is the tile's elements per partition."""
    strides = list(v.strides)
    if v.space != "hbm":
        strides[0] = int(np.prod(v.region_shape[1:]))
        return strides, v.start_partition * strides[0] + v.offset
    return strides, v.offset


class Range:
    """One nl.arange: ``n`` values; ``axis`` is its position in an index grid of ``rank``
    axes (nl.mgrid, [:, None] tags), None for a bare nl.arange (no grid). ``grid`` is the
    sizes of that grid's axes: an nl.mgrid's own, a tagged range's n on its axis and 1 on
    the others (nisa.iota of an nl.mgrid field fills the whole grid, as numpy's mgrid)."""

    __slots__ = ("n", "axis", "start", "rank", "grid")

    def __init__(self, n, axis=None, start=0, rank=None, grid=None):
        self.n, self.axis, self.start = n, axis, start
        self.rank = rank if rank is not None or axis is None else axis + 1
        if grid is None and axis is not None:
            grid = tuple(n if a == axis else 1 for a in range(self.rank))
        self.grid = grid

    @property
    def end_axis(self):
        """Its grid axis counted from the end: numpy aligns index arrays' shapes there."""
        return self.axis - self.rank


class Expr:
    """const + sum(coef * range): an affine index over nl.arange values."""

    __slots__ = ("const", "terms")

    def __init__(self, const=0, terms=()):
        self.const = const
        self.terms = tuple(terms)  # (Range, coef)

    @staticmethod
    def of(x):
        return x if isinstance(x, Expr) else Expr(int(x))

    def __add__(self, o):
        if not isinstance(o, (int, np.integer, Expr)) and _run_time(o):
            # nl.arange(n)[:, None] + t[0, 0]: an offset known only when the kernel runs
            return DynExpr(self, o)
        o = Expr.of(o)
        return Expr(self.const + o.const, self.terms + o.terms)

    __radd__ = __add__

    def __sub__(self, o):
        return self + Expr.of(o) * -1

    def __rsub__(self, o):
        return Expr.of(o) + self * -1

    def __mul__(self, k):
        if isinstance(k, Expr):
            raise NkiError("an index expression may only be multiplied by an integer")
        return Expr(self.const * k, tuple((r, c * k) for r, c in self.terms))

    __rmul__ = __mul__

    def __getitem__(self, key):
        # nl.arange(n)[:, None] / [None, :]: the position of the range in a grid of len(key).
        key = key if isinstance(key, tuple) else (key,)
        axis = [i for i, k in enumerate(key) if k is not None]
        if len(self.terms) != 1 or len(axis) != 1:
            raise NkiError("index expressions take [:, None] or [None, :] only")
        r, c = self.terms[0]
        return Expr(self.const, ((Range(r.n, axis[0], r.start, len(key)), c),))

    @property
    def rank(self):
        """Dims of its index array (numpy's broadcast of its ranges' grids); None when it
        holds a bare nl.arange, which has no grid axis."""
        if any(r.axis is None for r, _ in self.terms):
            return None
        return max((r.rank for r, _ in self.terms), default=0)

    @property
    def shape(self):
        """The shape of its index array: each grid axis a range spans has that range's size,
        the others 1 (every value an access takes, once)."""
        rank = self.rank
        if rank is None:
            return None
        shape = [1] * rank
        for r, _ in self.terms:
            shape[rank + r.end_axis] = max(shape[rank + r.end_axis], r.n)
        return tuple(shape)

    @property
    def grid_shape(self):
        """The shape of the dense grid its ranges come from (numpy's broadcast of their
        grids, aligned at the end): what nisa.iota of it fills. None with a bare nl.arange."""
        rank = self.rank
        if rank is None:
            return None
        shape = [1] * rank
        for r, _ in self.terms:
            for a, n in enumerate(r.grid, rank - len(r.grid)):
                if shape[a] not in (1, n) and n != 1:
                    raise NkiError(f"index expression over grids of shapes "
                                   f"{[x.grid for x, _ in self.terms]} that do not broadcast")
                shape[a] = max(shape[a], n)
        return tuple(shape)

    def _cmp(self, op, v):
        return Cond([(self, op, v)])

    def __lt__(self, v): return self._cmp("<", v)
    def __le__(self, v): return self._cmp("<=", v)
    def __gt__(self, v): return self._cmp(">", v)
    def __ge__(self, v): return self._cmp(">=", v)


def _run_time(x) -> bool:
    """A register (VirtualRegister) or one element of a tile (``t[0, 0]``): a value the kernel
    has only when it runs."""
    from trnsim.nki._register import VirtualRegister

    return isinstance(x, VirtualRegister) or bool(getattr(x, "_element", False))


class DynExpr:
    """An nl.arange expression plus a run-time value (a register, or one element of a tile
    read into one): ``x[nl.arange(4)[:, None] + t[0, 0], i_f]`` is the static access at offset
    0 moved by the register when the instruction issues (_register.index_dynamic), as a DGE
    DMA's dynamic start address."""

    __slots__ = ("expr", "dyn")

    def __init__(self, expr, dyn):
        self.expr, self.dyn = expr, dyn

    def __add__(self, o):
        if isinstance(o, (bool, np.bool_)) or not isinstance(o, (int, np.integer, Expr)):
            raise NkiError("an index expression may hold one run-time value (a register or one "
                           "element of a tile) plus integers and nl.arange terms")
        return DynExpr(self.expr + o, self.dyn)

    __radd__ = __add__

    def __sub__(self, o):
        return self + (-1 * o)

    def __mul__(self, k):
        raise NkiError("an index expression with a run-time value cannot be scaled: multiply "
                       "the value first (it is a register or a tile element)")

    __rmul__ = __mul__


class Cond:
    """A mask: a conjunction of affine comparisons (``mask=(i_p < n) & (i_f < m)``)."""

    __slots__ = ("parts",)

    def __init__(self, parts):
        self.parts = parts

    def __and__(self, o):
        if isinstance(o, (bool, np.bool_)):  # a trace-time bool joined in (loop indices)
            return self if o else Cond(self.parts + [(Expr(0), "<", 0)])
        return Cond(self.parts + o.parts)

    __rand__ = __and__

    def __or__(self, o):
        from trnsim.nki._ctx import NkiError

        raise NkiError("mask: NKI joins comparisons with & only (NKI API Masking); a union "
                       "(|) is not an NKI mask: write one instruction per condition")

    __ror__ = __or__

    def __invert__(self):
        from trnsim.nki._ctx import NkiError

        raise NkiError("mask: NKI masks are comparisons joined with &; negate the comparison "
                       "itself (~(a < b) is a >= b)")

    def plan(self):
        """Which elements the mask keeps, evaluated over its ranges at trace time (a
        MaskPlan). Comparisons that share a range are evaluated together."""
        comps = [_comparison(e, op, v) for e, op, v in self.parts]
        if any(not terms and not _OPS[op](k, 0) for terms, k, op in comps):
            return MaskPlan([], empty=True)
        comps = [c for c in comps if c[0]]
        groups = []  # (ranges, comparisons), ranges sharing a comparison in one group
        for c in comps:
            joined = [g for g in groups if any(r in g[0] for r in c[0])]
            ranges = [r for g in joined for r in g[0]]
            ranges += [r for r in c[0] if r not in ranges]
            groups = [g for g in groups if g not in joined]
            groups.append((ranges, [x for g in joined for x in g[1]] + [c]))
        parts = []
        for ranges, cs in groups:
            size = int(np.prod([r.n for r in ranges]))
            if size > 1 << 26:
                _ctx.unsupported(f"mask= over nl.arange ranges of {size} elements together")
            kept = np.ones([r.n for r in ranges], bool)
            for terms, k, op in cs:
                value = np.full((1,) * len(ranges), k, np.int64)
                for r, c in terms.items():
                    a = ranges.index(r)
                    value = value + c * (r.start + np.arange(r.n)).reshape(
                        [-1 if b == a else 1 for b in range(len(ranges))])
                kept &= _OPS[op](value, 0)
            parts.append((ranges, kept, [c for c in cs if len(c[0]) > 1]))
        return MaskPlan(parts)


_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}


def _comparison(e, op, v):
    """(range -> coefficient, constant, op) of ``e op v`` as ``sum(c r) + constant op 0``
    (ranges counted by their values, r.start + index). A fractional constant is rounded the
    way that keeps the same integers (x < 2.5 is x < 3)."""
    d = e - v if isinstance(v, Expr) else e - 0
    terms = {}
    k = d.const - (0 if isinstance(v, Expr) else v)
    for r, c in d.terms:
        if c != int(c):
            raise NkiError(f"mask=: an nl.arange scaled by {c}; coefficients are integers")
        terms[r] = terms.get(r, 0) + int(c)
    terms = {r: c for r, c in terms.items() if c}
    if k != int(k):
        k = math.floor(k) if op in ("<", ">=") else math.ceil(k)
    return terms, int(k), op


class MaskPlan:
    """The elements a mask keeps. ``box``: range -> (lo, hi), the smallest box holding them
    (ranges the mask names; others keep all values); ``exact``: whether they are that box;
    ``preds``: the comparisons over several ranges, which select within the box when it is
    not exact (the single-range ones hold everywhere in it); ``empty``: none kept."""

    __slots__ = ("parts", "box", "exact", "empty", "preds")

    def __init__(self, parts, empty=False):
        self.parts = parts
        self.box, self.exact, self.preds = {}, True, []
        self.empty = empty or any(not kept.any() for _, kept, _ in parts)
        if self.empty:
            return
        for (ranges, kept, multi) in parts:
            n = 1
            for a, r in enumerate(ranges):
                on = np.flatnonzero(kept.any(axis=tuple(b for b in range(kept.ndim) if b != a)))
                self.box[r] = (int(on[0]), int(on[-1]) + 1)
                n *= int(on[-1]) + 1 - int(on[0])
            if int(kept.sum()) != n:
                self.exact = False
                self.preds += multi

    @property
    def everything(self):
        return not self.empty and self.exact and all(
            b == (0, r.n) for r, b in self.box.items())

    def boxes(self, whole=()):
        """Disjoint boxes (range -> (lo, hi)) holding exactly the kept elements: each group
        of ranges split along its ranges in turn (runs of values whose kept sets agree).
        Ranges in `whole` are split last and must stay one interval per box of the others
        (an instruction reducing along them writes each result once)."""
        out = [{}]
        for ranges, kept, _ in self.parts:
            # Partition ranges first: boxes of whole rows are DMAs of contiguous rows.
            order = sorted(range(len(ranges)), key=lambda a: (
                ranges[a] in whole, ranges[a].end_axis if ranges[a].axis is not None else 0))
            split = _split(kept.transpose(order), [ranges[a] for a in order])
            outer = [r for r in ranges if r not in whole]
            keys = [tuple(b[r] for r in outer) for b in split]
            if len(set(keys)) != len(keys):
                _ctx.unsupported("mask= that is not a box along the dims an instruction "
                                 "reduces (a reduction over part of a range that depends on "
                                 "another)")
            out = [{**a, **b} for a in out for b in split]
        return out


def _split(kept, ranges):
    """Boxes holding the True elements of `kept` (one axis per range): runs of the first
    range's values with equal slices, each split along the other ranges."""
    if not ranges:
        return [{}] if kept else []
    out, v, n = [], 0, kept.shape[0]
    while v < n:
        if not kept[v].any():
            v += 1
            continue
        w = v + 1
        while w < n and np.array_equal(kept[w], kept[v]):
            w += 1
        out += [{ranges[0]: (v, w), **b} for b in _split(kept[v], ranges[1:])]
        v = w
    return out


def key_holds(key, cls):
    """Whether an index (one key or a tuple of them) holds an object of exactly type cls."""
    # On every slice of every kernel: a plain loop, no generator (it is the hot path).
    if type(key) is tuple:
        for k in key:
            if type(k) is cls:
                return True
        return False
    return type(key) is cls


def has_expr(key):
    """Whether an index holds an nl.arange expression (then it is resolved lazily)."""
    return key_holds(key, Expr)


def resolve_index(v, key, extents, shape_only=False, dims=False):
    """A View for ``v[key]`` with arange expressions, as an explicit access pattern (or only
    its shape: the unmasked shape of a masked access may lie outside the tensor). `extents`
    (a mask's box, range -> (lo, hi)) limits ranges to values lo..hi-1 of theirs. dims=True
    gives (full size, lo, size, ranges moving along it) per dim of the access instead."""
    if len(key) > len(v.shape):
        raise NkiError(f"{len(key)} indices for a {len(v.shape)}-dim tensor")
    exprs = [k for k in key if isinstance(k, Expr)]
    if (len(key) < len(v.shape) or any(isinstance(k, slice) for k in key)
            or any(k.rank is None for k in exprs) or not max(k.rank for k in exprs)):
        out, offset = _resolve_by_position(v, key, extents)
    else:
        out, offset = _resolve_advanced(v, key, extents, max(k.rank for k in exprs))
    if dims:
        return [(full, lo, n, ranges) for full, lo, n, _, ranges in out]
    if shape_only:
        return tuple(n for _, _, n, _, _ in out)
    return v.pattern([(st, n) for _, _, n, st, _ in out], offset)


def _extent(r, extents):
    """(lo, hi): the values of range r an access takes (a mask's box: lo..hi-1)."""
    lo, hi = (0, r.n) if extents is None else extents.get(r, (0, r.n))
    if hi <= lo:
        raise NkiError("mask= leaves no element of an nl.arange")
    return lo, hi


_TRANSPOSE = ("an on-chip tile indexed with its partition index on a later grid axis "
              "(t[i_f, i_p]): a partition / free transpose is an instruction "
              "(nisa.nc_transpose, nl.transpose), not an index")


def _resolve_advanced(v, key, extents, rank):
    """Every index an integer or a grid-tagged expression: numpy's advanced indexing. The
    index arrays broadcast (shapes aligned at the end) and the access has their broadcast
    shape, element [a, b, ...] at the index values there; a range of size 1 repeats its
    value. Size-1 free dims are then dropped down to a tile's two ([P, F]), as NKI's tiles
    (nl.mgrid[0:128, 0:1, 0:n] rows load as [128, n]). A mask's box keeps grid positions
    lo..hi-1 of each axis (ranges on one axis: the positions all of them keep)."""
    on_chip = v.space != "hbm"
    strides, offset = abs_pattern(v)
    size, lo, hi, step = [1] * rank, [0] * rank, [None] * rank, [0] * rank
    src = [set() for _ in range(rank)]  # index positions whose ranges move along the axis
    moving = [[] for _ in range(rank)]
    terms = []
    for d, k in enumerate(key):
        if not isinstance(k, Expr):
            offset += int(k) * strides[d]
            continue
        offset += k.const * strides[d]
        for r, c in k.terms:
            a = rank + r.end_axis
            rlo, rhi = _extent(r, extents)
            if r.n == 1:
                offset += c * r.start * strides[d]  # broadcast: its one value
                continue
            if size[a] not in (1, r.n):
                shapes = [x.shape for x in key if isinstance(x, Expr)]
                raise NkiError(f"index arrays of shapes {shapes} do not broadcast (numpy's "
                               "rule: per axis, equal sizes or 1)")
            size[a] = r.n
            lo[a], hi[a] = max(lo[a], rlo), rhi if hi[a] is None else min(hi[a], rhi)
            step[a] += c * strides[d]
            src[a].add(d)
            moving[a].append(r)
            terms.append((a, d, r, c))
    for a, d, r, c in terms:
        offset += c * (r.start + lo[a]) * strides[d]
    if any(h is not None and h <= x for x, h in zip(lo, hi)):
        raise NkiError("mask= leaves no element of an nl.arange")
    dims = [(size[a], lo[a], 1 if hi[a] is None else hi[a] - lo[a], step[a], src[a], moving[a])
            for a in range(rank)]
    if rank:  # a tile keeps its partition dim and at least one free dim
        free = [t for t in dims[1:] if t[0] != 1] or dims[1:][-1:]
        dims = dims[:1] + free
    if on_chip and dims:
        if dims[0][4] - {0} or any(0 in t[4] for t in dims[1:]):
            raise NkiError(_TRANSPOSE)
        if not dims[0][4]:
            dims[0] = dims[0][:3] + (strides[0],) + dims[0][4:]  # one partition
    return [(f, x, n, st, m) for f, x, n, st, _, m in dims], offset


def _resolve_by_position(v, key, extents):
    """Slices mixed with expressions (NKI refuses the mix; trnsim reads it so) or a bare
    nl.arange: one dim per range and per slice."""
    shape = list(v.shape)
    on_chip = v.space != "hbm"
    strides, offset = abs_pattern(v)
    if len(key) > len(shape):
        raise NkiError(f"{len(key)} indices for a {len(shape)}-dim tensor")
    # (grid axis, index position, order, (full, lo, size, stride, ranges)). When every range
    # has its grid axis ([:, None] / [None, :] tags, nl.mgrid), dims follow the grid axes, as
    # NKI's index grid does: out[i_f, i_p] = t writes t transposed, and x[i_p, i_f1 * 8 +
    # i_f0] reads a free-dim transpose. Else (a bare nl.arange) dims follow the index
    # positions, several ranges in one position the largest step outermost. Slices keep
    # their position.
    by_axis = all(r.axis is not None for k in key if isinstance(k, Expr) for r, _ in k.terms)
    dims = []
    for d in range(len(shape)):
        k = key[d] if d < len(key) else slice(None)
        if isinstance(k, slice):
            b, e, s = k.indices(shape[d])
            n = len(range(b, e, s))
            dims.append((d, d, 0, (n, 0, n, strides[d] * s, [])))
            offset += b * strides[d]
        elif isinstance(k, Expr):
            offset += k.const * strides[d]
            for r, c in k.terms:
                rlo, rhi = _extent(r, extents)
                offset += c * (r.start + rlo) * strides[d]
                dims.append((r.axis if by_axis else d, d, -abs(c),
                             (r.n, rlo, rhi - rlo, c * strides[d], [r])))
        else:
            offset += int(k) * strides[d]
            if d == 0 and on_chip:  # an int partition: still the first dim
                dims.append((-1, 0, 0, (1, 0, 1, strides[0], [])))
    dims.sort(key=lambda t: t[:3])  # stable: equal keys keep the index order
    if on_chip and (not dims or dims[0][1] != 0):
        if any(t[1] == 0 for t in dims):
            raise NkiError(_TRANSPOSE)
        raise NkiError("the partition dim of an on-chip tile must be indexed first")
    return [t[3] for t in dims], offset
