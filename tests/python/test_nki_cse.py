"""Common-subexpression elimination of traced kernels (python/trnsim/nki/_cse.py): a result
computed again from unchanged operands is the earlier tile, and only then."""

import numpy as np

from trnsim.nki import legacy as nki
from trnsim.nki.legacy import isa as nisa
from trnsim.nki.legacy import language as nl


def count(run, engine, opcode):
    return run.figures["engines"].get(engine, {}).get("by_opcode", {}).get(opcode, 0)


def dmas(run):
    """DMA instructions, whichever engines triggered them."""
    return sum(f["by_opcode"].get("dma_copy", 0) for f in run.figures["engines"].values())


def test_loop_invariant_product_is_computed_once(rng):
    """The fused Mamba v2 pattern: delta * u inside a loop over states that changes neither."""

    @nki.jit
    def k(a, b, s):
        out = nl.ndarray((128, 256), dtype=np.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        y = nl.load(b)
        acc = nl.zeros((128, 256), dtype=np.float32)
        for i in nl.affine_range(8):
            xy = nisa.tensor_tensor(x, y, op=nl.multiply)
            si = nl.load(s[0:128, i:i + 1])
            acc[...] += nisa.tensor_scalar(xy, op0=nl.multiply, operand0=si)
        nl.store(out, value=acc)
        return out

    a, b = rng.standard_normal((2, 128, 256)).astype(np.float32)
    s = rng.standard_normal((128, 8)).astype(np.float32)
    out, run = nki.run(k, a, b, s, chip="trn1")
    ref = np.zeros((128, 256), np.float32)
    for i in range(8):
        ref += (a * b) * s[:, i:i + 1]
    np.testing.assert_array_equal(out, ref)
    # one product, 8 scaled copies, 8 accumulations
    assert count(run, "dve", "tensor_tensor") == 1 + 8
    assert dmas(run) == 2 + 8 + 1  # loads of a, b and the 8 columns; the store


def test_a_written_operand_or_result_is_computed_again(rng):
    @nki.jit
    def k(a, b):
        o1 = nl.ndarray((128, 64), dtype=np.float32, buffer=nl.shared_hbm)
        o2 = nl.ndarray((128, 64), dtype=np.float32, buffer=nl.shared_hbm)
        o3 = nl.ndarray((128, 64), dtype=np.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        y = nl.load(b)
        p = nisa.tensor_tensor(x, y, op=nl.add)
        p[...] = nisa.tensor_scalar(p, op0=nl.multiply, operand0=2.0)  # the result changes
        q = nisa.tensor_tensor(x, y, op=nl.add)  # not p: p holds 2(x + y) now
        nl.store(o1, value=q)
        x[...] = nisa.tensor_scalar(x, op0=nl.add, operand0=1.0)  # an operand changes
        r = nisa.tensor_tensor(x, y, op=nl.add)
        nl.store(o2, value=r)
        nl.store(o3, value=p)
        return o1, o2, o3

    a, b = rng.standard_normal((2, 128, 64)).astype(np.float32)
    o1, o2, o3 = k(a, b)
    np.testing.assert_array_equal(o1, a + b)
    np.testing.assert_array_equal(o2, (a + np.float32(1.0)) + b)
    np.testing.assert_array_equal(o3, (a + b) * np.float32(2.0))


def test_loads_are_not_merged(rng):
    """The compiler reloads what a kernel loads again (neuron-profile warns about it): two
    loads of the same bytes are two DMAs, and a load after a store reads the new bytes."""

    @nki.jit
    def k(a):
        out = nl.ndarray((128, 64), dtype=np.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        x2 = nl.load(a)
        nl.store(a, value=nisa.tensor_tensor(x, x2, op=nl.add))
        x3 = nl.load(a)
        nl.store(out, value=x3)
        return out

    a = rng.standard_normal((128, 64)).astype(np.float32)
    a0 = a.copy()
    out, run = nki.run(k, a, chip="trn2")
    np.testing.assert_array_equal(out, a0 + a0)
    assert dmas(run) == 5


def test_results_kept_for_reuse_do_not_hold_memory(rng):
    """A result the kernel dropped is kept only until the next instruction: a loop whose
    tiles fit one or two at a time still fits."""
    cols = 12288  # 48 KiB per partition per fp32 tile: 5 of them exceed any SBUF

    @nki.jit
    def k(a):
        out = nl.ndarray((128, cols), dtype=np.float32, buffer=nl.shared_hbm)
        t = None
        for i in range(6):
            t = nisa.tensor_scalar(nl.load(a), op0=nl.add, operand0=float(i))
        nl.store(out, value=t)
        return out

    a = rng.standard_normal((128, cols)).astype(np.float32)
    np.testing.assert_array_equal(k(a), a + np.float32(5.0))
