"""Call forms public kernels use that NKI's releases documented differently: nisa.iota without
an offset, nisa.affine_select with either positional order, nisa.tensor_reduce's axes counted
from the most minor ([1], [1, 2]: the ISA reference) as well as numpy's, np.copy as an
activation function; each against numpy."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import legacy
from trnsim.nki.legacy import isa as lisa
from trnsim.nki.legacy import language as lnl


def hbm(shape, dtype):
    return nl.ndarray(shape, dtype, buffer=nl.shared_hbm)


def test_iota_offset_defaults_to_zero():
    @nki.jit
    def kernel():
        t = nl.ndarray((16, 8), nl.int32, buffer=nl.sbuf)
        nisa.iota(dst=t, pattern=[[1, 8]], channel_multiplier=8)
        out = hbm((16, 8), nl.int32)
        nl.store(out, t)
        return out

    np.testing.assert_array_equal(kernel(), np.arange(128).reshape(16, 8))


@pytest.mark.parametrize("order", ["keywords", "nki0", "later"])
def test_affine_select_either_positional_order(order, rng):
    x = rng.standard_normal((16, 16)).astype(np.float32)

    @nki.jit
    def kernel(x):
        t = nl.load(x)
        d = nl.ndarray((16, 16), nl.float32, buffer=nl.sbuf)
        if order == "keywords":
            nisa.affine_select(dst=d, pattern=[[-1, 16]], channel_multiplier=1, on_true_tile=t,
                               on_false_value=-9.0, cmp_op=nl.greater_equal)
        elif order == "nki0":  # (dst, pattern, offset, channel_multiplier, on_true, fill, cmp)
            nisa.affine_select(d, [[-1, 16]], 0, 1, t, -9.0, nl.greater_equal)
        else:  # (dst, pattern, channel_multiplier, on_true, fill, cmp, offset)
            nisa.affine_select(d, [[-1, 16]], 1, t, -9.0, nl.greater_equal, 0)
        out = hbm((16, 16), nl.float32)
        nl.store(out, d)
        return out

    p, i = np.arange(16)[:, None], np.arange(16)[None, :]
    np.testing.assert_array_equal(kernel(x), np.where(p - i >= 0, x, np.float32(-9)))


def test_tensor_reduce_axes_counted_from_the_most_minor(rng):
    x = rng.standard_normal((32, 6, 10)).astype(np.float32)

    @nki.jit
    def kernel(x):
        t = nl.load(x)
        inner = nl.ndarray((32, 6), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=inner, op=nl.maximum, data=t, axis=1)  # the ISA's numbering
        both = nl.ndarray((32, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=both, op=nl.add, data=t, axis=[1, 2])
        trailing = nl.ndarray((32, 6), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=trailing, op=nl.maximum, data=t, axis=(2,))  # numpy's
        outs = hbm((32, 6), nl.float32), hbm((32, 1), nl.float32), hbm((32, 6), nl.float32)
        for o, v in zip(outs, (inner, both, trailing)):
            nl.store(o, v)
        return outs

    inner, both, trailing = kernel(x)
    np.testing.assert_array_equal(inner, x.max(axis=2))
    np.testing.assert_allclose(both[:, 0], x.sum(axis=(1, 2)), rtol=1e-5)
    np.testing.assert_array_equal(trailing, x.max(axis=2))


def test_np_copy_is_the_identity_activation(rng):
    x = rng.standard_normal((8, 32)).astype(np.float32)

    @legacy.jit
    def kernel(x):
        out = lnl.ndarray((8, 32), lnl.float32, buffer=lnl.shared_hbm)
        lnl.store(out, lisa.activation(np.copy, lnl.load(x), scale=2.0))
        return out

    np.testing.assert_array_equal(kernel(x), 2 * x)
