"""nki.isa for trnsim, current dialect (NKI 0.3+): every instruction takes its destination
first (``nisa.tensor_copy(dst=t, src=x)``) and emits one engine instruction of the C++ kernel
builder (a few documented exceptions emit two; docs/nki.md). Names left out raise
NotImplementedError naming them."""

from __future__ import annotations

from trnsim import _check
from trnsim.nki import _activate2, _ctx, _dma_compute, _gather, _ops, _register
from trnsim.nki._ctx import NkiError, unsupported
from trnsim.nki.isa.constants import (  # noqa: F401 - nisa.<enum> as in NKI
    dge_mode, dma_engine, engine, gpsimd_engine, matmul_perf_mode, nc_version, oob_mode,
    reduce_cmd, scalar_engine, sync_engine, tensor_engine, unknown_engine, vector_engine)


def get_nc_version():
    """The NeuronCore version of the generation being simulated (trn1: gen2 ... trn3: gen4)."""
    return {"trn1": nc_version.gen2, "trn2": nc_version.gen3}.get(_ctx.ctx().chip.name,
                                                                  nc_version.gen4)


nc_matmul = _ops.nc_matmul
nc_matmul_mx = _ops.nc_matmul_mx
quantize_mx = _ops.quantize_mx
nc_transpose = _ops.nc_transpose
activation = _ops.activation
activation_reduce = _ops.activation_reduce
tensor_tensor = _ops.tensor_tensor
tensor_scalar = _ops.tensor_scalar
scalar_tensor_tensor = _ops.scalar_tensor_tensor


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    """dst = op over free axes of data (VectorE): the trailing dims `axis` names (numpy's
    numbering, `axis=(2, 3)` of a 4-dim tile), or, for [1], [1, 2], ... that are not trailing,
    the innermost 1, 2, ... dims ("the reduction axes must contain axis 1 (most-minor)": the
    numbering of NKI 0.x's reference, which the nki-library's kernels use). Other axes: a
    permuted access pattern (docs/nki.md)."""
    return _ops.tensor_reduce(dst, op, data, axis, negate, keepdims, minor_first=True)

tensor_partition_reduce = _ops.tensor_partition_reduce
tensor_tensor_scan = _ops.tensor_tensor_scan
tensor_scalar_reduce = _ops.tensor_scalar_reduce
tensor_copy = _ops.tensor_copy
reciprocal = _ops.reciprocal
exponential = _ops.exponential
memset = _ops.memset
iota = _ops.iota


def affine_select(dst, pattern, *args, offset=0, channel_multiplier=None, on_true_tile=None,
                  on_false_value=None, cmp_op="is_equal", name=None):
    """dst = cmp_op(offset + channel_multiplier * p + pattern value, 0) ? on_true_tile :
    on_false_value (GpSimd). Positional arguments in either of NKI's orders: (offset,
    channel_multiplier, on_true_tile, on_false_value[, cmp_op]) as NKI 0.x had them, or the
    later (channel_multiplier, on_true_tile, on_false_value[, cmp_op, offset]), told apart by
    where the tile is; offset defaults to 0."""
    names = ("offset", "channel_multiplier", "on_true_tile", "on_false_value", "cmp_op")
    if len(args) >= 2 and isinstance(args[1], _ops.NkiTensor):
        names = ("channel_multiplier", "on_true_tile", "on_false_value", "cmp_op", "offset")
    if len(args) > len(names):
        raise NkiError(f"nisa.affine_select: {len(args) + 2} positional arguments; it takes at "
                       f"most {len(names) + 2}")
    given = dict(offset=offset, channel_multiplier=channel_multiplier,
                 on_true_tile=on_true_tile, on_false_value=on_false_value, cmp_op=cmp_op)
    given.update(zip(names, args))
    for k in ("channel_multiplier", "on_true_tile", "on_false_value"):
        if given[k] is None:
            raise NkiError(f"nisa.affine_select: missing argument {k!r}")
    return _ops.affine_select(dst, pattern, given["offset"], given["channel_multiplier"],
                              given["on_true_tile"], given["on_false_value"], given["cmp_op"])


bn_stats = _ops.bn_stats
bn_aggr = _ops.bn_aggr
max8 = _ops.max8
nc_find_index8 = _ops.nc_find_index8
nc_match_replace8 = _ops.nc_match_replace8
tensor_scalar_cumulative = _ops.tensor_scalar_cumulative


def nc_stream_shuffle(dst, src, shuffle_mask, name=None):
    """Cross-partition moves on VectorE within each quadrant of 32 partitions: dst partition
    32 q + i = src partition 32 q + shuffle_mask[i]; 255 leaves it unchanged. The same mask
    serves every quadrant; dst may be src. Cost max(MIN_II, N) VectorE cycles, N the elements
    per partition."""
    return _ops.nc_stream_shuffle(dst, src, shuffle_mask)


def nc_n_gather(dst, data, indices, name=None):
    """GpSimd gather within each partition: dst[p, j] = data[p, indices[p, j]], data's free
    dims flattened; indices uint32, in range (else an index_range fault)."""
    return _gather.nc_n_gather(dst, data, indices)


def local_gather(dst, src_buffer, index, num_elem_per_idx=1, num_valid_indices=None,
                 name=None):
    """GpSimd gather per 16-partition core: the core's index slice (uint16 element offsets)
    read partition first; each of its partitions takes num_elem_per_idx elements at each
    index, dst [P, num_valid_indices x num_elem_per_idx]."""
    return _gather.local_gather(dst, src_buffer, index, num_elem_per_idx, num_valid_indices)


def sequence_bounds(dst, segment_ids, name=None):
    """GpSimd: dst [1, 2, n] = the start of each element's run of equal segment ids, then one
    past its end; id 0 is padding (n, -1)."""
    return _gather.sequence_bounds(dst, segment_ids)


def nonzero_with_count(dst, src, index_offset=0, padding_val=-1, name=None):
    """NC-v3 GpSimd, partitions 0, 16, ..., 112: the positions (+ index_offset) of src's
    nonzero elements, padding_val for the rest, then their count."""
    return _gather.nonzero_with_count(dst, src, index_offset, padding_val)


def activate2(dst, op, data, imm0, imm1, op0, op1, relu_param=0.0, reverse0=False,
              reverse1=False, reduce_op=None, reduce_res=None, reduce_cmd=reduce_cmd.idle,
              name=None):
    """NC-v4 ScalarE: dst = op((data op0 imm0) op1 imm1), then an optional row reduction."""
    return _activate2.activate2(dst, op, data, imm0, imm1, op0, op1, relu_param, reverse0,
                             reverse1, reduce_op, reduce_res, reduce_cmd)


range_select = _ops.range_select
dma_copy = _ops.dma_copy
dma_transpose = _ops.dma_transpose
tensor_copy_predicated = _ops.tensor_copy_predicated
select_reduce = _ops.select_reduce


def select(dst, predicate, on_true, on_false, name=None):
    """dst = predicate != 0 ? on_true : on_false (VectorE)."""
    return _ops.select(dst, predicate, on_true, on_false)


def _logical_core(call):
    """The launch context of a call between the physical cores of a logical core: NC-v3 or
    newer, and an LNC launch (kernel[nl.nc(2)])."""
    c = _ctx.ctx()
    if get_nc_version() < nc_version.gen3:
        raise NkiError(f"nisa.{call}: NeuronCore-v3 or newer only (trn2, trn3); {c.chip.name} "
                       "has NeuronCore-v2 and no logical cores")
    if c.lnc < 2:
        raise _ctx.LogicalCoreNeeded(f"nisa.{call}: only between the physical cores of a "
                                     "logical core: launch the kernel as kernel[nl.nc(2)](...)")
    return c


def core_barrier(data, cores, engine=engine.unknown, name=None):
    """Waits until both physical cores of the logical core reach this barrier (the k-th
    barrier of each core meets). ``data`` is the shared HBM tensor they synchronise on: this
    core's earlier accesses of it complete first, later ones wait for the barrier. Passing
    takes one remote semaphore update (chip.lnc.remote_semaphore_ns, an assumption:
    docs/nki.md). Only ``cores=(0, 1)``, as in NKI; engine: GpSimd unless given."""
    c = _logical_core("core_barrier")
    try:
        cores = _check.items(cores, "nisa.core_barrier: cores")
    except TypeError:
        raise NkiError(f"nisa.core_barrier: cores must be a tuple of core ids, got {cores!r}") \
            from None
    if tuple(_ops.integer(x, "nisa.core_barrier: cores") for x in cores) != tuple(
            range(c.lnc)):
        raise NkiError(f"nisa.core_barrier: cores={tuple(cores)!r}; only "
                       f"cores={tuple(range(c.lnc))} (every core of the logical core) is "
                       "supported")
    if not _ops.is_tile(data) or _ops.view(data).space != "hbm":
        raise NkiError("nisa.core_barrier: data must be the shared HBM tensor the cores "
                       f"synchronise on, got {data!r}")
    e = _ops.engine(engine, None) or _ops.Engine.gpsimd  # unknown: GpSimd, as in NKI 2.33
    _ops.kb().core_barrier(_ops.view(data), e)


def sendrecv(src, dst, send_to_rank, recv_from_rank, pipe_id, dma_engine=dma_engine.dma,
             name=None):
    """Sends ``src`` to the ``dst`` of core ``send_to_rank`` while core ``recv_from_rank``'s
    ``src`` arrives in this core's ``dst`` (both SBUF, the same dtype and shape). The k-th
    sendrecv on ``pipe_id`` meets the peer's k-th on that pipe; it completes when both its
    send and its receive have ended. The transfer runs on a DMA queue of the store trigger
    engine, SBUF to SBUF (no HBM traffic)."""
    c = _logical_core("sendrecv")
    if getattr(dma_engine, "value", dma_engine) != "dma":
        unsupported(f"nisa.sendrecv(dma_engine={dma_engine})",
                    "the GpSimd-internal DMA path is not modelled; use nisa.dma_engine.dma")
    pipe_id = _ops.integer(pipe_id, "nisa.sendrecv: pipe_id", 0, 32767)
    for rank, what in ((send_to_rank, "send_to_rank"), (recv_from_rank, "recv_from_rank")):
        if not 0 <= _ops.integer(rank, f"nisa.sendrecv: {what}") < c.lnc:
            raise NkiError(f"nisa.sendrecv: {what}={rank}: the ranks of a logical core of "
                           f"{c.lnc} cores are 0..{c.lnc - 1}")
    s, d = _ops.view(src), _ops.view(dst)
    if s.space != "sbuf" or d.space != "sbuf":
        raise NkiError(f"nisa.sendrecv: src and dst must be SBUF tiles, got src in {s.space} "
                       f"and dst in {d.space}")
    if s.dtype != d.dtype or tuple(s.shape) != tuple(d.shape):
        raise NkiError(f"nisa.sendrecv: src {s.dtype}{tuple(s.shape)} and dst "
                       f"{d.dtype}{tuple(d.shape)} must have the same dtype and shape")
    _ops.kb().sendrecv(d, s, int(send_to_rank), int(recv_from_rank), int(pipe_id))




def dropout(dst, data, prob, name=None):
    """dst = data with each element zeroed where VectorE's draw is below prob."""
    return _ops.dropout(dst, data, prob)


def rand_set_state(src_seeds, engine=engine.unknown, name=None):
    """Seeds `engine`'s generator (GpSimd by default, VectorE on request): row p of the uint32
    src_seeds seeds lane p (XORWOW takes 6 words on GpSimd, 24 on VectorE; trnsim mixes
    whatever a row holds into its lane's seed, and restores a row rand_get_state wrote)."""
    e = _rng_engine(engine, "nisa.rand_set_state")
    _ops.tile(src_seeds, "nisa.rand_set_state: src_seeds")
    _ops.rand_seed(src_seeds, (e,), "nisa.rand_set_state")


def _rng_engine(engine_, call):
    e = _ops.engine(engine_, _ops.Engine.gpsimd)
    if e not in (_ops.Engine.gpsimd, _ops.Engine.vector):
        raise NkiError(f"{call}: engine={engine_!r}: only GpSimd and VectorE have a random "
                       "generator")
    return e


def rng(dst, engine=engine.unknown, name=None):
    """The engine's generator words: 32 random bits per element, the low bits an integer dst
    (int8 .. uint32) holds. GpSimd by default (VectorE on request); trnsim's counter-based
    words, the same stream nl.rand's values come from, not the hardware's XORWOW values."""
    e = _rng_engine(engine, "nisa.rng")
    _ops.tile(dst, "nisa.rng: dst")
    _ops.kb().rng(_ops.engine_view(dst, e), engine=e)
    return dst


def rand2(dst, min, max, name=None):  # noqa: A002 - NKI's parameter names
    """NC-v4 VectorE: dst = min + u (max - min), u uniform in [0, 1) from the lane's generator;
    min / max numbers or [P, 1] tiles, as fp32."""
    _ops.tile(dst, "nisa.rand2: dst")
    _ops.kb().rand2(_ops.view(dst), _ops.scalar(min), _ops.scalar(max))
    return dst


def rand_get_state(dst, engine=engine.unknown, name=None):
    """Each lane's generator state into row p of dst (uint32, 6 words a lane on GpSimd, 24 on
    VectorE): trnsim's seed, the draws since, a marker; rand_set_state of the same tile
    restores the lanes exactly."""
    e = _rng_engine(engine, "nisa.rand_get_state")
    _ops.tile(dst, "nisa.rand_get_state: dst")
    _ops.kb().rand_get_state(_ops.engine_view(dst, e), engine=e)
    return dst


def set_rng_seed(src_seeds, name=None):
    """Seeds VectorE's generator from a [1, 1] 32-bit tile (every lane the same seed)."""
    _ops.tile(src_seeds, "nisa.set_rng_seed: src_seeds")
    _ops.rand_seed(src_seeds, (_ops.Engine.vector,), "nisa.set_rng_seed")


dma_compute = _dma_compute.dma_compute

VirtualRegister = _register.VirtualRegister
register_alloc = _register.register_alloc
register_move = _register.register_move
register_load = _register.register_load
register_store = _register.register_store


def _dynamic_copy(call, dst, src, engine, name):
    _ops.tile(dst, f"{call}: dst")
    _ops.tile(src, f"{call}: src")
    return _ops.tensor_copy(dst, src, engine=engine, name=name)


def tensor_copy_dynamic_src(dst, src, engine=engine.unknown, name=None):
    """dst = src, src at a dynamic offset within each partition: index it with a register
    (``src[:, nl.ds(r, n)]``) or ``.ap(..., scalar_offset=r, indirect_dim=1)``. The engine
    reads the register when the copy issues (at least MIN_II_DYNAMIC, ~600 cycles)."""
    return _dynamic_copy("nisa.tensor_copy_dynamic_src", dst, src, engine, name)


def tensor_copy_dynamic_dst(dst, src, engine=engine.unknown, name=None):
    """dst = src, dst at a dynamic offset within each partition (as tensor_copy_dynamic_src)."""
    return _dynamic_copy("nisa.tensor_copy_dynamic_dst", dst, src, engine, name)
