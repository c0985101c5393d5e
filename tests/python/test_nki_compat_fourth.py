"""API forms a fourth held-out set of public NKI kernels needed (docs/nki.md "API coverage"),
each against a numpy reference written here: the nki.tensor trace-time module, a legacy blocked
tile's .view(dtype), the legacy tensor_copy's default dtype, one element of a tile as a scalar
index of an HBM tensor, int32 gather indices, neuronxcc.nki._private.private_api, and an
integer DMA between dtypes of one width (bits kept)."""

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


def test_trace_time_tensors_become_shared_constants(nkis):
    nki, nl, nisa, *_ = nkis
    import nki.tensor as ntensor

    @nki.jit
    def k(x):
        ident = nl.shared_constant(ntensor.identity(8, nl.int8), dtype=nl.float32)
        ramp = nl.shared_constant(ntensor.arange(8, dtype=nl.int32))
        out = nl.ndarray((2, 8, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out[0], src=ident)
        t = nl.ndarray((1, 8), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=ramp.reshape((1, 8)))
        r = nl.ndarray((1, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=t)
        nisa.dma_copy(dst=out[1, 0:1], src=r)
        return out

    out = k(np.zeros((1, 1), np.float32))
    np.testing.assert_array_equal(out[0], np.eye(8))
    np.testing.assert_array_equal(out[1, 0], np.arange(8))
    assert ntensor.zeros((2, 3), nl.bfloat16).dtype == ml_dtypes.bfloat16
    with pytest.raises(tnki.NkiError, match="identity"):
        ntensor.identity(0)


def test_legacy_blocked_tile_views_its_bytes(nkis):
    *_, legacy, lnl, _ = nkis

    @legacy.jit
    def k(x, out):
        t = lnl.ndarray((2, lnl.par_dim(128), 1), dtype=lnl.float32, buffer=lnl.sbuf)
        t[1, :, :] = lnl.load(x)
        lnl.store(out, value=t.view(lnl.uint8)[1, :, :4])

    x = (np.arange(128, dtype=np.float32) + 0.5).reshape(128, 1)
    out = np.zeros((128, 4), np.uint8)
    k(x, out)
    np.testing.assert_array_equal(out.view(np.float32), x)


def test_legacy_tensor_copy_keeps_the_source_dtype(nkis):
    *_, legacy, lnl, lisa = nkis

    @legacy.jit
    def k(x):
        p = lisa.nc_transpose(lnl.load(x), engine=lisa.tensor_engine)  # bf16 in PSUM
        c = lisa.tensor_copy(p, engine=lisa.vector_engine)
        assert c.dtype == ml_dtypes.bfloat16
        out = lnl.ndarray((128, 1), dtype=x.dtype, buffer=lnl.shared_hbm)
        lnl.store(out, value=c)
        return out

    x = np.random.default_rng(3).standard_normal((1, 128)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(k(x), x.T)


def test_one_element_of_a_tile_is_a_scalar_index(nkis):
    *_, legacy, lnl, _ = nkis

    @legacy.jit
    def k(cache, table):
        tab = lnl.ndarray((lnl.par_dim(2), 1), dtype=np.int32, buffer=lnl.sbuf)
        tab[...] = lnl.load(table)
        out = lnl.ndarray((2, 32, 64), dtype=cache.dtype, buffer=lnl.shared_hbm)
        for b in lnl.affine_range(2):
            blk = lnl.load(cache[tab[b, 0], :, 0, :])  # the dim of the element goes
            assert blk.shape == (32, 64)
            lnl.store(out[b], value=blk)
        return out

    cache = np.random.default_rng(4).standard_normal((4, 32, 1, 64)).astype(np.float32)
    table = np.array([[3], [1]], np.int32)
    np.testing.assert_array_equal(k(cache, table), cache[[3, 1], :, 0])


def test_gather_flattened_takes_int32_indices(nkis):
    nki, nl, *_ = nkis

    @nki.jit
    def k(data, idx):
        out = nl.ndarray(idx.shape, dtype=data.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.gather_flattened(nl.load(data), nl.load(idx)))
        return out

    rng = np.random.default_rng(5)
    d = rng.standard_normal((16, 40)).astype(np.float32)
    i = rng.integers(0, 40, (16, 8)).astype(np.int32)
    np.testing.assert_array_equal(k(d, i), np.take_along_axis(d, i, 1))


def test_private_api_has_the_core_to_core_calls(aliases):
    from neuronxcc.nki._private.private_api import core_barrier, sendrecv

    import trnsim.nki.isa as nisa

    assert sendrecv is nisa.sendrecv and core_barrier is nisa.core_barrier


def test_integer_store_between_dtypes_of_one_width_keeps_bits(nkis):
    nki, nl, nisa, *_ = nkis

    @nki.jit
    def k(x):
        t = nl.ndarray(x.shape, dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        out = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)  # uint32 tile into an int32 tensor
        return out

    x = np.array([[0xFFFFFFFF, 5, 0x80000000, 0]], np.uint32)
    np.testing.assert_array_equal(k(x), x.view(np.int32))
