"""Accesses of more than the hardware's 4 free dims (after contiguous dims merge) become one
instruction per index of their outermost dims, for element-wise instructions and DMAs between
views of one shape, as neuronx-cc unrolls them. VectorE instructions over more elements per
partition than the engine streams in one
(65,536 from SBUF, 4,096 from PSUM: src/isa/access_rules.h, HARDWARE.md s2.3) become
several, as neuronx-cc splits them: parts over the outermost free dims that are not reduced,
each within the limit and a separate instruction (its own fixed cost). An instruction within
the limit is passed on unchanged. A reduction whose reduced dims alone exceed the limit is
reduced in parts into an fp32 SBUF scratch column each, and one more tensor_reduce combines
them (docs/nki.md, "Lowering").

Every instruction of a kernel passes through here (_ctx.Ctx wraps the C++ builder), so the
NKI calls need not know the limit."""

from __future__ import annotations

import itertools
import math

from trnsim import _core

Engine = _core.Engine

# Elements per partition VectorE streams per instruction, by operand memory (the core's
# isa/access_rules.h, so the two cannot drift).
VECTOR_MAX = {"sbuf": _core.VECTOR_FREE_MAX_SBUF, "psum": _core.VECTOR_FREE_MAX_PSUM}
# A free dim's size is at most 65,535 (a 16-bit field) and the builder merges contiguous dims,
# so parts stay within this too.
DIM_MAX = _core.MAX_FREE_SIZE

# Builder calls split elementwise: their parameters in order, the element operands among
# them (all of one shape) and the engine parameter (or the engine itself). Not split:
# tensor_tensor_scan (a carry along the free dims), dropout / rand (the lanes' random
# sequences), quantize_mx (scale blocks), and calls with limits of their own below this one
# (bn_stats, max8, find_index8, match_replace8, VectorE transpose).
_ELEMENTWISE = {
    "tensor_tensor": (("dst", "in0", "in1", "op", "engine"), ("dst", "in0", "in1"), "engine"),
    "tensor_scalar": (("dst", "src", "op0", "arg0", "reverse0", "op1", "arg1", "reverse1",
                       "engine"), ("dst", "src"), "engine"),
    "scalar_tensor_tensor": (("dst", "in0", "op0", "arg0", "reverse0", "op1", "in1"),
                             ("dst", "in0", "in1"), Engine.vector),
    "activation": (("dst", "src", "func", "scale", "bias", "alpha"), ("dst", "src"),
                   Engine.scalar),
    "tensor_copy": (("dst", "src", "engine"), ("dst", "src"), "engine"),
    "memset": (("dst", "value", "engine"), ("dst",), "engine"),
    "select": (("dst", "predicate", "on_true", "on_false"),
               ("dst", "predicate", "on_true", "on_false"), Engine.vector),
    "reciprocal": (("dst", "src"), ("dst", "src"), Engine.vector),
    "exponential": (("dst", "src", "max_value"), ("dst", "src"), Engine.vector),
}
_REDUCE = ("dst", "src", "op", "axes")
_SCALAR_REDUCE = ("dst", "reduce_dst", "src", "op0", "arg0", "reverse0", "reduce_op")


def _limit(views, engine=Engine.vector):
    """The most elements per partition of a part: VectorE's least limit of the operands'
    memories, or a dim's size on other engines (None: an operand not on chip)."""
    if any(v.space not in VECTOR_MAX for v in views):
        return None
    if engine != Engine.vector:
        return DIM_MAX
    return min(VECTOR_MAX[v.space] for v in views)


def _merged_dims(v):
    """The sizes of v's free dims once contiguous dims merge, as the builder merges them
    (View::access), outermost first."""
    dims = [(n, st) for n, st in zip(v.shape[1:], v.strides[1:]) if n > 1]
    sizes = []
    for i, (n, st) in enumerate(dims):
        if i and dims[i - 1][1] == st * n:
            sizes[-1] *= n
        else:
            sizes.append(n)
    return sizes


def _merged(v):
    """The largest free dim of v once contiguous dims merge."""
    return max(_merged_dims(v), default=1)


def _over(views, limit):
    """Whether an instruction over views exceeds limit elements or a dim's size."""
    n = math.prod(views[0].shape[1:])
    return n > limit or (n > DIM_MAX and any(_merged(v) > DIM_MAX for v in views))


def pieces(free, limit):
    """Index tuples over the free dims `free`, each part <= limit elements: dims that fit
    whole innermost, the next one in even chunks, the ones outside it one index at a time."""
    inner, j = 1, len(free)
    while j > 0 and inner * free[j - 1] <= limit:
        inner *= free[j - 1]
        j -= 1
    d = j - 1
    n = -(-free[d] // (limit // inner))
    size = -(-free[d] // n)
    chunks = [slice(s, min(s + size, free[d])) for s in range(0, free[d], size)]
    return [(*o, c) for o in itertools.product(*map(range, free[:d])) for c in chunks]


def _at(v, piece):
    return v[(slice(None), *piece)]


MAX_FREE_DIMS = 4  # free dims of an access pattern (isa::kMaxFreeDims, HARDWARE.md s3)


def _outer_pieces(views):
    """Index tuples over the fewest outermost free dims whose removal leaves every view at
    most MAX_FREE_DIMS free dims; None when no view has more."""
    if all(len(_merged_dims(v)) <= MAX_FREE_DIMS for v in views):
        return None
    free = list(views[0].shape[1:])
    for k in range(1, len(free)):
        rest = [v[(slice(None), *([0] * k))] for v in views]
        if all(len(_merged_dims(v)) <= MAX_FREE_DIMS for v in rest):
            return list(itertools.product(*map(range, free[:k])))
    return None


class SplittingBuilder:
    """The C++ KernelBuilder, with VectorE calls over the engine's limit split into parts.
    `name` gives fresh tile names (the scratch of split reductions)."""

    def __init__(self, kb, name):
        self._kb = kb
        self._name = name

    def __getattr__(self, name):
        f = getattr(self._kb, name)
        if name in _ELEMENTWISE:
            params, ops, eng = _ELEMENTWISE[name]
            g = lambda *a, **kw: self._elementwise(f, params, ops, eng, a, kw)  # noqa: E731
        elif name == "dma_copy":
            g = lambda *a, **kw: self._dma(f, a, kw)  # noqa: E731
        elif name == "tensor_reduce":
            g = lambda *a, **kw: self._reduce(f, a, kw)  # noqa: E731
        elif name == "tensor_scalar_reduce":
            g = lambda *a, **kw: self._scalar_reduce(f, a, kw)  # noqa: E731
        else:
            return f  # properties (num_instructions) are read each time
        self.__dict__[name] = g  # later calls skip __getattr__
        return g

    def _elementwise(self, f, params, ops, eng, a, kw):
        b = {**dict(zip(params, a)), **kw}
        views = [b[n] for n in ops]
        limit = _limit(views, b.get(eng, Engine.vector) if isinstance(eng, str) else eng)
        free = list(views[0].shape[1:])
        if all(list(v.shape[1:]) == free for v in views):
            outer = _outer_pieces(views)
            if outer is not None:  # more free dims than an access pattern has
                for p in outer:
                    self._elementwise(f, params, ops, eng, (), {**b, **{n: _at(b[n], p)
                                                                        for n in ops}})
                return None
        if limit is None or not _over(views, limit) or any(
                list(v.shape[1:]) != free for v in views):
            return f(*a, **kw)  # within the limit, or shapes the engine pairs its own way
        for p in pieces(free, min(limit, DIM_MAX)):
            f(**{**b, **{n: _at(b[n], p) for n in ops}})
        return None

    def _dma(self, f, a, kw):
        """A copy between views of one shape whose patterns have too many free dims."""
        b = {**dict(zip(("dst", "src"), a[:2])), **kw}
        dst, src = b.get("dst"), b.get("src")
        on_chip = [v for v in (dst, src) if v is not None and v.space != "hbm"]
        if dst is None or src is None or list(dst.shape) != list(src.shape) or not on_chip:
            return f(*a, **kw)
        outer = _outer_pieces([dst, src])
        if outer is None:
            return f(*a, **kw)
        rest = a[2:]
        kw = {k: v for k, v in kw.items() if k not in ("dst", "src")}
        for p in outer:
            f(_at(dst, p), _at(src, p), *rest, **kw)
        return None

    def _reduce(self, f, a, kw):
        b = {"axes": 1, **dict(zip(_REDUCE, a)), **kw}
        dst, src, axes = b["dst"], b["src"], b["axes"]
        limit = _limit([src])
        free = list(src.shape[1:])
        if limit is None or not 0 < axes <= len(free) or not _over([src], limit):
            return f(*a, **kw)
        kept, red = free[:len(free) - axes], free[len(free) - axes:]
        out = _kept_view(dst, kept)
        if out is None:
            return f(*a, **kw)
        r, limit = math.prod(red), min(limit, DIM_MAX)
        if r <= limit:
            dlimit = _limit([dst]) or limit
            for p in pieces(kept, min(limit // r, dlimit)):
                f(_at(out, p), _at(src, p), b["op"], axes)
            return None
        # The reduced dims alone exceed the limit: a partial result per part of them, for each
        # kept index, into a scratch column; one more reduction combines the columns.
        rp = pieces(red, limit)
        part = self._kb.sbuf(self._name("partial"), "fp32", [src.shape[0], *kept, len(rp)])
        for o in itertools.product(*map(range, kept)):
            for i, p in enumerate(rp):
                s = _at(src, (*o, *p))
                f(_at(part, (*o, slice(i, i + 1))), s, b["op"], len(s.shape) - 1)
        self._reduce(f, (out, part, b["op"], 1), {})
        return None

    def _scalar_reduce(self, f, a, kw):
        b = {**dict(zip(_SCALAR_REDUCE, a)), **kw}
        dst, src = b["dst"], b["src"]
        limit = _limit([dst, src])
        free = list(src.shape[1:])
        if limit is None or not _over([dst, src], limit) or list(dst.shape[1:]) != free:
            return f(*a, **kw)
        # Each part reduces its own elements into a scratch column; one reduction combines.
        ps = pieces(free, min(limit, DIM_MAX))
        part = self._kb.sbuf(self._name("partial"), "fp32", [src.shape[0], len(ps)])
        for i, p in enumerate(ps):
            f(**{**b, "dst": _at(dst, p), "src": _at(src, p),
                 "reduce_dst": part[:, i:i + 1]})
        op = b.get("reduce_op", _core.AluOp.add)
        self._reduce(self._kb.tensor_reduce, (b["reduce_dst"], part, op, 1), {})
        return None


def _kept_view(dst, kept):
    """dst as [P, *kept] (a keepdims result's trailing 1s kept as they are), or None."""
    got = list(dst.shape[1:])
    if got[:len(kept)] == kept and all(d == 1 for d in got[len(kept):]):
        return dst
    try:
        return dst.reshape([dst.shape[0], *kept])
    except ValueError:
        return None
