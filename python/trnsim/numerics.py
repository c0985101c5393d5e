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

from trnsim import _check, _core

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


def format_name(fmt, what: str | None = None) -> str:
    """Canonical trnsim name of a format given by name, numpy dtype or ml_dtypes type.
    ``what`` names the argument in the error (a TypeError / ValueError) for anything else."""
    at = f"{what}: " if what else ""
    if isinstance(fmt, str):
        try:
            return _core.format_info(fmt)["name"]
        except ValueError as e:
            raise ValueError(f"{at}{e}") from None
    # np.dtype(None) is float64: a missing dtype would silently become fp64.
    if fmt is None:
        raise TypeError(f"{at}a number format is needed (a trnsim name such as 'bf16', or a "
                        "numpy / ml_dtypes dtype), got None")
    if isinstance(fmt, bytes):  # numpy parses bytes as a dtype spec (b',': SyntaxError)
        raise TypeError(f"{at}not a number format: {fmt!r} (name it with a str)")
    try:
        dt = np.dtype(fmt)
    except (TypeError, ValueError, SyntaxError):
        raise TypeError(f"{at}not a number format: {fmt!r}") from None
    if dt not in _NUMPY_TO_FORMAT:
        if dt.byteorder == ">":
            raise ValueError(f"{at}dtype {dt} is big-endian; trnsim reads native (little-endian) "
                             "elements: convert with a.astype(a.dtype.newbyteorder('='))")
        if dt.kind in "iub":
            hint = ("trnsim's integers are int8/16/32 and uint8/16/32: convert first, e.g. "
                    "a.astype(np.int32) or a.astype(np.float32)")
        else:
            hint = "use a trnsim format or its numpy / ml_dtypes dtype"
        raise ValueError(f"{at}dtype {dt} has no trnsim format; {hint}")
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
    # `is None`, not `or`: sr_random_bits=0 or overflow="" are mistakes to report, not defaults.
    if overflow is not None:
        _check.string(overflow, "cast: overflow")
    if nan is not None:
        _check.string(nan, "cast: nan")
    if sr_random_bits is not None:
        sr_random_bits = _check.integer(sr_random_bits, "cast: sr_random_bits", 1, 32)
    if flush_subnormals is not None:
        flush_subnormals = _check.boolean(flush_subnormals, "cast: flush_subnormals")
    if chip is None:
        p = {"overflow": "inf", "nan": "propagate", "sr_random_bits": 16,
             "flush_subnormals": False}
    else:
        from trnsim import spec  # the generation's numeric policy is spec data

        p = spec.load(_check.name_or_path(chip, "cast: chip"))["values"]["numerics"]
    return (
        p["overflow"] if overflow is None else overflow,
        p["nan"] if nan is None else nan,
        p["sr_random_bits"] if sr_random_bits is None else sr_random_bits,
        p["flush_subnormals"] if flush_subnormals is None else flush_subnormals,
    )


def _values(array, what):
    """An array argument: ndarrays as they are; Python numbers and lists, whose integers numpy
    makes int64 (no trnsim format), as float64 when that is exact."""
    a = _check.array(array, what)
    if isinstance(array, np.ndarray):
        return a
    if a.dtype.kind == "b" or (a.dtype.kind in "iu" and a.dtype.itemsize > 4):
        a = _check.exact_float64(a, what)
    return a


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
    a = _values(array, "cast: array")
    src = (format_name(src_dtype, "cast: src_dtype") if src_dtype is not None
           else format_name(a.dtype, "cast: array"))
    dst = format_name(dtype, "cast: dtype")
    src_info = _core.format_info(src)
    rounding = _check.string(rounding, "cast: rounding")
    seed = _check.seed(seed, "cast: seed")
    stream = _check.seed(stream, "cast: stream")
    raw = np.ascontiguousarray(a)
    if raw.dtype.itemsize != src_info["storage_bytes"]:
        raise ValueError(
            f"cast: src_dtype: array of {raw.dtype} ({raw.dtype.itemsize}-byte elements) cannot "
            f"hold format {src} ({src_info['storage_bytes']}-byte elements)"
        )
    raw = raw.view(_container(src_info))
    ov, nn, bits, flush = _policy(chip, overflow, nan, sr_random_bits, flush_subnormals)
    out = _core.convert(raw, src, dst, rounding, seed, stream, ov, nn, bits, flush)
    target = _FORMAT_TO_NUMPY.get(dst)
    out = out.view(target) if target is not None else out
    return out.reshape(a.shape)  # a 0-d array stays 0-d (ascontiguousarray made it 1-d)


def quantize_mx(x, elem_dtype="fp8_e4m3fn", scale_rule: str = "trainium", rounding: str = "rne",
                seed: int = 0, stream: int = 0):
    """OCP MX block quantisation along the last axis (blocks of 32 elements).

    ``scale_rule="trainium"`` is the Trainium3 VectorE quantize_mx rule (scale twice the OCP
    one, so rounding never saturates); ``"ocp"`` is the OCP MX v1.0 reference rule.

    Returns ``(elements, scales)``: elements in the element format's ml_dtypes dtype (one per
    byte), scales as ml_dtypes.float8_e8m0fnu with the last axis divided by 32.
    """
    elem = format_name(elem_dtype, "quantize_mx: elem_dtype")
    a = _values(x, "quantize_mx: x")
    if a.ndim == 0:
        raise ValueError("quantize_mx: x: needs at least one axis (blocks of 32 along the last)")
    xs = np.ascontiguousarray(a.astype(np.float32))
    codes, scales = _core.quantize_mx(xs, elem, _check.string(scale_rule, "quantize_mx: scale_rule"),
                                      _check.string(rounding, "quantize_mx: rounding"),
                                      _check.seed(seed, "quantize_mx: seed"),
                                      _check.seed(stream, "quantize_mx: stream"))
    target = _FORMAT_TO_NUMPY.get(elem)
    return (codes.view(target) if target is not None else codes,
            scales.view(ml_dtypes.float8_e8m0fnu))


def dequantize_mx(elements, scales, elem_dtype=None):
    """float32 values of MX elements times their block's E8M0 scale (exact)."""
    e = _check.array(elements, "dequantize_mx: elements")
    elem = (format_name(elem_dtype, "dequantize_mx: elem_dtype") if elem_dtype is not None
            else format_name(e.dtype, "dequantize_mx: elements"))
    if e.dtype.itemsize != 1:
        raise ValueError(f"dequantize_mx: elements: expected 1-byte MX element codes, got "
                         f"{e.dtype} ({e.dtype.itemsize}-byte elements)")
    s = np.ascontiguousarray(_check.array(scales, "dequantize_mx: scales"))
    if s.dtype not in (np.dtype(ml_dtypes.float8_e8m0fnu), np.dtype(np.uint8)):
        raise ValueError(f"dequantize_mx: scales: expected E8M0 scales (ml_dtypes."
                         f"float8_e8m0fnu or their uint8 codes), got {s.dtype}")
    # Scales must line up with their blocks: the same leading dims, the last one divided by
    # 32. Comparing sizes only would take transposed scales silently.
    if e.ndim == 0:
        raise ValueError("dequantize_mx: elements: needs at least one axis")
    e = np.ascontiguousarray(e)
    want = e.shape[:-1] + (e.shape[-1] // 32,)
    if e.shape[-1] % 32 or s.shape != want:
        raise ValueError(f"dequantize_mx: elements {e.shape} need scales of shape {want} (one "
                         f"per block of 32 along the last axis), got {s.shape}")
    return _core.dequantize_mx(e.view(np.uint8), s.view(np.uint8), elem)
