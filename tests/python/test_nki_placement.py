"""SBUF placement by live range (src/kernel/placement.h) through the NKI front end: kernels that
failed to allocate when tiles were placed as Python created them and freed when Python dropped
them, and a kernel that needs spilling through HBM."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl

P = 128
USABLE = 180224  # trn1's usable SBUF bytes per partition


def _spill(run):
    return run.figures["spill"]


def test_loop_carried_tile_holds_one_generation(rng):
    # acc and x are 64 KiB per partition each: acc + x fit trn1's SBUF, acc + two x's do not.
    # `x = nl.load(...)` rebinds x after the new tile exists, so Python holds two generations;
    # the live-range rule gives the old one's bytes back at its last use.
    f = 16384
    a = rng.integers(-8, 8, (4 * P, f)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray((P, f), nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((P, f), nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(4):
            x = nl.load(a[i * P:(i + 1) * P, :])
            nisa.tensor_tensor(dst=acc, data1=acc, data2=x, op=nl.add)
        nl.store(out, value=acc)
        return out

    out, run = nki.run(k, a, chip="trn1")
    np.testing.assert_array_equal(out, a.reshape(4, P, f).sum(0))
    assert _spill(run)["stores"] == 0 and _spill(run)["reloads"] == 0


def test_a_name_that_outlives_its_last_use_holds_nothing(rng):
    # Two 100 KiB tiles, both names alive to the end, but never used at the same time.
    f = 25600
    a = rng.integers(-8, 8, (P, f)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray((P, f), nl.float32, buffer=nl.shared_hbm)
        t1 = nl.load(a)
        nl.store(out, value=t1)
        t2 = nl.ndarray((P, f), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t2, src=out)
        nisa.tensor_scalar(dst=t2, data=t2, op0=nl.multiply, operand0=2.0)
        nl.store(out, value=t2)
        assert t1 is not None  # t1 is still bound here
        return out

    out, run = nki.run(k, a, chip="trn1")
    np.testing.assert_array_equal(out, 2 * a)
    assert _spill(run)["stores"] == 0


def test_live_set_larger_than_sbuf_spills_through_hbm(rng):
    # Four tiles of a third of SBUF each, all live until they are summed: one goes to HBM and
    # comes back; the values are the same, the DMA traffic is in the time and the summary.
    f = USABLE // 4 // 3 - 64
    a = rng.integers(-8, 8, (P, f)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray((P, f), nl.float32, buffer=nl.shared_hbm)
        ts = []
        for i in range(4):
            t = nl.load(a)
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(i + 1))
            ts.append(t)
        for t in ts[1:]:
            nisa.tensor_tensor(dst=ts[0], data1=ts[0], data2=t, op=nl.add)
        nl.store(out, value=ts[0])
        return out

    out, run = nki.run(k, a, chip="trn1")
    np.testing.assert_array_equal(out, 10 * a)
    s = _spill(run)
    assert s["stores"] >= 1 and s["reloads"] >= 1
    assert s["bytes_spilled"] == s["stores"] * P * f * 4
    assert "SBUF spills:" in run.summary
    # The spill DMAs are transfers of the run, on top of the kernel's own 4 loads and 1 store.
    assert run.figures["dma"]["bytes"] >= 5 * P * f * 4 + s["bytes_spilled"] + s["bytes_reloaded"]


def test_a_tile_larger_than_a_partition_is_an_error_naming_it():
    f = USABLE // 4 + 16

    @nki.jit
    def k(a):
        t = nl.ndarray((P, f), nl.float32, buffer=nl.sbuf, name="huge")
        nisa.dma_copy(dst=t, src=a)

    with pytest.raises(ValueError, match=rf"huge.*{f * 4} bytes.*{USABLE}"):
        nki.run(k, np.zeros((P, f), np.float32), chip="trn1")
