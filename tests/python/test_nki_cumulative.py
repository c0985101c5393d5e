"""nisa.tensor_scalar_cumulative (VectorE, every generation) against a numpy reference written
here from the NKI API reference's pseudocode: r = op1(op0(x[i], imm0), r), out[i] = r, with r
starting at op1's identity (reset_reduce), at imm1 (load_reduce, a number or a [P, 1] tile) or
where the previous instruction left it (reduce); and its errors."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl

CHIPS = ["trn1", "trn2", "trn3"]
NP_OP = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
         "maximum": np.maximum, "minimum": np.minimum}
START = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}


def running(x, op0, imm0, op1, start):
    """The pseudocode in fp32, element by element."""
    out = np.empty_like(x, dtype=np.float32)
    for p in range(x.shape[0]):
        r = np.float32(start if np.isscalar(start) else start[p, 0])
        for i in range(x.shape[1]):
            r = NP_OP[op1](NP_OP[op0](np.float32(x[p, i]), np.float32(imm0)), r)
            out[p, i] = r
    return out


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("op0, imm0, op1", [
    ("multiply", 0.5, "add"),        # a scaled cumsum
    ("add", -0.25, "maximum"),       # a running max
    ("subtract", 1.0, "minimum"),
    ("add", 1.0, "multiply"),        # a running product
    ("multiply", 2.0, "subtract"),   # r = t - r, as the pseudocode orders op1's operands
])
def test_reset_reduce_starts_at_the_identity(chip, rng, op0, imm0, op1):
    x = (rng.integers(-32, 32, (128, 45)) / 16).astype(np.float32)

    @nki.jit(chip=chip)
    def kernel(x):
        t = nl.load(x)
        d = nl.ndarray((128, 45), nl.float32)
        nisa.tensor_scalar_cumulative(dst=d, src=t, op0=getattr(nl, op0), op1=getattr(nl, op1),
                                      imm0=imm0)
        out = nl.ndarray((128, 45), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, d)
        return out

    np.testing.assert_array_equal(kernel(x), running(x, op0, imm0, op1, START[op1]))


@pytest.mark.parametrize("chip", CHIPS)
def test_load_reduce_and_reduce_continue_a_row(chip, rng):
    x = rng.standard_normal((64, 40)).astype(np.float32)
    init = rng.standard_normal((64, 1)).astype(np.float32)

    @nki.jit(chip=chip)
    def kernel(x, init):
        t, s = nl.load(x), nl.load(init)
        d = nl.ndarray((64, 40), nl.float32)
        nisa.tensor_scalar_cumulative(dst=d[:, 0:25], src=t[:, 0:25], op0=nl.multiply,
                                      op1=nl.add, imm0=1.0, imm1=s,
                                      reduce_cmd=nisa.reduce_cmd.load_reduce)
        nisa.tensor_scalar_cumulative(dst=d[:, 25:40], src=t[:, 25:40], op0=nl.multiply,
                                      op1=nl.add, imm0=1.0,
                                      reduce_cmd=nisa.reduce_cmd.reduce)
        out = nl.ndarray((64, 40), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, d)
        return out

    np.testing.assert_array_equal(kernel(x, init), running(x, "multiply", 1.0, "add", init))


@nki.jit(chip="trn2")
def cumulative_of(x, op1, reduce_cmd, imm1):
    t = nl.load(x)
    nisa.tensor_scalar_cumulative(dst=t, src=t, op0=nl.add, op1=op1, imm0=0.0, imm1=imm1,
                                  reduce_cmd=reduce_cmd)
    return t


@pytest.mark.parametrize("op1, reduce_cmd, imm1, message", [
    (nl.divide, None, None, "op1"),
    (nl.add, nisa.reduce_cmd.load_reduce, None, "imm1"),
    (nl.add, nisa.reduce_cmd.idle, None, "reduce_cmd"),
])
def test_errors_name_the_argument(rng, op1, reduce_cmd, imm1, message):
    x = rng.standard_normal((32, 16)).astype(np.float32)
    with pytest.raises(ValueError, match=message):
        cumulative_of(x, op1, reduce_cmd, imm1)
