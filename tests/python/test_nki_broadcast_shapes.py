"""Broadcasting operands of the NKI front end against numpy: every combination of a
broadcast partition dim and broadcast free dims, float rows through TensorE and integer rows
through DMA (bit-exact), on trn1-trn3."""

import itertools

import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.language as nl

CHIPS = ["trn1", "trn2", "trn3"]
SHAPES_2D = [(128, 512), (1, 512), (128, 1), (1, 1)]
SHAPES_3D = [(128, 4, 8), (1, 4, 8), (128, 1, 8), (128, 4, 1), (1, 1, 1), (1, 4, 1),
             (128, 1, 1), (1, 1, 8)]


def binary_kernel(fn, shape, dtype):
    def k(a, b):
        out = nl.ndarray(shape, dtype, buffer=nl.shared_hbm)
        nl.store(out, value=fn(nl.load(a), nl.load(b)))
        return out

    return k


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("shapes", [SHAPES_2D, SHAPES_3D], ids=["2d", "3d"])
def test_every_broadcast_combination_matches_numpy(rng, chip, shapes):
    """a [128, 512] and b [1, 1] used to leave the free dim unwritten (NaN) or be refused."""
    for sa, sb in itertools.product(shapes, shapes):
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        shape = np.broadcast_shapes(sa, sb)
        for fn, ref in ((nl.add, np.add), (lambda x, y: x - y, np.subtract)):
            out = nki.simulate(binary_kernel(fn, shape, np.float32), a, b, chip=chip)
            np.testing.assert_array_equal(out, ref(a, b), err_msg=f"{sa} with {sb}")


@pytest.mark.parametrize("chip", CHIPS)
def test_bf16_single_value_against_a_tile(rng, chip):
    a = rng.standard_normal((128, 512)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((1, 1)).astype(ml_dtypes.bfloat16)
    out = nki.simulate(binary_kernel(nl.multiply, (128, 512), a.dtype), a, b, chip=chip)
    ref = (a.astype(np.float32) * b.astype(np.float32)).astype(a.dtype)
    np.testing.assert_array_equal(out, ref)


def test_single_value_is_a_per_partition_scalar_operand(rng):
    """[128, 512] + [1, 1]: the value repeated over partitions only, then one tensor_scalar
    (N cycles), not a tensor_tensor against a widened tile."""
    a = rng.standard_normal((128, 512)).astype(np.float32)
    b = np.array([[2.5]], np.float32)
    out, run = nki.run(binary_kernel(nl.add, (128, 512), np.float32), a, b)
    np.testing.assert_array_equal(out, a + b)
    dve = dict(run.figures["engines"]["dve"]["by_opcode"])
    assert dve.get("tensor_scalar") == 1 and "tensor_tensor" not in dve


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                   np.uint32])
def test_integer_partition_broadcast_is_bit_exact(rng, chip, dtype):
    """TensorE takes no integers: the row goes through DMA, every bit kept."""
    info = np.iinfo(dtype)
    row = rng.integers(info.min, info.max, (1, 1, 16), endpoint=True).astype(dtype)

    def k(r):
        out = nl.ndarray((128, 4, 16), r.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.copy(nl.load(r).broadcast_to((128, 4, 16))))
        return out

    out, run = nki.run(k, row, chip=chip)
    np.testing.assert_array_equal(out, np.broadcast_to(row, (128, 4, 16)))
    assert "pe" not in run.figures["engines"] or not run.figures["engines"]["pe"]["by_opcode"]


@pytest.mark.parametrize("chip", CHIPS)
def test_integer_row_added_to_a_tile(rng, chip):
    a = rng.integers(-1000, 1000, (128, 64)).astype(np.int32)
    b = rng.integers(-1000, 1000, (1, 64)).astype(np.int32)
    out = nki.simulate(binary_kernel(nl.add, (128, 64), np.int32), a, b, chip=chip)
    np.testing.assert_array_equal(out, a + b)


@pytest.mark.parametrize("chip", CHIPS)
def test_broadcast_of_a_row_at_any_partition(rng, chip):
    """nl.broadcast_to(t[k:k+1, :], (P, F)) for a row k where no engine access may start (not
    0, 32, 64 or 96): moved to partition 0 by a DMA before the TensorE broadcast, which used to
    refuse it (a public e3nn Wigner-D kernel reads row kk of a loaded tile so)."""
    import trnsim.nki.isa as nisa

    x = rng.standard_normal((40, 24)).astype(np.float32)

    def k(x):
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        out = nl.ndarray((4, 128, 24), nl.float32, buffer=nl.shared_hbm)
        for i, row in enumerate((1, 7, 32, 39)):
            b = nl.broadcast_to(t[row:row + 1, 0:24], shape=(128, 24))
            o = nl.ndarray((128, 24), nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=o, src=b)
            nisa.dma_copy(dst=out[i], src=o)
        return out

    out = nki.simulate(k, x, chip=chip)
    for i, row in enumerate((1, 7, 32, 39)):
        np.testing.assert_array_equal(out[i], np.broadcast_to(x[row], (128, 24)))
