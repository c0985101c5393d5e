"""VectorE instructions over the engine's limit (65,536 elements per partition from SBUF) are
split into several over the free dims not reduced, as neuronx-cc splits them; a reduction
longer than the limit is reduced in parts and combined (docs/nki.md, "Lowering")."""

import numpy as np
import pytest

import trnsim.nki as cur
import trnsim.nki.isa as cur_isa
import trnsim.nki.language as cur_nl
from trnsim.nki import legacy as nki
from trnsim.nki.legacy import isa as nisa
from trnsim.nki.legacy import language as nl

P, B = 16, 25000  # [P, 3, B] int8: 75,000 elements per partition; [P, 2, B]: 50,000


# DMAs by rows of B: a DMA of a merged free dim over 65,535 elements is refused (a dim's size
# field is 16 bits), which the split of engine instructions leaves alone.
def load(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    for i in range(a.shape[1]):
        t[:, i, :] = nl.load(a[:, i, :])
    return t


def store(out, t):
    for i in range(out.shape[1]):
        nl.store(out[:, i, :], value=t[:, i, :])


def cur_copy(dst, src):
    for i in range(dst.shape[1]):
        cur_isa.dma_copy(dst=dst[:, i, :], src=src[:, i, :])


def dve(run, opcode):
    return run.figures["engines"]["dve"]["by_opcode"].get(opcode, 0)


def legacy_add(shape):
    @nki.jit
    def k(a):
        out = nl.ndarray(shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = load(a)
        store(out, nisa.tensor_tensor(t, t, op=nl.add))
        return out

    return k


def current_add(shape):
    @cur.jit
    def k(a):
        out = cur_nl.ndarray(shape, a.dtype, buffer=cur_nl.shared_hbm)
        t = cur_nl.ndarray(shape, a.dtype, buffer=cur_nl.sbuf)
        cur_copy(t, a)
        cur_isa.tensor_tensor(dst=t, data1=t, data2=t, op=cur_nl.add)
        cur_copy(out, t)
        return out

    return k


@pytest.mark.parametrize("make", [legacy_add, current_add])
@pytest.mark.parametrize("a, parts", [(3, 2), (2, 1)])
def test_elementwise_splits_along_the_outer_free_dim(rng, make, a, parts):
    """75,000 elements: parts of 2 x B and 1 x B; 50,000: one instruction, as before."""
    x = rng.integers(-60, 60, (P, a, B)).astype(np.int8)
    out, run = nki.run(make((P, a, B)), x)
    np.testing.assert_array_equal(out, x + x)
    assert dve(run, "tensor_tensor") == parts


def test_split_costs_the_sum_of_its_parts(rng):
    """The parts ([P, 2, B] and [P, 1, B]) are instructions of their own, each with its fixed
    cost: VectorE is busy as long as for the two run alone."""
    x = rng.integers(-60, 60, (P, 3, B)).astype(np.int8)

    def busy(a):
        _, run = nki.run(legacy_add((P, a, B)), x[:, :a])
        return run.figures["engines"]["dve"]["busy_ps"]

    assert busy(3) == pytest.approx(busy(2) + busy(1), rel=1e-3)


def legacy_reduce(shape, op, dtype):
    @nki.jit
    def k(a):
        out = nl.ndarray((shape[0], 1), dtype=dtype, buffer=nl.shared_hbm)
        r = nisa.tensor_reduce(op, load(a), axis=(1, 2), dtype=dtype)
        nl.store(out, value=r)
        return out

    return k


def current_reduce(shape, op, dtype):
    @cur.jit
    def k(a):
        out = cur_nl.ndarray((shape[0], 1), dtype, buffer=cur_nl.shared_hbm)
        t = cur_nl.ndarray(shape, a.dtype, buffer=cur_nl.sbuf)
        r = cur_nl.ndarray((shape[0], 1), dtype, buffer=cur_nl.sbuf)
        cur_copy(t, a)
        cur_isa.tensor_reduce(dst=r, op=op, data=t, axis=(1, 2))
        cur_isa.dma_copy(dst=out, src=r)
        return out

    return k


@pytest.mark.parametrize("make, lang", [(legacy_reduce, nl), (current_reduce, cur_nl)])
@pytest.mark.parametrize("a, instructions", [(3, 2 + 1), (2, 1)])
def test_reduction_longer_than_the_limit_is_combined_from_parts(rng, make, lang, a,
                                                                instructions):
    """Max and sum over a x B elements per partition: over the limit, two partial reductions
    and one combining them; within it, one instruction."""
    x = rng.integers(-128, 128, (P, a, B)).astype(np.int8)
    for op, ref in ((lang.maximum, x.max((1, 2))[:, None]),
                    (lang.add, x.sum((1, 2), dtype=np.float32)[:, None])):
        dtype = np.int8 if op is lang.maximum else np.float32
        out, run = nki.run(make((P, a, B), op, dtype), x)
        np.testing.assert_array_equal(out, ref.astype(dtype))
        assert dve(run, "tensor_reduce") == instructions


def test_reduction_splits_along_kept_dims(rng):
    """[P, 3, B] reduced over its last dim: parts over the kept dim, no combining step."""
    x = rng.integers(-128, 128, (P, 3, B)).astype(np.int8)

    @nki.jit
    def k(a):
        out = nl.ndarray((P, 3), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.max(load(a), axis=2))
        return out

    out, run = nki.run(k, x)
    np.testing.assert_array_equal(out, x.max(2))
    assert dve(run, "tensor_reduce") == 2


def test_other_engines_split_a_merged_dim_over_65535(rng):
    """GpSimd and ScalarE stream any count, but a free dim's size is 16 bits: a contiguous
    [P, 3, B] (one dim of 75,000 once merged) is split as on VectorE."""
    x = rng.integers(-60, 60, (P, 3, B)).astype(np.int8)

    @cur.jit
    def k(a):
        out = cur_nl.ndarray((P, 3, B), a.dtype, buffer=cur_nl.shared_hbm)
        t = cur_nl.ndarray((P, 3, B), a.dtype, buffer=cur_nl.sbuf)
        u = cur_nl.ndarray((P, 3, B), a.dtype, buffer=cur_nl.sbuf)
        cur_copy(t, a)
        cur_isa.tensor_copy(dst=u, src=t, engine=cur_isa.engine.gpsimd)
        cur_isa.activation(dst=u, op=cur_nl.copy, data=u, scale=2.0)
        cur_copy(out, u)
        return out

    out, run = nki.run(k, x)
    np.testing.assert_array_equal(out, x * 2)
    engines = run.figures["engines"]
    assert engines["pool"]["by_opcode"]["tensor_copy"] == 2
    assert engines["act"]["by_opcode"]["activation"] == 2
