"""Legacy nl.arange / nl.mgrid indices follow NKI's index grid: the dims of an access are the
grid axes of its ranges, not the positions they index, so permuted indices transpose."""

import numpy as np
import pytest

from trnsim.nki import NkiError
from trnsim.nki import legacy as nki
from trnsim.nki.legacy import language as nl

CHIPS = ["trn1", "trn2", "trn3"]


@pytest.mark.parametrize("chip", CHIPS)
def test_store_through_permuted_aranges_writes_the_transpose(rng, chip):
    """out[i_f, i_p] = t used to be stored as if it were out[i_p, i_f] (the identity)."""

    @nki.jit
    def k(a):
        out = nl.ndarray((64, 128), nl.float32, buffer=nl.shared_hbm)
        i_p, i_f = nl.arange(128)[:, None], nl.arange(64)[None, :]
        t = nl.load(a[i_p, i_f])
        nl.store(out[i_f, i_p], value=t)
        return out

    a = rng.standard_normal((128, 64)).astype(np.float32)
    out, _ = nki.run(k, a, chip=chip)
    np.testing.assert_array_equal(out, a.T)


@pytest.mark.parametrize("chip", CHIPS)
def test_load_through_permuted_aranges_reads_the_transpose(rng, chip):
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 32), nl.float32, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:128, 0:32]
        t = nl.load(a[i_f, i_p])  # a is [32, 128]: the tile is a.T
        nl.store(out[i_p, i_f], value=t)
        return out

    a = rng.standard_normal((32, 128)).astype(np.float32)
    out, _ = nki.run(k, a, chip=chip)
    np.testing.assert_array_equal(out, a.T)


def test_free_dim_transpose_within_one_index(rng):
    """The transpose2d tutorial's pattern: [P, F1 * F2] rows with F1 x F2 transposed in each
    partition by an index that puts the two grid axes in the other order."""
    f1, f2 = 4, 8

    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None, None]
        i_a = nl.arange(f1)[None, :, None]
        i_b = nl.arange(f2)[None, None, :]
        src = nl.load(x)
        dst = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        dst[i_p, i_b * f1 + i_a] = nl.copy(src[i_p, i_a * f2 + i_b])
        nl.store(out, value=dst)
        return out

    x = rng.standard_normal((128, f1 * f2)).astype(np.float32)
    ref = x.reshape(128, f1, f2).transpose(0, 2, 1).reshape(128, f1 * f2)
    np.testing.assert_array_equal(nki.simulate_kernel(k, x), ref)


def test_on_chip_partition_index_on_a_later_axis_is_refused():
    @nki.jit
    def k(a):
        out = nl.ndarray((64, 64), nl.float32, buffer=nl.shared_hbm)
        i_p, i_f = nl.arange(64)[:, None], nl.arange(64)[None, :]
        t = nl.load(a)
        nl.store(out, value=nl.copy(t[i_f, i_p]))
        return out

    with pytest.raises(NkiError, match="transpose is an instruction"):
        nki.simulate_kernel(k, np.zeros((64, 64), np.float32))
