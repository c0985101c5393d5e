"""Property tests of trnsim.numerics with Hypothesis: casts of arbitrary arrays to every format
never fail and round-trip where they should; stochastic rounding picks a neighbour and is
reproducible; MX quantisation keeps shapes and values within its block's precision; random
wrong arguments give a clean error (fuzz_helpers.outcome). Profiles: conftest.py."""

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fuzz_helpers import junk, outcome
from trnsim import numerics

FORMATS = ["fp64", "fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e4m3fn", "fp8_e5m2",
           "fp8_e3m4", "cfp8", "cfp8_e4m3_b3", "cfp8_e5m2_b20", "fp4_e2m1", "e8m0", "int8",
           "int16", "int32", "uint8", "uint16", "uint32"]
SOURCES = [np.float64, np.float32, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
           ml_dtypes.float8_e5m2, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32]

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=7)


def arrays(dtypes=SOURCES):
    """Arrays of any of the source dtypes, any values (NaN, inf, subnormals, extremes)."""
    return st.sampled_from(dtypes).flatmap(
        lambda dt: hnp.arrays(np.dtype(dt), shapes, elements=_elements(np.dtype(dt))))


def _elements(dt):
    if dt.kind in "iu":
        return None
    if dt == np.float64 or dt == np.float32 or dt == np.float16:
        return st.floats(width=dt.itemsize * 8, allow_nan=True, allow_infinity=True)
    # ml_dtypes: any bit pattern of the format (every code is a value, NaN or inf).
    n = dt.itemsize
    return st.integers(0, 2**(8 * n) - 1).map(
        lambda b: np.frombuffer(b.to_bytes(n, "little"), dt)[0])


def same_values(fmt, a, b):
    """Equal values (NaN == NaN: its payload may change through fp64; zeros by sign too)."""
    src = fmt if numerics.numpy_dtype(fmt) is None else None
    x = numerics.cast(a, "fp64", src_dtype=src)
    y = numerics.cast(b, "fp64", src_dtype=src)
    return np.array_equal(x, y, equal_nan=True) and np.array_equal(np.signbit(x), np.signbit(y))


@given(x=arrays(), fmt=st.sampled_from(FORMATS),
       rounding=st.sampled_from(["rne", "rz", "stochastic"]), seed=st.integers(0, 2**64 - 1),
       overflow=st.sampled_from([None, "inf", "saturate"]))
def test_cast_to_every_format_never_fails(x, fmt, rounding, seed, overflow):
    y = numerics.cast(x, fmt, rounding=rounding, seed=seed, overflow=overflow)
    assert y.shape == x.shape
    target = numerics.numpy_dtype(fmt)
    info = numerics.format_info(fmt)
    if target is not None:
        assert y.dtype == target
    else:
        assert y.dtype.kind == "u" and y.dtype.itemsize == info["storage_bytes"]


@given(x=arrays(), fmt=st.sampled_from(FORMATS))
def test_cast_round_trips_through_fp64(x, fmt):
    """Every value of every format is exact in fp64: format -> fp64 -> format is the identity."""
    y = numerics.cast(x, fmt)
    src = fmt if numerics.numpy_dtype(fmt) is None else None
    back = numerics.cast(numerics.cast(y, "fp64", src_dtype=src), fmt)
    assert same_values(fmt, back, y)


@given(x=arrays([np.float32, np.float64]),
       fmt=st.sampled_from(["bf16", "fp16", "fp8_e4m3", "fp8_e4m3fn", "fp8_e5m2", "fp4_e2m1"]),
       seed=st.integers(0, 2**64 - 1), stream=st.integers(0, 2**64 - 1))
def test_stochastic_rounding_picks_a_neighbour_reproducibly(x, fmt, seed, stream):
    x = x.reshape(-1)
    info = numerics.format_info(fmt)
    # Finite values inside the format's range: there the two neighbours are well defined.
    x = x[np.isfinite(x) & (np.abs(x.astype(np.float64)) <= info["max"])]
    sr = numerics.cast(x, fmt, rounding="stochastic", seed=seed, stream=stream)
    rz = numerics.cast(x, fmt, rounding="rz").astype(np.float64)
    s = sr.astype(np.float64)
    x64 = x.astype(np.float64)
    assert np.all((s == rz) | (np.abs(s) >= np.abs(x64)))
    assert np.all(np.sign(s) * np.sign(x64) >= 0)
    again = numerics.cast(x, fmt, rounding="stochastic", seed=seed, stream=stream)
    assert same_values(fmt, again, sr)
    n = len(x) // 2  # element i draws from (seed, stream, i): a prefix gives the same bits
    assert same_values(fmt, numerics.cast(x[:n], fmt, rounding="stochastic", seed=seed,
                                          stream=stream), sr[:n])


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(x=hnp.arrays(np.float32, st.tuples(st.integers(1, 3), st.integers(1, 3).map(
           lambda b: 32 * b)), elements=st.floats(-1e4, 1e4, width=32)),
       elem=st.sampled_from(["fp8_e4m3fn", "fp8_e5m2", "fp4_e2m1"]),
       rule=st.sampled_from(["trainium", "ocp"]))
def test_mx_round_trip_within_block_precision(x, elem, rule):
    codes, scales = numerics.quantize_mx(x, elem, scale_rule=rule)
    assert codes.shape == x.shape and scales.shape == (x.shape[0], x.shape[1] // 32)
    y = numerics.dequantize_mx(codes, scales, elem)
    assert y.shape == x.shape and y.dtype == np.float32
    blocks = np.abs(x.reshape(x.shape[0], -1, 32)).max(axis=2, keepdims=True)
    err = np.abs(y - x).reshape(x.shape[0], -1, 32)
    rel = {"fp8_e4m3fn": 2**-3, "fp8_e5m2": 2**-2, "fp4_e2m1": 2**-1}[elem]
    assert np.all(err <= rel * blocks + 1e-30)


# --- wrong arguments: every outcome a result or a clean error ---

@given(array=st.one_of(junk(), arrays()), dtype=st.one_of(st.sampled_from(FORMATS), junk()),
       rounding=st.one_of(st.just("rne"), junk()), seed=st.one_of(st.just(0), junk()),
       kwargs=st.dictionaries(st.sampled_from(["stream", "chip", "overflow", "nan",
                                               "sr_random_bits", "flush_subnormals",
                                               "src_dtype"]), junk(), max_size=2))
def test_cast_with_wrong_arguments_fails_cleanly(array, dtype, rounding, seed, kwargs):
    outcome(numerics.cast, array, dtype, rounding, seed, **kwargs)


@given(x=st.one_of(junk(), arrays()), elem=st.one_of(st.just("fp8_e4m3fn"), junk()),
       rule=st.one_of(st.just("ocp"), junk()), rounding=st.one_of(st.just("rne"), junk()),
       seed=st.one_of(st.just(1), junk()))
def test_quantize_mx_with_wrong_arguments_fails_cleanly(x, elem, rule, rounding, seed):
    kind, res = outcome(numerics.quantize_mx, x, elem, rule, rounding, seed)
    if kind == "ok":
        codes, scales = res
        assert codes.shape == np.shape(x)


@given(e=st.one_of(junk(), arrays()), s=st.one_of(junk(), arrays()),
       elem=st.one_of(st.none(), st.just("fp8_e4m3fn"), junk()))
def test_dequantize_mx_with_wrong_arguments_fails_cleanly(e, s, elem):
    kind, res = outcome(numerics.dequantize_mx, e, s, elem)
    if kind == "ok":
        assert res.shape == np.shape(e)


@given(fmt=st.one_of(st.sampled_from(FORMATS), junk()))
def test_format_queries_fail_cleanly(fmt):
    for f in (numerics.format_name, numerics.format_info, numerics.numpy_dtype):
        outcome(f, fmt)
