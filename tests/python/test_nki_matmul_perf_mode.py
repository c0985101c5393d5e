"""nc_matmul(perf_mode=double_row): FP8 operands [K=128 partitions, 2, F], K = 256, against
numpy. NKI documents the mode for NeuronCore-v3 and -v4; trn3's spec says NC-v4 has none
(spec/chips/trn3.toml features.double_row_fp8), so trn3 is an expected failure until that
spec entry, and the C++ tests that pin it, change."""

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


@pytest.mark.parametrize("chip", [
    "trn2",
    pytest.param("trn3", marks=pytest.mark.xfail(
        strict=True, raises=ValueError,
        reason="spec/chips/trn3.toml: features.double_row_fp8 = false (NKI: NC-v3 and NC-v4)")),
])
def test_double_row_fp8_matmul(rng, chip):
    x = rng.integers(-2, 3, (128, 2, 128)).astype(F8)
    y = rng.integers(-2, 3, (128, 2, 128)).astype(F8)
    ref = np.einsum("prm,prn->mn", x.astype(np.float32), y.astype(np.float32))
    np.testing.assert_array_equal(nki.simulate(double_row, x, y, chip=chip), ref)
