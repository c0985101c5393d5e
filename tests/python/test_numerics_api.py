"""The Python numerics API: dtypes in and out, rounding modes, policies, errors, MX."""

import ml_dtypes
import numpy as np
import pytest

from trnsim import numerics


def test_result_dtypes_and_shapes():
    x = (np.arange(24) % 16).astype(np.float32).reshape(2, 3, 4)  # exact in every format here
    assert numerics.cast(x, "bf16").dtype == np.dtype(ml_dtypes.bfloat16)
    assert numerics.cast(x, "fp8_e4m3").dtype == np.dtype(ml_dtypes.float8_e4m3)
    assert numerics.cast(x, "float8_e4m3fn").dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    assert numerics.cast(x, "tf32").dtype == np.float32
    assert numerics.cast(x, "int8").dtype == np.int8
    assert numerics.cast(x, "bf16").shape == (2, 3, 4)
    # cFP8 with a bias ml_dtypes does not have comes back as raw codes.
    raw = numerics.cast(x, "cfp8_e4m3_b10")
    assert raw.dtype == np.uint8
    back = numerics.cast(raw, np.float32, src_dtype="cfp8_e4m3_b10")
    assert np.array_equal(back, x)  # 0..15 need 4 significant bits: exact in E4M3, bias 10


def test_tf32_keeps_ten_mantissa_bits():
    x = np.array([1 + 2**-10, 1 + 2**-11, 1 + 3 * 2**-11], dtype=np.float32)
    assert numerics.cast(x, "tf32").tolist() == [1 + 2**-10, 1.0, 1 + 2**-9]


def test_round_toward_zero():
    x = np.array([1.99, -1.99, 300.0], dtype=np.float32)
    out = numerics.cast(x, "fp8_e4m3", rounding="rz").astype(np.float32)
    assert out.tolist() == [1.875, -1.875, 240.0]  # RZ never overflows to inf


def test_overflow_policy():
    x = np.array([1e6, -1e6], dtype=np.float32)
    assert np.isinf(numerics.cast(x, "fp8_e4m3").astype(np.float32)).all()
    assert np.isnan(numerics.cast(x, "fp8_e4m3fn").astype(np.float32)).all()
    sat = numerics.cast(x, "fp8_e4m3fn", overflow="saturate").astype(np.float32)
    assert sat.tolist() == [448.0, -448.0]


def test_stochastic_rounding_is_unbiased_and_reproducible():
    x = np.full(200_000, 1.0 + 2**-9, dtype=np.float32)  # a quarter of the bf16 gap above 1
    a = numerics.cast(x, "bf16", rounding="stochastic", seed=7).astype(np.float64)
    assert set(np.unique(a)) == {1.0, 1.0 + 2**-7}
    frac_up = np.mean(a > 1.0)
    assert abs(frac_up - 0.25) < 4 * np.sqrt(0.25 * 0.75 / x.size)
    b = numerics.cast(x, "bf16", rounding="stochastic", seed=7).astype(np.float64)
    assert np.array_equal(a, b)
    c = numerics.cast(x, "bf16", rounding="stochastic", seed=8).astype(np.float64)
    assert not np.array_equal(a, c)
    # Element i depends only on (seed, stream, i): a slice gives the same bits as the whole.
    assert np.array_equal(numerics.cast(x[:1000], "bf16", rounding="stochastic", seed=7)
                          .astype(np.float64), a[:1000])


def test_fp16_accumulation_example_of_the_rounding_modes_doc():
    # HARDWARE.md s5 / Neuron rounding-modes doc: fp16 1024 + 0.5, 2048 times.
    def run(mode):
        acc = np.array([1024.0], dtype=np.float16)
        for i in range(2048):
            exact = acc.astype(np.float64) + 0.5
            acc = numerics.cast(exact, np.float16, rounding=mode, seed=0, stream=i)
        return float(acc[0])

    assert run("rne") == 1024.0
    assert abs(run("stochastic") - 2048.0) <= 64.0


def test_chip_policy_comes_from_spec():
    x = np.array([1e6], dtype=np.float32)
    out = numerics.cast(x, "fp8_e4m3", chip="trn2").astype(np.float32)
    assert np.isinf(out).all()  # Trainium casts do not saturate (HARDWARE.md s5)


def test_bad_arguments_raise_clear_errors():
    x = np.ones(4, dtype=np.float32)
    with pytest.raises(ValueError, match="fp7"):
        numerics.cast(x, "fp7")
    with pytest.raises(ValueError, match="banker"):
        numerics.cast(x, "bf16", rounding="banker")
    with pytest.raises(ValueError, match="1-byte"):
        numerics.cast(np.ones(4, np.uint8), np.float32, src_dtype="bf16")
    with pytest.raises(ValueError, match="multiple of 32"):
        numerics.quantize_mx(np.ones((2, 20), np.float32), "fp8_e4m3fn")


def test_format_info():
    info = numerics.format_info("fp8_e4m3")
    assert (info["exp_bits"], info["man_bits"], info["bias"], info["max"]) == (4, 3, 7, 240.0)
    assert numerics.format_info("float8_e4m3fn")["max"] == 448.0
    assert numerics.format_info(ml_dtypes.float8_e5m2)["max"] == 57344.0


@pytest.mark.parametrize("elem,emax", [("fp8_e4m3fn", 8), ("fp8_e5m2", 15), ("fp4_e2m1", 2)])
def test_mx_round_trip_and_scale_rules(elem, emax, rng):
    x = (rng.standard_normal((8, 64)) * 10).astype(np.float32)
    codes, scales = numerics.quantize_mx(x, elem, scale_rule="ocp")
    assert scales.shape == (8, 2)
    amax = np.abs(x.reshape(8, 2, 32)).max(axis=2)
    want = np.floor(np.log2(amax)) - emax
    assert np.array_equal(np.log2(scales.astype(np.float64)), want)
    _, tscales = numerics.quantize_mx(x, elem, scale_rule="trainium")
    assert np.array_equal(tscales.astype(np.float64), 2 * scales.astype(np.float64))
    y = numerics.dequantize_mx(codes, scales, elem)
    assert y.dtype == np.float32 and y.shape == x.shape
    # Each dequantised value is the element value times the block scale, exactly.
    elems = codes.astype(np.float32)
    assert np.array_equal(y, elems * np.repeat(scales.astype(np.float32), 32, axis=1))
