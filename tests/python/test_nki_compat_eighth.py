"""API forms an eighth held-out set of public NKI kernels needed (docs/nki.md "API coverage"),
each against a numpy reference written here: NKI Beta 2's bare buffer names
(`sbuf.view(dtype=..., shape=...)`, `hbm.view(...)`), given to current-dialect kernel bodies
only while they are traced; a reshape of a strided HBM slice that adds a unit dim or splits a
dim (numpy's no-copy rule), with a clear error where the dims do not form one run
(`torch_neuronx.xla_impl.ops.nki_jit`: test_nki_gather.py)."""

import builtins

import numpy as np
import pytest

from trnsim.nki import NkiError


@pytest.fixture
def nkis(aliases):
    import neuronxcc.nki as legacy
    import neuronxcc.nki.isa as lisa
    import neuronxcc.nki.language as lnl
    import nki
    import nki.isa as nisa
    import nki.language as nl

    return nki, nl, nisa, legacy, lnl, lisa


def beta2_add(a_input, b_input, result):
    # As NKI Beta 2 kernels are written: the buffers named without an import.
    a_tile = sbuf.view(dtype=a_input.dtype, shape=a_input.shape)  # noqa: F821
    b_tile = sbuf.view(dtype=b_input.dtype, shape=b_input.shape)  # noqa: F821
    import nki.isa as nisa
    import nki.language as nl

    nisa.dma_copy(dst=a_tile, src=a_input)
    nisa.dma_copy(dst=b_tile, src=b_input)
    c_tile = sbuf.view(dtype=a_input.dtype, shape=a_input.shape)  # noqa: F821
    nisa.tensor_tensor(dst=c_tile, data1=a_tile, data2=b_tile, op=nl.multiply)
    out = hbm.view(dtype=a_input.dtype, shape=a_input.shape)  # noqa: F821
    nisa.dma_copy(dst=out, src=c_tile)
    nisa.dma_copy(dst=result, src=c_tile)
    return out


@pytest.mark.parametrize("chip", ["trn1", "trn2", "trn3"])
def test_beta2_bare_buffer_names_allocate(nkis, chip, rng):
    nki, *_ = nkis
    a = rng.standard_normal((96, 40)).astype(np.float32)
    b = rng.standard_normal((96, 40)).astype(np.float32)
    result = np.zeros_like(a)
    out = nki.jit(beta2_add, platform_target=chip)[(1,)](a, b, result)
    np.testing.assert_array_equal(out, a * b)
    np.testing.assert_array_equal(result, a * b)
    # The names exist only while a kernel is traced.
    for name in ("sbuf", "psum", "hbm", "shared_hbm", "private_hbm"):
        assert not hasattr(builtins, name)


def test_buffer_view_is_ndarray_in_that_buffer(nkis, rng):
    nki, nl, nisa, *_ = nkis
    x = rng.standard_normal((64, 32)).astype(np.float32)

    @nki.jit
    def kernel(x):
        t = nl.sbuf.view(dtype=nl.float32, shape=x.shape)
        acc = nl.psum.view(dtype=nl.float32, shape=(32, 64))
        nisa.dma_copy(dst=t, src=x)
        nisa.nc_transpose(dst=acc, data=t)
        o = nl.sbuf.view(dtype=nl.float32, shape=(32, 64))
        nisa.tensor_copy(dst=o, src=acc)
        out = nl.shared_hbm.view(dtype=nl.float32, shape=(32, 64))
        nisa.dma_copy(dst=out, src=o)
        return out

    np.testing.assert_array_equal(kernel(x), x.T)


def test_legacy_kernels_get_no_bare_buffer_names(nkis):
    *_, legacy, lnl, _ = nkis

    @legacy.jit
    def kernel(x):
        t = sbuf.view(dtype=x.dtype, shape=x.shape)  # noqa: F821
        return t

    with pytest.raises(NameError, match="sbuf"):
        kernel(np.zeros((4, 4), np.float32))
    assert not hasattr(builtins, "sbuf")


def test_reshape_adds_a_unit_dim_to_a_strided_slice(nkis, rng):
    *_, legacy, lnl, lisa = nkis
    a = rng.standard_normal((128, 256)).astype(np.float32)

    @legacy.jit
    def kernel(a):
        out = lnl.ndarray((2, 128, 128), dtype=a.dtype, buffer=lnl.shared_hbm)
        for j in range(2):
            t = lnl.ndarray((1, 128, 128), dtype=a.dtype, buffer=lnl.sbuf)
            src = a[0:128, j * 128:(j + 1) * 128].reshape((1, 128, 128))
            lisa.dma_copy(src=src, dst=t)
            lisa.dma_copy(src=t, dst=out[j].reshape((1, 128, 128)))
        return out

    got = kernel(a)
    np.testing.assert_array_equal(got[0], a[:, :128])
    np.testing.assert_array_equal(got[1], a[:, 128:])


def test_reshape_splits_a_strided_dim_and_refuses_a_non_run(nkis, rng):
    nki, nl, nisa, *_ = nkis
    a = rng.standard_normal((64, 96)).astype(np.float32)

    @nki.jit
    def split(a):
        out = nl.ndarray((64, 2, 24), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((64, 2, 24), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[:, 48:96].reshape((64, 2, 24)))
        nisa.dma_copy(dst=out, src=t)
        return out

    np.testing.assert_array_equal(split(a), a[:, 48:96].reshape(64, 2, 24))

    @nki.jit
    def merge(a):
        return a[0:32, 0:48].reshape((32 * 48,))

    with pytest.raises((NkiError, ValueError), match="not contiguous"):
        merge(a)
