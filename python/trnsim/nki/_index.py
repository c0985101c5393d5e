"""Legacy NKI index expressions: ``nl.arange`` / ``nl.mgrid`` ranges, the affine expressions
over them (``i_p * 2 + 1``), the comparisons that make an instruction's ``mask=``, and the
resolution of an index holding them into an explicit access pattern of a View."""

from __future__ import annotations

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


class Cond:
    """A mask: a conjunction of affine comparisons (``mask=(i_p < n) & (i_f < m)``)."""

    __slots__ = ("parts",)

    def __init__(self, parts):
        self.parts = parts

    def __and__(self, o):
        return Cond(self.parts + o.parts)

    def extents(self):
        """Range -> how many of its values satisfy every comparison (from the start)."""
        out = {}
        for e, op, v in self.parts:
            if len(e.terms) != 1:
                _ctx.unsupported("mask= over several nl.arange in one comparison")
            r, c = e.terms[0]
            n = out.get(r, r.n)
            keep = [{"<": x < v, "<=": x <= v, ">": x > v, ">=": x >= v}[op]
                    for x in (e.const + c * (r.start + i) for i in range(n))]  # n <= 512
            ok = keep.index(False) if False in keep else n
            if any(keep[ok:]):
                # A lower bound (i >= 4) keeps values after the start: shortening the range
                # cannot say that, and "no element" would be wrong.
                _ctx.unsupported("mask= keeping values that are not a prefix of their "
                                 "nl.arange (a lower bound such as i >= k)",
                                 "offset the range instead: nl.arange(k, n)")
            out[r] = ok
        return out


def has_expr(key):
    """Whether an index holds an nl.arange expression (then it is resolved lazily)."""
    # On every slice of every kernel: a plain loop, no generator (it is the hot path).
    if type(key) is tuple:
        for k in key:
            if type(k) is Expr:
                return True
        return False
    return type(key) is Expr


def resolve_index(v, key, extents, shape_only=False):
    """A View for ``v[key]`` with arange expressions, as an explicit access pattern (or only
    its shape: the unmasked shape of a masked access may lie outside the tensor)."""
    if len(key) > len(v.shape):
        raise NkiError(f"{len(key)} indices for a {len(v.shape)}-dim tensor")
    exprs = [k for k in key if isinstance(k, Expr)]
    if (len(key) < len(v.shape) or any(isinstance(k, slice) for k in key)
            or any(k.rank is None for k in exprs) or not max(k.rank for k in exprs)):
        return _resolve_by_position(v, key, extents, shape_only)
    return _resolve_advanced(v, key, extents, shape_only, max(k.rank for k in exprs))


def _extent(r, extents):
    n = r.n if extents is None else extents.get(r, r.n)
    if n < 1:
        raise NkiError("mask= leaves no element of an nl.arange")
    return n


def _resolve_advanced(v, key, extents, shape_only, rank):
    """Every index an integer or a grid-tagged expression: numpy's advanced indexing. The
    index arrays broadcast (shapes aligned at the end) and the access has their broadcast
    shape, element [a, b, ...] at the index values there; a range of size 1 repeats its
    value. Size-1 free dims are then dropped down to a tile's two ([P, F]), as NKI's tiles
    (nl.mgrid[0:128, 0:1, 0:n] rows load as [128, n])."""
    on_chip = v.space != "hbm"
    strides, offset = abs_pattern(v)
    size, ext, step = [1] * rank, [None] * rank, [0] * rank
    src = [set() for _ in range(rank)]  # index positions whose ranges move along the axis
    for d, k in enumerate(key):
        if not isinstance(k, Expr):
            offset += int(k) * strides[d]
            continue
        offset += k.const * strides[d]
        for r, c in k.terms:
            a = rank + r.end_axis
            offset += c * r.start * strides[d]
            e = _extent(r, extents)
            if r.n == 1:
                continue  # broadcast: its one value is in the offset
            if size[a] not in (1, r.n):
                shapes = [x.shape for x in key if isinstance(x, Expr)]
                raise NkiError(f"index arrays of shapes {shapes} do not broadcast (numpy's "
                               "rule: per axis, equal sizes or 1)")
            size[a] = r.n
            ext[a] = e if ext[a] is None else min(ext[a], e)
            step[a] += c * strides[d]
            src[a].add(d)
    dims = [(size[a], ext[a] or 1, step[a], src[a]) for a in range(rank)]
    if rank:  # a tile keeps its partition dim and at least one free dim
        free = [t for t in dims[1:] if t[0] != 1] or dims[1:][-1:]
        dims = dims[:1] + free
    if on_chip and dims:
        if dims[0][3] - {0} or any(0 in t[3] for t in dims[1:]):
            raise NkiError("an on-chip tile indexed with its partition index on a later grid "
                           "axis (t[i_f, i_p]): a partition / free transpose is an instruction "
                           "(nisa.nc_transpose, nl.transpose), not an index")
        if not dims[0][3]:
            dims[0] = dims[0][:2] + (strides[0], dims[0][3])  # one partition
    if shape_only:
        return tuple(e for _, e, _, _ in dims)
    return v.pattern([(st, e) for _, e, st, _ in dims], offset)


def _resolve_by_position(v, key, extents, shape_only):
    """Slices mixed with expressions (NKI refuses the mix; trnsim reads it so) or a bare
    nl.arange: one dim per range and per slice."""
    shape = list(v.shape)
    on_chip = v.space != "hbm"
    strides, offset = abs_pattern(v)
    if len(key) > len(shape):
        raise NkiError(f"{len(key)} indices for a {len(shape)}-dim tensor")
    # (grid axis, index position, order, size, stride). When every range has its grid axis
    # ([:, None] / [None, :] tags, nl.mgrid), dims follow the grid axes, as NKI's index grid
    # does: out[i_f, i_p] = t writes t transposed, and x[i_p, i_f1 * 8 + i_f0] reads a free-dim
    # transpose. Else (a bare nl.arange) dims follow the index positions, several ranges in
    # one position the largest step outermost. Slices keep their position.
    by_axis = all(r.axis is not None for k in key if isinstance(k, Expr) for r, _ in k.terms)
    dims = []
    for d in range(len(shape)):
        k = key[d] if d < len(key) else slice(None)
        if isinstance(k, slice):
            b, e, s = k.indices(shape[d])
            dims.append((d, d, 0, len(range(b, e, s)), strides[d] * s))
            offset += b * strides[d]
        elif isinstance(k, Expr):
            offset += k.const * strides[d]
            for r, c in k.terms:
                n = r.n if extents is None else extents.get(r, r.n)
                if n < 1:
                    raise NkiError("mask= leaves no element of an nl.arange")
                offset += c * r.start * strides[d]
                dims.append((r.axis if by_axis else d, d, -abs(c), n, c * strides[d]))
        else:
            offset += int(k) * strides[d]
            if d == 0 and on_chip:
                dims.append((-1, 0, 0, 1, strides[0]))  # an int partition: still the first dim
    dims.sort(key=lambda t: t[:3])  # stable: equal keys keep the index order
    if shape_only:
        return tuple(n for *_, n, _ in dims)
    pattern = [(st, n) for *_, n, st in dims]
    if on_chip and (not dims or dims[0][1] != 0):
        if any(t[1] == 0 for t in dims):
            raise NkiError("an on-chip tile indexed with its partition index on a later grid "
                           "axis (t[i_f, i_p]): a partition / free transpose is an instruction "
                           "(nisa.nc_transpose, nl.transpose), not an index")
        raise NkiError("the partition dim of an on-chip tile must be indexed first")
    return v.pattern(pattern, offset)
