"""NKI's dtypes: numpy / ml_dtypes dtypes that also carry their limits (``nl.fp32.min``, as
NKI kernels write -inf's stand-in), ``nl.finfo``, and the NKI spelling of bool.

An ``NkiDType`` is not an np.dtype (numpy does not allow subclasses); it holds one in
``.dtype``, which numpy reads wherever it takes a dtype (np.dtype(x), np.zeros(dtype=x),
a.astype(x)), and compares and hashes as that dtype, so ``t.dtype == nl.float32`` holds."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from trnsim.numerics import format_name as _format_name


class NkiDType:
    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def _info(self):
        if self.dtype.kind in "iu":
            return np.iinfo(self.dtype)
        return ml_dtypes.finfo(self.dtype)

    # The limits of numpy's finfo / iinfo: min is the most negative finite value.
    min = property(lambda self: self._info().min)
    max = property(lambda self: self._info().max)
    bits = property(lambda self: self._info().bits)
    eps = property(lambda self: ml_dtypes.finfo(self.dtype).eps)
    tiny = property(lambda self: ml_dtypes.finfo(self.dtype).tiny)

    def __getattr__(self, name):  # name, itemsize, kind, ... of the dtype
        return getattr(self.dtype, name)

    def __eq__(self, other):
        try:
            return self.dtype == np.dtype(other)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.dtype)

    def __repr__(self):
        return repr(self.dtype)

    def __str__(self):
        return str(self.dtype)


def finfo(dtype):
    """numpy's finfo of a float dtype (ml_dtypes' for bfloat16 and the fp8 types)."""
    return ml_dtypes.finfo(np.dtype(dtype))


#: NKI's packed MX dtypes (four elements per packed element): names, not numpy dtypes.
PACKED_MX = ("float8_e5m2_x4", "float8_e4m3fn_x4", "float4_e2m1fn_x4")


def format_name(dtype, what=None):
    """trnsim's format of an NKI dtype: numpy's bool (np.bool_, bool) is NKI's bool_, one byte
    holding 0 or 1 (uint8), as bool arrays given to a kernel are."""
    if isinstance(dtype, str) and dtype in PACKED_MX:
        from trnsim.nki._ctx import unsupported

        unsupported(f"the packed MX dtype nl.{dtype}",
                    "its tiles feed only nisa.nc_matmul_mx / nisa.quantize_mx, which need "
                    "KernelBuilder calls in the C++ core (the core holds MX data as fp8 / fp4 "
                    "elements, four per packed element in the innermost dim)")
    if dtype is bool or dtype is np.bool_ or (isinstance(dtype, np.dtype) and dtype.kind == "b"):
        dtype = np.uint8
    return _format_name(dtype, what)
