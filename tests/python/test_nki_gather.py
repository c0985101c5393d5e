"""GpSimd's index instructions and ScalarE's activate2, both dialects, against numpy references
written here from the NKI API reference: nc_n_gather / nl.gather_flattened (per-partition
gather of the flattened free dims), local_gather (its numpy equivalent: per 16-partition core,
the index slice flattened partition first, num_elem_per_idx elements at each index),
sequence_bounds (runs of equal ids, padding id 0), nonzero_with_count (each core's partition 0),
activate2 (an fp32 ALU stage, then the function, then a row reduction); errors."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import legacy
from trnsim.nki.legacy import isa as lisa
from trnsim.nki.legacy import language as lnl

CHIPS = ["trn1", "trn2", "trn3"]


def hbm(shape, dtype):
    return nl.ndarray(shape, dtype, buffer=nl.shared_hbm)


@pytest.mark.parametrize("chip", CHIPS)
def test_nc_n_gather_each_partition_its_own_indices(chip, rng):
    data = rng.standard_normal((96, 4, 50)).astype(np.float32)
    idx = rng.integers(0, 200, size=(96, 30)).astype(np.uint32)

    @nki.jit(chip=chip)
    def kernel(data, idx):
        d, i = nl.load(data), nl.load(idx)
        out_t = nl.ndarray((96, 30), nl.float32, buffer=nl.sbuf)
        nisa.nc_n_gather(dst=out_t, data=d, indices=i)
        out = hbm((96, 30), nl.float32)
        nl.store(out, out_t)
        return out

    want = np.take_along_axis(data.reshape(96, 200), idx.astype(np.int64), axis=1)
    np.testing.assert_array_equal(kernel(data, idx), want)


def test_nc_n_gather_index_outside_the_data_faults(rng):
    data = rng.standard_normal((8, 16)).astype(np.float32)
    idx = np.full((8, 2), 16, np.uint32)

    @nki.jit
    def kernel(data, idx):
        out_t = nl.ndarray((8, 2), nl.float32, buffer=nl.sbuf)
        nisa.nc_n_gather(dst=out_t, data=nl.load(data), indices=nl.load(idx))
        out = hbm((8, 2), nl.float32)
        nl.store(out, out_t)
        return out

    with pytest.raises(Exception, match="index_range|element 16 of 16"):
        kernel(data, idx)


@pytest.mark.parametrize("dialect", ["current", "legacy"])
def test_gather_flattened_with_a_dtype(dialect, rng):
    data = rng.standard_normal((32, 64)).astype(np.float32)
    idx = (np.arange(10, dtype=np.uint32) * 5)[None, :].repeat(32, 0)
    lang = nl if dialect == "current" else lnl
    jit = nki.jit if dialect == "current" else legacy.jit

    @jit
    def kernel(data, idx):
        g = lang.gather_flattened(data=lang.load(data), indices=lang.load(idx),
                                  dtype=lang.bfloat16)
        out = lang.ndarray((32, 10), lang.float32, buffer=lang.shared_hbm)
        lang.store(out, g)
        return out

    want = np.take_along_axis(data, idx.astype(np.int64), axis=-1)
    np.testing.assert_allclose(kernel(data, idx), want, rtol=1e-2, atol=1e-2)


def local_gather_reference(src, index, elems, valid):
    out = np.empty((src.shape[0], valid, elems), src.dtype)
    flat = src.reshape(src.shape[0], -1)
    for core in range(src.shape[0] // 16):
        rows = slice(16 * core, 16 * core + 16)
        ids = index[rows].flatten(order="F")[:valid].astype(np.int64)
        for k, i in enumerate(ids):
            out[rows, k, :] = flat[rows, i:i + elems]
    return out


@pytest.mark.parametrize("dialect", ["current", "legacy"])
def test_local_gather_per_core_index_slices(dialect, rng):
    src = rng.standard_normal((64, 512)).astype(np.float32)
    index = (rng.integers(0, 127, size=(64, 4)) * 4).astype(np.uint16)

    if dialect == "current":
        @nki.jit
        def kernel(src, index):
            dst = nl.ndarray((64, 40, 4), nl.float32, buffer=nl.sbuf)
            nisa.local_gather(dst=dst, src_buffer=nl.load(src), index=nl.load(index),
                              num_elem_per_idx=4, num_valid_indices=40)
            out = hbm((64, 40, 4), nl.float32)
            nl.store(out, dst)
            return out
    else:
        @legacy.jit
        def kernel(src, index):
            g = lisa.local_gather(lnl.load(src), lnl.load(index), 4, 40)
            out = lnl.ndarray((64, 40, 4), lnl.float32, buffer=lnl.shared_hbm)
            lnl.store(out, g)
            return out

    np.testing.assert_array_equal(kernel(src, index), local_gather_reference(src, index, 4, 40))


def sequence_bounds_reference(ids):
    n = ids.size
    lo, hi = np.zeros(n), np.zeros(n)
    for i in range(n):
        lo[i] = n if ids[i] == 0 else lo[i - 1] if i and ids[i] == ids[i - 1] else i
    for i in reversed(range(n)):
        hi[i] = -1 if ids[i] == 0 else hi[i + 1] if i + 1 < n and ids[i] == ids[i + 1] else i + 1
    return np.stack([lo, hi])[None]


@pytest.mark.parametrize("dialect", ["current", "legacy"])
def test_sequence_bounds_runs_and_padding(dialect):
    ids = np.array([[0, 4, 4, 1, 1, 1, 0, 2, 4, 4, 0, 0, 3, 3, 3, 3]], np.int32)

    if dialect == "current":
        @nki.jit
        def kernel(ids):
            dst = nl.ndarray((1, 2, 16), nl.float32, buffer=nl.sbuf)
            nisa.sequence_bounds(dst=dst, segment_ids=nl.load(ids))
            out = hbm((1, 2, 16), nl.float32)
            nl.store(out, dst)
            return out
    else:
        @legacy.jit
        def kernel(ids):
            b = lisa.sequence_bounds(segment_ids=lnl.load(ids), dtype=lnl.float32)
            out = lnl.ndarray((1, 2, 16), lnl.float32, buffer=lnl.shared_hbm)
            lnl.store(out, b)
            return out

    np.testing.assert_array_equal(kernel(ids), sequence_bounds_reference(ids[0]))


def test_nonzero_with_count_on_each_cores_first_partition(rng):
    x = np.where(rng.random((128, 24)) < 0.3, rng.standard_normal((128, 24)), 0).astype(
        np.float32)
    before = np.full((128, 25), 7, np.int32)

    @nki.jit(chip="trn2")
    def kernel(x, before):
        d = nl.load(before)
        nisa.nonzero_with_count(dst=d, src=nl.load(x), index_offset=16, padding_val=-1)
        out = hbm((128, 25), nl.int32)
        nl.store(out, d)
        return out

    want = before.copy()
    for p in range(0, 128, 16):
        nz = np.flatnonzero(x[p]) + 16
        want[p] = -1
        want[p, :nz.size] = nz
        want[p, -1] = nz.size
    np.testing.assert_array_equal(kernel(x, before), want)

    @nki.jit(chip="trn1")
    def old(x, before):
        d = nl.load(before)
        nisa.nonzero_with_count(dst=d, src=nl.load(x))
        return d

    with pytest.raises(Exception, match="nonzero_with_count"):
        old(x, before)


@pytest.mark.parametrize("op0,op1,rev0,rev1", [
    (nl.multiply, nl.add, False, False), (nl.multiply, nl.subtract, False, True),
    (nl.subtract, None, True, False), (None, None, False, False)])
def test_activate2_alu_stage_then_exp_then_max(op0, op1, rev0, rev1, rng):
    x = rng.standard_normal((64, 80)).astype(np.float32)
    b = rng.standard_normal((64, 1)).astype(np.float32)

    @nki.jit(chip="trn3")
    def kernel(x, b):
        t = nl.ndarray((64, 80), nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((64, 1), nl.float32, buffer=nl.sbuf)
        nisa.activate2(dst=t, op=nl.exp, data=nl.load(x), imm0=0.5, imm1=nl.load(b), op0=op0,
                       op1=op1, reverse0=rev0, reverse1=rev1, reduce_op=nl.maximum,
                       reduce_res=r, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        out, red = hbm((64, 80), nl.float32), hbm((64, 1), nl.float32)
        nl.store(out, t)
        nl.store(red, r)
        return out, red

    v = x
    if op0 is not None:
        v = (np.float32(0.5) - v) if rev0 and op0 is nl.subtract else (
            v * np.float32(0.5) if op0 is nl.multiply else v - np.float32(0.5))
    if op1 is not None:
        v = (b - v) if rev1 else (v + b if op1 is nl.add else v - b)
    want = np.exp(v.astype(np.float64)).astype(np.float32)
    out, red = kernel(x, b)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_array_equal(red[:, 0], out.max(axis=1))


def test_activate2_refusals(rng):
    x = rng.standard_normal((8, 8)).astype(np.float32)

    def make(chip, reduce=False, **kw):
        @nki.jit(chip=chip)
        def kernel(x):
            t = nl.ndarray((8, 8), nl.float32, buffer=nl.sbuf)
            args = dict(op0=nl.multiply, op1=nl.add, imm0=2.0, imm1=1.0)
            if reduce:
                args["reduce_res"] = nl.ndarray((8, 1), nl.float32, buffer=nl.sbuf)
            args.update(kw)
            nisa.activate2(dst=t, op=nl.exp, data=nl.load(x), **args)
            return t
        return kernel

    with pytest.raises(Exception, match="activate2"):
        make("trn2")(x)
    with pytest.raises(nki.NkiError, match="op0=max"):
        make("trn3", op0=nl.maximum)(x)
    with pytest.raises(nki.NkiError, match="op1 requires op0"):
        make("trn3", op0=None)(x)
    with pytest.raises(NotImplementedError, match="reduce_cmd"):
        make("trn3", reduce=True, reduce_cmd=nisa.reduce_cmd.reduce)(x)


def test_returning_an_sbuf_tile_returns_its_value(rng):
    x = rng.standard_normal((16, 32)).astype(np.float32)

    @legacy.jit
    def kernel(x):
        return lnl.exp(lnl.load(x))

    np.testing.assert_allclose(kernel(x), np.exp(x), rtol=1e-6)

    @nki.jit
    def psum_result(x):
        t = nl.load(x)
        return nl.matmul(t, t, transpose_x=True), t

    got, t = psum_result(x)
    np.testing.assert_allclose(got, x.T @ x, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(t, x)


def test_an_hbm_argument_is_true_a_tile_has_no_truth_value(rng):
    x = rng.standard_normal((8, 8)).astype(np.float32)
    y = rng.standard_normal((8, 8)).astype(np.float32)

    @nki.jit
    def pick(x, y=None):
        src = y if y else x  # an optional HBM argument, tested as a Python object
        out = hbm((8, 8), nl.float32)
        nl.store(out, nl.load(src))
        return out

    np.testing.assert_array_equal(pick(x, y), y)
    np.testing.assert_array_equal(pick(x), x)

    @nki.jit
    def tile_truth(x):
        if nl.load(x):
            pass

    with pytest.raises(nki.NkiError, match="no truth value"):
        tile_truth(x)


def test_torch_neuronx_nki_jit_is_the_legacy_jit(rng):
    nki.install_alias()
    from torch_neuronx import nki_jit  # noqa: PLC0415 - the alias under test
    from torch_neuronx.xla_impl.ops import nki_jit as sdk_nki_jit  # noqa: PLC0415 - later SDKs'

    assert sdk_nki_jit is nki_jit

    @nki_jit
    def kernel(x):
        out = lnl.ndarray(x.shape, x.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, lnl.exp(lnl.load(x)))
        return out

    x = rng.standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_allclose(kernel(x), np.exp(x), rtol=1e-6)


def test_a_masked_reduction_keeps_the_whole_reduced_shape(rng):
    x = rng.standard_normal((128, 64)).astype(np.float32)

    @legacy.jit
    def kernel(x):
        ix = lnl.arange(128)[:, None]
        iy = lnl.arange(64)[None, :]
        t = lnl.load(x)
        s = lnl.sum(t, axis=[1], keepdims=True, mask=(ix < 72))
        acc = lnl.zeros((128, 1), lnl.float32, buffer=lnl.psum)
        acc += s
        out = lnl.ndarray((128, 1), lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out[ix, 0:1], acc, mask=(ix < 72))
        del iy
        return out

    got = kernel(x)
    np.testing.assert_allclose(got[:72, 0], x[:72].sum(axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("chip", CHIPS)
def test_atomic_rmw_adds_every_partition_into_its_row(chip, rng):
    table = rng.standard_normal((40, 64)).astype(np.float32)
    value = rng.standard_normal((16, 64)).astype(np.float32)
    rows = np.array([3, 7, 3, 39, 0, 3, 12, 7, 1, 2, 5, 8, 9, 10, 11, 13], np.int32)[:, None]

    @nki.jit(chip=chip)
    def kernel(table, value, rows):
        out = hbm((40, 64), nl.float32)
        nl.store(out, nl.load(table[0:40, :]))
        ix = nl.arange(64)[None, :]
        nl.atomic_rmw(out[nl.load(rows), ix], value=nl.load(value), op=nl.add)
        return out

    want = table.astype(np.float64)
    for p, r in enumerate(rows[:, 0]):
        want[r] += value[p]  # a repeated row gets every partition's value
    np.testing.assert_allclose(kernel(table, value, rows), want, rtol=1e-6, atol=1e-6)


def test_atomic_rmw_counts_int32_bins(rng):
    # A histogram: every partition adds one to the bin its value falls in (int32 counts, the
    # DMA's add through fp32, exact below 2^24).
    bins = rng.integers(0, 10, size=(128, 1)).astype(np.int32)

    @nki.jit
    def histogram(bins):
        counts = hbm((10, 1), nl.int32)
        nl.store(counts, nl.zeros((10, 1), nl.int32))
        ones = nl.full((128, 1), 1, nl.int32)
        nl.atomic_rmw(counts[nl.load(bins), nl.arange(1)[None, :]], value=ones, op=nl.add)
        return counts

    np.testing.assert_array_equal(histogram(bins)[:, 0], np.bincount(bins[:, 0], minlength=10))


def test_atomic_rmw_refusals(rng):
    table = np.zeros((8, 4), np.float32)

    @nki.jit
    def direct(table):
        out = hbm((8, 4), nl.float32)
        nl.atomic_rmw(out, value=nl.load(table), op=nl.add)
        return out

    with pytest.raises(NotImplementedError, match="atomic_rmw of a tensor not indexed"):
        direct(table)

    @nki.jit
    def maximum(table, rows):
        out = hbm((8, 4), nl.float32)
        nl.atomic_rmw(out[nl.load(rows), nl.arange(4)[None, :]], value=nl.load(table),
                      op=nl.maximum)
        return out

    with pytest.raises(NotImplementedError, match="op=maximum"):
        maximum(table, np.arange(8, dtype=np.int32)[:, None])
