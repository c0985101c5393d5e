"""trnsim's casts against ml_dtypes, an independent implementation, for every format it has.

ml_dtypes rounds float32 -> narrow with round-to-nearest-even and overflows to inf (or NaN
where the format has no inf), which is trnsim's default policy ("inf").
"""

import ml_dtypes
import numpy as np
import pytest

from trnsim import numerics

FP8_LIKE = [
    ml_dtypes.float8_e4m3,
    ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e5m2,
    ml_dtypes.float8_e3m4,
    ml_dtypes.float8_e4m3fnuz,
    ml_dtypes.float8_e5m2fnuz,
]
NARROW = [ml_dtypes.bfloat16, np.float16, *FP8_LIKE]


def same_bits(a, b):
    """Equal as values, NaN equal to NaN, and +0 distinct from -0."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    eq = (a == b) & (np.signbit(a) == np.signbit(b))
    return both_nan | eq


def all_codes(dtype):
    bits = np.dtype(dtype).itemsize * 8
    return np.arange(2**bits, dtype=f"uint{bits}").view(dtype)


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: np.dtype(d).name)
def test_every_code_decodes_as_ml_dtypes(dtype):
    codes = all_codes(dtype)
    ours = numerics.cast(codes, np.float32)
    assert ours.dtype == np.float32
    assert same_bits(ours, codes.astype(np.float32)).all()


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: np.dtype(d).name)
def test_every_code_round_trips(dtype):
    codes = all_codes(dtype)
    back = numerics.cast(numerics.cast(codes, np.float32), dtype)
    assert back.dtype == np.dtype(dtype)
    assert same_bits(back.astype(np.float32), codes.astype(np.float32)).all()


@pytest.mark.parametrize("src", [ml_dtypes.bfloat16, np.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("dst", FP8_LIKE, ids=lambda d: np.dtype(d).name)
def test_every_16bit_code_to_fp8(src, dst):
    codes = all_codes(src)
    ours = numerics.cast(codes, dst)
    ref = codes.astype(np.float32).astype(dst)
    assert same_bits(ours.astype(np.float32), ref.astype(np.float32)).all()


@pytest.mark.parametrize("dst", NARROW, ids=lambda d: np.dtype(d).name)
def test_random_fp32_to_narrow(dst, rng):
    # Random bit patterns cover every exponent, plus values scaled into the format's range.
    bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32),
                        rng.standard_normal(200_000).astype(np.float32) * 100,
                        rng.standard_normal(200_000).astype(np.float32) * 1e-3])
    ours = numerics.cast(x, dst)
    ref = x.astype(dst)
    assert same_bits(ours.astype(np.float32), ref.astype(np.float32)).all()


def test_fp32_to_fp4_e2m1_matches_ml_dtypes_in_range(rng):
    x = (rng.standard_normal(100_000) * 3).astype(np.float32)
    x = np.clip(x, -6, 6)
    ours = numerics.cast(x, ml_dtypes.float4_e2m1fn)
    assert ours.dtype == np.dtype(ml_dtypes.float4_e2m1fn)
    assert same_bits(ours.astype(np.float32), x.astype(ml_dtypes.float4_e2m1fn).astype(np.float32)).all()


def test_e8m0_codes_decode_as_ml_dtypes():
    codes = all_codes(ml_dtypes.float8_e8m0fnu)
    assert same_bits(numerics.cast(codes, np.float64), codes.astype(np.float64)).all()


def test_fp64_to_bf16_rounds_once(rng):
    # A double just above a bf16 halfway point: rounding through float32 first would land on
    # the halfway point and tie to even (down); one rounding goes up.
    x = np.array([1.0 + 2.0**-8 + 2.0**-40], dtype=np.float64)
    assert numerics.cast(x, "bf16").astype(np.float64)[0] == 1.0 + 2.0**-7
    assert x.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)[0] == 1.0
