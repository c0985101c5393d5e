"""NKI tensors: a C++ View (HBM tensor or SBUF / PSUM tile) with NKI's methods and operators.

Three kinds share the class:
  * plain tensors (``v`` is the View),
  * Pending: the result of a legacy ISA call (``nisa.exp(x)``) not yet placed. It is emitted
    straight into its destination when assigned (``t[...] = nisa.exp(x)``, ``psum += ...``),
    else into a tile of its own before the next instruction (so order is kept),
  * Lazy: a legacy index with ``nl.arange`` / ``nl.mgrid`` expressions (_index.py), resolved
    when an instruction uses it (with the instruction's ``mask=``, _masking.py, which shortens
    the ranges).
"""

from __future__ import annotations

import numpy as np

from trnsim.nki import _ctx, _cse, _register
from trnsim.nki._ctx import NkiError
from trnsim.nki._source import here
from trnsim.nki._index import DynExpr, abs_pattern, has_expr, key_holds, resolve_index
from trnsim.nki._dtypes import PACKED_MX, format_name, packed_format
from trnsim.numerics import numpy_dtype

_BUFFER_OF_SPACE = {"sbuf": "sbuf", "psum": "psum", "hbm": "hbm"}


def np_dtype(fmt: str):
    """numpy / ml_dtypes dtype of a trnsim format name (the name itself if numpy has none)."""
    dt = numpy_dtype(fmt)
    return fmt if dt is None else dt


def _split_sizes(n, shape, what):
    """`shape` (ints, at most one -1) for a dim of n elements, the -1 inferred."""
    sizes = [_opsmod().integer(k, f"{what}: size") for k in
             (shape if isinstance(shape, (tuple, list)) else [shape])]
    if sizes.count(-1) > 1 or any(k < 1 and k != -1 for k in sizes):
        raise NkiError(f"{what}: sizes are positive, one of them may be -1")
    known = int(np.prod([k for k in sizes if k != -1]))
    if -1 in sizes:
        if n % known:
            raise NkiError(f"{what}: {known} does not divide the dim's {n} elements")
        sizes[sizes.index(-1)] = n // known
    if int(np.prod(sizes)) != n:
        raise NkiError(f"{what}: sizes {sizes} do not make the dim's {n} elements")
    return sizes


def _einops_sides(pattern, what):
    """The axis groups of each side of an einops pattern: "(a b) c -> c a b" gives
    ([[a, b], [c]], [[c], [a], [b]])."""
    if not isinstance(pattern, str) or pattern.count("->") != 1:
        raise NkiError(f"{what}: a pattern 'left -> right', e.g. '(g n) d -> n g d'")
    sides = []
    for side in pattern.split("->"):
        groups, cur = [], None
        for tok in side.replace("(", " ( ").replace(")", " ) ").split():
            if tok == "(":
                if cur is not None:
                    raise NkiError(f"{what}: nested parentheses")
                cur = []
            elif tok == ")":
                if not cur:
                    raise NkiError(f"{what}: an empty or unopened group")
                groups.append(cur)
                cur = None
            elif tok.isidentifier():
                (cur.append(tok) if cur is not None else groups.append([tok]))
            else:
                raise NkiError(f"{what}: {tok!r}: trnsim takes axis names and parentheses "
                               "(no '...', no literal sizes)")
        if cur is not None:
            raise NkiError(f"{what}: an unclosed group")
        sides.append(groups)
    names = [a for g in sides[0] for a in g]
    if len(set(names)) != len(names):
        raise NkiError(f"{what}: an axis named twice")
    return sides


class NkiTensor:
    """A tensor in HBM, SBUF or PSUM, or a view of one (slices share the memory)."""

    __slots__ = ("v", "_iadd", "_element", "__weakref__")

    def __init__(self, view):
        self.v = view
        self._iadd = False
        self._element = False  # one element of a tile picked by integers (tab[b, 0])

    # --- what it is ---
    def _view(self):
        return self.v

    @property
    def shape(self):
        return tuple(self._view().shape)

    @property
    def dtype(self):
        return np_dtype(self._view().dtype)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape))

    @property
    def itemsize(self):
        """Bytes of one element (nki.tensor's itemsize)."""
        return int(np.dtype(self.dtype).itemsize)

    def assert_shape(self, shape):
        """Raises unless the tensor has this shape; returns the tensor (nki.tensor)."""
        want = tuple(int(s) for s in shape)
        if tuple(self.shape) != want:
            raise NkiError(f"assert_shape: {self!r} has shape {tuple(self.shape)}, not {want}")
        return self

    @property
    def buffer(self):
        from trnsim.nki import language as nl

        return {"sbuf": nl.sbuf, "psum": nl.psum, "hbm": nl.hbm}[self._view().space]

    @property
    def name(self):
        return self._view().name

    def __len__(self):
        return self.shape[0]

    # A tile holds no values at trace time: iterating it, or giving it to numpy, float() or
    # int(), is a mistake to name (Python's own fallback ran the index past the end).
    def _no_values(self, *args, **kwargs):
        raise NkiError(f"{self!r} has no values at trace time (the kernel is traced, then run): "
                       "use it as an operand of nl / nisa calls, or return it and read the "
                       "numpy result")

    __iter__ = __array__ = __float__ = __int__ = __index__ = __complex__ = _no_values
    # numpy and ml_dtypes scalars then leave their operators to ours: np.float32(2) * t and
    # ml_dtypes.bfloat16(2) * t call t.__rmul__ (numpy tried to read the tile's values).
    __array_ufunc__ = None

    def __repr__(self):
        return f"NkiTensor({self._view().describe()})"

    # --- views ---
    def __getitem__(self, key):
        key = plain_key(key)
        if _has_dynamic_expr(key):  # t[nl.arange(n)[:, None] + s, ...], s known at run time
            return _register.index_dynamic(self, key)
        if _register.has_register(key):  # t[i]: moved by a device register (_register.py)
            return _register.index(self, key)
        if self._view().space == "hbm" and _has_element(key):
            # t[tab[b, 0], :]: one element of a tile is a scalar index (the dim goes), read
            # into a register when the access runs, as NKI's dynamic scalar index.
            return _register.index_by_elements(self, key)
        if _has_tile(key):  # t[idx_tile, ...]: rows picked at run time (_indirect.py)
            from trnsim.nki import _indirect

            return _indirect.from_index(self, key)
        if has_expr(key):
            return Lazy(self, key)
        v = self._view()
        element = v.space != "hbm" and _all_integers(key, len(v.shape))
        c = _ctx._current
        if c is not None and c.dialect == "legacy" and v.space != "hbm":
            key = keep_free_dim(key, v.shape)
        try:
            out = NkiTensor(v[key])
            out._element = element
            return out
        except TypeError as e:  # the C++ index check's own message (bind_kernel.cc)
            raise NkiError(str(e)) from None
        except ValueError as e:  # a slice past the end: usable under a mask that drops it
            over = Overhang.of(self, v, key, e)
            if over is None:
                raise
            return over

    def __setitem__(self, key, value):
        dst = self[key]
        if isinstance(value, NkiTensor) and value._iadd:
            value._iadd = False
            if same_view(dst._view(), value._view()):
                return  # t[k] += x: the update already happened in __iadd__
        from trnsim.nki import _ops

        _ops.assign(dst, value)

    def reshape(self, *shape, **kwargs):
        """The same elements with another shape (the partition dim stays): ``t.reshape(4, 8)``,
        ``t.reshape((4, 8))`` or ``t.reshape(shape=(4, 8))``."""
        if "shape" in kwargs:
            if shape:
                raise NkiError("NkiTensor.reshape: give the shape once (positionally or as "
                               "shape=)")
            shape = (kwargs.pop("shape"),)
        if kwargs:
            raise NkiError(f"NkiTensor.reshape: unexpected arguments {sorted(kwargs)}")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return self._reshaped(_opsmod().dims(shape, "NkiTensor.reshape: shape"))

    def _reshaped(self, shape):
        return NkiTensor(self._view().reshape(shape))

    def broadcast_to(self, shape):
        """Size-1 dims repeated to ``shape``: free dims as a view (stride 0); a 1-partition
        tile to more partitions into a new tile (TensorE, or DMA for integers: _broadcast.py),
        since partitions are separate memories."""
        shape = tuple(_opsmod().dims(shape, "broadcast_to: shape"))
        v = self._view()
        if v.space != "hbm" and v.shape[0] == 1 and shape and shape[0] > 1:
            from trnsim.nki import _broadcast

            return _broadcast.broadcast(self, shape)
        return NkiTensor(broadcast_view(v, shape))

    def broadcast(self, dim, size):
        """Dim ``dim`` (of size 1) repeated ``size`` times."""
        shape = list(self.shape)
        shape[self._dim(dim, "broadcast")] = size
        return self.broadcast_to(shape)

    def view(self, dtype):
        """The same bytes read as another dtype (a packed MX dtype: four elements per packed
        element of the innermost dim)."""
        return self._viewed(dtype, "NkiTensor.view: dtype")

    def _viewed(self, dtype, what):
        if packed_format(dtype):
            return packed_view(self._view(), dtype, what)
        return NkiTensor(self._view().bitcast(format_name(dtype, what)))

    def ap(self, pattern=None, offset=0, *args, dtype=None, **kwargs):
        """A hardware access pattern over this tensor: [[step, num], ...] from ``offset``
        elements (NKI's ``.ap()``). ``vector_offset=idx_tile, indirect_dim=0`` makes it an
        indirect access whose row p is the tensor's row idx[p] (_indirect.py);
        ``scalar_offset=r`` (a register, or a one-element tile read into one) moves it by r
        times the stride of the tensor's dim ``indirect_dim`` when the instruction runs."""
        if args and isinstance(pattern, (list, tuple)) and pattern and \
                not isinstance(pattern[0], (list, tuple)):
            pattern = [pattern, *args]  # t.ap([32, 16], [1, 32])
        if pattern is None:
            raise NkiError("NkiTensor.ap: a pattern [[step, num], ...] is needed")
        if kwargs.get("vector_offset") is not None:
            from trnsim.nki import _indirect

            return _indirect.from_ap(self, pattern, offset, kwargs["vector_offset"],
                                     kwargs.get("indirect_dim", 0), dtype)
        ops = _opsmod()
        pattern = ops.pattern_of(pattern, "NkiTensor.ap: pattern")
        offset = ops.integer(offset, "NkiTensor.ap: offset")
        t = self if dtype is None else self._viewed(dtype, "NkiTensor.ap: dtype")
        if kwargs.get("scalar_offset") is None:
            return t._with_pattern(pattern, offset)
        reg, owned = _register.scalar_offset(kwargs["scalar_offset"])
        # indirect_dim names a dim of the tensor: the offset moves by its stride.
        base = t._view()
        dim = ops.integer(kwargs.get("indirect_dim") or 0, "NkiTensor.ap: indirect_dim", 0,
                          len(base.shape) - 1)
        if dim == 0 and base.space != "hbm":
            _ctx.unsupported("NkiTensor.ap(scalar_offset=) along the partition dim of an on-chip "
                             "tensor", "move it along a free dim (indirect_dim >= 1)")
        step = base.strides[dim]
        moved = t._with_pattern(pattern, offset + reg.bias * step)._view()
        try:
            out = NkiTensor(moved.dynamic(reg.r, reg.scale * step))
        except ValueError as e:
            raise NkiError(str(e)) from None
        if owned:  # a register read from a tile for this view: free once the view is gone
            _register.free_with(out, reg)
        return out

    def _with_pattern(self, pattern, offset):
        """The tensor's elements in an .ap() pattern (its steps and offset in elements)."""
        return NkiTensor(self._view().pattern(pattern, offset))

    def _pattern(self):
        """(steps per dim, offset) of this view, in .ap()'s units."""
        return abs_pattern(self._view())

    def astype(self, dtype):
        """A copy in a new tile with another dtype (values converted, RNE)."""
        from trnsim.nki import _ops

        return _ops.new_like(self, dtype=dtype, copy=True)

    def get_pattern(self):
        """[[step, num], ...] of this view over its tensor (the partition step on chip is the
        tile's elements per partition)."""
        strides, _ = self._pattern()
        return [[st, n] for st, n in zip(strides, self.shape)]

    @property
    def strides(self):
        return tuple(self._pattern()[0])

    @property
    def offset(self):
        return self._pattern()[1]

    # --- the view methods of NKI 0.4+ (NkiTensor.slice, select, permute, ...) ---
    def _dim(self, dim, call, extra=0):
        """A dim index in -(ndim + extra)..ndim + extra - 1, made non-negative (taken modulo
        the rank, an out-of-range dim named another dim)."""
        n = self.ndim + extra
        dim = _opsmod().integer(dim, f"NkiTensor.{call}: dim")
        if not -n <= dim < n:
            raise NkiError(f"NkiTensor.{call}: dim {dim} is out of range for a {self.ndim}-dim "
                           "tensor")
        return dim % n

    def _key(self, dim, k, call):
        dim = self._dim(dim, call)
        return tuple(k if i == dim else slice(None) for i in range(self.ndim))

    def slice(self, dim, start, end, step=1):
        """Elements start:end:step of dim `dim`."""
        ops = _opsmod()
        start, end = ops.integer(start, "NkiTensor.slice: start"), ops.integer(
            end, "NkiTensor.slice: end")
        return self[self._key(dim, slice(start, end, ops.integer(step, "NkiTensor.slice: step")),
                              "slice")]

    def select(self, dim, index):
        """Position `index` of dim `dim` (the dim is dropped; on chip the partition dim
        stays with size 1)."""
        return self[self._key(dim, _opsmod().integer(index, "NkiTensor.select: index"), "select")]

    def expand_dim(self, dim):
        """A new size-1 dim at position `dim`."""
        shape = list(self.shape)
        shape.insert(self._dim(dim, "expand_dim", 1), 1)
        return self.reshape(shape)

    def squeeze_dim(self, dim):
        """Drops size-1 dim `dim`."""
        shape = list(self.shape)
        dim = self._dim(dim, "squeeze_dim")
        if shape[dim] != 1:
            raise NkiError(f"squeeze_dim({dim}): the dim has size {shape[dim]}, not 1")
        del shape[dim]
        return self.reshape(shape)

    def flatten_dims(self, start, end):
        """Dims start..end (inclusive) merged into one (they must be contiguous)."""
        shape = list(self.shape)
        start, end = self._dim(start, "flatten_dims"), self._dim(end, "flatten_dims")
        if end < start:
            raise NkiError(f"NkiTensor.flatten_dims({start}, {end}): end is before start")
        return self.reshape(shape[:start] + [int(np.prod(shape[start:end + 1]))] + shape[end + 1:])

    def permute(self, *dims):
        """The dims reordered (on chip the partition dim stays first)."""
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = dims[0]
        dims = [self._dim(d, "permute") for d in dims]
        if sorted(dims) != list(range(self.ndim)):
            raise NkiError(f"NkiTensor.permute{tuple(dims)}: not a permutation of the "
                           f"{self.ndim} dims")
        strides, offset = self._pattern()
        shape = self.shape
        return self._with_pattern([(strides[d], shape[d]) for d in dims], offset)

    def reshape_dim(self, dim, shape):
        """Dim `dim` split into dims of sizes `shape` (one may be -1), row-major: a view of the
        same elements, whatever the tensor's other steps."""
        d = self._dim(dim, "reshape_dim")
        sizes = _split_sizes(self.shape[d], shape, f"NkiTensor.reshape_dim({dim}, {shape!r})")
        if d == 0 and len(sizes) != 1 and self._view().space != "hbm":
            raise NkiError(f"NkiTensor.reshape_dim({dim}, {shape!r}): the partition dim of an "
                           "on-chip tile cannot be split")
        strides, offset = self._pattern()
        dims = list(zip(strides, self.shape))
        step, new = strides[d], []
        for n in reversed(sizes):
            new.insert(0, (step, n))
            step *= n
        dims[d:d + 1] = new
        return self._with_pattern(dims, offset)

    def rearrange(self, pattern, **sizes):
        """einops' rearrange as a view: ``t.rearrange("(g n) d -> n g d", g=2)``. Left groups
        split dims (sizes from the keywords, one inferred per group), the right side orders the
        axes and merges groups, which must be one strided dim (else an NkiError)."""
        what = f"NkiTensor.rearrange({pattern!r})"
        left, right = _einops_sides(pattern, what)
        if len(left) != self.ndim:
            raise NkiError(f"{what}: the left side names {len(left)} dims; the tensor has "
                           f"{self.ndim}")
        strides, offset = self._pattern()
        axes = {}
        for (st, n), group in zip(zip(strides, self.shape), left):
            known = {a: _opsmod().integer(sizes[a], f"{what}: {a}") for a in group if a in sizes}
            split = _split_sizes(n, [known.get(a, -1) for a in group], what)
            step = st
            for a, k in reversed(list(zip(group, split))):
                axes[a] = (step, k)
                step *= k
        named = [a for g in right for a in g]
        if sorted(named) != sorted(axes):
            raise NkiError(f"{what}: the right side must name each axis of the left once")
        if self._view().space != "hbm" and right[0] != left[0]:
            raise NkiError(f"{what}: the partition dim of an on-chip tile stays first, as it is")
        dims = []
        for g in right:
            step, n = axes[g[-1]]
            for a in reversed(g[:-1]):  # each outer axis must step over the inner ones whole
                if axes[a][0] != step * n:
                    raise NkiError(f"{what}: ({' '.join(g)}) is not one strided dim of the "
                                   "tensor's elements (copy it to merge them)")
                n *= axes[a][1]
            dims.append((step, n))
        return self._with_pattern(dims, offset)

    def _unsupported(name):
        def f(self, *args, **kwargs):
            _ctx.unsupported(f"NkiTensor.{name}", "use indexing, reshape, permute, view or .ap()")

        f.__name__ = name
        return f

    vector_select = _unsupported("vector_select")
    indirect = _unsupported("indirect")
    reinterpret_cast = _unsupported("reinterpret_cast")
    del _unsupported

    def is_contiguous(self):
        strides, _ = self._pattern()
        expect = 1
        for st, n in reversed(list(zip(strides, self.shape))[1:]):
            if n > 1 and st != expect:
                return False
            expect *= n
        return True

    # --- operators: elementwise instructions into new tiles ---
    def _bin(self, other, op, reverse=False):
        from trnsim.nki import _ops

        return _ops.binary(other, self, op) if reverse else _ops.binary(self, other, op)

    def __add__(self, o): return self._bin(o, "add")
    def __radd__(self, o): return self._bin(o, "add", True)
    def __sub__(self, o): return self._bin(o, "subtract")
    def __rsub__(self, o): return self._bin(o, "subtract", True)
    def __mul__(self, o): return self._bin(o, "mult")
    def __rmul__(self, o): return self._bin(o, "mult", True)
    def __truediv__(self, o): return self._bin(o, "divide")
    def __rtruediv__(self, o): return self._bin(o, "divide", True)
    def __pow__(self, o): return self._bin(o, "pow")
    def __rpow__(self, o): return self._bin(o, "pow", True)
    def __mod__(self, o): return self._bin(o, "mod")
    def __and__(self, o): return self._bin(o, "bitwise_and")
    def __or__(self, o): return self._bin(o, "bitwise_or")
    def __xor__(self, o): return self._bin(o, "bitwise_xor")
    def __lshift__(self, o): return self._bin(o, "shift_left")
    def __rshift__(self, o): return self._bin(o, "shift_right_logical")
    def __lt__(self, o): return self._bin(o, "is_lt")
    def __le__(self, o): return self._bin(o, "is_le")
    def __gt__(self, o): return self._bin(o, "is_gt")
    def __ge__(self, o): return self._bin(o, "is_ge")
    # `t == None` / `t != None` ask whether an optional argument was given (NKI's tracer
    # answers in Python): a bool, not an element-wise comparison.
    def __eq__(self, o): return False if o is None else self._bin(o, "is_equal")
    def __ne__(self, o): return True if o is None else self._bin(o, "not_equal")
    __hash__ = object.__hash__

    def __neg__(self):
        return self._bin(-1.0, "mult")

    def __abs__(self):
        from trnsim.nki import _ops

        return _ops.unary_alu(self, "abs")

    def __invert__(self):
        from trnsim.nki import _ops

        return _ops.unary_alu(self, "bitwise_not")

    def _inplace(self, o, op):
        from trnsim.nki import _ops

        _ops.accumulate(self, o, op)
        self._iadd = True  # t[k] op= x: the __setitem__ that follows has nothing to do
        return self

    def __iadd__(self, o): return self._inplace(o, "add")
    def __isub__(self, o): return self._inplace(o, "subtract")
    def __imul__(self, o): return self._inplace(o, "mult")

    def __bool__(self):
        # An HBM tensor is a Python object in NKI, true as any (`x if t else None` on an
        # optional kernel argument); a tile's values are not known while tracing.
        v = getattr(self, "v", None)
        if v is not None and v.space == "hbm":
            return True
        raise NkiError("a tile has no truth value at trace time (use nl.where / nisa.select)")


def plain_key(key):
    """An index as a plain tuple: an nl.mgrid object is a tuple subclass (its .p / .x fields),
    and t[nl.mgrid[0:128, 0:512]] indexes with its fields in order, as t[g.p, g.x] does."""
    if type(key) is not tuple and isinstance(key, tuple):
        return tuple(key)
    return key


def _all_integers(key, ndim):
    key = key if type(key) is tuple else (key,)
    return len(key) == ndim and all(
        isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in key)


def _has_dynamic_expr(key):
    return key_holds(key, DynExpr)


def _has_element(key):
    key = key if type(key) is tuple else (key,)
    return any(isinstance(k, NkiTensor) and k._element for k in key)


def _has_tile(key):
    """Whether an index holds a tile (nl.load(t[idx_tile, ...]): an indirect DMA)."""
    if type(key) is tuple:
        for k in key:
            if isinstance(k, NkiTensor):
                return True
        return False
    return isinstance(key, NkiTensor)


def keep_free_dim(key, shape):
    """A legacy tile index whose ints would drop every free dim keeps the last of them as
    size 1: NKI 0.1 tiles have a partition dim and at least one free dim (``t[:, i]`` of a
    [P, n] tile is [P, 1]; ints on other free dims still drop theirs)."""
    key = key if type(key) is tuple else (key,)
    if len(shape) < 2 or None in key or sum(k is Ellipsis for k in key) > 1:
        return key
    if Ellipsis in key:  # as the slices it stands for
        e = key.index(Ellipsis)
        key = key[:e] + (slice(None),) * (len(shape) - len(key) + 1) + key[e + 1:]
    key = key + (slice(None),) * (len(shape) - len(key))
    if len(key) != len(shape):
        return key  # too many indices: the View's own error
    ints = [d for d in range(1, len(key)) if _is_int(key[d])]
    if len(ints) < len(key) - 1:
        return key  # a free dim stays
    d = ints[-1]
    i = int(key[d])
    if not -shape[d] <= i < shape[d]:
        return key  # out of range: the View's own error
    i %= shape[d]
    return key[:d] + (slice(i, i + 1),) + key[d + 1:]


def _is_int(k):
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def _opsmod():
    from trnsim.nki import _ops as ops  # a cycle at import time: _ops imports this module

    return ops


def same_view(a, b):
    return (a.same_region(b) and a.shape == b.shape and a.strides == b.strides
            and a.offset == b.offset and a.start_partition == b.start_partition)


def broadcast_view(v, shape, check_only=False):
    """v with its size-1 dims repeated to `shape` (stride 0); check_only: only the checks, the
    partition dim of an on-chip tile allowed (_broadcast.py copies it)."""
    have = list(v.shape)
    shape = tuple(shape)
    if len(shape) != len(have):
        raise NkiError(f"broadcast_to: shape {tuple(have)} to {shape}: ranks differ")
    on_chip = v.space != "hbm"
    for d in range(len(shape) - 1, -1, -1):
        if have[d] == shape[d]:
            continue
        if have[d] != 1:
            raise NkiError(f"broadcast_to: dim {d} of {tuple(have)} is {have[d]}, not 1")
        if check_only:
            continue
        if d == 0 and on_chip:
            raise NkiError("broadcast_to: the partition dim cannot be broadcast on chip "
                           "(partitions are separate memories); load the data into each "
                           "partition instead")
        key = tuple(0 if i == d else slice(None) for i in range(len(have)))
        v = v[key].broadcast(d, int(shape[d]))
    return v


_FP4 = "fp4_e2m1"


class Packed(NkiTensor):
    """A tensor of a packed MX dtype (nl.float8_e4m3fn_x4, ...) of NKI shape [P, ..., F]: its
    View holds the elements, [P, ..., F, 4], the four of a packed element consecutive in a
    partition as the MX instructions read them (one K group, AG4). Indexing, reshape and
    .ap() are in packed elements, as NKI's."""

    __slots__ = ("pdtype",)

    def __init__(self, view, dtype):
        super().__init__(view)
        self.pdtype = dtype

    @property
    def shape(self):
        return tuple(self.v.shape[:-1])

    @property
    def dtype(self):
        return self.pdtype

    def __repr__(self):
        return f"NkiTensor({self.pdtype}{list(self.shape)}: {self.v.describe()})"

    def __getitem__(self, key):
        key = plain_key(key)
        if _has_tile(key) or has_expr(key):
            _ctx.unsupported(f"indexing the packed MX tensor {self!r} with a tile or nl.arange",
                             "use ints, slices and nl.ds")
        key = key if type(key) is tuple else (key,)
        if sum(k is not Ellipsis and k is not None for k in key) > len(self.shape):
            raise NkiError(f"{self!r}: index {key!r} has more dims than the tensor")
        try:  # the innermost dim (the four elements of a packed element) stays whole
            return Packed(self.v[key + (slice(None),)], self.pdtype)
        except TypeError as e:
            raise NkiError(str(e)) from None

    def _reshaped(self, shape):
        return Packed(self.v.reshape(list(shape) + [4]), self.pdtype)

    def _pattern(self):
        strides, offset = abs_pattern(self.v)
        return [s // 4 for s in strides[:-1]], offset // 4

    def _with_pattern(self, pattern, offset):
        return Packed(self.v.pattern([(4 * s, n) for s, n in pattern] + [(1, 4)], 4 * offset),
                      self.pdtype)

    def _viewed(self, dtype, what):
        elem = packed_format(dtype)
        if elem is not None and (elem == _FP4) == (self.v.dtype == _FP4):
            return Packed(self.v.bitcast(elem), dtype)
        if self.v.dtype == _FP4 and (elem is not None or format_name(dtype, what) != _FP4):
            _ctx.unsupported(f"{what} {dtype} of {self!r}", _FP4_BYTES)
        strides, offset = abs_pattern(self.v)
        if strides[-2] != 4:
            raise NkiError(f"{what}: {self!r} does not hold its packed elements one after "
                           "the other, so its bytes are not one run per row")
        dims = list(zip(strides[:-2], self.v.shape[:-2])) + [(1, 4 * self.v.shape[-2])]
        return NkiTensor(self.v.pattern(dims, offset))._viewed(dtype, what)

    def astype(self, dtype):
        _ctx.unsupported(f"{self!r}.astype", "MX elements mean nothing without their scales: "
                         "nisa.nc_matmul_mx dequantises them")

    def broadcast_to(self, shape):
        _ctx.unsupported(f"{self!r}.broadcast_to", "a packed MX tensor is read by DMA, copies "
                         "and the MX instructions only")


# Why a float4_e2m1fn_x4 tensor is viewed only from / as fp4 data.
_FP4_BYTES = ("trnsim holds an fp4 element in a byte of its own (as ml_dtypes' float4_e2m1fn "
              "arrays do), not two to a byte as the hardware does, so other dtypes' bytes do "
              "not map onto it: pass float4_e2m1fn arrays")


def packed_view(v, dtype, what):
    """View `v`'s bytes as the packed MX dtype `dtype`: its innermost dim, in elements of the
    packed dtype, split into packed elements of four."""
    elem = PACKED_MX[dtype]
    if (elem == _FP4) != (v.dtype == _FP4):
        _ctx.unsupported(f"{what} {dtype} of {v.describe()}", _FP4_BYTES if elem == _FP4 else
                         "an fp4 tensor's bytes are not fp8 elements")
    v = v.bitcast(elem)
    strides, offset = abs_pattern(v)
    n = v.shape[-1]
    if n % 4 or offset % 4 or strides[-1] != 1 or any(s % 4 for s in strides[:-1]):
        raise NkiError(f"{what}: {v.describe()} is not whole {dtype} elements (four "
                       f"{elem} elements each, from a multiple of four)")
    dims = list(zip(strides[:-1], v.shape[:-1])) + [(4, n // 4), (1, 4)]
    return Packed(v.pattern(dims, offset), dtype)


class Pending(NkiTensor):
    """A legacy ISA call's result before it has a place (see module docstring)."""

    __slots__ = ("emit", "pshape", "pdtype", "pbuffer", "kind", "where")

    def __init__(self, emit, shape, dtype, buffer="sbuf", kind=""):
        super().__init__(None)
        self.where = here()  # the kernel line of the call: its instruction's, when placed
        self.emit = emit
        # a 1-D result is an [n, 1] tile and one element a [1, 1] tile, as placement makes
        # them (_ops.alloc), so the shape does not change when it is placed
        self.pshape = tuple(int(s) for s in shape)
        self.pshape += (1,) * max(0, 2 - len(self.pshape))
        self.pdtype = format_name(dtype)
        self.pbuffer = buffer
        self.kind = kind  # "matmul": psum += accumulates
        c = _ctx.ctx()
        c.flush()
        c.pending.append(self)

    def _view(self):
        return self.v if self.v is not None else self.materialize()

    @property
    def shape(self):
        return self.pshape if self.v is None else tuple(self.v.shape)

    @property
    def dtype(self):
        return np_dtype(self.pdtype) if self.v is None else np_dtype(self.v.dtype)

    def take(self):
        """Removes it from the pending list: the caller emits it into its destination."""
        c = _ctx.ctx()
        if self in c.pending:
            c.pending.remove(self)
            return True
        return False

    def materialize(self):
        if self.v is None:
            self.take()
            from trnsim.nki import _ops

            kb = _ctx.ctx().kb
            kb.fixed = self.where
            try:
                t = _ops.alloc(self.pshape, self.pdtype, self.pbuffer, where=self.where)
                self.v = _cse.emit(_ctx.ctx(), self, t.v)
            finally:
                kb.fixed = None
            self.emit = None  # its operands need not live as long as the result
        return self.v


class Overhang(NkiTensor):
    """An HBM access by integers and slices whose slices run past the tensor's end
    (``t[nl.ds(i * 128, 128)]`` of a tensor with fewer rows): the shape it names, for an
    instruction whose mask= keeps only elements inside (NKI's masked tail tiles). A mask cuts
    it (Masking.cut indexes it) to an access inside the tensor; used whole, it raises the
    index error it was made from."""

    __slots__ = ("base", "key", "oshape", "error")

    def __init__(self, base, key, shape, error):
        super().__init__(None)
        self.base, self.key, self.oshape, self.error = base, key, shape, error

    @classmethod
    def of(cls, base, v, key, error):
        """The overhang of v[key], or None when key is not ints and step-1 slices that start
        inside the tensor (other index errors stay errors)."""
        if v.space != "hbm":
            return None
        key = key if isinstance(key, tuple) else (key,)
        if len(key) > len(v.shape) or any(k is Ellipsis or k is None for k in key):
            return None
        full, shape, past = [], [], False
        for k, n in zip(key + (slice(None),) * (len(v.shape) - len(key)), v.shape):
            if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
                if not 0 <= k < n:
                    return None
                full.append(int(k))
                continue
            if not isinstance(k, slice) or k.step not in (None, 1):
                return None
            start = 0 if k.start is None else int(k.start)
            stop = n if k.stop is None else int(k.stop)
            if start < 0 or stop <= start or start >= n:
                return None
            past |= stop > n
            full.append(slice(start, stop))
            shape.append(stop - start)
        # The message only: the exception's traceback would keep the frames' Views alive.
        return cls(base, tuple(full), tuple(shape), str(error)) if past else None

    @property
    def shape(self):
        return self.oshape

    @property
    def dtype(self):
        return self.base.dtype

    def _view(self):
        raise NkiError(f"{self.error} (a slice past the tensor's end is taken only under a "
                       "mask= that keeps the elements inside)") from None

    def __getitem__(self, key):
        """The access limited by `key` (a mask's box: slices of this access's dims), made
        again on the tensor."""
        key = key if isinstance(key, tuple) else (key,)
        parts, it = [], iter(key)
        for k in self.key:
            if not isinstance(k, slice):
                parts.append(k)
                continue
            sub = next(it, slice(None))
            if not isinstance(sub, slice) or sub.step not in (None, 1):
                raise NkiError("an access past the tensor's end is cut by slices only")
            lo = 0 if sub.start is None else sub.start
            hi = k.stop - k.start if sub.stop is None else sub.stop
            parts.append(slice(k.start + lo, k.start + hi))
        return self.base[tuple(parts)]


class Lazy(NkiTensor):
    """A legacy index expression (nl.arange / nl.mgrid), resolved at its instruction."""

    __slots__ = ("base", "key")

    def __init__(self, base, key):
        super().__init__(None)
        self.base = base
        self.key = key if isinstance(key, tuple) else (key,)

    def _view(self):
        return self.resolve(None)

    def resolve(self, extents):
        return resolve_index(self.base._view(), self.key, extents)

    def __getitem__(self, key):
        raise NkiError("nested indexing of an nl.arange-indexed tile is not supported by NKI")


class Blocked:
    """A legacy tensor with block dims before the partition dim (``nl.ndarray((4,
    nl.par_dim(128), 512))``): one tile per block index, which an index's leading integers
    pick (NKI allocates it the same way: each block is a tile of its own)."""

    def __init__(self, tiles, blocks, tile_shape, dtype):
        self.tiles, self.blocks, self.tile_shape = tiles, tuple(blocks), tuple(tile_shape)
        self.dtype = np_dtype(format_name(dtype))

    @property
    def shape(self):
        return self.blocks + self.tile_shape

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def itemsize(self):
        return int(self.dtype.itemsize)

    def _pick(self, key):
        key = key if isinstance(key, tuple) else (key,)
        n = len(self.blocks)
        if len(key) < n or not all(isinstance(k, (int, np.integer)) for k in key[:n]):
            _ctx.unsupported("indexing the block dims of a blocked tensor other than by "
                             "integers")
        flat = int(np.ravel_multi_index(tuple(int(k) for k in key[:n]), self.blocks))
        return self.tiles[flat], key[n:] or (Ellipsis,)

    def __getitem__(self, key):
        t, rest = self._pick(key)
        return t[rest]

    def view(self, dtype):
        """Every block's tile viewed as `dtype` (its bytes reinterpreted, the last dim scaled
        by the element sizes)."""
        tiles = [t.view(dtype) for t in self.tiles]
        return Blocked(tiles, self.blocks, tiles[0].shape, dtype)

    def __setitem__(self, key, value):
        t, rest = self._pick(key)
        t[rest] = value
