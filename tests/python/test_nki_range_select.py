"""nisa.range_select (VectorE, NC-v3 and newer) in both dialects, against a numpy reference
written here from the NKI API reference: on_true where the free index + range_start passes both
comparisons with the partition's bounds, else on_false_value (fp32 min by default); reduce_res
the row max, carried across instructions by reduce_cmd.reduce as the reference's chaining
example does."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import legacy
from trnsim.nki.legacy import isa as lisa

FP32_MIN = np.finfo(np.float32).min


def reference(x, lo, hi, start, op0=np.greater_equal, op1=np.less, fill=FP32_MIN):
    idx = (start + np.arange(x.shape[1]))[None, :].astype(np.float32)
    keep = op0(idx, lo) & op1(idx, hi)
    out = np.where(keep, x, np.float32(fill)).astype(np.float32)
    return out, out.max(1, keepdims=True)


@pytest.mark.parametrize("chip", ["trn2", "trn3"])
def test_current_dialect_tile_bounds(chip, rng):
    x = rng.standard_normal((128, 300)).astype(np.float32)
    lo = rng.integers(0, 100, (128, 1)).astype(np.float32)
    hi = lo + rng.integers(1, 150, (128, 1)).astype(np.float32)

    @nki.jit(chip=chip)
    def kernel(x, lo, hi):
        t, b0, b1 = nl.load(x), nl.load(lo), nl.load(hi)
        d = nl.ndarray(t.shape, nl.float32)
        r = nl.ndarray((128, 1), nl.float32)
        nisa.range_select(dst=d, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less,
                          bound0=b0, bound1=b1, reduce_cmd=nisa.reduce_cmd.reset_reduce,
                          reduce_res=r, reduce_op=nl.maximum, range_start=5)
        out = nl.ndarray(t.shape, nl.float32, buffer=nl.shared_hbm)
        red = nl.ndarray((128, 1), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, d)
        nl.store(red, r)
        return out, red

    out, red = kernel(x, lo, hi)
    want, want_max = reference(x, lo, hi, 5)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(red, want_max)


def test_number_bounds_fill_and_no_reduce_res(rng):
    x = rng.standard_normal((64, 2, 16)).astype(np.float32)  # free index flattened: 0..31

    @nki.jit(chip="trn2")
    def kernel(x):
        t = nl.load(x)
        d = nl.ndarray(t.shape, nl.float32)
        nisa.range_select(dst=d, on_true_tile=t, comp_op0=nl.not_equal,
                          comp_op1=nl.less_equal, bound0=3, bound1=20.0, on_false_value=-7.0)
        out = nl.ndarray(t.shape, nl.float32, buffer=nl.shared_hbm)
        nl.store(out, d)
        return out

    out = kernel(x)
    want, _ = reference(x.reshape(64, 32), 3, 20, 0, np.not_equal, np.less_equal, -7.0)
    np.testing.assert_array_equal(out.reshape(64, 32), want)


def test_legacy_dialect_chaining_accumulates_the_max(rng):
    """The API reference's chaining example: reset_reduce, then reduce without reduce_res,
    then reduce into reduce_res: the max over all three instructions."""
    x = rng.random((128, 512)).astype(np.float32)
    lo = np.zeros((128, 1), np.float32)
    hi = np.full((128, 1), 350, np.float32)

    @legacy.jit(chip="trn2")
    def kernel(x, lo, hi, sel, red):
        t, b0, b1 = nl.load(x), nl.load(lo), nl.load(hi)
        r = nl.ndarray((128, 1), dtype=np.float32, buffer=nl.sbuf)
        res = nl.ndarray(t.shape, dtype=np.float32, buffer=nl.sbuf)
        res[...] = lisa.range_select(on_true_tile=t, comp_op0=np.greater_equal,
                                     comp_op1=np.less, bound0=b0, bound1=b1,
                                     reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_op=np.max,
                                     range_start=32, on_false_value=nl.fp32.min)
        ones = nl.full(t.shape, fill_value=1, dtype=np.float32, buffer=nl.sbuf)
        for i in range(1, 3):
            t[...] = nl.add(t, ones)
            res[...] = lisa.range_select(on_true_tile=t, comp_op0=np.greater_equal,
                                         comp_op1=np.less, bound0=b0, bound1=b1,
                                         reduce_cmd=nisa.reduce_cmd.reduce,
                                         reduce_res=r if i == 2 else None, reduce_op=np.max,
                                         range_start=32 + 128 * i, on_false_value=nl.fp32.min)
        nl.store(sel, res)
        nl.store(red, r)

    sel, red = np.zeros_like(x), np.zeros((128, 1), np.float32)
    kernel(x, lo, hi, sel, red)
    m, t = np.full((128, 1), FP32_MIN, np.float32), x.copy()
    for i in range(3):
        if i:
            t = t + np.float32(1)  # fp32 adds, as the kernel's
        want, mx = reference(t, lo, hi, 32 + 128 * i)
        m = np.maximum(m, mx)
    np.testing.assert_array_equal(sel, want)
    np.testing.assert_array_equal(red, m)


def test_refusals_and_errors(rng):
    x = rng.standard_normal((8, 16)).astype(np.float32)

    def run(chip, **kw):
        @nki.jit(chip=chip)
        def kernel(x):
            t = nl.load(x)
            d = nl.ndarray(t.shape, nl.float32)
            args = dict(dst=d, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less,
                        bound0=0.0, bound1=4.0)
            args.update(kw)
            nisa.range_select(**args)
            out = nl.ndarray(t.shape, nl.float32, buffer=nl.shared_hbm)
            nl.store(out, d)
            return out
        return kernel(x)

    with pytest.raises(ValueError, match="range_select"):
        run("trn1")  # NC-v2 has no range_select
    with pytest.raises(NotImplementedError, match="range_select.*load_reduce"):
        run("trn2", reduce_cmd=nisa.reduce_cmd.load_reduce)
    with pytest.raises(nki.NkiError, match="comp_op1 must be a comparison"):
        run("trn2", comp_op1=nl.add)
    with pytest.raises(nki.NkiError, match="reduce_op must be nl.maximum"):
        run("trn2", reduce_op=nl.add)
