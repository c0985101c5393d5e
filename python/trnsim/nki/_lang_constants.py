"""nki.language.constants for trnsim (``from nki.language.constants import sizeinbytes``, the
same module in both dialects): the byte size of a dtype and the minimum alignments of tile
addresses that NKI kernels size their direct allocations with."""

from __future__ import annotations

from trnsim.nki._ctx import NkiError
from trnsim.nki._dtypes import NkiDType, format_name
from trnsim.numerics import format_info

# Bytes of the packed MX dtypes (four elements in one), which are names, not numpy dtypes.
_PACKED_BYTES = {"float8_e5m2_x4": 4, "float8_e4m3fn_x4": 4, "float4_e2m1fn_x4": 2}

# trnsim places tiles itself (src/kernel/placement.h) on these boundaries (kSbufAlignment,
# kPsumAlignment of src/kernel/allocator.h): the hardware's rules are not public (HARDWARE.md
# s11 item 6), so an address a kernel computes with them is one trnsim would use.
sbuf_min_align = 64
psum_min_align = 8


def sizeinbytes(dtype):
    """Bytes one element of `dtype` takes (nl.bfloat16: 2, nl.float32: 4, ...)."""
    key = dtype.dtype if isinstance(dtype, NkiDType) else dtype
    if isinstance(key, str) and key in _PACKED_BYTES:
        return _PACKED_BYTES[key]
    try:
        return int(format_info(format_name(key, "sizeinbytes: dtype"))["storage_bytes"])
    except (TypeError, ValueError) as e:
        raise NkiError(str(e)) from None


__all__ = ["sizeinbytes", "sbuf_min_align", "psum_min_align"]
