"""nki.language for trnsim: tensor creation, memory buffers, index helpers, SPMD ids, dtypes,
tile sizes, and the convenience operations (load / store / copy / matmul / transpose and the
math functions) that map to one or a few ISA instructions.

One module serves both dialects: the legacy one (``neuronxcc.nki.language``: ``nl.arange``,
``nl.mgrid``, ``mask=``, ``nl.par_dim``) and the current one (``nki.language``). Functions that
compute return a new tile (placed directly where it is assigned, see _tensor.Pending).
"""

from __future__ import annotations

import builtins
import contextlib
import sys

import ml_dtypes
import numpy as np

from trnsim import _check
from trnsim.nki import _ctx, _gather, _ops, _register
from trnsim.nki._ctx import NkiError, stub, unsupported
from trnsim.nki._index import Expr, Range, abs_pattern
from trnsim.nki._indirect import Indirect
from trnsim.nki._masking import Masking, Void
from trnsim.nki._tensor import Blocked, Lazy, NkiTensor, Packed, Pending
from trnsim.nki._dtypes import NkiDType, finfo, format_name, packed_format  # noqa: F401 - nl.finfo
from trnsim.nki import _lang_constants as constants

# ``import nki.language.constants`` finds it by its full name (this module is no package).
sys.modules[__name__ + ".constants"] = constants

# --- data types (numpy / ml_dtypes dtypes with their limits, nl.fp32.min: _dtypes.py) ---
bool_ = NkiDType(np.uint8)
int8, int16, int32 = NkiDType(np.int8), NkiDType(np.int16), NkiDType(np.int32)
uint8, uint16, uint32 = NkiDType(np.uint8), NkiDType(np.uint16), NkiDType(np.uint32)
float16, float32 = NkiDType(np.float16), NkiDType(np.float32)
bfloat16 = NkiDType(ml_dtypes.bfloat16)
tfloat32 = "tf32"
float8_e4m3 = NkiDType(ml_dtypes.float8_e4m3)
float8_e4m3fn = NkiDType(ml_dtypes.float8_e4m3fn)
float8_e5m2 = NkiDType(ml_dtypes.float8_e5m2)
float8_e8m0fnu = NkiDType(ml_dtypes.float8_e8m0fnu)  # MX scales (or uint8 holding their bits)
fp32 = float32
# Packed MX dtypes, four elements to a packed element: names, not numpy dtypes (_tensor.Packed).
float8_e5m2_x4 = "float8_e5m2_x4"
float8_e4m3fn_x4 = "float8_e4m3fn_x4"
float4_e2m1fn_x4 = "float4_e2m1fn_x4"


# --- memory buffers ---
class _Buffer:
    def __init__(self, name, space):
        self.name, self.space = name, space

    def __repr__(self):
        return f"nl.{self.name}"

    def __call__(self, *args, **kwargs):  # nl.sbuf.mod_alloc(...) style allocators
        return self

    def view(self, dtype, shape, name="", **kwargs):
        """NKI Beta 2's allocation spelling, `sbuf.view(dtype=..., shape=...)` (the bare
        buffer names its tracer gives kernel bodies; _launch.beta2_names): a new tensor in
        this buffer, as nl.ndarray(shape, dtype, buffer=...)."""
        return ndarray(shape, dtype=dtype, buffer=self, name=name, **kwargs)


sbuf = _Buffer("sbuf", "sbuf")
psum = _Buffer("psum", "psum")
hbm = _Buffer("hbm", "hbm")
shared_hbm = _Buffer("shared_hbm", "hbm")
private_hbm = _Buffer("private_hbm", "hbm")


def _is_private(buffer) -> bool:
    """HBM that each kernel instance has its own of: private_hbm, and hbm, which NKI defines
    as private_hbm (nki.language.hbm = MemoryRegion.private_hbm); shared_hbm is shared."""
    return buffer is private_hbm or buffer is hbm or buffer in ("private_hbm", "hbm")


def _space(buffer):
    if buffer is None:
        return "sbuf"
    if isinstance(buffer, _Buffer):
        return buffer.space
    if isinstance(buffer, str) and buffer in ("sbuf", "psum", "hbm", "shared_hbm",
                                              "private_hbm"):
        return "hbm" if buffer.endswith("hbm") else buffer
    raise NkiError(f"buffer {buffer!r}: use nl.sbuf, nl.psum, nl.hbm or nl.shared_hbm")


# --- tile sizes of the selected generation ---
class _TileSize:
    """nl.tile_size: the generation's limits (pmax partitions, PSUM bank and matmul sizes)."""

    def _chip(self):
        # Host code reads it too (to size a kernel's arguments): outside a kernel, the target
        # a launch would take ($NEURON_PLATFORM_TARGET_OVERRIDE, else trn2).
        if _ctx._current is not None:
            return _ctx._current.chip
        from trnsim.kernel import load_chip
        from trnsim.nki._launch import target

        return load_chip(target())

    pmax = property(lambda self: self._chip().sbuf_partitions)
    psum_fmax = property(lambda self: self._chip().psum_bank_bytes // 4)
    gemm_stationary_fmax = property(lambda self: self._chip().matmul_m_max)
    gemm_moving_fmax = property(lambda self: builtins.min(self._chip().matmul_n_max,
                                                 self._chip().psum_bank_bytes // 4))
    bn_stats_fmax = 512
    sbuf_min_align = constants.sbuf_min_align
    psum_min_align = constants.psum_min_align
    psum_partitions = property(lambda self: self._chip().sbuf_partitions)
    total_available_sbuf_size = property(lambda self: self._chip().sbuf_bytes_per_partition)
    # NKI 0.4's names (API reference, nki.language.tile_size): bytes and fp32 elements of a
    # PSUM bank and of a partition's usable SBUF, the number of banks, the SBUF's total size.
    psum_fmax_bytes = property(lambda self: self._chip().psum_bank_bytes)
    psum_bank_fmax = property(lambda self: self._chip().psum_bank_bytes // 4)
    psum_bank_fmax_bytes = property(lambda self: self._chip().psum_bank_bytes)
    psum_num_banks = property(lambda self: self._chip().psum_banks)
    sbuf_fmax = property(lambda self: self._chip().sbuf_bytes_per_partition // 4)
    sbuf_fmax_bytes = property(lambda self: self._chip().sbuf_bytes_per_partition)
    sbuf_size_bytes = property(
        lambda self: self._chip().sbuf_bytes_per_partition * self._chip().sbuf_partitions)


tile_size = _TileSize()


class NKIObject:
    """NKI's base class for kernel dataclasses and configuration objects (Python objects a
    kernel builds at trace time). NKI's tracer needs it to accept such classes; trnsim runs
    the kernel's Python itself, so it is a plain base. Keyword arguments become attributes,
    as NKI's ``NKIObject(**kwargs)`` signature takes them."""

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)


# --- index helpers ---
class par_dim(int):
    """nl.par_dim(n): marks the partition dim in a legacy shape (position 0 only)."""


def ds(start, size):
    """nl.ds(start, size): the slice start:start+size (start may be a register)."""
    if _register.is_register(start):
        return _register.ds_start(start, _ops.integer(size, "nl.ds: size", 1))
    start = _ops.integer(start, "nl.ds: start", 0)
    # A size < 1 made a slice with a negative stop, which numpy rules read from the end.
    size = _ops.integer(size, "nl.ds: size", 1)
    return slice(start, start + size)


def arange(*args):
    """nl.arange([start,] stop): a legacy index expression over one range."""
    if len(args) not in (1, 2):
        raise NkiError(f"nl.arange takes (stop) or (start, stop), got {len(args)} arguments")
    start, stop = (0, args[0]) if len(args) == 1 else (args[0], args[1])
    start = _ops.integer(start, "nl.arange: start")
    stop = _ops.integer(stop, "nl.arange: stop")
    if stop <= start:
        raise NkiError(f"nl.arange({start}, {stop}) is empty")
    return Expr(0, ((Range(stop - start, None, start), 1),))


class _Grid(tuple):
    """The ranges of an nl.mgrid: unpacked (``i_p, i_f = nl.mgrid[...]``) or by field, ``.p``
    the partition range (axis 0), ``.x``, ``.y``, ``.z`` the free ones (axes 1, 2, 3), as NKI
    kernels name them."""

    def _field(self, axis, name):
        if axis >= len(self):  # an AttributeError, as a missing field is (hasattr works)
            raise AttributeError(f"nl.mgrid[...].{name} is grid axis {axis}; this grid has "
                                 f"{len(self)} axes")
        return self[axis]

    p = property(lambda self: self[0])
    x = property(lambda self: self._field(1, "x"))
    y = property(lambda self: self._field(2, "y"))
    z = property(lambda self: self._field(3, "z"))


class _MGrid:
    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        bounds = []
        for axis, s in enumerate(key):
            if not isinstance(s, slice) or s.stop is None or s.step not in (None, 1):
                raise NkiError(f"nl.mgrid[{key!r}]: axis {axis} must be a slice start:stop "
                               "(stop given, step 1)")
            start = _ops.integer(s.start or 0, "nl.mgrid: start")
            stop = _ops.integer(s.stop, "nl.mgrid: stop")
            if stop <= start:
                raise NkiError(f"nl.mgrid: axis {axis} ({start}:{stop}) is empty")
            bounds.append((start, stop))
        # Every field knows the whole grid: nisa.iota of a field fills all of it (dense, as
        # numpy's mgrid), while an index reads a field along its own axis only (_index.py).
        grid = tuple(stop - start for start, stop in bounds)
        out = [Expr(0, ((Range(stop - start, axis, start, len(key), grid), 1),))
               for axis, (start, stop) in enumerate(bounds)]
        return _Grid(out) if len(out) > 1 else out[0]


mgrid = _MGrid()


def affine_range(*args, **kwargs):
    """Iterations the compiler may reorder; traced as Python's range (unrolled)."""
    if not 1 <= len(args) <= 3:
        raise NkiError(f"nl.affine_range takes (stop), (start, stop) or (start, stop, step), "
                       f"got {len(args)} arguments")
    return range(*(_ops.integer(a, "nl.affine_range") for a in args))


sequential_range = static_range = affine_range


@contextlib.contextmanager
def no_reorder():
    """``with nl.no_reorder():`` keeps the block's instructions in program order: trnsim
    never reorders a kernel's instructions (each engine runs them in traced order), so there
    is nothing to do."""
    yield


def dynamic_range(start, stop=None, step=1):
    """A hardware loop: the body is traced once and runs on the engines' registers and
    branches for i = start, start + step, ... < stop (ints or registers). Every iteration ends
    with a drain and a barrier of all engines, as NKI's compiler lowers it."""
    return _register.dynamic_range(start, stop, step)


fori_loop = _register.fori_loop
while_loop = _register.while_loop


# --- SPMD ---
def _grid_axis(axis, what):
    """A grid axis: axes past the grid's rank are size 1 (id 0), as a launch without a grid
    is one instance; negative axes count from the end of the grid."""
    c = _ctx.ctx()
    axis = _ops.integer(axis, f"{what}: axis")
    if axis < -len(c.grid):
        raise NkiError(f"{what}({axis}): the launch grid has {len(c.grid)} axes")
    return axis % len(c.grid) if axis < 0 else axis


def program_id(axis=0):
    """This instance's index along grid axis `axis`."""
    c = _ctx.ctx()
    axis = _grid_axis(axis, "nl.program_id")
    return c.pids[axis] if axis < len(c.pids) else 0


def num_programs(axes=0):
    """The grid size along `axes` (or the product over several)."""
    c = _ctx.ctx()
    if isinstance(axes, (tuple, list)):
        return int(np.prod([num_programs(a) for a in axes]))
    axes = _grid_axis(axes, "nl.num_programs")
    return c.grid[axes] if axes < len(c.grid) else 1


def program_ndim():
    return len(_ctx.ctx().grid)


class nc:
    """nl.nc(n) in a launch grid (kernel[nl.nc(2)]): instances on n physical cores (LNC)."""

    def __init__(self, n):
        self.n = _ops.integer(n, "nl.nc(n)")

    def __int__(self):
        return self.n

    # The grid shorthand of NKI's API example: nl.nc(2) * 2 is nl.spmd_dim(nl.nc(2), 2).
    def __mul__(self, k):
        return spmd_dim(self, k) if isinstance(k, (int, np.integer)) else NotImplemented

    def __rmul__(self, k):
        return spmd_dim(k, self) if isinstance(k, (int, np.integer)) else NotImplemented

    def __repr__(self):
        return f"nl.nc({self.n})"


class spmd_dim:
    """nl.spmd_dim(*dims) in a launch grid: one axis made of sub-dims (positive ints and
    nl.nc(n)), the first the most significant. ``kernel[nl.spmd_dim(nl.nc(2), 2)]`` is four
    instances, program_id(0) 0..3: 0 and 1 on physical core 0, 2 and 3 on core 1."""

    def __init__(self, *dims):
        if not dims:
            raise NkiError("nl.spmd_dim needs at least one dim (an int or nl.nc(n))")
        for d in dims:
            if not isinstance(d, nc):
                _ops.integer(d, "nl.spmd_dim: dim", 1)
        self.dims = tuple(d if isinstance(d, nc) else int(d) for d in dims)
        self.n = int(np.prod([int(d) for d in self.dims]))

    def __int__(self):
        return self.n

    def __repr__(self):
        return f"nl.spmd_dim({', '.join(map(repr, self.dims))})"


def device_print(prefix, x=None, *args, **kwargs):
    """Prints the tile's description at trace time (values exist only after the run)."""
    print(prefix, x if x is None else _ops.tile(x, "nl.device_print: x")._view().describe())


# --- creation ---
def ndarray(shape, dtype=float32, buffer=None, name="", address=None, **kwargs):
    """A new tensor: a tile in SBUF / PSUM (contents NaN until written) or an HBM tensor
    (buffer=nl.shared_hbm / nl.hbm: a kernel output, returned to the caller)."""
    space = _space(buffer)
    if not isinstance(name, str):
        raise NkiError(f"nl.ndarray: name must be a string, got {type(name).__name__} {name!r}")
    raw = shape if isinstance(shape, (tuple, list)) else ()
    shape = _ops.dims(shape, "nl.ndarray: shape")
    elem = packed_format(dtype)  # a packed MX dtype: its elements, four to a packed element
    fmt = elem or format_name(dtype, "nl.ndarray: dtype")
    blocks = [i for i, s in enumerate(raw) if isinstance(s, par_dim) and i > 0]
    if blocks and space != "hbm":  # legacy block dims: one tile per block index
        b = blocks[0]
        n = int(np.prod(shape[:b]))
        tiles = [ndarray(shape[b:], dtype, buffer, name) for _ in range(n)]
        return Blocked(tiles, shape[:b], shape[b:], dtype)
    c = _ctx.ctx()
    if space == "hbm":
        dims = list(shape) + [4] * bool(elem)
        if c.lnc > 1 and _is_private(buffer):
            # Private to each physical core: the cores of a logical core share HBM tensors by
            # name and must declare the same ones, so every core declares one copy per core
            # (name_nc0, name_nc1, ...) and uses its own.
            base = c.name(name or "out")
            copies = [f"{base}_nc{k}" for k in range(c.lnc)]
            c.used.update(copies)
            v = [c.kb.output(n, fmt, dims) for n in copies][c.rank]
        else:
            v = c.kb.output(c.name(name or "out"), fmt, dims)
        t = Packed(v, dtype) if elem else NkiTensor(v)
        c.outputs.append(t)
        return t
    return _ops.alloc(shape, dtype, space, name or None)


def _like(x, call):
    """A tensor (or an array: anything with a shape and a dtype) to take the shape of."""
    if not isinstance(x, NkiTensor) and not (hasattr(x, "shape") and hasattr(x, "dtype")):
        _ops.tile(x, f"{call}: x")
    return x


def empty_like(x, dtype=None, buffer=None, **kwargs):
    x = _like(x, "nl.empty_like")
    return ndarray(x.shape, dtype or x.dtype, buffer or sbuf)


def full(shape, fill_value, dtype=float32, buffer=None, name="", **kwargs):
    fill_value = _ops.number(fill_value, "nl.full: fill_value")
    t = ndarray(shape, dtype, buffer, name)
    for tile in (t.tiles if isinstance(t, Blocked) else [t]):
        _ops.memset(tile, fill_value)
    return t


def zeros(shape, dtype=float32, buffer=None, name="", **kwargs):
    return full(shape, 0.0, dtype, buffer, name)


def ones(shape, dtype=float32, buffer=None, name="", **kwargs):
    return full(shape, 1.0, dtype, buffer, name)


def zeros_like(x, dtype=None, buffer=None, **kwargs):
    x = _like(x, "nl.zeros_like")
    return zeros(x.shape, dtype or x.dtype, buffer or sbuf)


def ones_like(x, dtype=None, buffer=None, **kwargs):
    x = _like(x, "nl.ones_like")
    return ones(x.shape, dtype or x.dtype, buffer or sbuf)


def full_like(x, fill_value, dtype=None, buffer=None, **kwargs):
    x = _like(x, "nl.full_like")
    return full(x.shape, fill_value, dtype or x.dtype, buffer or sbuf)


def shared_constant(constant, dtype=None, **kwargs):
    """An HBM tensor holding `constant` (a numpy array, cast to `dtype` with RNE), written
    before the kernel runs."""
    c = _ctx.ctx()
    from trnsim.run import host_array

    a = host_array(constant, "nl.shared_constant: constant")
    if dtype is None and np.asarray(constant).dtype.kind in "iu" and \
            np.asarray(constant).dtype.itemsize > 4:
        raise NkiError(f"nl.shared_constant: a {np.asarray(constant).dtype} array has no NKI "
                       "dtype: give dtype= (nl.int32, nl.float32, ...)")
    fmt = format_name(dtype if dtype is not None else a.dtype, "nl.shared_constant: dtype")
    name = c.name("constant")
    t = NkiTensor(c.kb.input(name, fmt, list(a.shape) or [1]))
    c.constants[name] = a.reshape(a.shape or (1,))
    return t


def shared_identity_matrix(n, dtype=bfloat16, **kwargs):
    """An n x n identity tile in SBUF (memset + affine_select on GpSimd)."""
    n = _ops.integer(n, "nl.shared_identity_matrix: n", 1)
    t = ndarray((n, n), dtype, sbuf)
    _ops.memset(t, 1.0)
    _ops.affine_select(t, [[-1, n]], 0, 1, t, 0.0, "is_equal")
    return t


def rand(shape, dtype=float32, buffer=None, name="", mask=None, **kwargs):
    """A new SBUF tile of uniform [0, 1) values from GpSimd's generator (trnsim's counter-based
    stream, not the hardware's values: docs/nki.md)."""
    _no_mask(mask, "nl.rand")
    if _space(buffer) != "sbuf":
        raise NkiError("nl.rand: the tile is drawn by GpSimd, which writes SBUF only")
    t = ndarray(shape, dtype, sbuf, name)
    return _ops.rand(t)


def random_seed(seed, mask=None, **kwargs):
    """Seeds the generators nl.rand (GpSimd) and nl.dropout (VectorE) draw from: a number or a
    [1, 1] int32 / uint32 tile. The same seed gives the same sequence."""
    _no_mask(mask, "nl.random_seed")
    _ops.rand_seed(seed, (_ops.Engine.gpsimd, _ops.Engine.vector), "nl.random_seed")


def dropout(x, rate, dtype=None, mask=None, **kwargs):
    """x with each element zeroed with probability `rate` (a number or a [P, 1] tile),
    VectorE's generator deciding. With mask=, the instruction runs over the masked region only
    (its lanes draw for those elements alone); the rest of the result is not written."""
    _tiles("nl.dropout", x=x)
    m, x, rate = _masked(mask, x, rate, pointwise=True)
    return m.result(Pending(lambda d: _ops.dropout(NkiTensor(d), x, rate), x.shape,
                            dtype or x.dtype))


def _no_mask(mask, call):
    if mask is not None:
        raise NotImplementedError(f"{call}(mask=...): masks on the random generators are not "
                                  "supported by trnsim")


rms_norm = stub("nl.rms_norm", "compose it from square, sum and rsqrt")


def atomic_rmw(dst, value, op, mask=None, **kwargs):
    """dst = op(dst, value) in HBM, rows picked by a tile of row numbers (dst =
    t[idx_tile, ...]): one dma_scatter that adds (the DMA's read-modify-write, partition by
    partition, so a repeated row adds every partition's value). op: nl.add."""
    if mask is not None:
        unsupported("nl.atomic_rmw(mask=...)", "update whole rows")
    if _ops.alu(op) != _ops.AluOp.add:
        unsupported(f"nl.atomic_rmw(op={getattr(op, '__name__', op)})",
                    "the DMA's read-modify-write adds (op=nl.add)")
    if not isinstance(dst, Indirect):
        unsupported("nl.atomic_rmw of a tensor not indexed by a tile",
                    "index dst's rows with an SBUF [P, 1] tile of row numbers "
                    "(t[idx_tile, ...]); a direct update is a load, nl.add and a store")
    _tiles("nl.atomic_rmw", value=value)
    _ops.dma_copy(dst, value, dst_rmw_op="add")


def gather_flattened(data, indices, mask=None, dtype=None, **kwargs):
    """out[p, ...] = data[p] flattened, at indices[p, ...] (uint32; int32 indices are read as
    their uint32 bits, so a negative one is out of range): one GpSimd nc_n_gather (bit-exact),
    then a VectorE copy when dtype asks for another."""
    if mask is not None:
        unsupported("nl.gather_flattened(mask=...)", "gather whole tiles")
    _tiles("nl.gather_flattened", data=data, indices=indices)
    if np.dtype(indices.dtype) == np.int32:
        indices = indices.view(uint32)
    out = ndarray(indices.shape, data.dtype, sbuf)
    _gather.nc_n_gather(out, data, indices, "nl.gather_flattened")
    if dtype is None or _ops.format_name(dtype, "dtype") == _ops.format_name(data.dtype):
        return out
    return copy(out, dtype=dtype)
all_reduce = stub("nl.all_reduce", "collectives run through trnsim.fabric, not kernels")


# --- memory operations ---
def _masked(mask, *xs, pointwise=False, split=None):
    """The operands with the mask applied (_masking.Masking): `pointwise` for elementwise
    results (a mask that is not a box merges under a predicate), `split` for DMAs (True)
    and reductions (the dims reduced) (one instruction per box)."""
    m = Masking(mask, xs, pointwise, split)
    return (m, *m.xs)


def _full_shape(x):
    """x's shape, of an nl.arange-indexed operand unmasked without resolving it (a masked
    access may reach outside the tensor where the mask drops it)."""
    return Void(x).shape if isinstance(x, Lazy) else x.shape


def _reduced_dims(rank, axes, keepdims):
    """For each dim of a reduction's result, the operand dim it is (None: a reduced one)."""
    if keepdims:
        return [None if i in axes else i for i in range(rank)]
    kept = [i for i in range(rank) if i not in axes]
    return kept + [None] if len(kept) == 1 else kept


def _tiles(call, **operands):
    """Each named operand must be a tile or tensor (a list, None or a number is an NkiError
    naming the call and the parameter, not an AttributeError from inside)."""
    for what, x in operands.items():
        _ops.tile(x, f"{call}: {what}")


def load(src, dtype=None, mask=None, **kwargs):
    """A new SBUF tile with src's elements (one DMA from HBM)."""
    _tiles("nl.load", src=src)
    m, src = _masked(mask, src, split=True)
    if m.parts is not None:  # one DMA per box of the mask
        return m.split_result(lambda d, s: _ops.dma_copy(d, s), src.shape, dtype or src.dtype)
    return m.result(Pending(lambda d: _ops.dma_copy(NkiTensor(d), src), src.shape,
                            dtype or src.dtype))


def store(dst, value, mask=None, **kwargs):
    """dst (HBM) = value (one DMA; a PSUM value is first copied to SBUF). A number is stored
    to every element: a memset of an SBUF tile of dst's shape, then the DMA."""
    if not isinstance(value, NkiTensor) and _check.is_real(value):
        _tiles("nl.store", dst=dst)
        number = _ops.number(value, "nl.store: value")
        m, dst = _masked(mask, dst, split=True)
        if m.skip:
            return
        for (d,) in m.each(dst):
            value = _ops.alloc(d.shape or (1, 1), d.dtype)  # () : one element, t[0, 0, 0]
            _ops.memset(value, number)
            if _ops.view(d).space != "hbm":
                _ops.tensor_copy(d, value)
            else:
                _ops.dma_copy(d, value)
        return
    _tiles("nl.store", dst=dst, value=value)
    if isinstance(value, Pending) and value.v is None:
        value.materialize()
    m, dst, value = _masked(mask, dst, value, split=True)
    if m.skip:
        return
    for d, v in m.each(dst, value):  # one DMA per box of the mask: nothing else written
        if _ops.view(v).space == "psum":
            v = _ops.new_like(v, dtype=v.dtype, copy=True)
        _ops.dma_copy(d, v)


def load_transpose2d(src, dtype=None, mask=None, **kwargs):
    """A new SBUF tile holding src.T, converted to `dtype` if given (_load_transposed)."""
    _tiles("nl.load_transpose2d", src=src)
    m, src = _masked(mask, src)
    shape = tuple(reversed(src.shape))
    return m.gate(Pending(lambda d: _load_transposed(NkiTensor(d), src), shape,
                          dtype or src.dtype))


def _load_transposed(dst, src):
    """dst = src.T: one transposing DMA (NC-v3 and later). It moves elements unchanged, so a
    dtype conversion is a VectorE copy after it. NC-v2 has no DMA transpose (the legacy
    docs list Trn1 for load_transpose2d): a DMA whose HBM side walks src transposed."""
    from trnsim.nki.isa import get_nc_version, nc_version

    s = _ops.view(src)
    if get_nc_version() < nc_version.gen3 and s.space == "hbm" and len(s.shape) == 2:
        (sp, sf), off = abs_pattern(s)
        _ops.dma_copy(dst, NkiTensor(s.pattern([(sf, s.shape[1]), (sp, s.shape[0])], off)))
        return dst
    if format_name(dst.dtype) == s.dtype:
        return _ops.dma_transpose(dst, src)
    t = _ops.alloc(dst.shape, s.dtype)
    _ops.dma_transpose(t, src)
    return _ops.tensor_copy(dst, t)


def copy(x, dtype=None, mask=None, **kwargs):
    """A copy of x in a new tile (VectorE)."""
    _tiles("nl.copy", x=x)
    m, x = _masked(mask, x, pointwise=True)
    return m.result(Pending(lambda d: _ops.tensor_copy(NkiTensor(d), x), x.shape,
                            dtype or x.dtype))


def matmul(x, y, transpose_x=False, mask=None, **kwargs):
    """x @ y in PSUM: x is [K, M] when transpose_x (the stationary as TensorE takes it), else
    [M, K] (transposed on TensorE first)."""
    _tiles("nl.matmul", x=x, y=y)
    for what, t in (("x", x), ("y", y)):
        if len(t.shape) != 2:
            raise NkiError(f"nl.matmul: {what} must be a 2-dim tile, got shape {tuple(t.shape)}")
    mk, x, y = _masked(mask, x, y)
    if mk.skip:  # before the transpose of x, which is part of the skipped instruction
        return mk.void((x.shape[1 if transpose_x else 0], y.shape[1]), float32, "psum",
                       "matmul")
    if not transpose_x:  # x.T into SBUF: a TensorE transpose to PSUM, copied (_ops.nc_transpose)
        xt = _ops.alloc(tuple(reversed(x.shape)), x.dtype)
        x = _ops.nc_transpose(xt, x, "tensor")
    x, y = _matmul_operands(x, y)
    m, n = x.shape[1], y.shape[1]
    return Pending(lambda d, acc=False: _ops.nc_matmul(NkiTensor(d), x, y,
                                                       accumulate=None if acc else False),
                   (m, n), float32, "psum", "matmul")


def _matmul_operands(x, y):
    """TensorE multiplies fp32 (or tf32) only with fp32 (HARDWARE.md s2.1); nl.matmul, a
    language-level op, promotes a bf16 / fp16 / fp8 operand against an fp32 one to fp32 as
    NKI's elementwise ops promote (a VectorE copy), rather than refusing the pair."""
    wide = ("fp32", "tf32")
    fx, fy = format_name(x.dtype), format_name(y.dtype)
    if (fx in wide) == (fy in wide):
        return x, y
    if fx in wide:
        return x, _ops.new_like(y, dtype=float32, copy=True)
    return _ops.new_like(x, dtype=float32, copy=True), y


def transpose(x, dtype=None, mask=None, **kwargs):
    """x.T through the PE array (a PSUM tile)."""
    _tiles("nl.transpose", x=x)
    m, x = _masked(mask, x)
    shape = tuple(reversed(x.shape))
    return m.gate(Pending(lambda d: _ops.nc_transpose(NkiTensor(d), x, "tensor"), shape,
                          dtype or x.dtype, "psum"))


def broadcast_to(x, shape):
    return _ops.tile(x, "nl.broadcast_to: x").broadcast_to(shape)


def expand_dims(x, axis):
    return _ops.tile(x, "nl.expand_dims: x").expand_dim(axis)


# --- math: activation functions on ScalarE, ALU ops on VectorE ---
def _activation_fn(fname):
    def f(x, dtype=None, mask=None, **kwargs):
        _tiles(f"nl.{f.__name__}", x=x)
        m, x = _masked(mask, x, pointwise=True)
        return m.result(Pending(lambda d: _ops.activation(NkiTensor(d), fname, x), x.shape,
                                _ops.out_dtype(x, dtype=dtype)))

    f.__name__ = fname
    f.__doc__ = f"{fname}(x) element-wise on ScalarE (activation function '{fname}')."
    return f


def _binary_fn(name, opname):
    def f(x, y, dtype=None, mask=None, **kwargs):
        m, x, y = _masked(mask, x, y, pointwise=True)
        shapes = [t.shape for t in (x, y) if isinstance(t, NkiTensor)]
        if m.skip and shapes:  # before binary(), which may emit a partition broadcast for it
            return m.void(np.broadcast_shapes(*shapes), _ops.out_dtype(x, y, dtype=dtype))
        return m.result(_ops.binary(x, y, opname, dtype))

    f.__name__ = name
    f.__doc__ = f"{name}(x, y) element-wise on VectorE (ALU op '{opname}'); x or y may be a number."
    return f


_ACTIVATIONS = {"exp": "exp", "log": "log", "tanh": "tanh", "sigmoid": "sigmoid", "relu": "relu",
                "gelu": "gelu", "gelu_dx": "gelu_dx", "gelu_apprx_tanh": "gelu_apprx_tanh",
                "gelu_apprx_sigmoid": "gelu_apprx_sigmoid",
                "gelu_apprx_sigmoid_dx": "gelu_apprx_sigmoid_dx", "silu": "silu",
                "silu_dx": "silu_dx", "softplus": "softplus", "mish": "mish", "erf": "erf",
                "erf_dx": "erf_dx", "sin": "sin", "arctan": "arctan", "sqrt": "sqrt",
                "rsqrt": "rsqrt", "reciprocal": "reciprocal", "sign": "sign", "square": "square",
                "identity": "copy", "prelu": "prelu"}
_BINARY = {"add": "add", "subtract": "subtract", "multiply": "mult", "divide": "divide",
           "maximum": "max", "minimum": "min", "power": "pow", "fmod": "mod", "mod": "mod",
           "equal": "is_equal", "not_equal": "not_equal", "greater": "is_gt",
           "greater_equal": "is_ge", "less": "is_lt", "less_equal": "is_le",
           "logical_and": "logical_and", "logical_or": "logical_or",
           "logical_xor": "logical_xor", "bitwise_and": "bitwise_and",
           "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor", "left_shift": "shift_left",
           "right_shift": "shift_right_logical", "abs_max": "abs_max", "abs_min": "abs_min"}

for _n, _a in _ACTIVATIONS.items():
    globals()[_n] = _activation_fn(_a)
    _ops.ACT_OF[globals()[_n]] = getattr(_ops.ActFunc, _a)
for _n, _a in _BINARY.items():
    globals()[_n] = _binary_fn(_n, _a)
    _ops.ALU_OF[globals()[_n]] = getattr(_ops.AluOp, _a)


def abs(x, dtype=None, mask=None, **kwargs):  # noqa: A001 - NKI's name
    """|x| element-wise on VectorE."""
    _tiles("nl.abs", x=x)
    m, x = _masked(mask, x, pointwise=True)
    return m.result(_ops.unary_alu(x, "abs", dtype))


def negative(x, dtype=None, mask=None, **kwargs):
    """-x element-wise on VectorE."""
    _tiles("nl.negative", x=x)
    m, x = _masked(mask, x, pointwise=True)
    return m.result(_ops.binary(x, -1.0, "mult", dtype))


def floor(x, dtype=None, mask=None, **kwargs):
    """The largest integer <= x, element-wise on VectorE: x - mod(x, 1), the ALU's floored
    mod (exact in fp32: both steps are exact, the result an integer no wider than x)."""
    _tiles("nl.floor", x=x)
    m, x = _masked(mask, x, pointwise=True)
    frac = _ops.binary(x, 1.0, "mod", "float32")
    return m.result(_ops.binary(x, frac, "subtract", dtype))


def ceil(x, dtype=None, mask=None, **kwargs):
    """The smallest integer >= x, element-wise on VectorE: x + mod(-x, 1) (exact, as
    nl.floor)."""
    _tiles("nl.ceil", x=x)
    m, x = _masked(mask, x, pointwise=True)
    up = _ops.binary(_ops.binary(x, -1.0, "mult", "float32"), 1.0, "mod", "float32")
    return m.result(_ops.binary(x, up, "add", dtype))


def invert(x, dtype=None, mask=None, **kwargs):
    _tiles("nl.invert", x=x)
    m, x = _masked(mask, x, pointwise=True)
    return m.result(_ops.unary_alu(x, "bitwise_not", dtype))


bitwise_not = invert


def logical_not(x, dtype=None, mask=None, **kwargs):
    _tiles("nl.logical_not", x=x)
    m, x = _masked(mask, x, pointwise=True)
    return m.result(_ops.binary(x, 0.0, "is_equal", dtype))


def bypass(x, *args, **kwargs):
    """The identity operator (for op1=nl.bypass)."""
    return x


_ops.ALU_OF[abs] = _ops.AluOp.abs
_ops.ALU_OF[invert] = _ops.AluOp.bitwise_not
_ops.ALU_OF[bypass] = _ops.AluOp.bypass
_ops.ACT_OF[abs] = _ops.ActFunc.abs
_ops.ACT_OF[copy] = _ops.ActFunc.copy
_ops.ACT_OF[bypass] = _ops.ActFunc.copy

# Composed from the ones that have (_composed.py).
from trnsim.nki._composed import (arccos, arcsin, cos, cosh, exp2, expm1, log1p, log2,  # noqa: E402
                                  rint, round, sinh, tan, trunc)


def where(condition, x, y, dtype=None, mask=None, **kwargs):
    """condition != 0 ? x : y element-wise (VectorE select); x or y may be a number."""
    _tiles("nl.where", condition=condition)
    for what, v in (("x", x), ("y", y)):
        if not isinstance(v, NkiTensor):
            _ops.number(v, f"nl.where: {what}")
    m, condition, x, y = _masked(mask, condition, x, y, pointwise=True)
    return m.result(Pending(lambda d: _ops.select(NkiTensor(d), condition, x, y),
                            condition.shape, _ops.out_dtype(x, y, dtype=dtype)))


# --- reductions over free axes (VectorE) ---
def _reduced_shape(x, axes, keepdims):
    """The shape of a reduction of x (a tile, or its shape) over `axes`."""
    full = x.shape if isinstance(x, NkiTensor) else tuple(x)
    if keepdims:
        return [1 if i in axes else s for i, s in enumerate(full)]
    shape = [s for i, s in enumerate(full) if i not in axes]
    return shape + [1] if len(shape) == 1 else shape


def _reduce_fn(name, opname):
    def f(x, axis, dtype=None, mask=None, keepdims=False, **kwargs):
        _tiles(f"nl.{name}", x=x)
        full = _full_shape(x)
        rank = len(full)
        axes = _ops.axes_of(axis, rank, f"nl.{name}")
        m, x = _masked(mask, x, split=axes)
        if m.parts is not None:  # one reduction per box of the mask, into its region
            return m.split_result(lambda d, xp: _ops.tensor_reduce(d, opname, xp, axes),
                                  _reduced_shape(x, axes, keepdims),
                                  _ops.out_dtype(x, dtype=dtype),
                                  _reduced_dims(rank, axes, keepdims))
        if m.shape is not None and not m.skip and len(m.shape) == rank:
            # A box: the result has the whole operand's reduced shape (as NKI's does), the
            # reduction writing the box's region of it.
            dims = _reduced_dims(rank, axes, keepdims)
            return Pending(lambda d: _ops.tensor_reduce(m.region(NkiTensor(d), dims), opname,
                                                        x, axes),
                           _reduced_shape(full, axes, keepdims),
                           _ops.out_dtype(x, dtype=dtype))
        return m.gate(Pending(lambda d: _ops.tensor_reduce(NkiTensor(d), opname, x, axes),
                              _reduced_shape(x, axes, keepdims),
                              _ops.out_dtype(x, dtype=dtype)))

    f.__name__ = name
    f.__doc__ = f"{name} over free axes `axis` (VectorE tensor_reduce '{opname}')."
    return f


sum = _reduce_fn("sum", "add")  # noqa: A001
max = _reduce_fn("max", "max")  # noqa: A001
min = _reduce_fn("min", "min")  # noqa: A001
prod = _reduce_fn("prod", "mult")
_ops.ALU_OF[sum] = _ops.AluOp.add
_ops.ALU_OF[max] = _ops.AluOp.max
_ops.ALU_OF[min] = _ops.AluOp.min
_ops.ALU_OF[prod] = _ops.AluOp.mult


def _truth_fn(name, opname):
    def f(x, axis, dtype=bool_, mask=None, keepdims=False, **kwargs):
        _tiles(f"nl.{name}", x=x)
        rank = len(_full_shape(x))
        axes = _ops.axes_of(axis, rank, f"nl.{name}")
        m, x = _masked(mask, x, split=axes)

        def emit(d, x=x):
            # x != 0 as 0 / 1 (NaN counts as true, as in numpy), then its min (all) or max
            # (any) over the axes: the reduce alone would return a lone element unchanged.
            truth = _ops.alloc(x.shape, bool_)
            _ops.tensor_scalar(truth, x, "not_equal", 0.0)
            d = d if isinstance(d, NkiTensor) else NkiTensor(d)  # a region, or a View
            return _ops.tensor_reduce(d, opname, truth, axes)

        if m.parts is not None:  # one reduction per box of the mask, into its region
            return m.split_result(emit, _reduced_shape(x, axes, keepdims), dtype,
                                  _reduced_dims(rank, axes, keepdims))
        return m.gate(Pending(emit, _reduced_shape(x, axes, keepdims), dtype))

    f.__name__ = name
    f.__doc__ = (f"Whether {name} elements along free axes `axis` are non-zero (VectorE: a "
                 f"not_equal 0, then a tensor_reduce '{opname}').")
    return f


all = _truth_fn("all", "min")  # noqa: A001
any = _truth_fn("any", "max")  # noqa: A001


class _LoopReduce(Pending):
    """nl.loop_reduce's result: ``acc[...] = nl.loop_reduce(x, ...)`` emits acc = x op acc.
    Placed anywhere else it has no accumulator to read: an error, not a NaN tile."""

    __slots__ = ()

    def materialize(self):
        if self.v is None:
            self.take()
            raise NkiError("nl.loop_reduce: assign the result into its accumulator tile "
                           "(acc[...] = nl.loop_reduce(x, op=..., loop_indices=[i])): the "
                           "accumulator is also the reduction's other operand")
        return self.v


def loop_reduce(x, op, loop_indices, dtype=None, mask=None, **kwargs):
    """Reduction over loop iterations into the tile it is assigned to: ``acc[...] =
    nl.loop_reduce(x, op=np.add, loop_indices=[i])`` is acc = x op acc, one tensor_tensor per
    iteration (NKI: "the destination tile is also the rhs input to op"). loop_indices only
    tell NKI's compiler which loops it may optimise across; trnsim unrolls every loop."""
    _tiles("nl.loop_reduce", x=x)
    op = _ops.alu(op)
    m, x = _masked(mask, x)
    return m.result(_LoopReduce(lambda d: _ops.tensor_tensor(NkiTensor(d), x, NkiTensor(d), op),
                                x.shape, dtype or x.dtype))


def mean(x, axis, dtype=None, mask=None, keepdims=False, **kwargs):
    """Mean over free axes: a sum, then a multiply by 1/n (two VectorE instructions)."""
    _tiles("nl.mean", x=x)
    m, xm = _masked(mask, x)
    axes = _ops.axes_of(axis, len(xm.shape), "nl.mean")
    if m.skip:  # both instructions
        return m.void(_reduced_shape(xm, axes, keepdims), dtype or xm.dtype)
    s = sum(xm, axis, dtype=float32, keepdims=keepdims)
    n = int(np.prod([x.shape[a] for a in axes]))
    return _ops.binary(s, 1.0 / n, "mult", dtype or x.dtype)


def softmax(x, axis=-1, dtype=None, mask=None, **kwargs):
    """exp(x - max) / sum along the last free axis (max, exp with bias and sum, divide)."""
    _tiles("nl.softmax", x=x)
    m, x = _masked(mask, x)
    if m.skip:  # all its instructions
        return m.void(x.shape, dtype or x.dtype)
    if len(x.shape) != 2:
        unsupported(f"nl.softmax of a {len(x.shape)}-dim tile", "give a [P, F] tile (reshape)")
    if _ops.axes_of(axis, 2, "nl.softmax") != [1]:
        unsupported("nl.softmax over the partition dim", "softmax runs along the free dim")
    axis = 1
    p = x.shape[0]
    mx = _ops.alloc([p, 1], float32)
    _ops.tensor_reduce(mx, "max", x, axis)
    neg = _ops.alloc([p, 1], float32)
    _ops.tensor_scalar(neg, mx, "mult", -1.0)
    e = _ops.alloc(x.shape, float32)
    s = _ops.alloc([p, 1], float32)
    _ops.activation(e, "exp", x, bias=neg, reduce_res=s)
    r = _ops.alloc([p, 1], float32)
    _ops.reciprocal(r, s)
    return Pending(lambda d: _ops.tensor_scalar(NkiTensor(d), e, "mult", r), x.shape,
                   dtype or x.dtype)


def static_cast(x, dtype):
    """x converted to dtype: a tile becomes a new tile (values converted, RNE). A numpy array
    or number, as NKI tests cast their inputs in host code, is numpy's astype to the dtype's
    numpy / ml_dtypes type (an array, or a numpy scalar for a scalar)."""
    if isinstance(x, NkiTensor) or not isinstance(x, (np.ndarray, np.generic, int, float)):
        return _ops.tile(x, "nl.static_cast: x").astype(dtype)
    if packed_format(dtype):
        format_name(dtype, "nl.static_cast: dtype")  # raises: no numpy type holds them
    try:
        # nl.bool_ is NKI's numpy bool (trnsim's tiles hold it as uint8): values become 0 / 1.
        dt = np.dtype(np.bool_ if dtype is bool or dtype is bool_ else dtype)
    except TypeError:
        raise NkiError(f"nl.static_cast: dtype {dtype!r} has no numpy type to cast a numpy "
                       "array to (cast it inside a kernel)") from None
    return np.asarray(x).astype(dt)[()]


builtins_range = builtins.range
