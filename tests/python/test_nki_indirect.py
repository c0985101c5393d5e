"""Tensor-indexed (indirect) DMA, nl.load(t[idx_tile, ...]) with row indices in an SBUF tile,
is refused with a message naming it: the kernel builder has no DMA whose offsets are read
from memory at run time (it used to fail with a TypeError from inside the front end)."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.language as nl
from trnsim.nki import legacy as lnki
from trnsim.nki.legacy import language as lnl


def test_indirect_load_is_refused_by_name():
    def k(t, idx):
        out = nl.ndarray((4, 8), nl.float32, buffer=nl.shared_hbm)
        rows = nl.load(idx)
        nl.store(out, value=nl.load(t[rows, :]))
        return out

    t = np.arange(64, dtype=np.float32).reshape(8, 8)
    idx = np.array([[3], [1], [7], [0]], np.int32)
    with pytest.raises(NotImplementedError, match="indirect"):
        nki.simulate(k, t, idx)


def test_indirect_store_with_legacy_ranges_is_refused_by_name():
    @lnki.jit
    def k(t, idx, out):
        i_f = lnl.arange(8)[None, :]
        rows = lnl.load(idx)
        lnl.store(out[rows, i_f], value=lnl.load(t))

    t = np.ones((4, 8), np.float32)
    idx = np.array([[3], [1], [7], [0]], np.int32)
    with pytest.raises(NotImplementedError, match="indirect"):
        k(t, idx, np.zeros((8, 8), np.float32))
