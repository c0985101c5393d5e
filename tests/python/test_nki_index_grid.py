"""Legacy nl.arange / nl.mgrid indices follow NKI's index grid: the dims of an access are the
grid axes of its ranges, not the positions they index, so permuted indices transpose."""

import numpy as np
import pytest

from trnsim.nki import NkiError
from trnsim.nki import legacy as nki
from trnsim.nki.legacy import isa as lisa
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


# --- numpy's broadcasting of index arrays (NKI's advanced indexing) ---

def test_a_grid_field_of_size_one_indexes_a_row_not_a_column(rng):
    """The nki-samples LayerNorm: with i_p, i_f, i_1 = nl.mgrid[0:128, 0:n, 0:1], g[i_1, i_f]
    of a [1, n] tensor is the [1, n] row (the index arrays broadcast to [1, n, 1]), not an
    [n, 1] column of n partitions; x[i_p, i_f] is [128, n] and g[i_1, i_f] broadcasts to it."""
    n = 256
    shapes = []

    @nki.jit
    def k(x, g):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        i_p, i_f, i_1 = nl.mgrid[0:128, 0:n, 0:1]
        row = nl.load(g.reshape((1, n))[i_1, i_f])
        t = nl.load(x[i_p, i_f])
        shapes.extend([row.shape, t.shape])
        nl.store(out[i_p, i_f], value=t * row.broadcast_to((128, n)))
        return out

    x = rng.standard_normal((128, n)).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    out, _ = nki.run(k, x, g)
    assert shapes == [(1, n), (128, n)]
    np.testing.assert_array_equal(out, x * g[None, :])


def test_fields_of_grids_of_different_ranks_broadcast_from_the_end(rng):
    """The nki-samples LayerNorm v2: i_p of a 3-axis grid and i_f of a 2-axis grid in one
    index; numpy aligns index shapes at their ends ([128, 1, 1] and [64, 1] give
    [128, 64, 1]), so i_f moves along the free dim though it is its grid's first field. A
    grid axis no range spans is left out of the tile ([128, 64, 1] -> [128, 64])."""
    shapes = []

    @nki.jit
    def k(x):
        out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)
        i_p, _, _ = nl.mgrid[0:128, 0:4, 0:1]
        i_f, _ = nl.mgrid[0:64, 0:6]
        t = nl.load(x[i_p, 64 + i_f])
        col = nl.copy(t[i_p, 3])  # an int with a grid index: one value per partition
        shapes.extend([t.shape, col.shape])
        nl.store(out[i_p, i_f], value=nl.subtract(t, col))
        return out

    x = rng.standard_normal((128, 128)).astype(np.float32)
    out, _ = nki.run(k, x)
    assert shapes == [(128, 64), (128, 1)]
    np.testing.assert_array_equal(out, x[:, 64:] - x[:, 67:68])


def test_index_arrays_that_do_not_broadcast_are_refused():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.arange(128)[:, None], nl.arange(64)[:, None]  # both on axis 0
        nl.store(out, value=nl.load(x[i_p, i_f]))
        return out

    with pytest.raises(NkiError, match="do not broadcast"):
        nki.run(k, np.zeros((128, 64), np.float32))


def test_a_1d_tensor_indexed_by_a_column_range_is_a_column(rng):
    """numpy: v[nl.arange(n)[:, None]] of a 1-dim v has the index's shape [n, 1] (the SDK's
    indirect load example loads its row numbers so, then gathers rows with them)."""
    shapes = []

    @nki.jit
    def k(data, idx):
        out = nl.ndarray((64, 32), data.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.arange(64)[:, None], nl.arange(32)[None, :]
        rows = nl.load(idx[i_p])
        shapes.append(rows.shape)
        nl.store(out[i_p, i_f], value=nl.load(data[rows, i_f]))
        return out

    data = rng.standard_normal((256, 32)).astype(np.float32)
    idx = rng.permutation(256)[:64].astype(np.int32)
    out, _ = nki.run(k, data, idx)
    assert shapes == [(64, 1)]
    np.testing.assert_array_equal(out, data[idx])


def test_an_int_and_a_row_range_give_a_row(rng):
    """x[0, i_f] with i_f = nl.arange(n)[None, :]: numpy gives the index's shape [1, n]."""
    shapes = []

    @nki.jit
    def k(x):
        out = nl.ndarray((1, 16), x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x[3, nl.arange(16)[None, :]])
        shapes.append(t.shape)
        nl.store(out, value=t)
        return out

    x = rng.standard_normal((8, 16)).astype(np.float32)
    out, _ = nki.run(k, x)
    assert shapes == [(1, 16)]
    np.testing.assert_array_equal(out, x[3:4])


@pytest.mark.parametrize("chip", CHIPS)
def test_iota_of_grid_fields_fills_the_whole_grid(chip):
    """NKI's nl.mgrid is numpy's dense grid, so nisa.iota(3 * w.y + w.z) is the grid's
    [128, 5, 3, 3] (nki-samples' select-and-scatter combines it with a tile of that shape in
    nl.where), not the [1, 3, 3] of the ranges it names; it repeats along w.p and w.x.
    Expressions whose steps are not one count of the elements (a step 0, a mixed sign, a
    scale) take the general iota (several instructions), checked against numpy."""
    shapes = []

    @nki.jit(chip=chip)
    def k(m):
        w = nl.mgrid[0:128, 0:5, 0:3, 0:3]
        exprs = [3 * w.y + w.z, 9 * w.x + 3 * w.z + w.y + 1, w.x - 2 * w.z + 7 * w.p + 4,
                 6 * w.y + 2 * w.z - w.p, w.p]
        outs = []
        for e in exprs:
            t = lisa.iota(e, dtype=nl.int32)
            shapes.append(t.shape)
            o = nl.ndarray((128, 5, 3, 3), nl.int32, buffer=nl.shared_hbm)
            nl.store(o, value=t)
            outs.append(o)
        # the kernel's use: first index of a window's maximum, 9 where there is none
        lin = lisa.iota(3 * w.y + w.z, dtype=nl.uint32)
        sel = nl.where(nl.load(m), lin, 9, dtype=nl.uint32)
        o = nl.ndarray((128, 5, 3, 3), nl.uint32, buffer=nl.shared_hbm)
        nl.store(o, value=sel)
        return outs + [o]

    m = (np.arange(128 * 45).reshape(128, 5, 3, 3) % 7 == 0).astype(np.uint8)
    *outs, sel = k(m)
    p, x, y, z = np.meshgrid(*map(np.arange, (128, 5, 3, 3)), indexing="ij")
    assert shapes == [(128, 5, 3, 3)] * 5
    for got, want in zip(outs, [3 * y + z, 9 * x + 3 * z + y + 1, x - 2 * z + 7 * p + 4,
                                6 * y + 2 * z - p, p]):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(sel, np.where(m != 0, 3 * y + z, 9))


@pytest.mark.parametrize("chip", CHIPS)
def test_a_negative_coefficient_walks_the_index_downwards(rng, chip):
    """-1 * nl.arange(n) + (n - 1) reads a dim backwards (nki-samples' bilinear
    interpolation weights its neighbours so), on chip and from HBM."""

    @nki.jit
    def k(a):
        out = nl.ndarray((128, 32), nl.float32, buffer=nl.shared_hbm)
        i_p, i_f = nl.arange(128)[:, None], nl.arange(32)[None, :]
        t = nl.load(a[i_p, -1 * i_f + 31])  # a[:, ::-1]
        u = nl.copy(t[i_p, 31 - i_f])  # back again
        nl.store(out, value=nl.add(t, u))
        return out

    a = rng.standard_normal((128, 32)).astype(np.float32)
    out, _ = nki.run(k, a, chip=chip)
    np.testing.assert_array_equal(out, a[:, ::-1] + a)
