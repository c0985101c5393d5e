"""NKI collectives (``nki.collectives``): collective communication between ranks inside a
kernel, as the ``collective`` instruction of the ISA (src/isa/opcode.h) that the rank run
(src/fabric/rank_run.h, ``trnsim.nki.run_ranks``) meets across the ranks of a replica group
and prices on the system's fabric.

A rank is a logical core of one physical core (LNC=1) running its own copy of the kernel with
its own inputs; ``rank_id()`` and the ring helpers give register values (the rank is a
run-time value on the hardware too), usable as ``scalar_offset`` of an access pattern."""

from __future__ import annotations

import enum
import math

from trnsim.nki import _ctx
from trnsim.nki._ctx import NkiError


class rg_partition_op(enum.Enum):  # noqa: N801 - NKI's name
    """How ReplicaGroup.from_partition_op maps a rank to the id of its rank list."""

    bitwise_and = "bitwise_and"
    div = "div"
    mod = "mod"

    def apply(self, rank: int, operand: int) -> int:
        if self is rg_partition_op.bitwise_and:
            return rank & operand
        if operand == 0:
            raise NkiError(f"ReplicaGroup.from_partition_op: {self.name} by 0")
        return rank // operand if self is rg_partition_op.div else rank % operand


class ReplicaGroup:
    """The ranks a collective runs on, as rank lists: it runs independently within each list,
    on all lists at once; a rank is in at most one list (``ReplicaGroup([[0, 1], [2, 3]])``)."""

    def __init__(self, replica_groups=None, *, groups=None):
        lists = replica_groups if replica_groups is not None else groups
        if isinstance(lists, ReplicaGroup):
            lists = lists.replica_groups
        try:
            lists = [[_rank(r) for r in lst] for lst in lists]
        except TypeError:
            raise NkiError(f"ReplicaGroup({lists!r}): a list of rank lists, e.g. "
                           "[[0, 1, 2, 3]]") from None
        seen = set()
        for lst in lists:
            if not lst:
                raise NkiError(f"ReplicaGroup({lists}): an empty rank list")
            for r in lst:
                if r in seen:
                    raise NkiError(f"ReplicaGroup({lists}): rank {r} is in two lists (or twice "
                                   "in one)")
                seen.add(r)
        if not lists:
            raise NkiError("ReplicaGroup([]): a group needs at least one rank list")
        self.replica_groups = lists

    @staticmethod
    def from_partition_op(world_size: int, op, operand: int) -> "ReplicaGroup":
        """Ranks 0 .. world_size-1 partitioned by ``op(rank, operand)``: ranks with the same
        value share a list (div 4 of 8: [[0..3], [4..7]]; mod 4: [[0, 4], [1, 5], ...])."""
        op = rg_partition_op(op) if not isinstance(op, rg_partition_op) else op
        lists = {}
        for r in range(_rank(world_size)):
            lists.setdefault(op.apply(r, int(operand)), []).append(r)
        return ReplicaGroup([lists[k] for k in sorted(lists)])

    @property
    def num_groups(self) -> int:
        return len(self.replica_groups)

    def list_of(self, rank: int) -> list:
        for lst in self.replica_groups:
            if rank in lst:
                return lst
        raise NkiError(f"rank {rank} is in no rank list of {self!r}")

    def __eq__(self, other):
        return isinstance(other, ReplicaGroup) and other.replica_groups == self.replica_groups

    def __hash__(self):
        return hash(tuple(map(tuple, self.replica_groups)))

    def __repr__(self):
        return f"ReplicaGroup({self.replica_groups})"


def _rank(r) -> int:
    if isinstance(r, bool) or not float(r).is_integer() or int(r) < 0:
        raise TypeError(r)
    return int(r)


def _ranks():
    """The rank run this trace belongs to (rank, ranks, groups table), or an NkiError."""
    info = _ctx.ctx().ranks
    if info is None:
        raise NkiError("nki.collectives run between ranks: launch the kernel with "
                       "trnsim.nki.run_ranks(kernel, [inputs of rank 0, inputs of rank 1, ...])")
    return info


def _group(replica_group, what):
    if isinstance(replica_group, (list, tuple)):
        replica_group = ReplicaGroup(replica_group)
    if not isinstance(replica_group, ReplicaGroup):
        raise NkiError(f"{what}: replica_group is {type(replica_group).__name__}; expected a "
                       "ReplicaGroup")
    info = _ranks()
    for lst in replica_group.replica_groups:
        for r in lst:
            if r >= info.ranks:
                raise NkiError(f"{what}: {replica_group!r} names rank {r}; the run has ranks "
                               f"0..{info.ranks - 1}")
    return replica_group, info.group_index(replica_group)


def _one(lst, what, name):
    """The single tensor of a srcs / dsts list (coalesced lists run one collective each)."""
    if not isinstance(lst, (list, tuple)):
        return [lst]
    if not lst:
        raise NkiError(f"{what}: {name} is empty")
    return list(lst)


def _pairs(srcs, dsts, what):
    srcs, dsts = _one(srcs, what, "srcs"), _one(dsts, what, "dsts")
    if len(srcs) != len(dsts):
        raise NkiError(f"{what}: {len(srcs)} srcs and {len(dsts)} dsts; one dst per src")
    spaces = {_space(t) for t in srcs + dsts}
    if len(spaces) != 1:
        raise NkiError(f"{what}: tensors in {sorted(spaces)}; all must be in HBM or all in SBUF")
    if len(srcs) > 1 and spaces != {"hbm"}:
        raise NkiError(f"{what}: several tensors (coalesced) are only supported in HBM")
    _hbm_at_lnc(spaces, what)
    return list(zip(srcs, dsts))


def _hbm_at_lnc(spaces, what):
    lnc = _ctx.ctx().lnc
    if lnc > 1 and set(spaces) != {"hbm"}:
        raise NkiError(f"{what}: a rank of {lnc} physical cores has an SBUF per core; trnsim "
                       "runs the collectives of such ranks on HBM tensors")


def _space(t):
    from trnsim.nki import _ops

    return _ops.view(t).space


def _reduce_op(op, what):
    from trnsim.nki import _ops

    alu = _ops.alu(op)
    name = str(alu).rsplit(".", 1)[-1]
    if name not in ("add", "max", "min"):
        raise NkiError(f"{what}: op={op!r}; a collective reduces with nl.add, nl.maximum or "
                       "nl.minimum")
    return alu


def _outer(t, dim, what):
    shape = list(t.shape)
    if not isinstance(dim, int) or not -len(shape) <= dim < len(shape):
        raise NkiError(f"{what}: collective_dim={dim!r} for a tensor of shape {tuple(shape)}")
    return math.prod(shape[:dim % len(shape)])


def _priority(priority, what):
    """DMA quality-of-service class 0..3 (NeuronCore-v4+): trnsim has one class, so a valid
    priority changes nothing; an invalid one, or one before NC-v4, is an error as NKI's."""
    if priority is None:
        return
    from trnsim.nki.isa import get_nc_version, nc_version

    if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 3:
        raise NkiError(f"{what}: priority={priority!r}: a DMA priority class 0..3 (lower is "
                       "higher)")
    if get_nc_version() < nc_version.gen4:
        raise NkiError(f"{what}: priority= is NeuronCore-v4+ (trn3) only")


def _emit(src, dst, kind, group=0, op=None, outer=1, send_to=-1, recv_from=-1):
    from trnsim.nki import _ops

    kw = {} if op is None else {"op": op}
    _ops.kb().collective(_ops.view(dst), _ops.view(src), kind, group=group, outer=outer,
                         send_to=send_to, recv_from=recv_from, **kw)


def all_reduce(srcs, dsts, replica_group, op, priority=None, name=None):
    """dsts[i] = op over the ranks of this rank's list of their srcs[i] (nl.add, nl.maximum,
    nl.minimum); every rank of a list gets the same result."""
    what = "nki.collectives.all_reduce"
    _priority(priority, what)
    _, g = _group(replica_group, what)
    alu = _reduce_op(op, what)
    for s, d in _pairs(srcs, dsts, what):
        _emit(s, d, "all_reduce", g, alu)


def all_gather(srcs, dsts, replica_group, collective_dim, priority=None, name=None):
    """dsts[i] = the srcs[i] of the ranks of this rank's list, concatenated along
    collective_dim in list order."""
    what = "nki.collectives.all_gather"
    _priority(priority, what)
    _, g = _group(replica_group, what)
    for s, d in _pairs(srcs, dsts, what):
        _emit(s, d, "all_gather", g, outer=_outer(s, collective_dim, what))


def reduce_scatter(srcs, dsts, replica_group, collective_dim, op, priority=None, name=None):
    """srcs[i] split along collective_dim into one chunk per rank of the list; dsts[i] = the
    reduction (op) over the ranks of the chunk of this rank's place in the list."""
    what = "nki.collectives.reduce_scatter"
    _priority(priority, what)
    _, g = _group(replica_group, what)
    alu = _reduce_op(op, what)
    for s, d in _pairs(srcs, dsts, what):
        _emit(s, d, "reduce_scatter", g, alu, outer=_outer(s, collective_dim, what))


def all_to_all(srcs, dsts, replica_group, collective_dim, priority=None, name=None):
    """srcs[i] split along collective_dim into one chunk per rank of the list: chunk j goes to
    the list's j-th rank, where it lands as chunk (this rank's place) of its dsts[i]."""
    what = "nki.collectives.all_to_all"
    _priority(priority, what)
    _, g = _group(replica_group, what)
    for s, d in _pairs(srcs, dsts, what):
        _emit(s, d, "all_to_all", g, outer=_outer(s, collective_dim, what))


class _Prepared:
    """A variable-size collective whose arguments a *_prepare call checked; its *_trigger
    issues it (trnsim reads the metadata when the collective runs either way)."""

    def __init__(self, kind, what, args):
        self.kind, self.what, self.args, self.triggered = kind, what, args, False


def _variable(kind, what, srcs, dsts, replica_group, metadata_tensor, recv_counts_known,
              has_rdispls, priority):
    """The checked arguments of all_to_all_v / all_gather_v: (dst, meta, src, group, flags)."""
    from trnsim.nki import _ops

    _priority(priority, what)
    rg, g = _group(replica_group, what)
    prs = _pairs(srcs, dsts, what)
    if len(prs) != 1 or _space(prs[0][0]) != "hbm":
        raise NkiError(f"{what}: one src and one dst, in HBM")
    n = len(rg.list_of(_ranks().rank))
    rows = 4 if has_rdispls else 3
    if kind == "all_gather_v" and has_rdispls:
        raise NkiError(f"{what}: has_rdispls=True is not supported (chunk i lands in slot i)")
    meta = metadata_tensor
    shape = tuple(getattr(meta, "shape", ()))
    fits = {(rows, n), (1, rows, n), (4, n), (1, 4, n)}  # a 4th row is not read without rdispls
    if str(getattr(meta, "dtype", "")) != "uint32" or shape not in fits:
        raise NkiError(f"{what}: metadata_tensor is {getattr(meta, 'dtype', type(meta))} "
                       f"{shape}; a uint32 tensor ({rows}, {n}) in HBM or (1, {rows}, {n}) in "
                       f"SBUF: rows send counts, send displacements, receive counts"
                       + (", receive displacements" if has_rdispls else "") +
                       f", one column per rank of the list")
    flags = (1 if recv_counts_known else 0) | (2 if has_rdispls else 0)
    src, dst = prs[0]
    return _ops.view(dst), _ops.view(meta), _ops.view(src), g, flags


def _issue(kind, args):
    from trnsim.nki import _ops

    dst, meta, src, g, flags = args
    _ops.kb().collective_v(dst, src, meta, kind, group=g, flags=flags)


def all_to_all_v(srcs, dsts, replica_group, metadata_tensor, recv_counts_known=False,
                 has_rdispls=False, priority=None, name=None):
    """Each rank sends src[send_displs[j] : + send_counts[j]] to the j-th rank of its list,
    where it lands at recv_displs[i] (has_rdispls) or in slot i of n equal slots of dst; the
    counts are read from metadata_tensor when the collective runs, and the received counts
    written into its row 2 unless recv_counts_known. Elements of dst nothing lands on keep
    their values."""
    what = "nki.collectives.all_to_all_v"
    _issue("all_to_all_v", _variable("all_to_all_v", what, srcs, dsts, replica_group,
                                     metadata_tensor, recv_counts_known, has_rdispls, priority))


def all_gather_v(srcs, dsts, replica_group, metadata_tensor, recv_counts_known=False,
                 has_rdispls=False, priority=None, name=None):
    """Each rank sends one chunk, src[send_displs[0] : + send_counts[0]], to every rank of its
    list, where it lands in slot i (of n equal slots of dst); received counts written into
    row 2 of metadata_tensor unless recv_counts_known."""
    what = "nki.collectives.all_gather_v"
    _issue("all_gather_v", _variable("all_gather_v", what, srcs, dsts, replica_group,
                                     metadata_tensor, recv_counts_known, has_rdispls, priority))


def _prepare(kind):
    def prepare(srcs, dsts, replica_group, metadata_tensor, recv_counts_known=False,
                has_rdispls=False, priority=None, name=None):
        what = f"nki.collectives.{kind}_prepare"
        c = _ctx.ctx()
        if getattr(c, "prepared", None) is not None and not c.prepared.triggered:
            raise NkiError(f"{what}: the previous {c.prepared.what} was not triggered (one "
                           "prepare at a time, each triggered once)")
        c.prepared = _Prepared(kind, what, _variable(kind, what, srcs, dsts, replica_group,
                                                     metadata_tensor, recv_counts_known,
                                                     has_rdispls, priority))
        return c.prepared

    def trigger(prepare_instr, name=None):
        what = f"nki.collectives.{kind}_trigger"
        if not isinstance(prepare_instr, _Prepared) or prepare_instr.kind != kind:
            raise NkiError(f"{what}: expected what {kind}_prepare returned, got "
                           f"{type(prepare_instr).__name__}")
        if prepare_instr.triggered:
            raise NkiError(f"{what}: this prepare was already triggered")
        prepare_instr.triggered = True
        _issue(kind, prepare_instr.args)

    prepare.__name__, trigger.__name__ = f"{kind}_prepare", f"{kind}_trigger"
    prepare.__doc__ = (f"Checks {kind}'s arguments and returns a handle for {kind}_trigger, "
                       "which issues it (the metadata is read when it runs).")
    trigger.__doc__ = f"Issues the {kind} its {kind}_prepare checked."
    return prepare, trigger


all_to_all_v_prepare, all_to_all_v_trigger = _prepare("all_to_all_v")
all_gather_v_prepare, all_gather_v_trigger = _prepare("all_gather_v")


def collective_permute(srcs, dsts, source_target_pairs, priority=None, name=None):
    """Each (source, target) pair sends the source rank's srcs[0] into the target rank's
    dsts[0]; a rank that no pair targets keeps its dst."""
    what = "nki.collectives.collective_permute"
    _priority(priority, what)
    info = _ranks()
    try:
        pairs = [(_rank(a), _rank(b)) for a, b in source_target_pairs]
    except (TypeError, ValueError):
        raise NkiError(f"{what}: source_target_pairs={source_target_pairs!r}: a list of "
                       "(source, target) rank pairs") from None
    for a, b in pairs:
        if max(a, b) >= info.ranks:
            raise NkiError(f"{what}: pair ({a}, {b}) names a rank outside 0..{info.ranks - 1}")
    for i, side in ((0, "source"), (1, "target")):
        ranks = [p[i] for p in pairs]
        if len(set(ranks)) != len(ranks):
            raise NkiError(f"{what}: a rank is the {side} of two pairs")
    prs = _pairs(srcs, dsts, what)
    if len(prs) != 1 or _space(prs[0][0]) != "hbm":
        raise NkiError(f"{what}: one src and one dst, in HBM (NKI: SBUF and coalesced tensors "
                       "are not supported by collective_permute)")
    everyone = ReplicaGroup([list(range(info.ranks))])
    g = info.group_index(everyone)
    send = next((b for a, b in pairs if a == info.rank), -1)
    recv = next((a for a, b in pairs if b == info.rank), -1)
    s, d = prs[0]
    _emit(s, d, "permute", g, send_to=send, recv_from=recv)


def _ring(replica_group, what):
    """(group index, this rank's list, its place in it) of an implicit ring."""
    rg, g = _group(replica_group, what)
    lst = rg.list_of(_ranks().rank)
    return g, lst, lst.index(_ranks().rank)


def _channels(srcs_by_channel, dsts_by_channel, channel_ids, what):
    if not isinstance(srcs_by_channel, (list, tuple)) or not isinstance(dsts_by_channel,
                                                                          (list, tuple)):
        raise NkiError(f"{what}: srcs_by_channel / dsts_by_channel are lists of tensor lists, "
                       "one per channel ([[src]])")
    if len(srcs_by_channel) != len(dsts_by_channel):
        raise NkiError(f"{what}: {len(srcs_by_channel)} source channels and "
                       f"{len(dsts_by_channel)} destination channels")
    ids = list(channel_ids) if channel_ids is not None else [0]
    if len(ids) != len(srcs_by_channel) and not (ids == [0] and len(srcs_by_channel) == 1):
        raise NkiError(f"{what}: channel_ids={ids} for {len(srcs_by_channel)} channels")
    if len(ids) > 4 or any(not isinstance(c, int) or not 0 <= c < 4 for c in ids):
        raise NkiError(f"{what}: channel_ids={ids}: at most 4 channels, ids 0..3")
    out = []
    for c, (s, d) in enumerate(zip(srcs_by_channel, dsts_by_channel)):
        s, d = _one(s, what, "srcs"), _one(d, what, "dsts")
        if len(s) != 1 or len(d) != 1:
            raise NkiError(f"{what}: channel {c} has {len(s)} srcs and {len(d)} dsts; one each "
                           "(coalesced tensors are not supported)")
        out.append((s[0], d[0]))
    return out


def collective_permute_implicit(srcs_by_channel, dsts_by_channel, replica_group,
                                channel_ids=None, priority=None, name=None):
    """One step of a ring over this rank's list: each channel's src goes to the next rank of
    the list, and the previous rank's arrives in dst."""
    what = "nki.collectives.collective_permute_implicit"
    _priority(priority, what)
    g, lst, i = _ring(replica_group, what)
    n = len(lst)
    for s, d in _channels(srcs_by_channel, dsts_by_channel, channel_ids, what):
        if _space(s) != _space(d):
            raise NkiError(f"{what}: src and dst must both be in HBM or both in SBUF")
        _hbm_at_lnc({_space(s)}, what)
        _emit(s, d, "permute", g, send_to=lst[(i + 1) % n], recv_from=lst[(i - 1) % n])


def collective_permute_implicit_reduce(srcs0_by_channel, srcs1_by_channel, dsts_by_channel,
                                       replica_group, op, channel_ids=None, priority=None,
                                       name=None):
    """One ring step with a reduction: each rank sends op(srcs0, srcs1) of a channel to the
    next rank of its list and receives the previous rank's into dst. The reduction runs on
    VectorE into a tile of this rank (SBUF operands), then the permute moves it."""
    from trnsim.nki import _ops

    what = "nki.collectives.collective_permute_implicit_reduce"
    _priority(priority, what)
    alu = _reduce_op(op, what)
    g, lst, i = _ring(replica_group, what)
    n = len(lst)
    ch0 = _channels(srcs0_by_channel, dsts_by_channel, channel_ids, what)
    ch1 = _channels(srcs1_by_channel, dsts_by_channel, channel_ids, what)
    for (s0, d), (s1, _) in zip(ch0, ch1):
        _hbm_at_lnc({"sbuf"}, what)
        if {_space(s0), _space(s1), _space(d)} != {"sbuf"}:
            raise NkiError(f"{what}: trnsim reduces in SBUF: srcs0, srcs1 and dsts must be SBUF "
                           "tiles")
        tmp = _ops.alloc(list(s0.shape), s0.dtype, name="cpi_reduce")
        _ops.tensor_tensor(tmp, s0, s1, alu)
        _emit(tmp, d, "permute", g, send_to=lst[(i + 1) % n], recv_from=lst[(i - 1) % n])


def collective_permute_implicit_current_processing_rank_id(iteration_id, replica_group,
                                                           channel_id=0, num_channels=1,
                                                           name=None):
    """The rank whose data this rank holds after ``iteration_id`` steps of the implicit ring
    (the previous ranks of the list, one per step), in a register."""
    from trnsim.nki import _register

    what = "nki.collectives.collective_permute_implicit_current_processing_rank_id"
    if not isinstance(iteration_id, int) or iteration_id < 0:
        raise NkiError(f"{what}: iteration_id={iteration_id!r}: a step number >= 0")
    _, lst, i = _ring(replica_group, what)
    return _register.register_alloc(lst[(i - iteration_id) % len(lst)])


def rank_id(name=None):
    """This rank's id, in a register (a run-time value: use it as scalar_offset)."""
    from trnsim.nki import _register

    return _register.register_alloc(_ranks().rank)


__all__ = ["ReplicaGroup", "rg_partition_op", "all_reduce", "all_gather", "reduce_scatter",
           "all_to_all", "all_to_all_v", "all_gather_v", "all_to_all_v_prepare",
           "all_to_all_v_trigger", "all_gather_v_prepare", "all_gather_v_trigger",
           "collective_permute", "collective_permute_implicit",
           "collective_permute_implicit_reduce",
           "collective_permute_implicit_current_processing_rank_id", "rank_id"]
