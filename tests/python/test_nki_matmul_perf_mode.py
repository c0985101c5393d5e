"""nc_matmul(perf_mode=double_row): FP8 operands [K=128 partitions, 2, F], K = 256, against
numpy, on NeuronCore-v3 and -v4 (NKI documents the mode for both; on NC-v4 it runs at the
BF16 rate, core/cost/cost_matmul.cc), and refused on NC-v2."""

import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl

F8 = ml_dtypes.float8_e5m2


def double_row(x, y):
    out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    b = nl.ndarray(y.shape, y.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    nisa.dma_copy(dst=b, src=y)
    p = nl.ndarray((128, 128), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=a, moving=b, perf_mode=nisa.matmul_perf_mode.double_row)
    s = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=p)
    nisa.dma_copy(dst=out, src=s)
    return out


@pytest.mark.parametrize("chip", ["trn2", "trn3"])
def test_double_row_fp8_matmul(rng, chip):
    x = rng.integers(-2, 3, (128, 2, 128)).astype(F8)
    y = rng.integers(-2, 3, (128, 2, 128)).astype(F8)
    ref = np.einsum("prm,prn->mn", x.astype(np.float32), y.astype(np.float32))
    np.testing.assert_array_equal(nki.simulate(double_row, x, y, chip=chip), ref)


def test_double_row_takes_two_passes_on_trn3_and_is_refused_on_trn1(rng):
    x = rng.integers(-2, 3, (128, 2, 128)).astype(F8)
    t = {}
    for chip in ("trn2", "trn3"):
        nki.simulate(double_row, x, x, chip=chip)
        t[chip] = nki.last_run().figures["engines"]["pe"]["busy_ps"]
    # TensorE's only main-unit work is the matmul's 128 columns: one pass on trn2, two on trn3
    # (both PE clocks are 2.4 GHz).
    assert t["trn3"] == pytest.approx(2 * t["trn2"], rel=0.01)
    with pytest.raises(Exception, match="double_row"):
        nki.simulate(double_row, x, x, chip="trn1")


@pytest.mark.parametrize("mode", ["double_row_gen3", nisa.matmul_perf_mode.double_row])
def test_legacy_nc_matmul_takes_perf_mode(rng, mode):
    """As NKI's nc_matmul double_row_gen3 example (legacy dialect): the keyword used to be
    refused as unknown. The result is [M, N], not [2, 2] (the operands' second dim)."""
    from trnsim.nki import legacy
    from trnsim.nki.legacy import isa as lisa

    @legacy.jit
    def k(a, b):
        out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        c = lisa.nc_matmul(nl.load(a), nl.load(b), perf_mode=mode)
        assert c.shape == (128, 64)
        nl.store(out, value=c)
        return out

    x = rng.integers(-2, 3, (128, 2, 128)).astype(F8)
    y = rng.integers(-2, 3, (128, 2, 64)).astype(F8)
    ref = np.einsum("prm,prn->mn", x.astype(np.float32), y.astype(np.float32))
    np.testing.assert_array_equal(k(x, y), ref)


def test_an_unknown_perf_mode_is_an_error(rng):
    """Any other value used to run the normal mode without a word."""
    x = rng.integers(-2, 3, (128, 2, 128)).astype(F8)

    def k(a, b):
        p = nl.ndarray((128, 128), nl.float32, buffer=nl.psum)
        s = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=a)
        nisa.nc_matmul(dst=p, stationary=s, moving=s, perf_mode="double")

    with pytest.raises(nki.NkiError, match="perf_mode='double'"):
        nki.simulate(k, x, x)
