"""examples/nki: each NKI kernel against a numpy reference, and against its C++ twin in
examples/kernels (the same instructions): identical outputs and identical simulated time."""

import importlib.util
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
from trnsim import _core, run
from trnsim.kernel import load_chip

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "nki"


def example(name):
    spec = importlib.util.spec_from_file_location(f"nki_example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def both_ways(chip, cpp_name, cpp_args, kernel, args, inputs, outputs):
    """Runs the NKI kernel and the C++ example; returns (NKI outputs, C++ outputs, times)."""
    nki.simulate(kernel, *args, chip=chip)
    t_nki = nki.last_run().execution_ps  # the program's time; total_ps adds the launch
    prog = _core.build_example(cpp_name, load_chip(chip), cpp_args)
    r = run.run(prog, inputs)
    return {n: a for n, a in outputs.items()}, {n: r.outputs[n] for n in outputs}, \
        (t_nki, r.total_ps)


@pytest.mark.parametrize("chip", ["trn1", "trn2", "trn3"])
def test_matmul_fully_optimized(chip, rng):
    m, k, n = 256, 256, 1024
    lhsT = rng.uniform(-1, 1, (k, m)).astype(ml_dtypes.bfloat16)
    rhs = rng.uniform(-1, 1, (k, n)).astype(ml_dtypes.bfloat16)
    result = np.zeros((m, n), ml_dtypes.bfloat16)
    kern = example("matmul").matmul_fully_optimized
    mine, cpp, (t1, t2) = both_ways(
        chip, "matmul_fully_optimized", [m, k, n, 2, 2, 2], kern,
        (lhsT, rhs, result, 2, 2, 2), {"lhsT": lhsT, "rhs": rhs}, {"result": result})
    np.testing.assert_array_equal(mine["result"], cpp["result"])
    assert t1 == t2
    ref = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    np.testing.assert_allclose(result.astype(np.float32), ref, atol=0.1, rtol=0.02)


@pytest.mark.parametrize("chip", ["trn1", "trn3"])
def test_softmax(chip, rng):
    x = rng.standard_normal((256, 512)).astype(np.float32)
    y = np.zeros_like(x)
    mine, cpp, (t1, t2) = both_ways(chip, "softmax", [256, 512], example("softmax").softmax,
                                    (x, y), {"x": x}, {"y": y})
    np.testing.assert_array_equal(mine["y"], cpp["y"])
    assert t1 == t2
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("chip", ["trn1", "trn2"])
def test_layernorm(chip, rng):
    x = rng.standard_normal((256, 1024)).astype(np.float32)
    g, b = rng.standard_normal((2, 1024)).astype(np.float32)
    y = np.zeros_like(x)
    mine, cpp, (t1, t2) = both_ways(chip, "layernorm", [256, 1024],
                                    example("layernorm").layernorm, (x, g, b, y),
                                    {"x": x, "gamma": g, "beta": b}, {"y": y})
    np.testing.assert_array_equal(mine["y"], cpp["y"])
    assert t1 == t2
    ref = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * g + b
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("causal", [False, True])
def test_attention(causal, rng):
    seq, d = 512, 64
    mod = example("attention")
    qT, kT = (rng.standard_normal((d, seq)).astype(ml_dtypes.bfloat16) for _ in range(2))
    v = rng.standard_normal((seq, d)).astype(ml_dtypes.bfloat16)
    out = np.zeros((seq, d), np.float32)
    mine, cpp, (t1, t2) = both_ways("trn2", "attention", [seq, d, int(causal)], mod.attention,
                                    (qT, kT, v, out, causal), {"qT": qT, "kT": kT, "v": v},
                                    {"out": out})
    np.testing.assert_array_equal(mine["out"], cpp["out"])
    assert t1 == t2
    np.testing.assert_allclose(out, mod.reference(qT, kT, v, causal), atol=0.03)
    assert math.isfinite(float(out.sum()))
