"""nki.language for trnsim: tensor creation, memory buffers, index helpers, SPMD ids, dtypes,
tile sizes, and the convenience operations (load / store / copy / matmul / transpose and the
math functions) that map to one or a few ISA instructions.

One module serves both dialects: the legacy one (``neuronxcc.nki.language``: ``nl.arange``,
``nl.mgrid``, ``mask=``, ``nl.par_dim``) and the current one (``nki.language``). Functions that
compute return a new tile (placed directly where it is assigned, see _tensor.Pending).
"""

from __future__ import annotations

import builtins

import ml_dtypes
import numpy as np

from trnsim.nki import _ctx, _ops
from trnsim.nki._ctx import NkiError, stub, unsupported
from trnsim.nki._index import Expr, Range
from trnsim.nki._masking import Masking
from trnsim.nki._tensor import Blocked, NkiTensor, Pending
from trnsim.numerics import format_name

# --- data types (numpy / ml_dtypes dtypes, as NKI accepts them) ---
bool_ = np.dtype(np.uint8)
int8, int16, int32 = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32)
uint8, uint16, uint32 = np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32)
float16, float32 = np.dtype(np.float16), np.dtype(np.float32)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
tfloat32 = "tf32"
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
fp32 = float32
float8_e5m2_x4 = "float8_e5m2_x4"  # packed MX types: not supported (docs/nki.md)
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


sbuf = _Buffer("sbuf", "sbuf")
psum = _Buffer("psum", "psum")
hbm = _Buffer("hbm", "hbm")
shared_hbm = _Buffer("shared_hbm", "hbm")
private_hbm = _Buffer("private_hbm", "hbm")


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
        return _ctx.ctx().chip

    pmax = property(lambda self: self._chip().sbuf_partitions)
    psum_fmax = property(lambda self: self._chip().psum_bank_bytes // 4)
    gemm_stationary_fmax = property(lambda self: self._chip().matmul_m_max)
    gemm_moving_fmax = property(lambda self: builtins.min(self._chip().matmul_n_max,
                                                 self._chip().psum_bank_bytes // 4))
    bn_stats_fmax = 512
    psum_partitions = property(lambda self: self._chip().sbuf_partitions)
    total_available_sbuf_size = property(lambda self: self._chip().sbuf_bytes_per_partition)


tile_size = _TileSize()


# --- index helpers ---
class par_dim(int):
    """nl.par_dim(n): marks the partition dim in a legacy shape (position 0 only)."""


def ds(start, size):
    """nl.ds(start, size): the slice start:start+size."""
    return slice(int(start), int(start) + int(size))


def arange(*args):
    """nl.arange([start,] stop): a legacy index expression over one range."""
    start, stop = (0, args[0]) if len(args) == 1 else (args[0], args[1])
    return Expr(0, ((Range(int(stop) - int(start), None, int(start)), 1),))


class _MGrid:
    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        out = []
        for axis, s in enumerate(key):
            start, stop = s.start or 0, s.stop
            out.append(Expr(0, ((Range(stop - start, axis, start), 1),)))
        return tuple(out) if len(out) > 1 else out[0]


mgrid = _MGrid()


def affine_range(*args, **kwargs):
    """Iterations the compiler may reorder; traced as Python's range (unrolled)."""
    return range(*args)


sequential_range = static_range = affine_range


def dynamic_range(*args, **kwargs):
    unsupported("nl.dynamic_range", "runtime loops on device registers")


# --- SPMD ---
def program_id(axis=0):
    """This instance's index along grid axis `axis`."""
    c = _ctx.ctx()
    return c.pids[axis] if axis < len(c.pids) else 0


def num_programs(axes=0):
    """The grid size along `axes` (or the product over several)."""
    c = _ctx.ctx()
    if isinstance(axes, (tuple, list)):
        return int(np.prod([c.grid[a] for a in axes]))
    return c.grid[axes] if axes < len(c.grid) else 1


def program_ndim():
    return len(_ctx.ctx().grid)


class nc:
    """nl.nc(n) in a launch grid (kernel[nl.nc(2)]): instances on n physical cores (LNC)."""

    def __init__(self, n):
        self.n = int(n)

    def __int__(self):
        return self.n

    def __repr__(self):
        return f"nl.nc({self.n})"


def spmd_dim(*args):
    unsupported("nl.spmd_dim", "use kernel[nl.nc(2)] or kernel[g0, g1]")


def device_print(prefix, x=None, *args, **kwargs):
    """Prints the tile's description at trace time (values exist only after the run)."""
    print(prefix, x if x is None else x._view().describe())


# --- creation ---
def ndarray(shape, dtype=float32, buffer=None, name="", address=None, **kwargs):
    """A new tensor: a tile in SBUF / PSUM (contents NaN until written) or an HBM tensor
    (buffer=nl.shared_hbm / nl.hbm: a kernel output, returned to the caller)."""
    space = _space(buffer)
    blocks = [i for i, s in enumerate(shape) if isinstance(s, par_dim) and i > 0]
    if blocks and space != "hbm":  # legacy block dims: one tile per block index
        b = blocks[0]
        n = int(np.prod([int(s) for s in shape[:b]]))
        tiles = [ndarray(shape[b:], dtype, buffer, name) for _ in range(n)]
        return Blocked(tiles, [int(s) for s in shape[:b]], [int(s) for s in shape[b:]], dtype)
    shape = tuple(int(s) for s in shape)
    c = _ctx.ctx()
    if space == "hbm":
        t = NkiTensor(c.kb.output(c.name(name or "out"), format_name(dtype), list(shape)))
        c.outputs.append(t)
        return t
    return _ops.alloc(shape, dtype, space, name or None)


def empty_like(x, dtype=None, buffer=None, **kwargs):
    return ndarray(x.shape, dtype or x.dtype, buffer or sbuf)


def full(shape, fill_value, dtype=float32, buffer=None, name="", **kwargs):
    t = ndarray(shape, dtype, buffer, name)
    for tile in (t.tiles if isinstance(t, Blocked) else [t]):
        _ops.memset(tile, fill_value)
    return t


def zeros(shape, dtype=float32, buffer=None, name="", **kwargs):
    return full(shape, 0.0, dtype, buffer, name)


def ones(shape, dtype=float32, buffer=None, name="", **kwargs):
    return full(shape, 1.0, dtype, buffer, name)


def zeros_like(x, dtype=None, buffer=None, **kwargs):
    return zeros(x.shape, dtype or x.dtype, buffer or sbuf)


def ones_like(x, dtype=None, buffer=None, **kwargs):
    return ones(x.shape, dtype or x.dtype, buffer or sbuf)


def full_like(x, fill_value, dtype=None, buffer=None, **kwargs):
    return full(x.shape, fill_value, dtype or x.dtype, buffer or sbuf)


def shared_constant(constant, dtype=None, **kwargs):
    """An HBM tensor holding `constant` (a numpy array, cast to `dtype` with RNE), written
    before the kernel runs."""
    c = _ctx.ctx()
    a = np.asarray(constant)
    fmt = format_name(dtype if dtype is not None else a.dtype)
    name = c.name("constant")
    t = NkiTensor(c.kb.input(name, fmt, list(a.shape) or [1]))
    c.constants[name] = a.reshape(a.shape or (1,))
    return t


def shared_identity_matrix(n, dtype=bfloat16, **kwargs):
    """An n x n identity tile in SBUF (memset + affine_select on GpSimd)."""
    t = ndarray((n, n), dtype, sbuf)
    _ops.memset(t, 1.0)
    _ops.affine_select(t, [[-1, n]], 0, 1, t, 0.0, "is_equal")
    return t


rand = stub("nl.rand", "the ISA random generators are not modelled")
random_seed = stub("nl.random_seed", "the ISA random generators are not modelled")
dropout = stub("nl.dropout", "the ISA random generators are not modelled")
rms_norm = stub("nl.rms_norm", "compose it from square, sum and rsqrt")
atomic_rmw = stub("nl.atomic_rmw")
gather_flattened = stub("nl.gather_flattened", "no gather instruction is modelled")
all_reduce = stub("nl.all_reduce", "collectives run through trnsim.fabric, not kernels")


# --- memory operations ---
def _masked(mask, *xs):
    m = Masking(mask, xs)
    return (m, *m.xs)


def load(src, dtype=None, mask=None, **kwargs):
    """A new SBUF tile with src's elements (one DMA from HBM)."""
    m, src = _masked(mask, src)
    return m.result(Pending(lambda d: _ops.dma_copy(NkiTensor(d), src), src.shape,
                            dtype or src.dtype))


def store(dst, value, mask=None, **kwargs):
    """dst (HBM) = value (one DMA; a PSUM value is first copied to SBUF)."""
    if isinstance(value, Pending) and value.v is None:
        value.materialize()
    _, dst, value = _masked(mask, dst, value)
    if not isinstance(value, NkiTensor):
        raise NkiError("nl.store: value must be a tile")
    if _ops.view(value).space == "psum":
        value = _ops.new_like(value, dtype=value.dtype, copy=True)
    _ops.dma_copy(dst, value)


def load_transpose2d(src, dtype=None, mask=None, **kwargs):
    """A new SBUF tile holding src.T (a transposing DMA, NC-v3 and later)."""
    _, src = _masked(mask, src)
    shape = tuple(reversed(src.shape))
    return Pending(lambda d: _ops.dma_transpose(NkiTensor(d), src), shape, dtype or src.dtype)


def copy(x, dtype=None, mask=None, **kwargs):
    """A copy of x in a new tile (VectorE)."""
    m, x = _masked(mask, x)
    return m.result(Pending(lambda d: _ops.tensor_copy(NkiTensor(d), x), x.shape,
                            dtype or x.dtype))


def matmul(x, y, transpose_x=False, mask=None, **kwargs):
    """x @ y in PSUM: x is [K, M] when transpose_x (the stationary as TensorE takes it), else
    [M, K] (transposed on TensorE first)."""
    _, x, y = _masked(mask, x, y)
    if not transpose_x:
        xt = transpose(x)
        x = _ops.new_like(xt, dtype=x.dtype, copy=True)
    m, n = x.shape[1], y.shape[1]
    return Pending(lambda d, acc=False: _ops.nc_matmul(NkiTensor(d), x, y,
                                                       accumulate=None if acc else False),
                   (m, n), float32, "psum", "matmul")


def transpose(x, dtype=None, mask=None, **kwargs):
    """x.T through the PE array (a PSUM tile)."""
    _, x = _masked(mask, x)
    shape = tuple(reversed(x.shape))
    return Pending(lambda d: _ops.nc_transpose(NkiTensor(d), x, "tensor"), shape,
                   dtype or x.dtype, "psum")


def broadcast_to(x, shape):
    return x.broadcast_to(shape)


def expand_dims(x, axis):
    shape = list(x.shape)
    shape.insert(axis if axis >= 0 else len(shape) + axis + 1, 1)
    return x.reshape(shape)


# --- math: activation functions on ScalarE, ALU ops on VectorE ---
def _activation_fn(fname):
    def f(x, dtype=None, mask=None, **kwargs):
        m, x = _masked(mask, x)
        return m.result(Pending(lambda d: _ops.activation(NkiTensor(d), fname, x), x.shape,
                                _ops.out_dtype(x, dtype=dtype)))

    f.__name__ = fname
    f.__doc__ = f"{fname}(x) element-wise on ScalarE (activation function '{fname}')."
    return f


def _binary_fn(name, opname):
    def f(x, y, dtype=None, mask=None, **kwargs):
        m, x, y = _masked(mask, x, y)
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
    m, x = _masked(mask, x)
    return m.result(_ops.unary_alu(x, "abs", dtype))


def negative(x, dtype=None, mask=None, **kwargs):
    """-x element-wise on VectorE."""
    m, x = _masked(mask, x)
    return m.result(_ops.binary(x, -1.0, "mult", dtype))


def invert(x, dtype=None, mask=None, **kwargs):
    m, x = _masked(mask, x)
    return m.result(_ops.unary_alu(x, "bitwise_not", dtype))


bitwise_not = invert


def logical_not(x, dtype=None, mask=None, **kwargs):
    m, x = _masked(mask, x)
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

for _n in ("cos", "tan", "ceil", "floor", "trunc", "exp2", "log2", "log1p", "expm1",
           "arcsin", "arccos", "sinh", "cosh", "rint", "round"):
    globals()[_n] = stub(f"nl.{_n}", "no ScalarE function or ALU op computes it")


def where(condition, x, y, dtype=None, mask=None, **kwargs):
    """condition != 0 ? x : y element-wise (VectorE select); x or y may be a number."""
    m, condition, x, y = _masked(mask, condition, x, y)
    return m.result(Pending(lambda d: _ops.select(NkiTensor(d), condition, x, y),
                            condition.shape, _ops.out_dtype(x, y, dtype=dtype)))


# --- reductions over free axes (VectorE) ---
def _reduce_fn(name, opname):
    def f(x, axis, dtype=None, mask=None, keepdims=False, **kwargs):
        _, x = _masked(mask, x)
        axes = (axis,) if np.isscalar(axis) else tuple(axis)
        rank = len(x.shape)
        axes = [(a + rank) % rank for a in axes]
        shape = [s for i, s in enumerate(x.shape) if i not in axes]
        kshape = [1 if i in axes else s for i, s in enumerate(x.shape)]
        if len(shape) == 1:
            shape = shape + [1]
        out_shape = kshape if keepdims else shape
        return Pending(lambda d: _ops.tensor_reduce(NkiTensor(d), opname, x, axes), out_shape,
                       _ops.out_dtype(x, dtype=dtype))

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
all = stub("nl.all")  # noqa: A001
any = stub("nl.any")  # noqa: A001


def mean(x, axis, dtype=None, mask=None, keepdims=False, **kwargs):
    """Mean over free axes: a sum, then a multiply by 1/n (two VectorE instructions)."""
    s = sum(x, axis, dtype=float32, mask=mask, keepdims=keepdims)
    axes = (axis,) if np.isscalar(axis) else tuple(axis)
    n = int(np.prod([x.shape[a] for a in axes]))
    return _ops.binary(s, 1.0 / n, "mult", dtype or x.dtype)


def softmax(x, axis=-1, dtype=None, mask=None, **kwargs):
    """exp(x - max) / sum along the last free axis (max, exp with bias and sum, divide)."""
    _, x = _masked(mask, x)
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
    return x.astype(dtype)


builtins_range = builtins.range
