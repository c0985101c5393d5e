"""API forms a fifth held-out set of public NKI kernels needed (docs/nki.md "API coverage"),
each against a numpy reference written here: 1-D and one-element loads, a number stored to one
element, arrays nested in container arguments, `itemsize`, `logging.OFF` after the alias, a
legacy [P, 1] column against a 3-D tile, `nl.matmul` of fp32 with bf16, a tile index after
leading integers (`s[k, idx]`), int32 tensor_tensor on GpSimd (exact 32-bit integers), the
legacy `nki.tensor` class with `assert_shape`, a clear error for a `|` mask, and an nl.arange
index plus a run-time value (`nl.arange(4)[:, None] + t[0, 0]`, neuronx-distributed's
find_index)."""

import logging

import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as tnki


@pytest.fixture
def nkis(aliases):
    import neuronxcc.nki as legacy
    import neuronxcc.nki.isa as lisa
    import neuronxcc.nki.language as lnl
    import nki
    import nki.isa as nisa
    import nki.language as nl

    return nki, nl, nisa, legacy, lnl, lisa


def test_1d_loads_have_one_shape_whatever_their_order(nkis):
    *_, legacy, lnl, _ = nkis
    shapes = []

    @legacy.jit
    def vector_add(a, b):
        out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        x = lnl.load(a)
        y = lnl.load(b)
        shapes.extend([x.shape, y.shape])  # y is still unplaced here, x already placed
        lnl.store(out, value=lnl.add(x, y))
        return out

    a = np.arange(128, dtype=np.float32)
    b = np.full(128, 0.5, np.float32)
    np.testing.assert_array_equal(vector_add(a, b), a + b)
    assert shapes == [(128, 1), (128, 1)]


def test_one_element_stored_and_loaded(nkis):
    *_, legacy, lnl, _ = nkis

    @legacy.jit
    def k(x):
        state = lnl.ndarray((2, 8, 1), dtype=lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(dst=state[0, 0:8, 0], value=0.0)
        lnl.store(dst=state[1, 0:8, 0], value=0.0)
        lnl.store(dst=state[0, 0, 0], value=1.0)  # one element, all indices integers
        v = lnl.load(x[1][2])  # one element of x: a [1, 1] tile
        assert v.shape == (1, 1)
        lnl.store(dst=state[1, 3, 0], value=v)
        return state

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    want = np.zeros((2, 8, 1), np.float32)
    want[0, 0, 0], want[1, 3, 0] = 1.0, x[1, 2]
    np.testing.assert_array_equal(k(x), want)


def test_arrays_nested_in_containers_are_tensors(nkis):
    *_, legacy, lnl, _ = nkis

    @legacy.jit
    def k(gates):
        out = lnl.ndarray((128, 4), dtype=lnl.float32, buffer=lnl.shared_hbm)
        acc = lnl.zeros((128, 4), dtype=lnl.float32)
        for u, v in gates:  # a list of (array, array) tuples
            acc = lnl.add(acc, lnl.multiply(lnl.load(u), lnl.load(v)))
        lnl.store(out, value=acc)
        return out

    rng = np.random.default_rng(5)
    gates = [tuple(rng.standard_normal((128, 4)).astype(np.float32) for _ in range(2))
             for _ in range(3)]
    want = sum(u.astype(np.float64) * v for u, v in gates)
    np.testing.assert_allclose(k(gates), want, rtol=1e-5, atol=1e-5)


def test_itemsize_of_tiles_and_blocked_tensors(nkis):
    *_, legacy, lnl, _ = nkis
    sizes = []

    @legacy.jit
    def k(x):
        sizes.append(lnl.load(x).itemsize)
        blocked = lnl.ndarray((2, lnl.par_dim(128), 4), dtype=lnl.bfloat16)
        sizes.append(blocked.itemsize)
        sizes.append(x.itemsize)

    k(np.zeros((128, 4), np.float32))
    assert sizes == [4, 2, 4]


def test_the_legacy_alias_defines_logging_off(nkis):
    assert logging.OFF > logging.CRITICAL
    logging.disable(logging.OFF)  # what kernel files written on Neuron machines call
    try:
        assert logging.getLogger("trnsim-test").isEnabledFor(logging.CRITICAL) is False
    finally:
        logging.disable(logging.NOTSET)


def test_legacy_column_against_a_3d_tile_broadcasts(nkis):
    *_, legacy, lnl, lisa = nkis

    @legacy.jit
    def k(x, b):
        out = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, value=lisa.tensor_tensor(lnl.load(x), lnl.load(b), lnl.add))
        return out

    rng = np.random.default_rng(6)
    x = rng.standard_normal((128, 2, 16)).astype(np.float32)
    b = rng.standard_normal((128, 1)).astype(np.float32)
    np.testing.assert_array_equal(k(x, b), x + b[:, :, None])


def test_matmul_of_fp32_and_bf16_promotes_to_fp32(nkis):
    nki, nl, nisa, *_ = nkis

    @nki.jit
    def k(p, v):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        pt = nl.ndarray(p.shape, dtype=nl.float32, buffer=nl.sbuf)
        vt = nl.ndarray(v.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=pt, src=p)
        nisa.dma_copy(dst=vt, src=v)
        res = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=nl.matmul(pt, vt, transpose_x=True))
        nisa.dma_copy(dst=out, src=res)
        return out

    rng = np.random.default_rng(7)
    p = rng.random((128, 128)).astype(np.float32)
    v = rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16)
    want = p.T.astype(np.float64) @ v.astype(np.float64)  # bf16 -> fp32 is exact
    np.testing.assert_allclose(k(p, v), want, rtol=1e-4, atol=1e-3)


def test_tile_index_after_leading_integers(nkis):
    *_, legacy, lnl, lisa = nkis

    @legacy.jit
    def k(state, rows):
        out = lnl.ndarray((2, 128, 1), dtype=lnl.float32, buffer=lnl.shared_hbm)
        idx = lnl.load(rows)
        for part in range(2):  # state[part] is [N, 1]; the tile numbers its rows
            lnl.store(out[part], value=lnl.load(state[part, idx]))
        return out

    rng = np.random.default_rng(8)
    state = rng.standard_normal((2, 512, 1)).astype(np.float32)
    rows = rng.permutation(512)[:128].astype(np.uint32)[:, None]
    np.testing.assert_array_equal(k(state, rows), state[:, rows[:, 0]])


def _int_add(nki, nl, nisa, engine=None):
    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a)
        nisa.dma_copy(dst=y, src=b)
        for op, row in ((nl.add, 0), (nl.maximum, 1), (nl.greater, 2)):
            z = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
            kw = {} if engine is None else {"engine": engine}
            nisa.tensor_tensor(dst=z, data1=x, data2=y, op=op, **kw)
            nisa.dma_copy(dst=out[row * 32:(row + 1) * 32], src=z[0:32])
        return out

    return k


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_int32_tensor_tensor_defaults_to_gpsimd_and_is_exact(nkis, dtype):
    nki, nl, nisa, *_ = nkis
    rng = np.random.default_rng(9)
    info = np.iinfo(dtype)
    a = rng.integers(info.min // 2, info.max // 2, size=(128, 8), dtype=dtype)
    b = rng.integers(info.min // 2, info.max // 2, size=(128, 8), dtype=dtype)
    a[0, 0], b[0, 0] = 16777217, 1  # an fp32 add would give 16777216
    got = _int_add(nki, nl, nisa)(a, b)
    np.testing.assert_array_equal(got[0:32], (a + b)[0:32])
    np.testing.assert_array_equal(got[32:64], np.maximum(a, b)[0:32])  # signed / unsigned
    np.testing.assert_array_equal(got[64:96], (a > b)[0:32].astype(dtype))
    run = tnki.last_run()
    assert run.figures["engines"]["pool"]["instructions"] >= 3  # with DMA triggers
    assert run.figures["engines"]["dve"]["instructions"] == 0
    # engine=vector keeps the documented VectorE float path (fp32 arithmetic, rounded)
    lossy = _int_add(nki, nl, nisa, nisa.engine.vector)(a, b)
    assert lossy[0, 0] == 16777216


def test_legacy_tensor_class_and_assert_shape(nkis):
    *_, legacy, lnl, _ = nkis

    @legacy.jit
    def double(x: legacy.tensor) -> legacy.tensor:
        t = lnl.load(x).assert_shape((128, 4))
        assert isinstance(t, legacy.tensor)
        out = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, value=lnl.multiply(t, 2.0))
        return out

    x = np.arange(512, dtype=np.float32).reshape(128, 4)
    np.testing.assert_array_equal(double(x), 2 * x)

    @legacy.jit
    def wrong(x):
        lnl.load(x).assert_shape((128, 8))

    with pytest.raises(tnki.NkiError, match=r"has shape \(128, 4\), not \(128, 8\)"):
        wrong(x)


def test_a_union_mask_is_an_nki_error(nkis):
    *_, legacy, lnl, _ = nkis

    @legacy.jit
    def k(x):
        i_p, i_f = lnl.arange(128)[:, None], lnl.arange(4)[None, :]
        out = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.shared_hbm)
        lnl.store(out[i_p, i_f], value=lnl.load(x[i_p, i_f]), mask=(i_p < 64) | (i_f < 2))
        return out

    with pytest.raises(tnki.NkiError, match=r"joins comparisons with & only"):
        k(np.zeros((128, 4), np.float32))


@pytest.mark.parametrize("start", [0, 5, 12])
def test_arange_plus_a_loaded_value_is_a_run_time_offset(nkis, start):
    *_, legacy, lnl, lisa = nkis

    @legacy.jit
    def rows_from(x, first):
        s = lnl.load(first)[0, 0]  # one element of a tile: known when the kernel runs
        i_p = lnl.arange(4)[:, None] + s + 0
        i_f = lnl.arange(64)[None, :]
        t = lnl.ndarray((4, 64), dtype=x.dtype, buffer=lnl.sbuf)
        lisa.dma_copy(src=x[i_p, i_f], dst=t, dge_mode=lisa.dge_mode.swdge)
        out = lnl.ndarray((4, 64), dtype=x.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, t)
        return out

    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    np.testing.assert_array_equal(rows_from(x, np.array([[start]], np.int32)),
                                  x[start:start + 4])


def test_a_run_time_offset_refusals(nkis):
    *_, legacy, lnl, _ = nkis

    @legacy.jit
    def scaled(x, first):
        s = lnl.load(first)[0, 0]
        return lnl.load(x[(lnl.arange(4)[:, None] + s) * 2, lnl.arange(8)[None, :]])

    with pytest.raises(tnki.NkiError, match="cannot be scaled"):
        scaled(np.zeros((16, 8), np.float32), np.zeros((1, 1), np.int32))

    @legacy.jit
    def two(x, first):
        s = lnl.load(first)[0, 0]
        return lnl.load(x[lnl.arange(4)[:, None] + s, lnl.arange(8)[None, :] + s])

    with pytest.raises(NotImplementedError, match="run-time offsets on two dims"):
        two(np.zeros((16, 16), np.float32), np.zeros((1, 1), np.int32))
