"""The nki.language math functions trnsim composes from ScalarE functions and VectorE ops
(python/trnsim/nki/_composed.py) against numpy: rounding functions exactly (ties to even
included), the others within what their fp32 steps lose; both dialects; integer tiles give
fp32."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.language as nl
from trnsim.nki.legacy import language as legacy_nl

rng = np.random.default_rng(11)
P, F = 128, 64


def run(fn, x, lang=nl):
    @nki.jit
    def k(a):
        out = lang.ndarray(a.shape, dtype=nl.float32, buffer=lang.shared_hbm)
        lang.store(out, fn(lang.load(a)))
        return out

    return k(x)


# (name, input range, absolute tolerance, relative tolerance): the tolerance of each is what its
# composition's fp32 steps lose (cos / tan: the phase shift x + pi/2 rounded to fp32).
CASES = [
    ("cos", (-3, 3), 1e-6, 1e-6), ("tan", (-1.4, 1.4), 1e-5, 1e-5),
    ("exp2", (-8, 8), 0, 1e-6), ("log2", (0.01, 100), 1e-6, 1e-6),
    ("log1p", (-0.9, 10), 1e-6, 1e-6), ("expm1", (-3, 3), 1e-6, 1e-6),
    ("arcsin", (-0.99, 0.99), 1e-6, 1e-6), ("arccos", (-0.99, 0.99), 1e-6, 1e-6),
    ("sinh", (-5, 5), 1e-6, 1e-6), ("cosh", (-5, 5), 0, 1e-6),
]


@pytest.mark.parametrize("name, span, atol, rtol", CASES, ids=[c[0] for c in CASES])
def test_composed_function_against_numpy(name, span, atol, rtol):
    x = rng.uniform(*span, (P, F)).astype(np.float32)
    got = run(getattr(nl, name), x)
    want = getattr(np, name)(x.astype(np.float64))
    np.testing.assert_allclose(got, want, atol=atol, rtol=rtol)


@pytest.mark.parametrize("name", ["trunc", "rint", "round"])
def test_rounding_functions_are_exact(name):
    # Halves (ties: rint / round go to even), quarters, negatives, and large values past 2^22.
    x = np.concatenate([np.arange(-8, 8, 0.5), np.arange(-4, 4, 0.25)[:32],
                        [2.0**22 + 1, -(2.0**23) - 2, 0.49999997, -0.5, 1.5, 2.5]])
    x = np.resize(x, (P, F)).astype(np.float32)
    got = run(getattr(nl, name), x)
    np.testing.assert_array_equal(got, getattr(np, name)(x))


def test_legacy_dialect_and_integer_tiles():
    x = rng.integers(-3, 4, (P, F)).astype(np.int32)
    got = run(legacy_nl.cos, x, legacy_nl)
    np.testing.assert_allclose(got, np.cos(x.astype(np.float64)), atol=1e-6)
