"""NKI operations as calls of the C++ kernel builder, destination first (the current dialect's
form); the legacy dialect and the nki.language wrappers build on these. Each function emits
the instruction(s) at once; nothing here touches element values."""

from __future__ import annotations

import sys

import numpy as np

from trnsim import _check, _core
from trnsim.nki import _ctx
from trnsim.nki._ctx import NkiError, unsupported
from trnsim.nki._source import assigned_name
from trnsim.nki._broadcast import PsumBroadcast
from trnsim.nki._tensor import Lazy, NkiTensor, Packed, Pending
from trnsim.nki._index import abs_pattern
from trnsim.nki._indirect import Indirect
from trnsim.nki._masking import Void
from trnsim.nki._dtypes import format_name, packed_format

AluOp = _core.AluOp
ActFunc = _core.ActFunc
Engine = _core.Engine

# --- operator identities: nl functions, numpy ufuncs and names -> ALU op / activation ---

ALU_OF: dict = {}  # filled by trnsim.nki.language (its functions are the keys) and below
ACT_OF: dict = {}
for _name in AluOp.__members__:
    ALU_OF[_name] = getattr(AluOp, _name)
for _name in ActFunc.__members__:
    ACT_OF[_name] = getattr(ActFunc, _name)
_NP_ALU = {np.add: "add", np.subtract: "subtract", np.multiply: "mult", np.divide: "divide",
           np.true_divide: "divide", np.maximum: "max", np.minimum: "min", np.power: "pow",
           np.mod: "mod", np.fmod: "mod", np.equal: "is_equal", np.not_equal: "not_equal",
           np.greater: "is_gt", np.greater_equal: "is_ge", np.less: "is_lt",
           np.less_equal: "is_le", np.logical_and: "logical_and", np.logical_or: "logical_or",
           np.logical_xor: "logical_xor", np.bitwise_and: "bitwise_and",
           np.bitwise_or: "bitwise_or", np.bitwise_xor: "bitwise_xor", np.invert: "bitwise_not",
           np.left_shift: "shift_left", np.right_shift: "shift_right_logical", np.abs: "abs",
           np.max: "max", np.min: "min", np.sum: "add", np.prod: "mult", np.amax: "max",
           np.amin: "min"}
_NP_ACT = {np.exp: "exp", np.log: "log", np.tanh: "tanh", np.sqrt: "sqrt", np.sin: "sin",
           np.arctan: "arctan", np.abs: "abs", np.sign: "sign", np.reciprocal: "reciprocal",
           np.square: "square", np.copy: "copy"}
for _f, _n in _NP_ALU.items():
    ALU_OF[_f] = getattr(AluOp, _n)
for _f, _n in _NP_ACT.items():
    ACT_OF[_f] = getattr(ActFunc, _n)


def _describe(op):
    return getattr(op, "__name__", repr(op))


def alu(op):
    """AluOp of an NKI operator (nl.add, np.add, "add"; None: bypass)."""
    if op is None:
        return AluOp.bypass
    if isinstance(op, AluOp):
        return op
    try:
        return ALU_OF[op]
    except (KeyError, TypeError):
        raise NkiError(f"{_describe(op)} is not an ALU operator of the Vector / GpSimd "
                       "engines (nl.add, nl.multiply, nl.maximum, ...)") from None


def act(op):
    """ActFunc of an NKI activation (nl.exp, np.exp, "exp", nl.copy / None: identity)."""
    if op is None:
        return ActFunc.copy
    if isinstance(op, ActFunc):
        return op
    try:
        return ACT_OF[op]
    except (KeyError, TypeError):
        unsupported(f"activation function {_describe(op)}",
                    "the ScalarE function table has " + ", ".join(ActFunc.__members__))


def engine(e, default=Engine.vector):
    """Engine of an nisa.engine value (unknown / None: the default)."""
    if e is None:
        return default
    if isinstance(e, Engine):
        return e
    key = getattr(e, "name", e)
    if not isinstance(key, str) or key not in _ENGINE_NAMES:
        # Any other value used to fall back to the default engine without a word.
        raise NkiError(f"engine={e!r}: use nisa.engine.tensor / vector / scalar / gpsimd / "
                       "sync (or unknown: the instruction's default)")
    return _ENGINE_NAMES[key] or default


_ENGINE_NAMES = {"tensor": Engine.tensor, "vector": Engine.vector, "scalar": Engine.scalar,
                 "activation": Engine.scalar, "gpsimd": Engine.gpsimd, "sync": Engine.sync,
                 "unknown": None}


# --- operands ---

def kb():
    c = _ctx.ctx()
    if c.pending:
        c.flush()
    return c.kb


def view(x, extents=None):
    """The C++ View of a tensor operand (a Lazy index resolved with the mask's extents)."""
    if type(x) is NkiTensor:
        return x.v
    if isinstance(x, Lazy):
        return x.resolve(extents)
    if isinstance(x, NkiTensor):
        return x._view()
    raise NkiError(f"{_operand(x)}expected a tile or tensor, {_got(x)}")


def scalar(x):
    """A per-partition scalar operand: a number, or a [P, 1] tile."""
    if isinstance(x, NkiTensor):
        return view(x)
    if _check.is_real(x):
        try:
            return float(x)
        except OverflowError:
            raise NkiError(f"{_operand(x)}{x!r} is too large for a float") from None
    raise NkiError(f"{_operand(x)}expected a number or a [P, 1] tile, {_got(x)}")


def _got(x):
    if isinstance(x, np.ndarray):
        return (f"got a numpy array {x.dtype}{list(x.shape)}: only the kernel's arguments "
                "become HBM tensors (pass it as one)")
    r = repr(x)
    return f"got {type(x).__name__} {r if len(r) < 60 else r[:57] + '...'}"


def _operand(x):
    """'nisa.<instruction>: <parameter>: ' for an operand ``x`` that view() / scalar() refuse:
    the caller's frame names both (an error path only, so the frame walk costs nothing)."""
    f = sys._getframe(2)
    while f is not None and f.f_globals.get("__name__") == __name__ and \
            f.f_code.co_name.startswith("<"):
        f = f.f_back  # through comprehensions / lambdas to the instruction itself
    if f is None or f.f_globals.get("__name__", "").split(".")[0] != "trnsim":
        return ""
    named = [k for k, v in f.f_locals.items() if v is x and not k.startswith("_")]
    arg = named[0] if len(named) == 1 else None  # None of two parameters: name neither
    mod = f.f_globals["__name__"]
    prefix = "nl." if mod.endswith("language") else "NkiTensor." if mod.endswith(
        "_tensor") else "nisa."
    return f"{prefix}{f.f_code.co_name}: " + (f"{arg}: " if arg else "")


def tile(x, what):
    """``x`` if it is a tile or tensor, else an NkiError naming the call and parameter."""
    if isinstance(x, NkiTensor):
        return x
    hint = ""
    if type(x).__name__ == "Blocked":
        hint = " (a blocked tensor: index its block dims first, t[i])"
    raise NkiError(f"{what}: expected a tile or tensor, {_got(x)}{hint}")


def dims(shape, what, min_rank=1):
    """A shape as a list of ints (nl.par_dim counts as its int)."""
    try:
        out = _check.shape(shape, what)
    except (TypeError, ValueError) as e:
        raise NkiError(str(e)) from None
    if len(out) < min_rank:
        raise NkiError(f"{what}: expected at least {min_rank} dim(s), got {tuple(out)}")
    return out


def axes_of(axis, rank, what):
    """Free axes given as an int or a tuple of ints, made non-negative; out of range or
    repeated axes are an NkiError (taken modulo the rank they named the wrong axis)."""
    try:
        axes = [axis] if np.isscalar(axis) or isinstance(axis, (int, np.integer)) else \
            _check.items(axis, what)
    except TypeError:
        raise NkiError(f"{what}: axis must be an int or a tuple of ints, {_got(axis)}") from None
    out = []
    for a in axes:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise NkiError(f"{what}: axis must be an int or a tuple of ints, {_got(axis)}")
        a = int(a)
        if not -rank <= a < rank:
            raise NkiError(f"{what}: axis {a} is out of range for a {rank}-dim tile")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise NkiError(f"{what}: axis {axis!r} names a dim twice")
    return out


def integer(x, what, lo=None, hi=None):
    try:
        return _check.integer(x, what, lo if lo is not None else _check.INT64_MIN,
                              hi if hi is not None else _check.INT64_MAX)
    except (TypeError, ValueError) as e:
        raise NkiError(str(e)) from None


def number(x, what):
    try:
        return _check.number(x, what)
    except (TypeError, ValueError) as e:
        raise NkiError(str(e)) from None


def pattern_of(pattern, what):
    """An access pattern [[step, num], ...] as a list of (int, int)."""
    try:
        entries = [_check.items(p, what) for p in _check.items(pattern, what)]
    except TypeError:
        raise NkiError(f"{what}: expected a pattern [[step, num], ...], {_got(pattern)}") from None
    out = []
    for p in entries:
        if len(p) != 2:
            raise NkiError(f"{what}: each pattern entry is [step, num], got {p!r}")
        out.append((integer(p[0], f"{what}: step"), integer(p[1], f"{what}: num")))
    return out


def is_tile(x):
    return isinstance(x, NkiTensor)


def alloc(shape, dtype, buffer="sbuf", name=None, where=None):
    """A new SBUF or PSUM tile (its contents read as NaN until written). Unnamed, it takes the
    name its kernel line (`where`, default the current one) assigns to."""
    c = _ctx.ctx()
    elem = packed_format(dtype)
    fmt = elem or format_name(dtype, "tile dtype")
    shape = dims(shape, "tile shape")
    if len(shape) == 1:
        shape = shape + [1]
    space = getattr(buffer, "space", buffer)
    n = c.name(name or assigned_name("psum" if space == "psum" else "tile", where))
    if space not in ("sbuf", "psum"):
        raise NkiError(f"alloc: buffer {buffer!r} is not sbuf or psum")
    new = c.kb.psum if space == "psum" else c.kb.sbuf
    if elem:  # a packed MX tile: its elements, four per packed element (_tensor.Packed)
        return Packed(new(n, fmt, shape + [4]), dtype)
    return NkiTensor(new(n, fmt, shape))


def new_like(t, dtype=None, copy=False, buffer="sbuf"):
    out = alloc(t.shape, dtype or t.dtype, buffer)
    if copy:
        tensor_copy(out, t)
    return out


def out_dtype(*xs, dtype=None):
    """An elementwise result's dtype: given, else the first tile operand's (fp32 from PSUM)."""
    if dtype is not None:
        return format_name(dtype, "dtype")
    for x in xs:
        if isinstance(x, NkiTensor):
            # A skipped instruction's operand (_masking.Void) has its space but no View.
            space = x.space if isinstance(x, Void) else view(x).space
            return "fp32" if space == "psum" else format_name(x.dtype)
    return "fp32"


# --- assignment and accumulation ---

def assign(dst, value):
    """dst[...] = value: a pending result is emitted into dst; a tile is copied (DMA when
    either side is in HBM); a number fills dst."""
    if isinstance(dst, Indirect) or isinstance(value, Indirect):
        if not isinstance(value, NkiTensor):
            raise NkiError(f"t[tile, ...] = value: a tensor-indexed store takes a tile, "
                           f"{_got(value)}")
        dma_copy(dst, value)
        return
    if isinstance(value, Pending) and value.v is None and value.take():
        value.emit(view(dst))
        value.v = view(dst)
        value.emit = None
        return
    if isinstance(value, NkiTensor):
        d, s = view(dst), view(value)
        if d.space == "hbm" or s.space == "hbm":
            dma_copy(dst, value)
        else:
            tensor_copy(dst, value)
        return
    if _check.is_real(value):
        d = view(dst)
        if d.space == "sbuf" and not _core.start_partition_allowed(d.start_partition, d.shape[0]):
            # No engine access may start there (t[i, j] = x for a row i of a loop): the value
            # is set in a tile at partition 0, which any engine may write, and a DMA, which
            # reaches every partition, moves it in place.
            tmp = new_like(NkiTensor(d))
            memset(tmp, value)
            dma_copy(NkiTensor(d), tmp)
            return
        memset(dst, value)
        return
    raise NkiError(f"tile[...] = value: cannot assign {_got(value)} to a tile")


def accumulate(dst, value, op):
    """dst op= value; a pending matmul accumulates into its PSUM group."""
    if (isinstance(value, Pending) and value.v is None and value.kind == "matmul"
            and op == "add" and view(dst).space == "psum" and value.take()):
        value.emit(view(dst), True)
        return
    if isinstance(value, NkiTensor):
        tensor_tensor(dst, dst, value, op)
    else:
        tensor_scalar(dst, dst, op, value)


# --- TensorE ---

def nc_matmul(dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, accumulate=None, tile_position=(), tile_size=(),
              perf_mode=None, name=None):
    """dst[M, N] (PSUM) = stationary[K, M].T @ moving[K, N]; accumulate=None continues an
    open accumulation group at dst (first write overwrites), False starts a new one.
    is_transpose: dst = stationary.T (moving is the identity), as nc_transpose on TensorE."""
    if is_transpose:  # the same instruction as nc_transpose on TensorE, dtype rules included
        check_transpose_identity(stationary, moving, "nisa.nc_matmul")
        return nc_transpose(dst, stationary, Engine.tensor)
    double = double_row(perf_mode)
    pos = _pair(tile_position, "nisa.nc_matmul: tile_position")
    size = _pair(tile_size, "nisa.nc_matmul: tile_size")
    st, mv = sbuf_view(stationary), sbuf_view(moving)
    # TensorE reads SBUF only (nc_matmul's docs), but NKI takes a PSUM operand (flash
    # attention's backward multiplies an nc_transpose result): a VectorE copy to SBUF first,
    # in the operand's dtype, values unchanged.
    if st.space == "psum":
        st = new_like(NkiTensor(st), copy=True).v
    if mv.space == "psum":
        mv = new_like(NkiTensor(mv), copy=True).v
    kb().matmul(view(dst), st, mv, accumulate is False, pos, size, double)
    return dst


def double_row(perf_mode):
    """Whether nc_matmul's perf_mode is FP8 double-row (nisa.matmul_perf_mode.double_row or
    double_row_gen3, or their names); none / None is the normal mode, anything else an
    NkiError (it used to run the normal mode without a word)."""
    name = getattr(perf_mode, "name", perf_mode)
    if perf_mode is None or name == "none":
        return False
    if name in ("double_row", "double_row_gen3"):
        return True
    raise NkiError(f"nisa.nc_matmul: perf_mode={perf_mode!r}: use nisa.matmul_perf_mode.none, "
                   "double_row or double_row_gen3 (or their names)")


def check_transpose_identity(stationary, moving, call):
    """nc_matmul(is_transpose=True) is "a matrix multiplication between data as the
    stationary tensor and an identity matrix as the moving tensor" (nki.isa.nc_transpose):
    moving must be a [K, K] tile for stationary's K partitions. Its values are not read (an
    identity is assumed); a shape no identity has is refused rather than computed wrongly."""
    k = tile(stationary, f"{call}: stationary").shape[0]
    m = tile(moving, f"{call}: moving").shape
    if len(m) != 2 or m[0] != k or m[1] != k:
        raise NkiError(f"{call}(is_transpose=True): moving is {list(m)}; it is the identity "
                       f"for stationary's {k} partitions, [{k}, {k}] (stationary is the data "
                       "transposed)")


def _pair(x, what):
    """() (none) or two ints: a one-element tile_position used to be dropped silently."""
    if type(x) is tuple and not x:  # the default, on every matmul: no checks to run
        return []
    try:
        v = _check.items(x, what)
    except TypeError:
        v = None
    if v is None or len(v) not in (0, 2):
        raise NkiError(f"{what}: expected () or (row, column) / (rows, columns), {_got(x)}")
    return [integer(e, what, 0, 2**31 - 1) for e in v]


# --- MX (NC-v4): packed MX tiles (_tensor.Packed) and their scales ---

def _nc_v4(call, lacks):
    """NKI's MX calls are "available only on NeuronCore-v4 and newer"."""
    from trnsim.nki.isa import get_nc_version, nc_version

    v = get_nc_version()
    if v < nc_version.gen4:
        raise NkiError(f"nisa.{call}: NeuronCore-v4 or newer only (trn3); "
                       f"{_ctx.ctx().chip.name} has NeuronCore-v{int(v)}, whose {lacks}")


def _mx_data(x, call, what, fp8_only=False):
    """An MX data operand: a tile of a packed MX dtype (an fp8 tile of four times the
    elements would run too, but it is not what NKI takes)."""
    t = tile(x, f"nisa.{call}: {what}")
    ok = ("float8_e5m2_x4", "float8_e4m3fn_x4") + (() if fp8_only else ("float4_e2m1fn_x4",))
    if not isinstance(t, Packed) or t.dtype not in ok:
        raise NkiError(f"nisa.{call}: {what} is {t.dtype}{list(t.shape)}; it must be a tile of "
                       + " or ".join(ok) + " (packed MX data)")
    return t


def mx_scale_partitions(partitions):
    """Partitions the scales of `partitions` data partitions span: those of data partition p
    are in partition 32 (p // 32) + (p % 32) // 8, the first four of each quadrant (AG4)."""
    p = partitions - 1
    return 32 * (p // 32) + (p % 32) // 8 + 1


def _mx_scale(x, call, what, partitions):
    v = view(tile(x, f"nisa.{call}: {what}"))
    if v.dtype not in ("uint8", "e8m0"):
        raise NkiError(f"nisa.{call}: {what} is {v.dtype}; MX scales are uint8 or "
                       "float8_e8m0fnu")
    need = mx_scale_partitions(partitions)
    if v.shape[0] < need:  # else a fault when the instruction runs
        raise NkiError(f"nisa.{call}: {what} has {v.shape[0]} partitions; the scales of "
                       f"{partitions} data partitions need {need} (those of data partition p "
                       "are in partition 32 (p // 32) + (p % 32) // 8)")
    return v


def nc_matmul_mx(dst, stationary, moving, stationary_scale, moving_scale, tile_position=None,
                 tile_size=None, accumulate=None, name=None):
    """NC-v4: dst[M, N] (PSUM, fp32 or bf16) = dequant(stationary).T @ dequant(moving), the
    MX data [K/4, M] and [K/4, N] in packed elements (K = 4 x partitions), each scaled by its
    block's 2^(scale - 127); row tiling only; accumulate as nc_matmul's."""
    call = "nc_matmul_mx"
    _nc_v4(call, "TensorE has no MX matmul")
    b = kb()
    st, mv = _mx_data(stationary, call, "stationary"), _mx_data(moving, call, "moving")
    pos = _pair(() if tile_position is None else tile_position, f"nisa.{call}: tile_position")
    size = _pair(() if tile_size is None else tile_size, f"nisa.{call}: tile_size")
    b.matmul_mx(view(dst), view(st), view(mv),
                _mx_scale(stationary_scale, call, "stationary_scale", st.shape[0]),
                _mx_scale(moving_scale, call, "moving_scale", mv.shape[0]), accumulate is False,
                pos, size)
    return dst


def quantize_mx(dst, src, dst_scale, name=None):
    """NC-v4 VectorE: dst (packed MXFP8, src's elements four to a packed element) and
    dst_scale of src (bf16 / fp16) in blocks of 8 partitions x 4 elements; a block's scale is
    twice OCP's (2^(floor(log2 amax) - emax + 1)), so its largest value rounds unsaturated."""
    call = "quantize_mx"
    _nc_v4(call, "VectorE has no MX quantisation")
    b = kb()
    d = _mx_data(dst, call, "dst", fp8_only=True)
    s = view(tile(src, f"nisa.{call}: src"))
    if s.dtype not in ("bf16", "fp16"):
        raise NkiError(f"nisa.{call}: src is {s.dtype}; it must be bfloat16 or float16")
    p, f = s.shape[0], int(np.prod(s.shape[1:]))
    if p % 32 or p > 128 or f % 4:
        raise NkiError(f"nisa.{call}: src is {list(s.shape)}; it takes a multiple of 32 "
                       "partitions (at most 128) and of 4 elements per partition")
    if d.shape[0] != p or 4 * int(np.prod(d.shape[1:])) != f:
        raise NkiError(f"nisa.{call}: dst is {d.dtype}{list(d.shape)}; src {list(s.shape)} "
                       f"needs [{p}, {f // 4}] (four of its elements to a packed element)")
    b.quantize_mx(view(d), _mx_scale(dst_scale, call, "dst_scale", p), s)
    return dst


def nc_transpose(dst, data, engine=None, name=None):
    """dst[F, P] = data[P, F] on TensorE (dst in PSUM) or VectorE (<= 32 x 32). NKI keeps the
    input dtype; where TensorE cannot write dst itself (dst in SBUF, or a dtype the PE array
    does not write on this generation) it writes a PSUM tile it can, copied to dst (VectorE)."""
    e = globals()["engine"](engine, None)
    d = view(dst)
    if e is None:
        e = Engine.tensor if d.space == "psum" else Engine.vector
    if e != Engine.tensor:
        kb().transpose(d, view(data), e)
        return dst
    src = sbuf_view(data)
    fmt = _pe_transpose_format(src.dtype, d.dtype)
    if d.space == "psum" and fmt == d.dtype:
        kb().transpose(d, src, e)
        return dst
    tmp = alloc(d.shape, fmt, "psum")
    kb().transpose(tmp.v, src, e)
    if fmt == "bf16" and _is_fp8(d.dtype) and _is_fp8(src.dtype):
        # The 16-bit slots hold the FP8 bytes unchanged (low byte, little-endian): copy those
        # bytes, bit-exact, rather than read them as bf16 values.
        tensor_copy(NkiTensor(d.bitcast("uint8")), NkiTensor(tmp.v.bitcast("uint8")[
            (Ellipsis, slice(0, None, 2))]))
    else:
        tensor_copy(dst, tmp)
    return dst


def check_reduce_cmd(cmd, reduce_res, call):
    """An instruction's reduce_cmd: the reduce registers are modelled for one instruction at a
    time (its reduce_res is its own reduction, idle / reset_reduce). A sum carried over from
    earlier instructions (reduce, load_reduce), or reset with a reduce_res to fill, raises:
    dropping the earlier part would be a silent wrong result."""
    name = getattr(cmd, "name", cmd)
    if name in (None, "idle", "reset_reduce") or (name == "reset" and reduce_res is None):
        return
    if name in ("reset", "reduce", "load_reduce"):
        unsupported(f"{call}(reduce_cmd=reduce_cmd.{name})",
                    "the engine's reduce registers are not kept across instructions; reduce "
                    "each instruction into its own reduce_res and add them (nl.add)")
    raise NkiError(f"{call}: reduce_cmd={cmd!r}: use nisa.reduce_cmd.idle, reset, reduce, "
                   "reset_reduce or load_reduce")


def _is_fp8(fmt):
    return fmt.startswith("fp8") or fmt == "cfp8"


def _pe_transpose_format(src, dst):
    """The PSUM format a TensorE transpose from `src` writes for a `dst` result: NC-v2 writes
    fp32 (a matmul with the identity: exact for every float input, NaN / Inf aside, which
    the simulator propagates as NC-v2 does); from NC-v3 the transpose is bit-exact and keeps
    the width: FP8 bytes land in 16-bit elements (a bf16 tile, nc_transpose copies the bytes
    out). A dtype conversion goes through fp32 values, which the copy converts."""
    from trnsim.nki.isa import get_nc_version, nc_version

    if get_nc_version() < nc_version.gen3:
        # An integer input has no exact fp32 route: dst as asked, which the ISA check refuses.
        return dst if src.startswith(("int", "uint")) else "fp32"
    if src == dst:
        return "bf16" if _is_fp8(src) else src
    return "fp32"


# --- ScalarE ---

def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd=None, name=None, engine=None):
    """dst = op(data * scale + bias); with reduce_res, reduce_res[P, 1] = sum over the
    free dims of the result."""
    check_reduce_cmd(reduce_cmd, reduce_res, "nisa.activation")
    b = kb()
    f = act(op)
    bias = 0.0 if bias is None else scalar(bias)
    if reduce_res is not None:
        if reduce_op is not None and alu(reduce_op) != AluOp.add:
            raise NkiError("activation: reduce_op must be nl.add (ScalarE sums)")
        b.activation_reduce(view(dst), view(reduce_res), view(data), f, scalar(scale), bias)
    else:
        b.activation(view(dst), view(data), f, scalar(scale), bias)
    return dst


def activation_reduce(dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None):
    return activation(dst, op, data, bias, scale, reduce_op, reduce_res)


# --- VectorE / GpSimd ---

def tensor_tensor(dst, data1, data2, op, engine=None, name=None):
    """dst = data1 op data2 (Vector, or GpSimd). In the current dialect, int32 / uint32 tiles
    default to GpSimd, whose integer arithmetic is exact (nki.isa.tensor_tensor), unless one
    is in PSUM, which GpSimd cannot reach."""
    b = kb()
    default = Engine.vector
    if _ctx.ctx().dialect != "legacy" and _int32_outside_psum(dst, data1, data2):
        default = Engine.gpsimd
    e = globals()["engine"](engine, default)
    b.tensor_tensor(view(dst), engine_view(data1, e), engine_view(data2, e), alu(op), e)
    return dst


def _int32_outside_psum(*tiles):
    for t in tiles:
        v = view(t)
        if v.space == "psum" or v.dtype not in ("int32", "uint32"):
            return False
    return True


def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None,
                  reverse1=False, engine=None, name=None):
    """dst = (data op0 operand0) op1 operand1; operands numbers or [P, 1] tiles."""
    e = globals()["engine"](engine)
    kb().tensor_scalar(view(dst), engine_view(data, e), alu(op0), scalar(operand0),
                       bool(reverse0), alu(op1), 0.0 if operand1 is None else scalar(operand1),
                       bool(reverse1), e)
    return dst


def scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0=False,
                         reverse1=False, name=None):
    """dst = (data op0 operand0) op1 operand1, operand1 a tile."""
    if reverse1:
        unsupported("scalar_tensor_tensor(reverse1=True)")
    kb().scalar_tensor_tensor(view(dst), view(data), alu(op0), scalar(operand0),
                              bool(reverse0), alu(op1), view(operand1))
    return dst


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None,
                  minor_first=False):
    """dst = op over the free axes `axis` of data (numpy's numbering; with `minor_first`,
    [1, ..., k] that are not the trailing dims count from the most minor, the current ISA's
    numbering). Axes that are not the innermost are reduced by the same one instruction reading
    data through a permuted access pattern (the kept dims first, the reduced ones innermost),
    as the engines walk any pattern."""
    rank = len(tile(data, "nisa.tensor_reduce: data").shape)
    axes = sorted(axes_of(axis, rank, "nisa.tensor_reduce"))
    if 0 in axes:
        unsupported(f"tensor_reduce over the partition dim (axes {tuple(axes)})",
                    "reduce across partitions with nisa.tensor_partition_reduce (GpSimd) or a "
                    "TensorE transpose first")
    trailing = axes == list(range(rank - len(axes), rank))
    if minor_first and not trailing and axes == list(range(1, len(axes) + 1)):
        # The ISA numbers reduction axes from the most minor: "the reduction axes must contain
        # axis 1 (most-minor)" ([1], [1, 2], ...; nisa.tensor_reduce's API reference), as the
        # nki-library's kernels use them: the innermost len(axes) free dims.
        axes = list(range(rank - len(axes), rank))
    elif not trailing:
        kept = [d for d in range(1, rank) if d not in axes]
        data = data.permute([0, *kept, *axes])
    kb().tensor_reduce(view(dst), view(data), alu(op), len(axes))
    if negate:
        tensor_scalar(dst, dst, "mult", -1.0)
    return dst


def tensor_partition_reduce(dst, op, data, name=None):
    """dst[1, F] = op over the partitions of data (GpSimd)."""
    kb().partition_reduce(view(dst), sbuf_view(data), alu(op))
    return dst


def tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False,
                       name=None):
    """r[i] = (data0[i] op0 r[i-1]) op1 data1[i] along the free dim, r[-1] = initial."""
    if reverse0 or reverse1:
        unsupported("tensor_tensor_scan(reverse0/reverse1=True)")
    kb().tensor_tensor_scan(view(dst), view(data0), view(data1), scalar(initial), alu(op0),
                            alu(op1))
    return dst


def tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res, reverse0=False,
                         reduce_cmd=None, name=None):
    """dst = data op0 operand0; reduce_res[P, 1] = reduce_op over the free dims of dst."""
    check_reduce_cmd(reduce_cmd, reduce_res, "nisa.tensor_scalar_reduce")
    kb().tensor_scalar_reduce(view(dst), view(reduce_res), view(data), alu(op0),
                              scalar(operand0), bool(reverse0), alu(reduce_op))
    return dst


_CUMULATIVE_START = {AluOp.add: 0.0, AluOp.subtract: 0.0, AluOp.mult: 1.0,
                     AluOp.max: float("-inf"), AluOp.min: float("inf")}


def tensor_scalar_cumulative(dst, src, op0, op1, imm0, imm1=None, reduce_cmd=None,
                             reverse0=False, name=None):
    """VectorE running op along each partition's free elements: r = op1(src[i] op0 imm0, r)
    (reverse0: imm0 op0 src[i]), dst[i] = r, in fp32. reduce_cmd: reset_reduce (default: r
    starts at op1's identity), load_reduce (r starts at imm1, a number or a [P, 1] tile) or
    reduce (r goes on from the engine's accumulator, where the previous one left it)."""
    call = "nisa.tensor_scalar_cumulative"
    o1 = alu(op1)
    if o1 not in _CUMULATIVE_START:
        raise NkiError(f"{call}: op1={_describe(op1)}: the running op is nl.add, nl.subtract, "
                       "nl.multiply, nl.maximum or nl.minimum")
    cmd = getattr(reduce_cmd, "name", reduce_cmd)
    if cmd in (None, "reset_reduce"):
        start, carry = _CUMULATIVE_START[o1], False
    elif cmd == "load_reduce":
        if imm1 is None:
            raise NkiError(f"{call}: reduce_cmd=load_reduce starts from imm1: give imm1")
        start, carry = scalar(imm1), False
    elif cmd == "reduce":
        start, carry = 0.0, True
    else:
        raise NkiError(f"{call}: reduce_cmd={reduce_cmd!r}: use nisa.reduce_cmd.reset_reduce, "
                       "load_reduce or reduce")
    kb().tensor_scalar_cumulative(view(dst), view(src), alu(op0), scalar(imm0), o1, start,
                                  carry, bool(reverse0))
    return dst


def tensor_copy(dst, src, engine=None, name=None, dtype=None):
    """dst = src (with the dtype conversion), on Vector, Scalar or GpSimd. ``dtype=`` (the
    NKI 0.2 form, where the result was a new tile) may only name dst's dtype, which is what
    the copy converts to."""
    if dtype is not None and (packed_format(dtype) or format_name(
            dtype, "nisa.tensor_copy: dtype")) != view(dst).dtype:
        raise NkiError(f"nisa.tensor_copy: dtype={dtype} differs from dst's {view(dst).dtype}: "
                       "the copy converts to dst's dtype (declare dst with the dtype wanted)")
    _same_packing(dst, src, "nisa.tensor_copy")
    e = globals()["engine"](engine)
    kb().tensor_copy(view(dst), engine_view(src, e), e)
    return dst


def exponential(dst, src, max_value=0.0, reduce_res=None, reduce_cmd=None, reduce_init=0.0,
                name=None):
    """NC-v4: dst = exp(src - max_value) on VectorE; with reduce_res, its row sums follow
    in a VectorE tensor_reduce (the engine's own accumulator registers are not modelled as
    readable)."""
    check_reduce_cmd(reduce_cmd, reduce_res, "nisa.exponential")
    kb().exponential(view(dst), view(src), scalar(max_value))
    if reduce_res is not None:
        if reduce_init:
            unsupported("exponential(reduce_init != 0)")
        tensor_reduce(reduce_res, "add", dst, tuple(range(1, len(dst.shape))))
    return dst


def reciprocal(dst, data, name=None):
    kb().reciprocal(view(dst), view(data))
    return dst


def memset(dst, value, engine=None, name=None):
    """dst = value."""
    kb().memset(view(dst), number(value, "nisa.memset: value"), globals()["engine"](engine))
    return dst


def select(dst, predicate, on_true, on_false):
    """dst = predicate != 0 ? on_true : on_false (on_false may be a number)."""
    tile(dst, "nisa.select: dst")
    if not is_tile(on_false):
        t = alloc(dst.shape, dst.dtype)
        memset(t, on_false)
        on_false = t
    if not is_tile(on_true):
        t = alloc(dst.shape, dst.dtype)
        memset(t, on_true)
        on_true = t
    kb().select(view(dst), view(predicate), view(on_true), view(on_false))
    return dst


def _filled(like, value, what):
    """A tile of like's shape and dtype holding `value` (one memset): the select reads its
    three operands as tiles."""
    t = alloc(like.shape, like.dtype)
    memset(t, number(value, what))
    return t


def _unsigned_predicate(predicate, call):
    fmt = view(tile(predicate, f"{call}: predicate")).dtype
    if fmt not in ("uint8", "uint16", "uint32"):
        raise NkiError(f"{call}: predicate is {fmt}; NKI takes a uint8, uint16 or uint32 "
                       "predicate")


def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=None):
    """dst = src where predicate != 0 (== 0 with reverse_pred), dst unchanged elsewhere: one
    VectorE select whose other operand is dst itself, which is what the hardware's
    predicated copy computes (and costs: max(MIN_II, 2N), N with one operand in PSUM)."""
    call = "nisa.tensor_copy_predicated"
    tile(dst, f"{call}: dst")
    _unsigned_predicate(predicate, call)
    if is_tile(src):
        if view(src).dtype != view(dst).dtype:
            raise NkiError(f"{call}: src is {view(src).dtype} and dst {view(dst).dtype}; they "
                           "must share the dtype")
    else:
        src = _filled(dst, src, f"{call}: src")
    on_true, on_false = (dst, src) if reverse_pred else (src, dst)
    kb().select(view(dst), view(predicate), view(on_true), view(on_false))
    return dst


def select_reduce(dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd=None,
                  reduce_op=None, reverse_pred=False, name=None):
    """dst = predicate != 0 ? on_true : on_false (swapped with reverse_pred), on_false a
    number or one value per partition ([P, 1]); reduce_res[P, 1] = max of dst over its free
    dims, by a VectorE tensor_reduce after the select (the engine's fused reduction is not an
    instruction of the core, as for nisa.exponential)."""
    call = "nisa.select_reduce"
    check_reduce_cmd(reduce_cmd, reduce_res, call)
    tile(dst, f"{call}: dst")
    tile(on_true, f"{call}: on_true")
    if reduce_op is not None and alu(reduce_op) != AluOp.max:
        raise NkiError(f"{call}: reduce_op must be nl.maximum (the only reduction NKI offers)")
    if not is_tile(on_false):
        on_false = _filled(dst, on_false, f"{call}: on_false")
    elif tuple(on_false.shape) != tuple(dst.shape):
        if on_false.shape[0] != dst.shape[0] or any(d != 1 for d in on_false.shape[1:]):
            raise NkiError(f"{call}: on_false {tuple(on_false.shape)} must be a number or one "
                           f"value per partition ({dst.shape[0]}, 1)")
        on_false = on_false.reshape([dst.shape[0]] + [1] * (len(dst.shape) - 1)).broadcast_to(
            dst.shape)
    if reverse_pred:
        on_true, on_false = on_false, on_true
    kb().select(view(dst), view(predicate), view(on_true), view(on_false))
    if reduce_res is not None:
        tensor_reduce(reduce_res, "max", dst, tuple(range(1, len(dst.shape))))
    return dst


FP32_MIN = -3.4028234663852886e38


def range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=None,
                 reduce_res=None, reduce_op=None, range_start=0, on_false_value=None,
                 name=None):
    """NC-v3: dst = on_true_tile where (range_start + i) comp_op0 bound0 and (range_start + i)
    comp_op1 bound1 (i: the flat free index; bounds numbers or [P, 1] tiles), else
    on_false_value (default fp32 min); the row max goes to the VectorE accumulator and to
    reduce_res (a scratch [P, 1] fp32 tile when absent). reduce_cmd: idle / reset_reduce
    start the accumulator from this instruction's max, reduce takes the max with it (a chain
    of range_selects, as the API reference's example); reset / load_reduce raise."""
    call = "nisa.range_select"
    tile(dst, f"{call}: dst")
    tile(on_true_tile, f"{call}: on_true_tile")
    cmd = getattr(reduce_cmd, "name", reduce_cmd)
    if cmd in ("reset", "load_reduce"):
        unsupported(f"{call}(reduce_cmd=reduce_cmd.{cmd})",
                    "the VectorE accumulator is kept for range_select's max with reduce_cmd "
                    "idle, reset_reduce and reduce; reset and load_reduce are not modelled")
    if cmd not in (None, "idle", "reset_reduce", "reduce"):
        raise NkiError(f"{call}: reduce_cmd={reduce_cmd!r}: use nisa.reduce_cmd.idle, "
                       "reset_reduce or reduce")
    if reduce_op is not None and alu(reduce_op) != AluOp.max:
        raise NkiError(f"{call}: reduce_op must be nl.maximum (the only reduction it has)")
    ops = []
    for op, what in ((comp_op0, "comp_op0"), (comp_op1, "comp_op1")):
        a = alu(op)
        if a not in (AluOp.is_equal, AluOp.not_equal, AluOp.is_ge, AluOp.is_gt, AluOp.is_le,
                     AluOp.is_lt):
            raise NkiError(f"{call}: {what} must be a comparison (nl.greater_equal, nl.less, "
                           f"nl.equal, ...), got {_describe(op)}")
        ops.append(a)
    start = integer(range_start, f"{call}: range_start")
    fill = FP32_MIN if on_false_value is None or on_false_value is Ellipsis else number(
        on_false_value, f"{call}: on_false_value")
    if reduce_res is None:
        reduce_res = alloc((view(on_true_tile).shape[0], 1), "float32")
    kb().range_select(view(dst), view(reduce_res), view(on_true_tile), ops[0], scalar(bound0),
                      ops[1], scalar(bound1), start, fill, cmd == "reduce")
    return dst


def bn_stats(dst, data, name=None):
    kb().bn_stats(view(dst), view(data))
    return dst


def bn_aggr(dst, data, name=None):
    kb().bn_aggr(view(dst), view(data))
    return dst


def max8(dst, src, name=None):
    kb().max8(view(dst), view(src))
    return dst


def nc_find_index8(dst, data, vals, name=None):
    """dst[P, 8] (uint16 / uint32) = the position in data of each of vals[P, 8] (VectorE)."""
    kb().find_index8(view(dst), view(data), view(vals))
    return dst


def nc_stream_shuffle(dst, src, shuffle_mask, call="nisa.nc_stream_shuffle"):
    """VectorE partition moves inside each 32-partition quadrant: dst partition 32 q + i takes
    src partition 32 q + shuffle_mask[i] (counted from each tile's first partition), or keeps
    its value where the entry is 255. Same dtype and elements per partition; bit-exact."""
    tile(dst, f"{call}: dst")
    tile(src, f"{call}: src")
    if isinstance(shuffle_mask, (str, bytes)) or not hasattr(shuffle_mask, "__len__"):
        raise NkiError(f"{call}: shuffle_mask must be a list of 32 source partitions, got "
                       f"{shuffle_mask!r}")
    if len(shuffle_mask) != 32:
        raise NkiError(f"{call}: shuffle_mask has {len(shuffle_mask)} entries; a quadrant has 32")
    mask = [integer(v, f"{call}: shuffle_mask[{i}]", 0, 255) for i, v in enumerate(shuffle_mask)]
    for i, m in enumerate(mask):
        if 32 <= m < 255:
            raise NkiError(f"{call}: shuffle_mask[{i}] = {m}: a partition of the quadrant "
                           "(0..31), or 255 to leave the output partition unchanged")
    kb().stream_shuffle(view(dst), view(src), mask)
    return dst


def nc_match_replace8(dst, data, vals, imm, dst_idx=None, name=None):
    """dst = data with the first occurrence of each of vals[P, 8] replaced by imm; dst_idx
    [P, 8] their positions. Without dst_idx the positions go to a scratch tile: trnsim's
    instruction always writes them (32 bytes a partition of SBUF while it runs)."""
    imm = number(imm, "nisa.nc_match_replace8: imm")
    if dst_idx is None:
        dst_idx = alloc((view(data).shape[0], 8), "uint32")
    kb().match_replace8(view(dst), view(dst_idx), view(data), view(vals), imm)
    return dst


# --- the engines' random generators (C++: core/exec/exec_random.cc) ---

def rand_seed(seeds, engines=(Engine.gpsimd,), call="nisa.rand_set_state"):
    """Seeds the generators of `engines` from an int32 / uint32 tile ([1, k]: every lane the
    same seed; [P, k]: lane p from row p) or a number (one seed for every lane)."""
    if not is_tile(seeds):
        n = integer(seeds, f"{call}: seed", -2**31, 2**32 - 1)
        seeds = alloc((1, 1), "uint32" if n >= 2**31 else "int32")
        memset(seeds, float(n))
    for e in engines:
        kb().rand_seed(engine_view(seeds, e), engine=e)


def rand(dst, engine=Engine.gpsimd):
    """dst = uniform [0, 1) values, the next draws of `engine`'s lanes."""
    kb().rand(engine_view(dst, engine), engine=engine)
    return dst


def dropout(dst, data, prob, name=None):
    """dst = data with each element zeroed where its VectorE lane's draw is below prob (a
    number or a [P, 1] tile: the drop probability)."""
    kb().dropout(view(dst), view(data), scalar(prob))
    return dst


def _flat_pattern(dst, pattern):
    """The sign of a pattern that walks the free elements of dst in order (step +-1 on the
    innermost dim, row-major above it), or None."""
    pattern = pattern_of(pattern, "pattern")
    sizes = [n for _, n in pattern]
    free = int(np.prod(dst.shape[1:])) if len(dst.shape) > 1 else 1
    if int(np.prod(sizes)) != free:
        raise NkiError(f"pattern {pattern} has {int(np.prod(sizes))} elements per partition; "
                       f"dst has {free}")
    for sign in (1, -1):
        stride, ok = sign, True
        for s, n in reversed(pattern):
            if n > 1 and s != stride:
                ok = False
            stride *= n
        if ok:
            return sign
    return None


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None):
    """dst[p, ...] = offset + channel_multiplier * p + the pattern's affine value."""
    tile(dst, "nisa.iota: dst")
    sign = _flat_pattern(dst, pattern)
    offset = integer(offset, "nisa.iota: offset", -2**31, 2**31 - 1)
    channel_multiplier = integer(channel_multiplier, "nisa.iota: channel_multiplier",
                                 -2**31, 2**31 - 1)
    b = kb()
    if sign == 1:
        b.iota(view(dst), int(offset), int(channel_multiplier))
    elif sign == -1:  # offset + cm p - i = -(-offset - cm p + i)
        b.iota(view(dst), -int(offset), -int(channel_multiplier))
        tensor_scalar(dst, dst, "mult", -1.0)
    else:
        _iota_any(_by_pattern(dst, pattern), pattern_of(pattern, "pattern"), int(offset),
                  int(channel_multiplier))
    return dst


def _by_pattern(t, pattern):
    """Tile `t` with one free dim per pattern entry (its free elements in order, as a
    pattern walks them)."""
    t = NkiTensor(view(t))
    return t.reshape([t.shape[0]] + [int(n) for _, n in pattern])


def _radix(pattern):
    """(scale, order) when the dims a pattern moves along (step != 0, num > 1) count as one
    mixed-radix number times `scale` (sorted by |step|: each step the previous one times the
    previous num, all of one sign), `order` those dims from the largest step; else None."""
    moving = sorted((abs(s), j) for j, (s, n) in enumerate(pattern) if s != 0 and n > 1)
    if len({pattern[j][0] > 0 for _, j in moving}) > 1:
        return None
    unit = moving[0][0] if moving else 1
    expect = unit
    for a, j in moving:
        if a != expect:
            return None
        expect *= pattern[j][1]
    sign = -1 if moving and pattern[moving[0][1]][0] < 0 else 1
    return sign * unit, [j for _, j in reversed(moving)]


def _iota_any(d, pattern, offset, cm):
    """d[p, i...] = offset + cm p + sum(step_j i_j), d with one dim per pattern entry, when
    the GpSimd iota's own walk (offset + cm p + running index) is not the pattern. A pattern
    that is one count (_radix) is one iota over the dims it moves along, in order of step:
    a view of d when it moves along all of them, else a compact tile copied into d along a
    stride-0 view (the value repeats along the others); a scale other than +-1 is a VectorE
    multiply-add after it. Any other pattern is the sum of such iotas, one per dim."""
    radix = _radix(pattern)
    if radix is None:
        moving = [j for j, (s, n) in enumerate(pattern) if s != 0 and n > 1]
        terms = []
        for k, j in enumerate(moving):
            t = alloc(d.shape, "int32")
            one = [(s if i == j else 0, n) for i, (s, n) in enumerate(pattern)]
            _iota_any(t, one, offset if k == 0 else 0, cm if k == 0 else 0)
            terms.append(t)
        acc = terms[0]
        for k, t in enumerate(terms[1:], 2):
            out = d if k == len(terms) else acc
            tensor_tensor(out, acc, t, "add")
            acc = out
        return d
    scale, order = radix
    p = d.shape[0]
    still = [j for j, (_, n) in enumerate(pattern) if n > 1 and j not in order]
    if still:
        c = alloc([p] + [pattern[j][1] for j in order], d.dtype)
    else:  # d itself, walked from the largest step (the dims of one element add nothing)
        c = NkiTensor(_walked(view(d), pattern, order))
    b = kb()
    if scale == 1:
        b.iota(view(c), offset, cm)
    elif scale == -1:
        b.iota(view(c), -offset, -cm)
        tensor_scalar(c, c, "mult", -1.0)
    else:  # the count, then times the scale plus offset + cm p (a column when cm != 0)
        b.iota(view(c), 0, 0)
        add = offset
        if cm:
            add = alloc([p, 1], "int32")
            b.iota(view(add), offset, cm)
        tensor_scalar(c, c, "mult", float(scale), op1="add", operand1=add)
    if still:
        cstrides, coff = abs_pattern(view(c))
        step = {j: int(np.prod([pattern[i][1] for i in order[k + 1:]]))
                for k, j in enumerate(order)}
        tensor_copy(d, NkiTensor(view(c).pattern(
            [(cstrides[0], p)] + [(step.get(j, 0), n) for j, (_, n) in enumerate(pattern)],
            coff)))
    return d


_FLIP = {"is_ge": "is_le", "is_le": "is_ge", "is_gt": "is_lt", "is_lt": "is_gt",
         "is_equal": "is_equal", "not_equal": "not_equal"}


def affine_select(dst, pattern, offset, channel_multiplier, on_true_tile, on_false_value,
                  cmp_op="is_equal", name=None):
    """dst = cmp_op(offset + channel_multiplier * p + pattern value, 0) ? on_true : fill."""
    tile(dst, "nisa.affine_select: dst")
    cmp = alu(cmp_op)
    cmp_name = cmp.name
    sign = _flat_pattern(dst, pattern)
    offset = integer(offset, "nisa.affine_select: offset", -2**31, 2**31 - 1)
    channel_multiplier = integer(channel_multiplier, "nisa.affine_select: channel_multiplier",
                                 -2**31, 2**31 - 1)
    on_false_value = number(on_false_value, "nisa.affine_select: on_false_value")
    if cmp_name not in _FLIP:
        unsupported(f"affine_select with {cmp_name}", "cmp_op is a comparison")
    order = None
    if sign is None:
        pattern = pattern_of(pattern, "pattern")
        radix = _radix(pattern)
        if radix is None or abs(radix[0]) != 1 or any(
                n > 1 and j not in radix[1] for j, (_, n) in enumerate(pattern)):
            # Not one count of the elements: the affine value by iota (_iota_any), compared
            # and selected on VectorE (the GpSimd select's predicate is its running index).
            value = iota(alloc(dst.shape, "int32"), pattern, offset, channel_multiplier)
            pred = alloc(dst.shape, "uint8")
            tensor_scalar(pred, value, cmp, 0.0)
            return select(dst, pred, on_true_tile, on_false_value)
        sign, order = radix  # one count in another order: dst and src walked in that order
    if sign == -1:  # negate the affine value and flip the comparison
        offset, channel_multiplier, cmp = -offset, -channel_multiplier, alu(_FLIP[cmp_name])
    src = sbuf_view(on_true_tile)
    if src.space == "psum":
        # GpSimd reads no PSUM (HARDWARE.md s2.2), but NKI takes a PSUM on_true_tile (flash
        # attention's backward pass selects its matmul result): a VectorE copy to SBUF first,
        # values unchanged.
        src = new_like(NkiTensor(src), copy=True).v
    d = view(dst)
    if order is not None:
        d, src = (_walked(t, pattern, order) for t in (d, src))
    kb().affine_select(d, src, cmp, int(offset), int(channel_multiplier),
                       float(on_false_value))
    return dst


def _walked(v, pattern, order):
    """View `v` (one free dim per pattern entry) walking the dims `order` in that order."""
    v = _by_pattern(NkiTensor(v), pattern).v
    strides, off = abs_pattern(v)
    return v.pattern([(strides[0], v.shape[0])] +
                     [(strides[1 + j], pattern[j][1]) for j in order], off)


# --- DMA ---

def dma_copy(dst, src, dst_rmw_op=None, oob_mode=None, dge_mode=None, engine=None, name=None,
             **kwargs):
    """dst = src between HBM and SBUF (or HBM to HBM); dst_rmw_op=nl.add adds into SBUF (NC-v4
    near memory; earlier generations through the DMA CC engines at half throughput)."""
    acc = dst_rmw_op is not None
    if acc and alu(dst_rmw_op) != AluOp.add:
        unsupported("dma_copy(dst_rmw_op) other than add")
    e = globals()["engine"](engine, None)
    if isinstance(dst, Indirect) or isinstance(src, Indirect):
        _dma_indirect(dst, src, e, acc, oob_mode)
        return dst
    _same_packing(dst, src, "nisa.dma_copy")
    kb().dma_copy(view(dst), sbuf_view(src), e, acc)
    return dst


def _same_packing(dst, src, call):
    """A packed MX tensor is copied to and from tensors of its own dtype only: a copy between
    dtypes converts values, and MX elements are codes read with their scales."""
    a, b = isinstance(dst, Packed), isinstance(src, Packed)
    if (a or b) and not (a and b and dst.dtype == src.dtype):
        raise NkiError(f"{call}: dst is {getattr(dst, 'dtype', dst)} and src "
                       f"{getattr(src, 'dtype', src)}; a packed MX tensor is copied to and from "
                       "its own dtype (view the other one as it: t.view(nl.<packed dtype>))")


def _dma_indirect(dst, src, e, acc, oob_mode):
    """A gather (src = t[idx_tile, ...]) or scatter (dst = t[idx_tile, ...]) (_indirect.py):
    software DGE on GpSimd; a row number outside the tensor faults the run (oob_mode.error),
    or moves nothing (oob_mode.skip: a gather's partition keeps its values)."""
    if isinstance(dst, Indirect) and isinstance(src, Indirect):
        raise NkiError("dma_copy: both dst and src are tensor-indexed (indirect) accesses; one "
                       "side is an SBUF tile")
    if acc and isinstance(src, Indirect):
        unsupported("dma_copy(dst_rmw_op=) with a tensor-indexed (indirect) source",
                    "a gather writes SBUF rows; a scatter (indirect dst) may add")
    mode = getattr(oob_mode, "name", oob_mode)
    if mode not in (None, "error", "skip"):
        raise NkiError(f"dma_copy: oob_mode={oob_mode!r}: oob_mode.error or oob_mode.skip")
    skip = mode == "skip"
    if isinstance(src, Indirect):
        kb().dma_gather(view(dst), src.table, view(src.offsets), e, skip)
    else:
        kb().dma_scatter(dst.table, sbuf_view(src), view(dst.offsets), e, acc, skip)


def dma_transpose(dst, src, axes=None, dge_mode=None, name=None):
    """dst[F, P] = src[P, F] during the copy (NC-v3 and later)."""
    if axes is not None and tuple(axes) != (1, 0):
        unsupported(f"nisa.dma_transpose(axes={tuple(axes)})",
                    "trnsim's DMA transposes two dims (axes=(1, 0))")
    kb().dma_transpose(view(dst), sbuf_view(src))
    return dst


def sbuf_view(x):
    """view(x) for an engine that reads only SBUF: a PSUM-resident broadcast's SBUF copy."""
    if isinstance(x, PsumBroadcast):
        return x.in_sbuf()
    return view(x)


def engine_view(x, e):
    """view(x) for engine `e`: GpSimd reads no PSUM (HARDWARE.md s2.2)."""
    return sbuf_view(x) if e == Engine.gpsimd else view(x)


# --- small helpers for the language wrappers ---

def binary(a, b, op, dtype=None):
    """a op b into a new tile: tensor_tensor for two tiles, tensor_scalar otherwise."""
    op = alu(op)
    if is_tile(a) and is_tile(b):
        shape = _broadcast_shapes(a.shape, b.shape)
        if len(a.shape) != len(b.shape):  # numpy would add leading dims: NKI does not
            raise NkiError(f"shapes {tuple(a.shape)} and {tuple(b.shape)}: an elementwise op "
                           "needs tiles of the same rank")
        dt = out_dtype(a, b, dtype=dtype)
        a, b = _one_per_partition(a, shape), _one_per_partition(b, shape)
        # A [P, 1] column operand is a per-partition scalar: the compiler makes the op a
        # tensor_scalar, N cycles on one input, not a 2N tensor_tensor (HARDWARE.md s8.1).
        if tuple(a.shape) == shape and _column(b, shape):
            col = b.reshape((shape[0], 1))
            return Pending(lambda d: tensor_scalar(NkiTensor(d), a, op, col), shape, dt)
        if tuple(b.shape) == shape and _column(a, shape):
            col = a.reshape((shape[0], 1))
            return Pending(lambda d: tensor_scalar(NkiTensor(d), b, op, col, reverse0=True),
                           shape, dt)
        a2 = a if a.shape == shape else a.broadcast_to(shape)
        b2 = b if b.shape == shape else b.broadcast_to(shape)
        return Pending(lambda d: tensor_tensor(NkiTensor(d), a2, b2, op), shape, dt)
    if is_tile(a):
        _number(b, op)  # checked now, where the kernel's call is, not when the result is placed
        return Pending(lambda d: tensor_scalar(NkiTensor(d), a, op, b), a.shape,
                       out_dtype(a, dtype=dtype))
    if is_tile(b):
        _number(a, op)
        return Pending(lambda d: tensor_scalar(NkiTensor(d), b, op, a, reverse0=True), b.shape,
                       out_dtype(b, dtype=dtype))
    raise NkiError(f"an elementwise op needs at least one tile, got {_got(a)} and {_got(b)}")


def _one_per_partition(t, shape):
    """A single value ([1, 1, ...] on chip) against a [P, F...] result: repeated over the P
    partitions only, so that it is a per-partition scalar operand (a column) below."""
    if (t.shape[0] == 1 and shape[0] > 1 and all(d == 1 for d in t.shape[1:])
            and any(d > 1 for d in shape[1:]) and view(t).space != "hbm"):
        return t.broadcast_to((shape[0], *t.shape[1:]))
    return t


def _column(t, shape):
    """Whether on-chip tile `t` is one value per partition of a `shape` result ([P, 1, ...])."""
    return (len(shape) > 1 and t.shape[0] == shape[0] and all(d == 1 for d in t.shape[1:])
            and any(d > 1 for d in shape[1:]) and view(t).space != "hbm")


def _number(x, op):
    if not _check.is_real(x):
        raise NkiError(f"{op.name}: the operands are tiles or numbers, {_got(x)}")
    number(x, f"{op.name}: operand")


def unary_alu(x, op, dtype=None):
    tile(x, "x")
    return Pending(lambda d: tensor_scalar(NkiTensor(d), x, op, 0.0), x.shape,
                   out_dtype(x, dtype=dtype))


def _broadcast_shapes(a, b):
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        raise NkiError(f"shapes {tuple(a)} and {tuple(b)} do not broadcast") from None
