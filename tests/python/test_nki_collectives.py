"""NKI collectives (``nki.collectives`` / ``trnsim.nki.collectives``) run on several ranks with
``trnsim.nki.run_ranks``, against numpy references written here: all_reduce (add / max / min,
fp32 and bf16, subgroups), all_gather (HBM dim 0, SBUF dim 1), reduce_scatter, all_to_all,
explicit and implicit (ring) collective_permute, the implicit reduce ring, rank_id and
current_processing_rank_id as scalar_offset, ReplicaGroup.from_partition_op; misuse and
mismatched ranks are clear errors; the timing grows with the size, is deterministic and is at
least the fabric's own time for the same collective."""

import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.collectives as ncc
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import NkiError
from trnsim.nki.collectives import ReplicaGroup, rg_partition_op

RANKS = 4
WORLD = ReplicaGroup([list(range(RANKS))])


def hbm(shape, dtype, name=None):
    # Private per-rank HBM (nl.hbm), as the ring tutorial's buffers: collectives may not read or
    # write the kernel's I/O tensors, so every kernel stages through buffers like these.
    return nl.ndarray(shape, dtype=dtype, buffer=nl.hbm, name=name)


def out_hbm(shape, dtype):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.shared_hbm)


def sbuf(shape, dtype):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf)


# ---- kernels ----------------------------------------------------------------------------------

@nki.jit
def all_reduce_kernel(x, rg, op):
    src, dst = hbm(x.shape, x.dtype, "src"), hbm(x.shape, x.dtype, "dst")
    out = out_hbm(x.shape, x.dtype)
    nisa.dma_copy(dst=src, src=x)
    ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=rg, op=op)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def all_gather_hbm_kernel(x, rg, n):
    h, w = x.shape
    src, dst = hbm(x.shape, x.dtype, "src"), hbm((h * n, w), x.dtype, "dst")
    out = out_hbm((h * n, w), x.dtype)
    nisa.dma_copy(dst=src, src=x)
    ncc.all_gather(srcs=[src], dsts=[dst], replica_group=rg, collective_dim=0)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def all_gather_sbuf_kernel(x, rg, n):
    # SBUF to SBUF along the free dim, as nki-library's sb2sb all-gather: [H, W] -> [H, W * n].
    h, w = x.shape
    t, g = sbuf((h, w), x.dtype), sbuf((h, w * n), x.dtype)
    out = out_hbm((h, w * n), x.dtype)
    nisa.dma_copy(dst=t, src=x)
    ncc.all_gather(srcs=[t], dsts=[g], replica_group=rg, collective_dim=1)
    nisa.dma_copy(dst=out, src=g)
    return out


@nki.jit
def reduce_scatter_kernel(x, rg, dim, op, n):
    shape = list(x.shape)
    shape[dim] //= n
    src, dst = hbm(x.shape, x.dtype, "src"), hbm(tuple(shape), x.dtype, "dst")
    out = out_hbm(tuple(shape), x.dtype)
    nisa.dma_copy(dst=src, src=x)
    ncc.reduce_scatter(srcs=[src], dsts=[dst], replica_group=rg, collective_dim=dim, op=op)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def all_to_all_kernel(x, rg):
    src, dst = hbm(x.shape, x.dtype, "src"), hbm(x.shape, x.dtype, "dst")
    out = out_hbm(x.shape, x.dtype)
    nisa.dma_copy(dst=src, src=x)
    ncc.all_to_all(srcs=[src], dsts=[dst], replica_group=rg, collective_dim=0)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def permute_kernel(x, keep, pairs):
    # dst starts as `keep`, so a rank that no pair targets shows what it held before.
    src, dst = hbm(x.shape, x.dtype, "src"), hbm(x.shape, x.dtype, "dst")
    out = out_hbm(x.shape, x.dtype)
    nisa.dma_copy(dst=src, src=x)
    nisa.dma_copy(dst=dst, src=keep)
    ncc.collective_permute(srcs=[src], dsts=[dst], source_target_pairs=pairs)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def ring_step_kernel(x, rg):
    # One implicit permute: this rank's x to the next rank of its list.
    src, dst = hbm(x.shape, x.dtype, "src"), hbm(x.shape, x.dtype, "dst")
    out = out_hbm(x.shape, x.dtype)
    nisa.dma_copy(dst=src, src=x)
    ncc.collective_permute_implicit(srcs_by_channel=[[src]], dsts_by_channel=[[dst]],
                                    replica_group=rg)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def ring_all_gather_kernel(x, rg, n):
    # The ring tutorial without its matmul: hold one shard, pass it on n - 1 times (ping-pong
    # buffers), and write the shard held at step k into the slot of the rank it came from.
    h, w = x.shape
    bufs = [hbm((h, w), x.dtype, "ring0"), hbm((h, w), x.dtype, "ring1")]
    out = out_hbm((n, h, w), x.dtype)
    nisa.dma_copy(dst=bufs[0], src=x)
    for step in range(n):
        cur, nxt = bufs[step % 2], bufs[(step + 1) % 2]
        owner = ncc.collective_permute_implicit_current_processing_rank_id(
            iteration_id=step, replica_group=rg)
        if step < n - 1:
            ncc.collective_permute_implicit(srcs_by_channel=[[cur]], dsts_by_channel=[[nxt]],
                                            replica_group=rg, channel_ids=[0])
        nisa.dma_copy(dst=out.ap(pattern=[[w, h], [1, w]], offset=0, scalar_offset=owner,
                                 indirect_dim=0), src=cur)
    return out


@nki.jit
def ring_reduce_kernel(x, rg, n):
    # Ring accumulation on SBUF: a plain first step, then n - 2 reduce steps, each adding this
    # rank's tile to what it received and passing the sum on. Rank i then holds the sum of the
    # n - 1 other ranks' tiles (i-1, i-2, ...); adding its own gives the full sum on every rank.
    h, w = x.shape
    mine, acc, nxt = sbuf((h, w), x.dtype), sbuf((h, w), x.dtype), sbuf((h, w), x.dtype)
    nisa.dma_copy(dst=mine, src=x)
    ncc.collective_permute_implicit(srcs_by_channel=[[mine]], dsts_by_channel=[[acc]],
                                    replica_group=rg)
    for step in range(n - 2):
        dst = nxt if step % 2 == 0 else acc
        src = acc if step % 2 == 0 else nxt
        ncc.collective_permute_implicit_reduce(srcs0_by_channel=[[mine]],
                                               srcs1_by_channel=[[src]],
                                               dsts_by_channel=[[dst]], replica_group=rg,
                                               op=nl.add)
    last = nxt if (n - 2) % 2 == 1 else acc
    total = sbuf((h, w), x.dtype)
    nisa.tensor_tensor(dst=total, data1=mine, data2=last, op=nl.add)
    out = out_hbm((h, w), x.dtype)
    nisa.dma_copy(dst=out, src=total)
    return out


# ---- data movement ----------------------------------------------------------------------------

def shards(rng, shape, dtype=np.float32, n=RANKS):
    return [rng.standard_normal(shape).astype(dtype) for _ in range(n)]


@pytest.mark.parametrize("op, ref", [(nl.add, np.sum), (nl.maximum, np.max),
                                     (nl.minimum, np.min)], ids=["add", "max", "min"])
def test_all_reduce_fp32(op, ref, rng):
    xs = shards(rng, (16, 64))
    outs = nki.run_ranks(all_reduce_kernel, [dict(x=x, rg=WORLD, op=op) for x in xs])
    want = ref(np.stack(xs), axis=0)
    for got in outs:
        if op is nl.add:  # the fabric's order of adds may differ from numpy's
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        else:  # max / min pick one of the inputs: exact
            np.testing.assert_array_equal(got, want)
    # every rank of the list gets the same result, bit for bit
    for got in outs[1:]:
        np.testing.assert_array_equal(got, outs[0])


def test_all_reduce_bf16(rng):
    xs = shards(rng, (16, 64), ml_dtypes.bfloat16)
    outs = nki.run_ranks(all_reduce_kernel, [dict(x=x, rg=WORLD, op=nl.add) for x in xs])
    terms = np.stack(xs).astype(np.float32)
    want = terms.sum(axis=0)
    # Whatever the fabric's order, each element takes RANKS - 1 adds, each rounded to bf16
    # (unit roundoff 2^-8) of a partial sum no larger than the sum of the terms' magnitudes.
    bound = (RANKS - 1) * 2.0**-8 * np.abs(terms).sum(axis=0)
    for got in outs:
        assert got.dtype == ml_dtypes.bfloat16
        assert np.all(np.abs(got.astype(np.float32) - want) <= bound)


def test_all_reduce_on_subgroups(rng):
    xs = shards(rng, (8, 32))
    rg = ReplicaGroup([[0, 1], [2, 3]])
    outs = nki.run_ranks(all_reduce_kernel, [dict(x=x, rg=rg, op=nl.add) for x in xs])
    low, high = xs[0] + xs[1], xs[2] + xs[3]  # two adds: exact in any order
    for r, want in enumerate([low, low, high, high]):
        np.testing.assert_array_equal(outs[r], want)


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [2, 0, 3, 1]], ids=["in-order", "shuffled"])
def test_all_gather_hbm_dim0(order, rng):
    # Blocks are concatenated in the order of the rank list, not of the rank numbers.
    xs = shards(rng, (4, 32))
    rg = ReplicaGroup([order])
    outs = nki.run_ranks(all_gather_hbm_kernel, [dict(x=x, rg=rg, n=RANKS) for x in xs])
    for got in outs:
        np.testing.assert_array_equal(got, np.concatenate([xs[r] for r in order], axis=0))


def test_all_gather_sbuf_dim1(rng):
    xs = shards(rng, (32, 16))
    outs = nki.run_ranks(all_gather_sbuf_kernel, [dict(x=x, rg=WORLD, n=RANKS) for x in xs])
    for got in outs:
        np.testing.assert_array_equal(got, np.concatenate(xs, axis=1))


def test_reduce_scatter_dim0_add(rng):
    # Integer-valued fp32: every order of adds gives the same, exact sum.
    xs = [rng.integers(-50, 50, (16, 32)).astype(np.float32) for _ in range(RANKS)]
    outs = nki.run_ranks(reduce_scatter_kernel,
                         [dict(x=x, rg=WORLD, dim=0, op=nl.add, n=RANKS) for x in xs])
    total = np.sum(xs, axis=0)
    for r, got in enumerate(outs):
        np.testing.assert_array_equal(got, total[r * 4:(r + 1) * 4])


def test_reduce_scatter_dim1_max(rng):
    xs = shards(rng, (8, 64))
    outs = nki.run_ranks(reduce_scatter_kernel,
                         [dict(x=x, rg=WORLD, dim=1, op=nl.maximum, n=RANKS) for x in xs])
    top = np.max(xs, axis=0)
    for r, got in enumerate(outs):
        np.testing.assert_array_equal(got, top[:, r * 16:(r + 1) * 16])


def test_all_to_all_dim0(rng):
    xs = shards(rng, (8, 16))  # 4 chunks of 2 rows
    outs = nki.run_ranks(all_to_all_kernel, [dict(x=x, rg=WORLD) for x in xs])
    for r, got in enumerate(outs):
        # chunk r of every sender s lands as chunk s of rank r
        want = np.concatenate([xs[s][2 * r:2 * r + 2] for s in range(RANKS)], axis=0)
        np.testing.assert_array_equal(got, want)


def test_collective_permute_swaps_and_an_untargeted_rank(rng):
    # 0 <-> 1 swap, 2 -> 3; nobody sends to 2, so rank 2 keeps its own dst (its `keep`).
    xs = shards(rng, (4, 16))
    keeps = [np.full((4, 16), -r - 1, np.float32) for r in range(RANKS)]
    pairs = [(0, 1), (1, 0), (2, 3)]
    outs = nki.run_ranks(permute_kernel, [dict(x=x, keep=k, pairs=pairs)
                                          for x, k in zip(xs, keeps)])
    for r, want in enumerate([xs[1], xs[0], keeps[2], xs[2]]):
        np.testing.assert_array_equal(outs[r], want)


def test_implicit_permute_is_one_step_along_the_list(rng):
    # The ring follows the rank list: rank order[i] receives from order[i - 1].
    order = [2, 0, 3, 1]
    xs = shards(rng, (4, 16))
    outs = nki.run_ranks(ring_step_kernel, [dict(x=x, rg=ReplicaGroup([order])) for x in xs])
    for i, r in enumerate(order):
        np.testing.assert_array_equal(outs[r], xs[order[i - 1]])


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [2, 0, 3, 1]], ids=["in-order", "shuffled"])
def test_implicit_ring_all_gather(order, rng):
    # current_processing_rank_id gives the global rank of the shard held at each step, so the
    # slots come out in rank order whatever the ring's order.
    xs = shards(rng, (8, 16))
    rg = ReplicaGroup([order])
    outs = nki.run_ranks(ring_all_gather_kernel, [dict(x=x, rg=rg, n=RANKS) for x in xs])
    for got in outs:
        np.testing.assert_array_equal(got, np.stack(xs))


def test_implicit_reduce_ring_on_sbuf(rng):
    xs = [rng.integers(-20, 20, (8, 32)).astype(np.float32) for _ in range(RANKS)]
    outs = nki.run_ranks(ring_reduce_kernel, [dict(x=x, rg=WORLD, n=RANKS) for x in xs])
    for got in outs:
        np.testing.assert_array_equal(got, np.sum(xs, axis=0))


def test_rank_id_selects_a_slice(aliases, rng):
    # Written as for the real NKI (import nki.collectives, after install_alias): rank_id() as
    # scalar_offset on dim 0, so rank r reads table[r].
    import nki as real_nki
    import nki.collectives as nki_ncc
    import nki.isa as nki_isa
    import nki.language as nki_nl

    @real_nki.jit
    def rank_slice(table):
        _, h, w = table.shape
        out = nki_nl.ndarray((h, w), dtype=table.dtype, buffer=nki_nl.shared_hbm)
        nki_isa.dma_copy(dst=out, src=table.ap(pattern=[[w, h], [1, w]], offset=0,
                                               scalar_offset=nki_ncc.rank_id(), indirect_dim=0))
        return out

    table = rng.standard_normal((RANKS, 4, 8)).astype(np.float32)
    outs = nki.run_ranks(rank_slice, [dict(table=table)] * RANKS)
    for r, got in enumerate(outs):
        np.testing.assert_array_equal(got, table[r])


def test_from_partition_op():
    assert ReplicaGroup.from_partition_op(8, rg_partition_op.div, 4).replica_groups == \
        [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert ReplicaGroup.from_partition_op(8, rg_partition_op.mod, 4).replica_groups == \
        [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert ReplicaGroup.from_partition_op(8, rg_partition_op.bitwise_and, 0) == \
        ReplicaGroup([list(range(8))])
    # bitwise_and 1: even ranks and odd ranks
    assert ReplicaGroup.from_partition_op(4, rg_partition_op.bitwise_and, 1).replica_groups == \
        [[0, 2], [1, 3]]


# ---- errors -----------------------------------------------------------------------------------

def test_collective_outside_run_ranks_is_an_error(rng):
    with pytest.raises(NkiError, match="run_ranks"):
        all_reduce_kernel(rng.standard_normal((4, 8)).astype(np.float32), WORLD, nl.add)


def test_mismatched_shapes_fault(rng):
    # Rank 0 reduces 4 x 16 elements, the others 4 x 8: the hardware faults, and the message
    # names both sizes.
    xs = [rng.standard_normal((4, 8 if r else 16)).astype(np.float32) for r in range(RANKS)]
    with pytest.raises(RuntimeError, match=r"simulated hardware fault.*rank 0 gives 64 .*"
                                           r"rank 1 32"):
        nki.run_ranks(all_reduce_kernel, [dict(x=x, rg=WORLD, op=nl.add) for x in xs])


def test_a_collective_only_one_rank_issues_never_meets(rng):
    @nki.jit
    def lonely(x, me):
        src, dst = hbm(x.shape, x.dtype, "src"), hbm(x.shape, x.dtype, "dst")
        out = out_hbm(x.shape, x.dtype)
        nisa.dma_copy(dst=src, src=x)
        nisa.dma_copy(dst=dst, src=x)
        if me == 0:  # a trace-time choice: the other ranks' programs have no collective
            ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=WORLD, op=nl.add)
        nisa.dma_copy(dst=out, src=dst)
        return out

    xs = shards(rng, (4, 8))
    with pytest.raises(RuntimeError, match="never met"):
        nki.run_ranks(lonely, [dict(x=x, me=r) for r, x in enumerate(xs)])


def test_a_group_naming_a_rank_outside_the_run(rng):
    xs = shards(rng, (4, 8))
    rg = ReplicaGroup([[0, 1, 2, 5]])
    with pytest.raises(NkiError, match="rank 5"):
        nki.run_ranks(all_reduce_kernel, [dict(x=x, rg=rg, op=nl.add) for x in xs])


# ---- timing -----------------------------------------------------------------------------------

RUNTIME = "neuron-2.28"  # the collective runtime, named on both sides of the fabric check


def run_all_reduce(nbytes, seed=0):
    rng = np.random.default_rng(seed)
    xs = shards(rng, (nbytes // 4 // 512, 512))
    outs = nki.run_ranks(all_reduce_kernel, [dict(x=x, rg=WORLD, op=nl.add) for x in xs],
                         runtime=RUNTIME)
    return outs, nki.last_run()


def test_a_larger_all_reduce_takes_longer():
    _, small = run_all_reduce(4 << 10)
    _, large = run_all_reduce(1 << 20)
    assert large.execution_ps > small.execution_ps
    assert large.total_ps > small.total_ps


def test_runs_are_deterministic():
    outs1, run1 = run_all_reduce(64 << 10)
    outs2, run2 = run_all_reduce(64 << 10)
    for a, b in zip(outs1, outs2):
        assert a.tobytes() == b.tobytes()
    assert run1.total_ps == run2.total_ps
    assert [r[1] for r in run1.ranks] == [r[1] for r in run2.ranks]


def test_execution_is_at_least_the_fabric_time():
    import trnsim.fabric

    _, run = run_all_reduce(1 << 20)
    # The same all-reduce on the same placement and runtime, priced by the fabric alone: the
    # kernel also copies in and out, so it cannot be faster than the collective's device time.
    fab = trnsim.fabric.System(run.system).fabric(RANKS, lnc=1, runtime=RUNTIME)
    res = fab.all_reduce(bytes=1 << 20)
    assert run.execution_ps >= res.device_us * 1e6


# ---- ranks of two physical cores (LNC=2) -------------------------------------------------------

@nki.jit
def lnc2_all_reduce_kernel(x, rg):
    # Each core of the rank stages half of the rows; the barrier makes both halves visible
    # before the one collective of the rank, which both cores issue.
    k = nl.program_id(0)
    h = x.shape[0] // 2
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="src")
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="dst")
    out = out_hbm(x.shape, x.dtype)
    nisa.dma_copy(dst=src[k * h:(k + 1) * h], src=x[k * h:(k + 1) * h])
    nisa.core_barrier(src, cores=(0, 1))
    ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=rg, op=nl.add)
    nisa.dma_copy(dst=out[k * h:(k + 1) * h], src=dst[k * h:(k + 1) * h])
    return out


def test_ranks_of_two_cores_reduce_once():
    xs = [np.arange(64 * 32, dtype=np.float32).reshape(64, 32) * (r + 1) for r in range(RANKS)]
    outs = nki.run_ranks(lnc2_all_reduce_kernel[2], [{"x": xs[r], "rg": WORLD}
                                                      for r in range(RANKS)])
    for o in outs:  # integers: exact whatever the order of the adds
        np.testing.assert_array_equal(o, sum(xs))
    run = nki.last_run()
    assert len(run.ranks) == RANKS and len(run.cores) == 2 * RANKS
    assert "LNC=2" in run.summary


def test_ranks_of_two_cores_refuse_sbuf_collectives():
    @nki.jit
    def k(x, rg):
        t, u = sbuf(x.shape, x.dtype), sbuf(x.shape, x.dtype)
        nisa.dma_copy(dst=t, src=x)
        ncc.all_reduce(srcs=[t], dsts=[u], replica_group=rg, op=nl.add)

    with pytest.raises(NkiError, match="SBUF per core"):
        nki.run_ranks(k[2], [{"x": np.ones((8, 8), np.float32), "rg": WORLD}] * RANKS)


def test_priority_is_checked_and_nc_v4_only():
    @nki.jit
    def k(x, rg, priority):
        src, dst = hbm(x.shape, x.dtype, "src"), hbm(x.shape, x.dtype, "dst")
        nisa.dma_copy(dst=src, src=x)
        ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=rg, op=nl.add, priority=priority)
        out = out_hbm(x.shape, x.dtype)
        nisa.dma_copy(dst=out, src=dst)
        return out

    x = np.ones((8, 8), np.float32)
    outs = nki.run_ranks(k, [{"x": x, "rg": WORLD, "priority": 1}] * RANKS, chip="trn3")
    np.testing.assert_array_equal(outs[0], x * RANKS)
    with pytest.raises(NkiError, match="NeuronCore-v4"):
        nki.run_ranks(k, [{"x": x, "rg": WORLD, "priority": 1}] * RANKS, chip="trn2")
    with pytest.raises(NkiError, match="0..3"):
        nki.run_ranks(k, [{"x": x, "rg": WORLD, "priority": 7}] * RANKS, chip="trn3")


# ---- variable-size collectives: sizes read from the metadata when they run ------------------

S = 32  # elements of each rank's flat src and dst


@nki.jit
def variable_kernel(x, meta_in, rg, kind, known, rdispls, split):
    src, dst = hbm(x.shape, x.dtype, "src"), hbm(x.shape, x.dtype, "dst")
    meta = nl.ndarray(meta_in.shape, dtype=nl.uint32, buffer=nl.hbm, name="meta")
    nisa.dma_copy(dst=src, src=x)
    nisa.dma_copy(dst=meta, src=meta_in)
    fill = sbuf((1, x.shape[0]), x.dtype)  # what nothing lands on keeps this
    nisa.memset(dst=fill, value=-1.0)
    nisa.dma_copy(dst=dst.reshape((1, x.shape[0])), src=fill)
    args = dict(srcs=[src], dsts=[dst], replica_group=rg, metadata_tensor=meta,
                recv_counts_known=known, has_rdispls=rdispls)
    if split:  # the prepare / trigger form
        getattr(ncc, f"{kind}_trigger")(getattr(ncc, f"{kind}_prepare")(**args))
    else:
        getattr(ncc, kind)(**args)
    out, meta_out = out_hbm(x.shape, x.dtype), out_hbm(meta_in.shape, nl.uint32)
    nisa.dma_copy(dst=out, src=dst)
    nisa.dma_copy(dst=meta_out, src=meta)
    return out, meta_out


def variable_inputs(rng, kind, rdispls, known=False):
    """Per rank: its src, metadata and the (count, displacement) it sends to each rank."""
    slot = S // RANKS
    counts = rng.integers(0, slot + 1, (RANKS, RANKS))  # counts[i][j]: from rank i to rank j
    if kind == "all_gather_v":
        counts[:] = counts[:, :1]  # one chunk, the same for every rank
    rows = []
    for i in range(RANKS):
        displs = (np.arange(RANKS) * slot) if kind == "all_to_all_v" else np.full(RANKS, 3)
        recv_displs = S - slot * (np.arange(RANKS) + 1)  # reversed slots
        m = [counts[i], displs, np.zeros(RANKS, int)] + ([recv_displs] if rdispls else [])
        rows.append(np.array(m, dtype=np.uint32))
    xs = [(np.arange(S) + 100 * i).astype(np.float32) for i in range(RANKS)]
    return xs, rows, counts


@pytest.mark.parametrize("kind, rdispls, known, split", [
    ("all_to_all_v", False, False, False), ("all_to_all_v", True, True, False),
    ("all_to_all_v", False, False, True), ("all_gather_v", False, False, False),
    ("all_gather_v", False, True, True)])
def test_variable_collectives(rng, kind, rdispls, known, split):
    xs, metas, counts = variable_inputs(rng, kind, rdispls)
    outs = nki.run_ranks(variable_kernel, [
        dict(x=xs[r], meta_in=metas[r], rg=WORLD, kind=kind, known=known, rdispls=rdispls,
             split=split) for r in range(RANKS)])
    slot = S // RANKS
    for j, (out, meta_out) in enumerate(outs):
        want = np.full(S, -1.0, np.float32)
        for i in range(RANKS):
            c = counts[i][j]
            frm = metas[i][1][j if kind == "all_to_all_v" else 0]
            to = metas[j][3][i] if rdispls else i * slot
            want[to:to + c] = xs[i][frm:frm + c]
        np.testing.assert_array_equal(out, want)
        # Row 2 holds what arrived from each rank, unless the counts were given.
        np.testing.assert_array_equal(meta_out[2], 0 if known else counts[:, j])


def test_variable_collective_errors(rng):
    xs, metas, _ = variable_inputs(rng, "all_to_all_v", False)
    bad = [m.copy() for m in metas]
    bad[1][0][2] = S  # rank 1 sends more than a slot to rank 2
    with pytest.raises(RuntimeError, match="rank 1 sends 32 elements"):
        nki.run_ranks(variable_kernel, [
            dict(x=xs[r], meta_in=bad[r], rg=WORLD, kind="all_to_all_v", known=False,
                 rdispls=False, split=False) for r in range(RANKS)])
    with pytest.raises(NkiError, match=r"a uint32 tensor \(4, 4\)"):  # rows for has_rdispls
        nki.run_ranks(variable_kernel, [
            dict(x=xs[r], meta_in=metas[r], rg=WORLD, kind="all_to_all_v", known=False,
                 rdispls=True, split=False) for r in range(RANKS)])

    @nki.jit
    def twice(x, meta_in, rg):
        src, dst = hbm(x.shape, x.dtype, "src"), hbm(x.shape, x.dtype, "dst")
        meta = nl.ndarray(meta_in.shape, dtype=nl.uint32, buffer=nl.hbm, name="meta")
        ncc.all_to_all_v_prepare([src], [dst], rg, meta)
        ncc.all_to_all_v_prepare([src], [dst], rg, meta)

    with pytest.raises(NkiError, match="was not triggered"):
        nki.run_ranks(twice, [dict(x=xs[r], meta_in=metas[r], rg=WORLD) for r in range(RANKS)])


def test_four_metadata_rows_without_receive_displacements(rng):
    # NKI's metadata is (4, ranks) whatever has_rdispls says (vllm-neuron passes it so): the
    # fourth row is then not read, and chunks land in their slots.
    xs, metas, counts = variable_inputs(rng, "all_to_all_v", False)
    metas = [np.vstack([m, np.full((1, RANKS), 999, np.uint32)]) for m in metas]
    outs = nki.run_ranks(variable_kernel, [
        dict(x=xs[r], meta_in=metas[r], rg=WORLD, kind="all_to_all_v", known=False,
             rdispls=False, split=False) for r in range(RANKS)])
    slot = S // RANKS
    for j, (out, meta_out) in enumerate(outs):
        for i in range(RANKS):
            c = counts[i][j]
            np.testing.assert_array_equal(out[i * slot:i * slot + c],
                                          xs[i][metas[i][1][j]:metas[i][1][j] + c])
        np.testing.assert_array_equal(meta_out[3], 999)  # untouched


def test_rank_arguments_are_written_back_and_read_only_ones_refuse_writes():
    @nki.jit
    def copy_in(x, out):
        nisa.dma_copy(dst=out, src=x)

    x = np.ones((4, 4), np.float32)
    outs = [np.zeros((4, 4), np.float32) for _ in range(2)]
    nki.run_ranks(copy_in, [(x, outs[0]), (x * 2, outs[1])])
    np.testing.assert_array_equal(outs[1], x * 2)  # each rank's own argument
    frozen = np.zeros((4, 4), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(NkiError, match="read-only"):
        nki.run_ranks(copy_in, [(x, frozen), (x, np.zeros((4, 4), np.float32))])
