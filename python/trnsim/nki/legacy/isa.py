"""neuronxcc.nki.isa for trnsim (NKI 0.1, the legacy dialect): instructions return their
result as a new tile (``y = nisa.activation(op=nl.exp, data=x)``), take ``mask=`` and
``dtype=``, and ``psum += nisa.nc_matmul(a, b)`` accumulates. Each call becomes the same C++
builder instruction as the current dialect's; a result is written straight into the place it
is assigned to (no extra copy)."""

from __future__ import annotations

import functools
import inspect
import math

from trnsim.nki import _gather, _ops
from trnsim.nki import isa as _new
from trnsim.nki.isa import constants  # noqa: F401 - neuronxcc.nki.isa.constants
from trnsim.nki._ctx import NkiArgumentError, NkiError, stub, unsupported
from trnsim.nki._index import Cond, Expr
from trnsim.nki._masking import Masking, Void
from trnsim.nki._tensor import Lazy, NkiTensor, Pending

engine = _new.engine
tensor_engine, vector_engine = _new.tensor_engine, _new.vector_engine
scalar_engine, gpsimd_engine = _new.scalar_engine, _new.gpsimd_engine
unknown_engine = _new.unknown_engine
reduce_cmd, dge_mode, oob_mode = _new.reduce_cmd, _new.dge_mode, _new.oob_mode
nc_version, get_nc_version = _new.nc_version, _new.get_nc_version


def _m(mask, *xs, pointwise=False, split=None):
    """Operands with the mask applied (_masking.Masking: `pointwise` for elementwise results,
    `split` for DMAs and reductions); the Masking is kept for _out."""
    global _masking
    _masking = Masking(mask, xs, pointwise, split)
    xs, _masking.xs = _masking.xs, ()  # _out needs its shapes only: keep no tile alive
    return xs


_masking = Masking(None, ())


def _out(f, shape, dtype, buffer="sbuf", kind=""):
    """The result of the instruction whose operands _m just took: written by f into its
    destination (the masked region of it)."""
    return _masking.result(Pending(lambda d, *acc: f(NkiTensor(d), *acc), shape, dtype, buffer,
                                   kind))


def _dt(dtype, x):
    return _ops.out_dtype(x, dtype=dtype)


def nc_matmul(stationary, moving, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, tile_position=(), tile_size=(), perf_mode=None, mask=None,
              **kwargs):
    """stationary[K, M].T @ moving[K, N] as a [M, N] fp32 PSUM tile (``psum += ...``
    accumulates); is_transpose: stationary.T in its dtype (moving is the identity);
    perf_mode as the current dialect's (double-row FP8: [K, 2, M] and [K, 2, N] operands)."""
    _ops.tile(stationary, "nisa.nc_matmul: stationary")
    _ops.tile(moving, "nisa.nc_matmul: moving")
    st, mv = _m(mask, stationary, moving)
    if is_transpose:
        _ops.check_transpose_identity(st, mv, "nisa.nc_matmul")
        return _out(lambda d: _ops.nc_transpose(d, st, "tensor"), tuple(reversed(st.shape)),
                    st.dtype, "psum")
    # M and N: the free elements (half of them in double-row mode), as TensorE reads them.
    halves = 2 if _ops.double_row(perf_mode) else 1
    m, n = (math.prod(x.shape[1:]) // halves for x in (st, mv))
    return _out(lambda d, acc=False: _ops.nc_matmul(d, st, mv, accumulate=None if acc else False,
                                                    tile_position=tile_position,
                                                    tile_size=tile_size, perf_mode=perf_mode),
                (m, n), "fp32", "psum", "matmul")


def nc_transpose(data, mask=None, dtype=None, engine=None, **kwargs):
    """data.T: on TensorE (a PSUM tile, default) or VectorE (<= 32 x 32, an SBUF tile)."""
    _ops.tile(data, "nisa.nc_transpose: data")
    (x,) = _m(mask, data)
    e = _ops.engine(engine, _ops.Engine.tensor)
    buf = "psum" if e == _ops.Engine.tensor else "sbuf"
    return _out(lambda d: _ops.nc_transpose(d, x, e), tuple(reversed(x.shape)), _dt(dtype, x),
                buf)


def activation(op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd=None, mask=None, dtype=None, **kwargs):
    _ops.tile(data, "nisa.activation: data")
    _ops.check_reduce_cmd(reduce_cmd, reduce_res, "nisa.activation")
    # An elementwise result: a mask that is not a box merges it under a predicate, which
    # the reduction into reduce_res (over the whole box) would not follow.
    x, b, s = _m(mask, data, bias, scale, pointwise=reduce_res is None)
    return _out(lambda d: _ops.activation(d, op, x, b, s, reduce_op, reduce_res), x.shape,
                _dt(dtype, x))


def activation_reduce(op, data, reduce_op, reduce_res, bias=None, scale=1.0, mask=None,
                      dtype=None, **kwargs):
    return activation(op, data, bias, scale, reduce_op, reduce_res, mask=mask, dtype=dtype)


def tensor_reduce(op, data, axis, mask=None, dtype=None, negate=False, keepdims=False,
                  **kwargs):
    _ops.tile(data, "nisa.tensor_reduce: data")
    rank = len(Void(data).shape if isinstance(data, Lazy) else data.shape)
    axes = _ops.axes_of(axis, rank, "nisa.tensor_reduce")
    (x,) = _m(mask, data, split=axes)
    shape = [1 if i in axes else s for i, s in enumerate(x.shape)]
    dims = [None if i in axes else i for i in range(rank)]
    if not keepdims:
        shape = [s for i, s in enumerate(x.shape) if i not in axes] or [1]
        dims = [i for i in range(rank) if i not in axes] or [None]
        shape, dims = (shape + [1], dims + [None]) if len(shape) == 1 else (shape, dims)
    if _masking.parts is not None:  # one reduction per box of the mask, into its region
        return _masking.split_result(
            lambda d, xp: _ops.tensor_reduce(d, op, xp, axes, negate), shape, _dt(dtype, x),
            dims)
    return _out(lambda d: _ops.tensor_reduce(d, op, x, axes, negate), shape, _dt(dtype, x))


def tensor_partition_reduce(op, data, mask=None, dtype=None, **kwargs):
    _ops.tile(data, "nisa.tensor_partition_reduce: data")
    (x,) = _m(mask, data)
    return _out(lambda d: _ops.tensor_partition_reduce(d, op, x), (1, *x.shape[1:]),
                _dt(dtype, x))


def tensor_tensor(data1, data2, op, dtype=None, mask=None, engine=None, **kwargs):
    """data1 op data2; an operand with size-1 free dims ([P, 1]) is broadcast along them (a
    stride-0 view, still one tensor_tensor), as NKI takes it (its docs point to tensor_scalar
    as the faster way)."""
    _ops.tile(data1, "nisa.tensor_tensor: data1")
    _ops.tile(data2, "nisa.tensor_tensor: data2")
    a, b = _m(mask, data1, data2, pointwise=True)
    shape = _free_broadcast(a.shape, b.shape)
    if shape is not None and not _masking.skip:
        a, b = _broadcast_free(a, shape), _broadcast_free(b, shape)
    return _out(lambda d: _ops.tensor_tensor(d, a, b, op, engine), shape or a.shape,
                _dt(dtype, a))


def _free_broadcast(a, b):
    """The shape two operands' free dims broadcast to (same partitions; each free dim equal or
    1, or one operand a [P, 1] column against any free dims), or None: other shapes are left
    to the instruction's shape check (the partition dim is never broadcast, it is separate
    memories)."""
    if a[0] != b[0]:
        return None
    if len(a) != len(b):  # a [P, 1] (or [P, 1, 1]) column: one element of each partition
        if math.prod(a[1:]) == 1:
            return tuple(b)
        return tuple(a) if math.prod(b[1:]) == 1 else None
    if any(x != y and 1 not in (x, y) for x, y in zip(a[1:], b[1:])):
        return None
    return (a[0], *(max(x, y) for x, y in zip(a[1:], b[1:])))


def _broadcast_free(t, shape):
    """t repeated along its size-1 free dims to `shape` (a stride-0 view)."""
    if tuple(t.shape) == shape:
        return t
    if len(t.shape) != len(shape):
        t = t.reshape((t.shape[0],) + (1,) * (len(shape) - 1))
    return t.broadcast_to(shape)


def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False,
                       dtype=None, mask=None, **kwargs):
    _ops.tile(data0, "nisa.tensor_tensor_scan: data0")
    _ops.tile(data1, "nisa.tensor_tensor_scan: data1")
    a, b, i = _m(mask, data0, data1, initial)
    return _out(lambda d: _ops.tensor_tensor_scan(d, a, b, i, op0, op1, reverse0, reverse1),
                a.shape, _dt(dtype, a))


def scalar_tensor_tensor(data, op0, operand0, op1, operand1, reverse0=False, reverse1=False,
                         dtype=None, mask=None, **kwargs):
    _ops.tile(data, "nisa.scalar_tensor_tensor: data")
    x, o0, o1 = _m(mask, data, operand0, operand1, pointwise=True)
    return _out(lambda d: _ops.scalar_tensor_tensor(d, x, op0, o0, op1, o1, reverse0, reverse1),
                x.shape, _dt(dtype, x))


def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False,
                  dtype=None, mask=None, engine=None, **kwargs):
    _ops.tile(data, "nisa.tensor_scalar: data")
    x, o0, o1 = _m(mask, data, operand0, operand1, pointwise=True)
    return _out(lambda d: _ops.tensor_scalar(d, x, op0, o0, reverse0, op1, o1, reverse1, engine),
                x.shape, _dt(dtype, x))


def tensor_scalar_reduce(data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None,
                         mask=None, reduce_cmd=None, **kwargs):
    _ops.check_reduce_cmd(reduce_cmd, reduce_res, "nisa.tensor_scalar_reduce")
    _ops.tile(data, "nisa.tensor_scalar_reduce: data")
    x, o0, r = _m(mask, data, operand0, reduce_res)
    return _out(lambda d: _ops.tensor_scalar_reduce(d, x, op0, o0, reduce_op, r, reverse0),
                x.shape, _dt(dtype, x))


def tensor_copy(src, mask=None, dtype=None, engine=None, **kwargs):
    """A copy of src in a new tile, of `dtype` (default src's, as NKI documents: a bf16 PSUM
    tile copies to bf16)."""
    _ops.tile(src, "nisa.tensor_copy: src")
    (x,) = _m(mask, src, pointwise=True)
    return _out(lambda d: _ops.tensor_copy(d, x, engine), x.shape,
                x.dtype if dtype is None else _dt(dtype, x))


def reciprocal(data, dtype=None, mask=None, **kwargs):
    _ops.tile(data, "nisa.reciprocal: data")
    (x,) = _m(mask, data, pointwise=True)
    return _out(lambda d: _ops.reciprocal(d, x), x.shape, _dt(dtype, x))


def memset(shape, value, dtype, mask=None, engine=None, **kwargs):
    shape = _ops.dims(shape, "nisa.memset: shape")
    value = _ops.number(value, "nisa.memset: value")
    _m(mask)
    return _out(lambda d: _ops.memset(d, value, engine), shape, dtype)


def exponential(src, max_value=0.0, reduce_res=None, mask=None, dtype=None, reduce_cmd=None,
                **kwargs):
    _ops.check_reduce_cmd(reduce_cmd, reduce_res, "nisa.exponential")
    _ops.tile(src, "nisa.exponential: src")
    x, m = _m(mask, src, max_value, pointwise=reduce_res is None)
    return _out(lambda d: _ops.exponential(d, x, m, reduce_res), x.shape, _dt(dtype, x))


def bn_stats(data, mask=None, dtype=None, **kwargs):
    _ops.tile(data, "nisa.bn_stats: data")
    (x,) = _m(mask, data)
    return _out(lambda d: _ops.bn_stats(d, x), (x.shape[0], 6), _dt(dtype, x))


def bn_aggr(data, mask=None, dtype=None, **kwargs):
    _ops.tile(data, "nisa.bn_aggr: data")
    (x,) = _m(mask, data)
    return _out(lambda d: _ops.bn_aggr(d, x), (x.shape[0], 2), _dt(dtype, x))


def max8(src, mask=None, dtype=None, **kwargs):
    _ops.tile(src, "nisa.max8: src")
    (x,) = _m(mask, src)
    return _out(lambda d: _ops.max8(d, x), (x.shape[0], 8), _dt(dtype, x))


def nc_find_index8(data, vals, mask=None, dtype=None, **kwargs):
    """The position in data of each of vals[P, 8], as a [P, 8] uint32 (or uint16) tile."""
    _ops.tile(data, "nisa.nc_find_index8: data")
    _ops.tile(vals, "nisa.nc_find_index8: vals")
    x, v = _m(mask, data, vals)
    return _out(lambda d: _ops.nc_find_index8(d, x, v), (x.shape[0], 8),
                _ops.format_name(dtype or "uint32", "dtype"))


def nc_match_replace8(data, vals, imm, dst_idx=None, mask=None, dtype=None, **kwargs):
    """data with the first occurrence of each of vals[P, 8] replaced by imm (a new tile);
    dst_idx, if given, receives their positions."""
    _ops.tile(data, "nisa.nc_match_replace8: data")
    _ops.tile(vals, "nisa.nc_match_replace8: vals")
    x, v = _m(mask, data, vals)
    return _out(lambda d: _ops.nc_match_replace8(d, x, v, imm, dst_idx), tuple(x.shape),
                _dt(dtype, x))


def dropout(data, prob, mask=None, dtype=None, **kwargs):
    """data with each element zeroed where VectorE's draw is below prob (a new tile)."""
    _ops.tile(data, "nisa.dropout: data")
    x, pr = _m(mask, data, prob, pointwise=True)
    return _out(lambda d: _ops.dropout(d, x, pr), tuple(x.shape), _dt(dtype, x))


def _affine(expr):
    """(offset, channel_multiplier, free pattern, shape) of a legacy iota / predicate
    expression over its dense grid (Expr.grid_shape: all of an nl.mgrid, as NKI's iota of
    ``3 * grid.y + grid.z`` fills the grid's [128, 56, 3, 3]): grid axis 0 is the partition,
    the others the free dims, each stepping by its ranges' coefficients (0 along an axis the
    expression does not move: the value repeats there)."""
    if not isinstance(expr, Expr):
        raise NkiError("expected an nl.arange / nl.mgrid expression")
    offset = expr.const + sum(c * r.start for r, c in expr.terms)
    grid = expr.grid_shape
    if grid is None:  # a bare nl.arange (no grid axis): ranges in order, free from the first
        cm, part, free = 0, 1, []
        for r, c in expr.terms:
            if r.axis == 0:
                cm, part = c, r.n
            else:
                free.append((r.axis or 1, c, r.n))
        free.sort()
        pattern = [[c, n] for _, c, n in free] or [[1, 1]]
        return offset, cm, pattern, (part, *[n for _, _, n in free]) if free else (part, 1)
    steps = [0] * len(grid)
    for r, c in expr.terms:
        steps[len(grid) + r.end_axis] += c
    grid, steps = grid + (1,) * (2 - len(grid)), steps + [0] * (2 - len(grid))
    return offset, steps[0], [[s, n] for s, n in zip(steps[1:], grid[1:])], grid


def iota(expr, dtype, mask=None, **kwargs):
    """A tile holding the integer values of an nl.arange expression (GpSimd iota)."""
    offset, cm, pattern, shape = _affine(expr)
    _m(mask)
    return _out(lambda d: _ops.iota(d, pattern, offset, cm), shape, dtype)


_CMP = {">=": "is_ge", ">": "is_gt", "<=": "is_le", "<": "is_lt"}


def affine_select(pred, on_true_tile, on_false_value, mask=None, dtype=None, **kwargs):
    """on_true where an affine predicate over nl.arange holds, else on_false_value (GpSimd)."""
    _ops.tile(on_true_tile, "nisa.affine_select: on_true_tile")
    if not isinstance(pred, Cond) or len(pred.parts) != 1:
        unsupported("affine_select with a predicate of several comparisons", "use nl.where")
    e, op, v = pred.parts[0]
    offset, cm, pattern, _ = _affine(e - v)
    (x,) = _m(mask, on_true_tile, pointwise=True)
    return _out(lambda d: _ops.affine_select(d, pattern, offset, cm, x, on_false_value,
                                             _CMP[op]), x.shape, _dt(dtype, x))


def dma_copy(dst, src, mask=None, dst_rmw_op=None, oob_mode=None, dge_mode=None, **kwargs):
    _ops.tile(dst, "nisa.dma_copy: dst")
    _ops.tile(src, "nisa.dma_copy: src")
    d, s = _m(mask, dst, src, split=True)
    if not _masking.skip:
        for d, s in _masking.each(d, s):  # one DMA per box of the mask
            _ops.dma_copy(d, s, dst_rmw_op, oob_mode)


def dma_transpose(src, axes=None, mask=None, dtype=None, dge_mode=None, **kwargs):
    """A new tile src.T, transposed by the DMA; dge_mode (which descriptor generator) does not
    change the transfer trnsim times."""
    _ops.tile(src, "nisa.dma_transpose: src")
    (x,) = _m(mask, src)
    return _out(lambda d: _ops.dma_transpose(d, x, axes), tuple(reversed(x.shape)),
                _dt(dtype, x))


def tensor_copy_predicated(src, dst, predicate, reverse_pred=False, mask=None, dtype=None,
                           **kwargs):
    """dst = src where predicate holds (NKI 0.1 takes dst too and writes it in place)."""
    _ops.tile(dst, "nisa.tensor_copy_predicated: dst")
    d, s, p = _m(mask, dst, src, predicate)
    if not _masking.skip:
        _ops.tensor_copy_predicated(d, s, p, reverse_pred)


def select_reduce(dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd=None,
                  reduce_op=None, reverse_pred=False, mask=None, dtype=None, **kwargs):
    """dst = predicate ? on_true : on_false, reduce_res = its row max (written in place)."""
    _ops.tile(dst, "nisa.select_reduce: dst")
    d, p, t, f = _m(mask, dst, predicate, on_true, on_false)
    if not _masking.skip:
        _ops.select_reduce(d, p, t, f, reduce_res, reduce_cmd, reduce_op, reverse_pred)


def range_select(on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=None,
                 reduce_res=None, reduce_op=None, range_start=0, on_false_value=None,
                 mask=None, dtype=None, **kwargs):
    """NC-v3: on_true_tile where (range_start + i) comp_op0 bound0 and comp_op1 bound1, else
    on_false_value (fp32 min), as a new tile; reduce_res, if given, receives the row max."""
    _ops.tile(on_true_tile, "nisa.range_select: on_true_tile")
    (x,) = _m(mask, on_true_tile)
    return _out(lambda d: _ops.range_select(d, x, comp_op0, comp_op1, bound0, bound1, reduce_cmd,
                                            reduce_res, reduce_op, range_start, on_false_value),
                tuple(x.shape), _dt(dtype, x))


def nc_stream_shuffle(src, dst, shuffle_mask, dtype=None, mask=None, **kwargs):
    """NKI Beta 1's argument order (src first) of nki.isa.nc_stream_shuffle: dst partition
    32 q + i = src partition 32 q + shuffle_mask[i] in each quadrant (255: unchanged)."""
    call = "neuronxcc.nki.isa.nc_stream_shuffle"
    if mask is not None:
        unsupported(f"{call}(mask=...)", "shuffle whole tiles (index dst and src instead)")
    _ops.tile(dst, f"{call}: dst")
    if dtype is not None and _ops.format_name(dtype, "dtype") != _ops.format_name(dst.dtype):
        raise NkiError(f"{call}: dtype={dtype!r} but dst is {dst.dtype}: a shuffle moves "
                       "elements unchanged")
    return _ops.nc_stream_shuffle(dst, src, shuffle_mask, call)


def local_gather(src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, *, mask=None,
                 **kwargs):
    """GpSimd gather per 16-partition core (see the current dialect's): a new SBUF tile
    [P, indices, num_elem_per_idx] of src_buffer's dtype."""
    call = "neuronxcc.nki.isa.local_gather"
    if mask is not None:
        unsupported(f"{call}(mask=...)", "gather whole tiles")
    _ops.tile(src_buffer, f"{call}: src_buffer")
    _ops.tile(index, f"{call}: index")
    shape = _gather.local_gather_shape(src_buffer, index, num_elem_per_idx, num_valid_indices)
    return _out(lambda d: _gather.local_gather(d, src_buffer, index, num_elem_per_idx,
                                               num_valid_indices, call),
                shape, _ops.format_name(src_buffer.dtype))


def sequence_bounds(*, segment_ids, dtype=None, **kwargs):
    """GpSimd: a new [1, 2, n] tile of each element's segment start and end (see the current
    dialect's); dtype fp32 or int32, segment_ids' by default."""
    call = "neuronxcc.nki.isa.sequence_bounds"
    _ops.tile(segment_ids, f"{call}: segment_ids")
    n = _gather._free(segment_ids)
    return _out(lambda d: _gather.sequence_bounds(d, segment_ids, call),
                (segment_ids.shape[0], 2, n), _dt(dtype, segment_ids))


tensor_scalar_cumulative = _new.tensor_scalar_cumulative


def tensor_copy_dynamic_src(src, mask=None, dtype=None, engine=None, **kwargs):
    """A copy of src, which sits at a dynamic offset within each partition (index it with a
    register: ``src[:, nl.ds(r, n)]``); the engine reads the register when the copy issues."""
    return tensor_copy(src, mask=mask, dtype=dtype, engine=engine)


def tensor_copy_dynamic_dst(dst, src, mask=None, dtype=None, engine=None, **kwargs):
    """dst = src, dst at a dynamic offset within each partition (a register index)."""
    _ops.tile(dst, "nisa.tensor_copy_dynamic_dst: dst")
    _ops.assign(dst, tensor_copy(src, mask=mask, dtype=dtype, engine=engine))
    return dst
# NKI Beta 1 had no MX instructions (they came with NC-v4, in the current dialect).
for _name in ("nc_matmul_mx", "quantize_mx"):
    globals()[_name] = stub(f"neuronxcc.nki.isa.{_name}",
                            f"NKI Beta 1 has no MX instructions: the current dialect's "
                            f"nki.isa.{_name} runs them (NeuronCore-v4, trn3)")


def _strict(f):
    """f, refusing keyword arguments it does not name: NKI 0.1's signatures end in **kwargs,
    and swallowing them let a misspelt parameter (``reverse_pred0=``, ``axes=``) be ignored
    without a word. ``name=`` (every NKI instruction's label) is accepted."""
    params = inspect.signature(f).parameters
    known = {n for n, p in params.items()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} | {"name"}

    @functools.wraps(f)
    def checked(*args, **kwargs):
        for k in kwargs:
            if k not in known:
                raise NkiArgumentError(
                    f"nisa.{f.__name__}: unexpected keyword argument {k!r}; it takes "
                    + ", ".join(n for n in params if n in known))
        try:
            return f(*args, **kwargs)
        except TypeError as e:
            if e.__traceback__.tb_next is not None:  # raised inside f, not binding its arguments
                raise
            raise NkiArgumentError(f"nisa.{f.__name__}: {e}") from None

    return checked


for _name, _f in list(globals().items()):
    if (inspect.isfunction(_f) and not _name.startswith("_") and _f.__module__ == __name__
            and any(p.kind == p.VAR_KEYWORD for p in inspect.signature(_f).parameters.values())):
        globals()[_name] = _strict(_f)
