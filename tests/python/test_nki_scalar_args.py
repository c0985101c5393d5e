"""numpy scalars passed to a kernel are numbers, as Python's are (not one-element HBM
tensors): operands, fill values, loop bounds and slice ends, in both dialects."""

import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import legacy as lnki
from trnsim.nki.legacy import isa as lisa
from trnsim.nki.legacy import language as lnl


@pytest.mark.parametrize("chip", ["trn1", "trn2", "trn3"])
@pytest.mark.parametrize("s", [np.float32(2.0), np.float64(2.0), np.int32(2)])
def test_numpy_scalar_arguments_are_numbers(rng, chip, s):
    def k(a, s, n):
        out = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a[0:n, :])
        t = nl.ndarray(a.shape, nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=t, op=nl.copy, data=x, scale=s)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=s)
        nisa.tensor_tensor(dst=t, data1=t, data2=nl.full(a.shape, s, nl.float32), op=nl.add)
        for _ in nl.affine_range(np.int32(1)):
            y = nl.multiply(t, s)
        nl.store(out[0:n, :], value=y)
        return out

    a = rng.standard_normal((128, 64)).astype(np.float32)
    out = nki.simulate(k, a, s, np.int64(128), chip=chip)
    f = np.float32(s)
    np.testing.assert_array_equal(out, (a * f + f + f) * f)


def test_numpy_scalar_operand_in_the_legacy_dialect(rng):
    @lnki.jit
    def k(a, s):
        out = lnl.ndarray(a.shape, lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out, value=lisa.tensor_scalar(lnl.load(a), op0=np.multiply, operand0=s))
        return out

    a = rng.standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_array_equal(lnki.simulate_kernel(k, a, np.float32(2.0)), a * 2)


@pytest.mark.parametrize("s", [ml_dtypes.bfloat16(2.5), ml_dtypes.float8_e4m3fn(2.5),
                               np.float32(2.5)])
def test_ml_dtypes_scalars_are_numbers(rng, s):
    """ml_dtypes scalars are np.generic but not np.number: nl.full(..., nl.finfo(nl.bfloat16)
    .min) (nki-samples' select-and-scatter) and bf16 operands used to be refused; a scalar
    left of a tile (s * t) used to make numpy read the tile's values."""
    @lnki.jit
    def k(a, s):
        out = lnl.ndarray((6, *a.shape), lnl.float32, buffer=lnl.shared_hbm)
        x = lnl.load(a)
        lnl.store(out[0], value=lnl.full(a.shape, lnl.finfo(lnl.bfloat16).min, lnl.float32))
        lnl.store(out[1], value=lisa.tensor_scalar(x, op0=np.multiply, operand0=s))
        lnl.store(out[2], value=x + s)
        lnl.store(out[3], value=s * x)
        t = lnl.ndarray(a.shape, lnl.float32, buffer=lnl.sbuf)
        t[...] = s
        lnl.store(out[4], value=t)
        lnl.store(out[5], value=s)
        return out

    a = rng.standard_normal((128, 64)).astype(np.float32)
    out = lnki.simulate_kernel(k, a, s)
    f = np.float32(s)
    np.testing.assert_array_equal(out[0], np.float32(ml_dtypes.finfo(ml_dtypes.bfloat16).min))
    for i, ref in enumerate([a * f, a + f, f * a, f, f], start=1):
        np.testing.assert_array_equal(out[i], np.broadcast_to(ref, a.shape))
