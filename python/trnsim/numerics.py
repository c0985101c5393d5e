"""Trainium number formats and bit-exact casts.

Every conversion runs in C++ (one rounding funnel per target format); this module only maps
numpy / ml_dtypes dtypes to trnsim format names and back.

Formats (canonical names; NKI / numpy aliases such as ``"bfloat16"`` or ``"float8_e4m3"`` are
accepted too): fp64, fp32, tf32, bf16, fp16, fp8_e4m3 (Neuron, max 240), fp8_e4m3fn (OCP,
max 448), fp8_e5m2, fp8_e3m4, cfp8 / cfp8_e4m3_b<bias> / cfp8_e5m2_b<bias>, fp4_e2m1, e8m0,
int8/16/32, uint8/16/32.

Results come back as ml_dtypes / numpy arrays for the formats those libraries have, as float32
for tf32 (whose codes are float32 bit patterns), and as raw codes in unsigned integers
otherwise (for example cFP8 with a non-default bias).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from trnsim import _core

# numpy / ml_dtypes dtype  <->  trnsim canonical format name.
_NUMPY_TO_FORMAT = {
    np.dtype(np.float64): "fp64",
    np.dtype(np.float32): "fp32",
    np.dtype(np.float16): "fp16",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(ml_dtypes.float8_e4m3): "fp8_e4m3",
    np.dtype(ml_dtypes.float8_e4m3fn): "fp8_e4m3fn",
    np.dtype(ml_dtypes.float8_e5m2): "fp8_e5m2",
    np.dtype(ml_dtypes.float8_e3m4): "fp8_e3m4",
    np.dtype(ml_dtypes.float8_e4m3fnuz): "cfp8_e4m3_b8",
    np.dtype(ml_dtypes.float8_e5m2fnuz): "cfp8_e5m2_b16",
    np.dtype(ml_dtypes.float4_e2m1fn): "fp4_e2m1",
    np.dtype(ml_dtypes.float8_e8m0fnu): "e8m0",
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.uint16): "uint16",
    np.dtype(np.uint32): "uint32",
}
_FORMAT_TO_NUMPY = {v: k for k, v in _NUMPY_TO_FORMAT.items()}
_FORMAT_TO_NUMPY["tf32"] = np.dtype(np.float32)


def format_info(fmt) -> dict:
    """Layout and limits of a format: bits, exponent/mantissa bits, bias, max, min normal, ..."""
    return _core.format_info(format_name(fmt))


def format_name(fmt) -> str:
    """Canonical trnsim name of a format given by name, numpy dtype or ml_dtypes type."""
    if isinstance(fmt, str):
        return _core.format_info(fmt)["name"]
    try:
        dt = np.dtype(fmt)
    except TypeError:
        raise TypeError(f"not a number format: {fmt!r}") from None
    if dt not in _NUMPY_TO_FORMAT:
        raise ValueError(f"dtype {dt} has no trnsim format; name one of the trnsim formats instead")
    return _NUMPY_TO_FORMAT[dt]


def numpy_dtype(fmt):
    """The numpy / ml_dtypes dtype that holds a format's values, or None (raw codes)."""
    return _FORMAT_TO_NUMPY.get(format_name(fmt))


def _container(info: dict) -> np.dtype:
    """numpy type of one element's storage, as the C++ core reads and writes it."""
    b = info["storage_bytes"]
    if info["name"] in ("fp32", "tf32"):
        return np.dtype(np.float32)
    if info["name"] == "fp64":
        return np.dtype(np.float64)
    if info["kind"] == "int" and info["signed"]:
        return np.dtype(f"int{8 * b}")
    return np.dtype(f"uint{8 * b}")


def _policy(chip, overflow, nan, sr_random_bits, flush_subnormals):
    if chip is None:
        return (overflow or "inf", nan or "propagate", sr_random_bits or 16, bool(flush_subnormals))
    from trnsim import spec  # the generation's numeric policy is spec data

    p = spec.load(chip)["values"]["numerics"]
    return (
        overflow or p["overflow"],
        nan or p["nan"],
        sr_random_bits or p["sr_random_bits"],
        p["flush_subnormals"] if flush_subnormals is None else bool(flush_subnormals),
    )


def cast(
    array,
    dtype,
    rounding: str = "rne",
    seed: int = 0,
    *,
    src_dtype=None,
    stream: int = 0,
    chip: str | None = None,
    overflow: str | None = None,
    nan: str | None = None,
    sr_random_bits: int | None = None,
    flush_subnormals: bool | None = None,
):
    """Cast ``array`` to the format ``dtype``, bit-exactly.

    Args:
        array: numpy / ml_dtypes array (or anything ``np.asarray`` accepts). Raw codes of a
            format numpy lacks are given as unsigned integers with ``src_dtype`` naming it.
        dtype: target format (trnsim name, NKI alias, numpy or ml_dtypes dtype).
        rounding: ``"rne"`` (round to nearest, ties to even), ``"stochastic"`` or ``"rz"``.
        seed, stream: key of the counter-based generator for stochastic rounding; element i
            of the flattened array draws its bits from (seed, stream, i), so results do not
            depend on call order or threads.
        chip: take the overflow / NaN / random-bit policy of this generation's spec ("trn2").
        overflow: ``"inf"`` (to inf, or NaN where the format has no inf) or ``"saturate"``.
        nan: ``"propagate"`` or ``"canonical"``.
        sr_random_bits: random bits per stochastic rounding (1..32).
        flush_subnormals: flush results below the smallest normal to zero.

    Returns:
        A new array of the same shape, in the target's numpy / ml_dtypes dtype, float32 for
        tf32, or raw codes (unsigned integers) for formats without a numpy dtype.
    """
    a = np.asarray(array)
    src = format_name(src_dtype) if src_dtype is not None else format_name(a.dtype)
    dst = format_name(dtype)
    src_info, dst_info = _core.format_info(src), _core.format_info(dst)
    raw = np.ascontiguousarray(a)
    if raw.dtype.itemsize != src_info["storage_bytes"]:
        raise ValueError(
            f"array of {raw.dtype} ({raw.dtype.itemsize}-byte elements) cannot hold format "
            f"{src} ({src_info['storage_bytes']}-byte elements)"
        )
    raw = raw.view(_container(src_info))
    ov, nn, bits, flush = _policy(chip, overflow, nan, sr_random_bits, flush_subnormals)
    out = _core.convert(raw, src, dst, rounding, seed, stream, ov, nn, bits, flush)
    target = _FORMAT_TO_NUMPY.get(dst)
    return out.view(target) if target is not None else out


def quantize_mx(x, elem_dtype="fp8_e4m3fn", scale_rule: str = "trainium", rounding: str = "rne",
                seed: int = 0, stream: int = 0):
    """OCP MX block quantisation along the last axis (blocks of 32 elements).

    ``scale_rule="trainium"`` is the Trainium3 VectorE quantize_mx rule (scale twice the OCP
    one, so rounding never saturates); ``"ocp"`` is the OCP MX v1.0 reference rule.

    Returns ``(elements, scales)``: elements in the element format's ml_dtypes dtype (one per
    byte), scales as ml_dtypes.float8_e8m0fnu with the last axis divided by 32.
    """
    elem = format_name(elem_dtype)
    xs = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    codes, scales = _core.quantize_mx(xs, elem, scale_rule, rounding, seed, stream)
    target = _FORMAT_TO_NUMPY.get(elem)
    return (codes.view(target) if target is not None else codes,
            scales.view(ml_dtypes.float8_e8m0fnu))


def dequantize_mx(elements, scales, elem_dtype=None):
    """float32 values of MX elements times their block's E8M0 scale (exact)."""
    e = np.ascontiguousarray(np.asarray(elements))
    elem = format_name(elem_dtype) if elem_dtype is not None else format_name(e.dtype)
    s = np.ascontiguousarray(np.asarray(scales)).view(np.uint8)
    return _core.dequantize_mx(e.view(np.uint8), s, elem)
