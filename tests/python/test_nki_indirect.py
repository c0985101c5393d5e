"""Tensor-indexed (indirect) DMA against numpy, both dialects, trn1 / trn2 / trn3:
nl.load(t[idx_tile, ...]) gathers row idx[p] into partition p, nl.store(t[idx_tile, ...], v)
scatters, and NKI 0.4's t.ap(..., vector_offset=idx, indirect_dim=0) does the same through
nisa.dma_copy. A row number outside the tensor stops the run with an index_range fault."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import legacy as lnki
from trnsim.nki.legacy import language as lnl

CHIPS = ["trn1", "trn2", "trn3"]


def _table(rows=16, cols=8, dtype=np.float32):
    return (np.arange(rows * cols).reshape(rows, cols) * 0.5 - 3).astype(dtype)


@pytest.mark.parametrize("chip", CHIPS)
def test_gather_rows(chip):
    def k(t, idx):
        out = nl.ndarray((5, 8), nl.float32, buffer=nl.shared_hbm)
        rows = nl.load(idx)
        nl.store(out, value=nl.load(t[rows, :]))
        return out

    t = _table()
    idx = np.array([[3], [1], [15], [0], [3]], np.int32)  # a repeat is fine in a gather
    got = nki.simulate(k, t, idx, chip=chip)
    np.testing.assert_array_equal(got, t[idx[:, 0]])
    assert nki.last_run().latency_us > 0


@pytest.mark.parametrize("chip", CHIPS)
def test_gather_columns_uint32_and_cast(chip):
    def k(t, idx):
        out = nl.ndarray((4, 3), nl.float32, buffer=nl.shared_hbm)
        rows = nl.load(idx)
        g = nl.load(t[rows, 2:5], dtype=nl.float32)  # bf16 rows cast to fp32 by the DMA
        nl.store(out, value=g)
        return out

    import ml_dtypes

    t = _table(dtype=ml_dtypes.bfloat16)
    idx = np.array([[7], [2], [9], [11]], np.uint32)
    got = nki.simulate(k, t, idx, chip=chip)
    np.testing.assert_array_equal(got, t[idx[:, 0], 2:5].astype(np.float32))


@pytest.mark.parametrize("chip", CHIPS)
def test_scatter_rows(chip):
    def k(t, idx, base):
        out = nl.ndarray(base.shape, nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(base))  # the scatter waits for this store (whole tensor)
        rows = nl.load(idx)
        nl.store(out[rows, :], value=nl.load(t))
        return out

    t = _table(4, 8)
    idx = np.array([[5], [0], [9], [2]], np.int32)
    base = np.full((10, 8), -1, np.float32)
    got = nki.simulate(k, t, idx, base, chip=chip)
    want = base.copy()
    want[idx[:, 0]] = t
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("chip", CHIPS)
def test_embedding_lookup_then_compute(chip):
    """An embedding lookup: 128 token ids gather 128 rows, scaled on VectorE, stored."""

    def k(emb, ids):
        out = nl.ndarray((128, 32), nl.float32, buffer=nl.shared_hbm)
        tok = nl.load(ids)
        x = nl.load(emb[tok, :])
        nl.store(out, value=x * 2.0)
        return out

    rng = np.random.default_rng(1)
    emb = rng.standard_normal((300, 32)).astype(np.float32)
    ids = rng.integers(0, 300, (128, 1)).astype(np.int32)
    got = nki.simulate(k, emb, ids, chip=chip)
    np.testing.assert_array_equal(got, emb[ids[:, 0]] * 2)


@pytest.mark.parametrize("chip", CHIPS)
def test_ap_vector_offset_gather_and_scatter(chip):
    def k(t, idx):
        out = nl.ndarray((12, 8), nl.float32, buffer=nl.shared_hbm)
        rows = nl.ndarray((4, 1), nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows, src=idx)
        g = nl.ndarray((4, 8), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=g, src=t.ap(pattern=[[8, 4], [1, 8]], offset=0, vector_offset=rows,
                                      indirect_dim=0))
        z = nl.ndarray((12, 8), nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=z, value=0.0)
        nisa.dma_copy(dst=out, src=z)
        nisa.dma_copy(dst=out.ap(pattern=[[8, 4], [1, 8]], offset=0, vector_offset=rows,
                                 indirect_dim=0), src=g)
        return out

    t = _table()
    idx = np.array([[6], [11], [1], [4]], np.int32)
    got = nki.simulate(k, t, idx, chip=chip)
    want = np.zeros((12, 8), np.float32)
    want[idx[:, 0]] = t[idx[:, 0]]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("chip", CHIPS)
def test_legacy_gather_and_scatter_with_ranges(chip):
    @lnki.jit(chip=chip)
    def k(t, idx, out):
        i_f = lnl.arange(8)[None, :]  # the partitions come from the index tile
        rows = lnl.load(idx)
        g = lnl.load(t[rows, i_f])
        lnl.store(out[rows, i_f], value=g + 1.0)

    t = _table()
    idx = np.array([[3], [1], [7], [0]], np.int32)
    out = np.zeros((16, 8), np.float32)
    k(t, idx, out)
    want = np.zeros((16, 8), np.float32)
    want[idx[:, 0]] = t[idx[:, 0]] + 1
    np.testing.assert_array_equal(out, want)


def test_out_of_range_row_is_a_clear_error():
    def k(t, idx):
        out = nl.ndarray((4, 8), nl.float32, buffer=nl.shared_hbm)
        rows = nl.load(idx)
        nl.store(out, value=nl.load(t[rows, :]))
        return out

    t = _table()
    idx = np.array([[3], [1], [16], [0]], np.int32)  # row 16 of a 16-row tensor
    with pytest.raises(RuntimeError, match=r"index_range.*offsets\[2\] = 16 .*16 rows"):
        nki.simulate(k, t, idx)
    with pytest.raises(RuntimeError, match=r"index_range.*offsets\[0\] = -1 "):
        nki.simulate(k, t, np.array([[-1], [1], [2], [0]], np.int32))


def test_refusals_name_what_is_missing():
    def float_offsets(t, idx):
        out = nl.ndarray((4, 8), nl.float32, buffer=nl.shared_hbm)
        rows = nl.load(idx)
        nl.store(out, value=nl.load(t[rows, :]))
        return out

    t = _table()
    with pytest.raises(Exception, match="int32"):
        nki.simulate(float_offsets, t, np.zeros((4, 1), np.float32))

    def tile_on_a_later_dim(t, idx):
        out = nl.ndarray((16, 4), nl.float32, buffer=nl.shared_hbm)
        rows = nl.load(idx)
        nl.store(out, value=nl.load(t[:, rows]))
        return out

    with pytest.raises(NotImplementedError, match="dim other than the first"):
        nki.simulate(tile_on_a_later_dim, t, np.zeros((4, 1), np.int32))



def test_oob_mode_skip_moves_nothing_for_rows_outside():
    # nki-library's a2av kernels mark unused slots with the row count N and skip them: a
    # gather's partition keeps its value, a scatter writes no row (the default still faults).
    t = np.arange(6 * 8, dtype=np.float32).reshape(6, 8)
    idx = np.array([[4], [6], [0], [100]], np.int32)  # rows 6 and 100 are outside

    @nki.jit
    def k(t, idx):
        rows = nl.load(idx)
        g = nl.ndarray((4, 8), nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=g, value=-1.0)
        nisa.dma_copy(dst=g, src=t.ap([[6, 4], [1, 8]], 0, vector_offset=rows, indirect_dim=0),
                      oob_mode=nisa.oob_mode.skip)
        out = nl.ndarray((6, 8), nl.float32, buffer=nl.shared_hbm)
        z = nl.ndarray((6, 8), nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=z, value=0.0)
        nisa.dma_copy(dst=out, src=z)
        nisa.dma_copy(dst=out.ap([[8, 4], [1, 8]], 0, vector_offset=rows, indirect_dim=0),
                      src=g, oob_mode=nisa.oob_mode.skip)
        return out

    out = k(t, idx)
    want = np.zeros((6, 8), np.float32)
    want[4], want[0] = t[4], t[0]  # partitions 1 and 3 skipped: their rows neither read nor written
    np.testing.assert_array_equal(out, want)

    @nki.jit
    def default(t, idx):
        rows = nl.load(idx)
        g = nl.ndarray((4, 8), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=g, src=t.ap([[8, 4], [1, 8]], 0, vector_offset=rows, indirect_dim=0))
        return g

    with pytest.raises(RuntimeError, match="outside the 6 rows"):
        default(t, idx)
