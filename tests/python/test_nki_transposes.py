"""Transposes keep the input dtype, as NKI requires, on every generation: TensorE writes a
PSUM format it can (fp32 on NC-v2, 16 bits for FP8 from NC-v3) and a copy gives the asked
dtype; a transpose assigned to SBUF goes through PSUM; load_transpose2d converts dtypes and
runs on NC-v2 too. Checked against numpy on trn1-trn3."""

import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import legacy as lnki
from trnsim.nki.legacy import isa as lisa
from trnsim.nki.legacy import language as lnl

CHIPS = ["trn1", "trn2", "trn3"]
BF16 = ml_dtypes.bfloat16


def small_ints(rng, shape, dtype):
    """Values whose products and sums are exact in fp32 (so the reference is exact)."""
    return rng.integers(-4, 5, shape).astype(dtype)


@pytest.mark.parametrize("chip", CHIPS)
def test_matmul_of_bf16_transposes_x_on_tensor_engine(rng, chip):
    """nl.matmul(x, y) used to be refused on trn1: "dst is bf16; a matmul result is fp32"."""
    x, y = small_ints(rng, (128, 128), BF16), small_ints(rng, (128, 256), BF16)

    def k(a, b):
        out = nl.ndarray((128, 256), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.matmul(nl.load(a), nl.load(b)))
        return out

    out = nki.simulate(k, x, y, chip=chip)
    np.testing.assert_array_equal(out, x.astype(np.float32) @ y.astype(np.float32))


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", [BF16, np.float16, np.float32])
def test_nl_transpose_keeps_the_dtype(rng, chip, dtype):
    x = rng.standard_normal((64, 128)).astype(dtype)

    def k(a):
        out = nl.ndarray((128, 64), a.dtype, buffer=nl.shared_hbm)
        t = nl.transpose(nl.load(a))
        assert t.dtype == a.dtype
        nl.store(out, value=t)
        return out

    np.testing.assert_array_equal(nki.simulate(k, x, chip=chip), x.T)


@pytest.mark.parametrize("chip", ["trn2", "trn3"])
def test_fp8_transpose_keeps_the_dtype(rng, chip):
    """From NC-v3 TensorE writes FP8 as 16 bits: a bf16 PSUM tile, then the copy to FP8."""
    x = rng.standard_normal((64, 128)).astype(ml_dtypes.float8_e4m3)

    def k(a):
        out = nl.ndarray((128, 64), a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.transpose(nl.load(a)))
        return out

    np.testing.assert_array_equal(nki.simulate(k, x, chip=chip).view(np.uint8),
                                  x.T.view(np.uint8))


@pytest.mark.parametrize("chip", CHIPS)
def test_nc_transpose_into_a_bf16_psum_tile(rng, chip):
    x = rng.standard_normal((64, 128)).astype(BF16)

    def k(a):
        out = nl.ndarray((128, 64), a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((64, 128), a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        p = nl.ndarray((128, 64), a.dtype, buffer=nl.psum)
        nisa.nc_transpose(dst=p, data=t)
        s = nl.ndarray((128, 64), a.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=s, src=p)
        nisa.dma_copy(dst=out, src=s)
        return out

    np.testing.assert_array_equal(nki.simulate(k, x, chip=chip), x.T)


@pytest.mark.parametrize("chip", CHIPS)
def test_legacy_nc_transpose_assigned_to_an_sbuf_tile(rng, chip):
    """TensorE writes PSUM only: the result goes through a PSUM tile, then a copy."""
    x = rng.standard_normal((128, 64)).astype(np.float32)

    @lnki.jit
    def k(a):
        out = lnl.ndarray((64, 128), lnl.float32, buffer=lnl.shared_hbm)
        t = lnl.ndarray((64, 128), lnl.float32, buffer=lnl.sbuf)
        t[...] = lisa.nc_transpose(lnl.load(a))
        lnl.store(out, value=t)
        return out

    out, _ = lnki.run(k, x, chip=chip)
    np.testing.assert_array_equal(out, x.T)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("m", [128, 64])
def test_nc_matmul_is_transpose_transposes_the_stationary(rng, chip, m):
    """NKI: the data is the stationary, an identity the moving (nki.isa.nc_transpose). The
    moving used to be transposed: the identity came back, silently for square data."""
    x = rng.standard_normal((128, m)).astype(BF16)
    eye = np.eye(128, dtype=BF16)

    def k(a, i):
        out = nl.ndarray((m, 128), a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        e = nl.ndarray(i.shape, i.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=e, src=i)
        p = nl.ndarray((m, 128), a.dtype, buffer=nl.psum)
        nisa.nc_matmul(dst=p, stationary=t, moving=e, is_transpose=True)
        s = nl.ndarray((m, 128), a.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=s, src=p)
        nisa.dma_copy(dst=out, src=s)
        return out

    np.testing.assert_array_equal(nki.simulate(k, x, eye, chip=chip), x.T)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("m", [128, 64])
def test_legacy_nc_matmul_is_transpose_transposes_the_stationary(rng, chip, m):
    """As allocated_fused_linear.py (nki-samples) transposes tiles: psum = nc_matmul(data,
    identity, is_transpose=True), an fp32 PSUM tile on NC-v2."""
    x = rng.standard_normal((128, m)).astype(np.float32)
    eye = np.eye(128, dtype=np.float32)

    @lnki.jit
    def k(a, i):
        out = lnl.ndarray((m, 128), lnl.float32, buffer=lnl.shared_hbm)
        p = lnl.ndarray((m, 128), lnl.float32, buffer=lnl.psum)
        p[...] = lisa.nc_matmul(lnl.load(a), lnl.load(i), is_transpose=True)
        lnl.store(out, value=lnl.copy(p))
        return out

    out, _ = lnki.run(k, x, eye, chip=chip)
    np.testing.assert_array_equal(out, x.T)


def test_nc_matmul_is_transpose_takes_an_identity_shaped_moving(rng):
    """A moving of another shape is no identity: refused, not computed as one."""
    x = rng.standard_normal((128, 64)).astype(np.float32)

    def k(a):
        t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        p = nl.ndarray((64, 128), a.dtype, buffer=nl.psum)
        nisa.nc_matmul(dst=p, stationary=t, moving=t, is_transpose=True)

    with pytest.raises(nki.NkiError, match=r"moving is \[128, 64\]; it is the identity"):
        nki.simulate(k, x)


@pytest.mark.parametrize("chip", CHIPS)
def test_load_transpose2d_with_a_dtype_conversion(rng, chip):
    """The transposing DMA moves elements unchanged; the conversion follows it (RNE)."""
    x = rng.standard_normal((128, 64)).astype(np.float32)

    def k(a):
        out = nl.ndarray((64, 128), nl.bfloat16, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load_transpose2d(a, dtype=nl.bfloat16))
        return out

    np.testing.assert_array_equal(nki.simulate(k, x, chip=chip), x.T.astype(BF16))


def test_load_transpose2d_on_trn1_is_a_transposed_dma(rng):
    x = rng.standard_normal((96, 64)).astype(np.float32)

    def k(a):
        out = nl.ndarray((64, 96), a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load_transpose2d(a[:, :]))
        return out

    out, run = nki.run(k, x, chip="trn1")
    np.testing.assert_array_equal(out, x.T)
    assert not run.figures["engines"].get("pe", {}).get("by_opcode")
