"""nc_find_index8 and nc_match_replace8 (VectorE, every generation), in both dialects, against
a numpy reference written here from the NKI API reference: the first position of each value
not taken by an earlier one (find_index8 takes vals from the first, match_replace8 from the
last), and the top-k loop NKI kernels build from max8 and match_replace8."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import legacy
from trnsim.nki.legacy import isa as lisa

CHIPS = ["trn1", "trn2", "trn3"]
NONE32 = 0xFFFFFFFF


def positions(data, vals, backward):
    """Per row: the position of each value, claiming distinct positions for repeated values."""
    out = np.full(vals.shape, NONE32, np.uint64)
    for r in range(data.shape[0]):
        taken = np.zeros(data.shape[1], bool)
        for j in (reversed(range(vals.shape[1])) if backward else range(vals.shape[1])):
            hit = np.flatnonzero((data[r] == vals[r, j]) & ~taken)
            if hit.size:
                taken[hit[0]] = True
                out[r, j] = hit[0]
    return out


def small_ints(rng, shape):
    """Values from a small set, so that rows and vals repeat values."""
    return rng.integers(-12, 12, shape).astype(np.float32)


@pytest.mark.parametrize("chip", CHIPS)
def test_find_index8_and_match_replace8_current_dialect(chip, rng):
    x = small_ints(rng, (128, 200))
    v = small_ints(rng, (128, 8))

    @nki.jit(chip=chip)
    def kernel(x, v):
        t, vt = nl.load(x), nl.load(v)
        idx = nl.ndarray((128, 8), nl.uint32)
        nisa.nc_find_index8(dst=idx, data=t, vals=vt)
        rep = nl.ndarray((128, 200), nl.float32)
        ridx = nl.ndarray((128, 8), nl.uint16)
        nisa.nc_match_replace8(dst=rep, data=t, vals=vt, imm=-99.0, dst_idx=ridx)
        outs = []
        for a, dt in ((idx, nl.uint32), (rep, nl.float32), (ridx, nl.uint16)):
            o = nl.ndarray(a.shape, dt, buffer=nl.shared_hbm)
            nl.store(o, a)
            outs.append(o)
        return outs

    idx, rep, ridx = kernel(x, v)
    np.testing.assert_array_equal(idx, positions(x, v, backward=False))
    back = positions(x, v, backward=True)
    np.testing.assert_array_equal(ridx, np.where(back == NONE32, 0xFFFF, back))
    want = x.copy()
    for r, j in zip(*np.nonzero(back != NONE32)):
        want[r, back[r, j]] = -99.0
    np.testing.assert_array_equal(rep, want)


def test_top16_by_max8_and_match_replace8_in_place(rng):
    """The top-k loop of NKI kernels: max8, knock the 8 found out with -inf, max8 again."""
    x = rng.standard_normal((128, 512)).astype(np.float32)

    @nki.jit(chip="trn2")
    def kernel(x):
        t = nl.load(x)
        top = nl.ndarray((128, 16), nl.float32)
        where = nl.ndarray((128, 16), nl.uint32)
        for k in range(2):
            m = nl.ndarray((128, 8), nl.float32)
            nisa.max8(dst=m, src=t)
            nisa.nc_find_index8(dst=where[:, k * 8:(k + 1) * 8], data=t, vals=m)
            nisa.nc_match_replace8(dst=t, data=t, vals=m, imm=-np.inf)
            nisa.tensor_copy(dst=top[:, k * 8:(k + 1) * 8], src=m)
        o_top = nl.ndarray((128, 16), nl.float32, buffer=nl.shared_hbm)
        o_where = nl.ndarray((128, 16), nl.uint32, buffer=nl.shared_hbm)
        nl.store(o_top, top)
        nl.store(o_where, where)
        return o_top, o_where

    top, where = kernel(x)
    order = np.argsort(-x, axis=1, kind="stable")[:, :16]
    np.testing.assert_array_equal(top, np.take_along_axis(x, order, 1))
    np.testing.assert_array_equal(where, order)


@pytest.mark.parametrize("chip", CHIPS)
def test_find_index8_and_match_replace8_legacy_dialect(chip, rng):
    x = small_ints(rng, (64, 100))
    v = small_ints(rng, (64, 8))

    @legacy.jit(chip=chip)
    def kernel(x, v, idx, rep, ridx):
        t, vt = nl.load(x), nl.load(v)
        nl.store(idx, lisa.nc_find_index8(data=t, vals=vt))
        ri = nl.ndarray((64, 8), dtype=nl.uint32)
        nl.store(rep, lisa.nc_match_replace8(data=t, vals=vt, imm=7.5, dst_idx=ri))
        nl.store(ridx, ri)

    idx, ridx = np.zeros((64, 8), np.uint32), np.zeros((64, 8), np.uint32)
    rep = np.zeros_like(x)
    kernel(x, v, idx, rep, ridx)
    np.testing.assert_array_equal(idx, positions(x, v, backward=False))
    back = positions(x, v, backward=True)
    np.testing.assert_array_equal(ridx, back)
    want = x.copy()
    for r, j in zip(*np.nonzero(back != NONE32)):
        want[r, back[r, j]] = 7.5
    np.testing.assert_array_equal(rep, want)


@nki.jit(chip="trn2")
def find8_of(x, idx_dtype, values, imm):
    t = nl.load(x)
    if imm is None:
        idx = nl.ndarray((32, 8), idx_dtype)
        nisa.nc_find_index8(dst=idx, data=t, vals=t[:, 0:values])
    else:
        nisa.nc_match_replace8(dst=t, data=t, vals=t[:, 0:values], imm=imm)
    return t


@pytest.mark.parametrize("idx_dtype, values, imm, message", [
    (nl.float32, 8, None, "find_index8.*uint16\\|uint32"),  # positions are integers
    (nl.uint32, 7, None, "find_index8"),  # 8 values per partition
    (nl.uint32, 8, "big", "imm"),
])
def test_bad_shapes_and_dtypes_are_errors_naming_the_instruction(rng, idx_dtype, values, imm,
                                                                   message):
    x = rng.standard_normal((32, 64)).astype(np.float32)
    with pytest.raises(ValueError, match=message):
        find8_of(x, idx_dtype, values, imm)
