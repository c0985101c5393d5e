"""Legacy mask= (NKI API Masking: "an execution predicate known at compile-time"): masks with
lower bounds, comparisons over several ranges and masks that are not a box, each checked
against a numpy reference; elements a mask drops are never written (docs/nki.md "Lowering")."""

import numpy as np
import pytest

from trnsim.nki import legacy
from trnsim.nki.legacy import isa as lisa
from trnsim.nki.legacy import language as nl

CHIPS = ["trn1", "trn2", "trn3"]


def _ops(run):
    """Instructions of a run by opcode, over all engines."""
    out = {}
    for e in run.figures["engines"].values():
        for k, n in e.get("by_opcode", {}).items():
            out[k] = out.get(k, 0) + n
    return out


@pytest.mark.parametrize("chip", CHIPS)
def test_a_lower_bound_starts_the_access_there(chip, rng):
    """i >= k keeps values k.. of a range: the access starts at k (a smaller instruction, as
    NKI's "smaller input tile shape"); the tile keeps its shape, and the elements before k of
    a destination are not written. Engines start at partitions 0 / 32 / 64 / 96 only, so the
    VectorE multiply's partition bound is 32; DMAs start anywhere."""
    x = rng.standard_normal((64, 48)).astype(np.float32)

    @legacy.jit(chip=chip)
    def kernel(x, out, out2):
        i_p, i_f = nl.mgrid[0:64, 0:48]
        cols = (i_f >= 5) & (i_f < 40)
        t = nl.load(x[i_p, i_f], mask=(i_p >= 8) & cols)
        u = nl.multiply(t, 2.0, mask=(i_p >= 32) & cols)
        nl.store(out[i_p, i_f], value=u, mask=(i_p >= 32) & (i_f >= 10) & (i_f < 40))
        nl.store(out2[i_p, i_f], value=t, mask=(i_p >= 8) & cols)
        return t.shape, u.shape

    out, out2 = np.full_like(x, 7), np.full_like(x, 7)
    shapes = kernel(x, out, out2)
    ref, ref2 = np.full_like(x, 7), np.full_like(x, 7)
    ref[32:, 10:40] = 2 * x[32:, 10:40]
    ref2[8:, 5:40] = x[8:, 5:40]
    assert shapes == ((64, 48), (64, 48))
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(out2, ref2)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("n", [128 * 512, 100 * 512 + 37, 37])
def test_the_tutorial_add_mask_over_two_ranges(chip, n, rng):
    """nki-samples' tutorial add masks ``512 * ix + iy < n``: whole rows 0..q-1 and row q up
    to n % 512. The loads and stores are one DMA per box (two boxes; one when the mask is a
    box, none masked when it keeps everything), so the output past n keeps its values; the
    add runs over the rows of the box holding the kept elements and is merged into its tile
    under a predicate (GpSimd memset and affine_select, one VectorE select)."""
    a = rng.standard_normal((128, 512)).astype(np.float32)
    b = rng.standard_normal((128, 512)).astype(np.float32)

    @legacy.jit(chip=chip)
    def kernel(a, b, c, c2):
        ix, iy = nl.mgrid[0:128, 0:512]
        m = 512 * ix + iy < n
        ta = nl.load(a[ix, iy], mask=m)
        tb = nl.load(b[ix, iy], mask=m)
        tc = nl.add(ta, tb, mask=m)
        nl.store(c[ix, iy], value=tc, mask=m)
        nl.store(c2, value=tc, mask=m)  # a whole tensor: the ranges are its grid axes

    c, c2 = np.full_like(a, 7), np.full_like(a, 7)
    _, run = legacy.run(kernel, a, b, c, c2, chip=chip)
    ref = np.full(a.size, 7, np.float32)
    ref[:n] = (a + b).ravel()[:n]
    np.testing.assert_array_equal(c.ravel(), ref)
    np.testing.assert_array_equal(c2.ravel(), ref)
    boxes = 2 if n % 512 and n > 512 else 1
    ops = _ops(run)
    assert ops["dma_copy"] == 4 * boxes
    assert ops.get("affine_select", 0) == ops.get("select", 0) == (boxes == 2)


@pytest.mark.parametrize("chip", CHIPS)
def test_masks_that_are_not_a_box_keep_the_destination_elsewhere(chip, rng):
    """A causal triangle (i_f <= i_p: a range compared with a range) and a band into a tile
    that holds values: the masked elements are computed, the others keep theirs."""
    x = rng.standard_normal((128, 128)).astype(np.float32)

    @legacy.jit(chip=chip)
    def kernel(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:128, 0:128]
        t = nl.load(x)
        acc = nl.full((128, 128), 5.0, nl.float32)
        acc[...] = nl.exp(t, mask=i_f <= i_p)
        acc[...] = lisa.tensor_scalar(t, np.multiply, 3.0, mask=(i_f > i_p) & (i_f < i_p + 4))
        nl.store(out, value=acc)
        return out

    out = kernel(x)
    p, f = np.arange(128)[:, None], np.arange(128)[None, :]
    ref = np.where(f <= p, np.exp(x), np.float32(5))
    band = (f > p) & (f < p + 4)
    ref[band] = 3 * x[band]
    np.testing.assert_allclose(out, ref, rtol=2e-6)
    np.testing.assert_array_equal(out[band | (f - p >= 4)], ref[band | (f - p >= 4)])


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_a_padded_max_pool_reduces_each_window_inside_the_input(chip, dtype, rng):
    """nki-samples' MaxPool2D (contributed): windows at a stride over the input moved by the
    padding, masked to the rows and columns inside it (``2 * i1 - 1 + i3 >= 0``, ``... <
    h``). The reduction runs once per box of output rows / columns whose windows keep the
    same rows / columns (3 x 3 here), each over the window rows inside the input; the
    other output elements are not written."""
    c, h, k, stride, pad = 8, 11, 3, 2, 1
    ho = (h + 2 * pad - k) // stride + 1
    x = rng.integers(-100, 100, (c, h, h)).astype(dtype)

    @legacy.jit(chip=chip)
    def kernel(x):
        out = nl.ndarray((c, ho, ho), x.dtype, buffer=nl.shared_hbm)
        i0 = nl.arange(c)[:, None, None, None, None]
        i1 = nl.arange(ho)[None, :, None, None, None]
        i2 = nl.arange(ho)[None, None, :, None, None]
        i3 = nl.arange(k)[None, None, None, :, None]
        i4 = nl.arange(k)[None, None, None, None, :]
        t = nl.load(x)
        r, q = stride * i1 - pad + i3, stride * i2 - pad + i4
        pooled = nl.max(t[i0, r, q], axis=[3, 4], mask=(r >= 0) & (q >= 0) & (r < h) & (q < h))
        nl.store(out, value=pooled)
        return out

    out, run = legacy.run(kernel, x, chip=chip)
    xp = np.pad(x.astype(np.float32), ((0, 0), (pad, pad), (pad, pad)),
                constant_values=-np.inf)
    ref = np.full((c, ho, ho), -np.inf, np.float32)
    for a in range(k):
        for b in range(k):
            ref = np.maximum(ref, xp[:, a:a + stride * ho:stride, b:b + stride * ho:stride])
    np.testing.assert_array_equal(out.astype(np.float32), ref)
    assert _ops(run)["tensor_reduce"] == 9


@pytest.mark.parametrize("chip", CHIPS)
def test_a_triangle_over_free_dims_on_legacy_dma_and_reductions(chip, rng):
    """x + y < 7 over two free ranges: a reduction along y keeps y < 7 - x (one reduction
    per run of x with the same interval, 5 here), nl.all likewise, and a legacy dma_copy
    writes only the triangle (one DMA per box)."""
    x = rng.integers(-2, 3, (32, 6, 6)).astype(np.float32)

    @legacy.jit(chip=chip)
    def kernel(x, tri):
        s = nl.ndarray((32, 6), nl.float32, buffer=nl.shared_hbm)
        a = nl.ndarray((32, 6), nl.uint8, buffer=nl.shared_hbm)
        g = nl.mgrid[0:32, 0:6, 0:6]
        m = g.x + g.y < 7
        t = nl.load(x)
        nl.store(s, value=lisa.tensor_reduce(np.add, t[g.p, g.x, g.y], axis=2, mask=m))
        nl.store(a, value=nl.all(t[g.p, g.x, g.y], axis=2, mask=m))
        lisa.dma_copy(dst=tri[g.p, g.x, g.y], src=t[g.p, g.x, g.y], mask=m)
        return s, a

    tri = np.full_like(x, 7)
    (s, a), run = legacy.run(kernel, x, tri, chip=chip)
    keep = (np.arange(6)[:, None] + np.arange(6)[None, :] < 7)[None]
    np.testing.assert_array_equal(s, np.where(keep, x, 0).sum(2))
    np.testing.assert_array_equal(a, np.where(keep, x != 0, True).all(2))
    np.testing.assert_array_equal(tri, np.where(keep, x, 7))
    assert _ops(run)["tensor_reduce"] == 10


def test_bools_and_fractions_in_a_mask(rng):
    """A trace-time bool joined with & is a mask of its own (True: nothing dropped, False:
    the instruction skipped); i < 10.5 keeps the integers below it (0..10)."""
    x = rng.standard_normal((16, 8)).astype(np.float32)

    @legacy.jit
    def kernel(x, out):
        i_p, i_f = nl.mgrid[0:16, 0:8]
        t = nl.load(x[i_p, i_f])
        nl.store(out[i_p, i_f], value=t, mask=(i_p < 10.5) & True)
        nl.store(out[i_p, i_f], value=nl.multiply(t, 2.0), mask=False & (i_p < 16))

    out = np.full_like(x, 7)
    kernel(x, out)
    ref = np.full_like(x, 7)
    ref[:11] = x[:11]
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("case, what", [
    ("matmul", "not a box"),
    ("dependent reduced ranges", "reduces"),
    ("padding on an elementwise op", "outside an operand")])
def test_masks_that_are_not_a_box_refuse_where_no_lowering_keeps_them(case, what):
    """Instructions with neither lowering (a matmul's contraction), a reduction over part of
    a range that depends on another reduced range, and an elementwise op whose box reads
    outside its operand (a box and a predicate cannot drop those reads)."""
    @legacy.jit
    def kernel(x):
        i_p, i_f = nl.mgrid[0:16, 0:16]
        t = nl.load(x)
        if case == "matmul":
            nl.matmul(t, t, transpose_x=True, mask=i_p + i_f < 20)
        elif case == "dependent reduced ranges":
            g = nl.mgrid[0:16, 0:4, 0:4]
            nl.sum(t[g.p, 4 * g.x + g.y], axis=[1, 2], mask=g.x + g.y < 4)
        else:  # windows reaching 3 columns before the row: the box starts there
            g = nl.mgrid[0:16, 0:4, 0:4]
            nl.exp(t[g.p, g.x + g.y - 3], mask=g.x + g.y - 3 >= 0)

    with pytest.raises(NotImplementedError, match=what):
        kernel(np.zeros((16, 16), np.float32))


def test_slices_past_the_end_under_a_mask_that_drops_the_overhang(rng):
    """NKI's masked tail tiles written with nl.ds: t[nl.ds(i * 128, 128)] of a tensor with 300
    rows runs past its end in the last tile, and the mask (over grid ranges that index
    nothing) keeps the rows inside; used without such a mask, the slice is an error."""
    x = rng.standard_normal((300, 40)).astype(np.float32)

    @legacy.jit
    def kernel(x):
        out = nl.ndarray((300, 40), nl.float32, buffer=nl.shared_hbm)
        ip = nl.arange(128)[:, None]
        for i in nl.affine_range(3):
            t = nl.load(x[nl.ds(i * 128, 128), :], mask=(i * 128 + ip < 300))
            nl.store(out[nl.ds(i * 128, 128), :], nl.exp(t), mask=(i * 128 + ip < 300))
        return out

    np.testing.assert_allclose(kernel(x), np.exp(x), rtol=1e-6)

    @legacy.jit
    def unmasked(x):
        t = nl.load(x[nl.ds(256, 128), :])
        return t

    with pytest.raises(ValueError, match="past the tensor's end"):
        unmasked(x)


def test_a_mask_keeps_grid_positions_of_every_operand(rng):
    """out[i_p_hbm, i_f] = t[i_p_tile, i_f] with mask=i_p_hbm < n: the two ranges differ but lie
    on the same grid axis, so the mask's positions hold for both (NKI masks the instruction's
    index grid), as nki-samples' bilinear interpolation stores its tail rows."""
    x = rng.standard_normal((22, 16)).astype(np.float32)

    @legacy.jit
    def kernel(x):
        out = nl.ndarray((22, 16), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x[nl.arange(128)[:, None], nl.arange(16)[None, :]],
                    mask=(nl.arange(128)[:, None] < 22))
        i_tile = nl.arange(128)[:, None]
        i_hbm = 0 * 128 + nl.arange(128)[:, None]
        i_f = nl.arange(16)[None, :]
        nl.store(out[i_hbm, i_f], value=t[i_tile, i_f], mask=(i_hbm < 22))
        return out

    np.testing.assert_array_equal(kernel(x), x)
