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


#: NKI's packed MX dtypes (four elements per packed element) and the trnsim format of their
#: elements: a packed tensor is held as its elements with an innermost dim of 4
#: (_tensor.Packed), four consecutive elements of a partition, as the MX instructions read them.
PACKED_MX = {"float8_e5m2_x4": "fp8_e5m2", "float8_e4m3fn_x4": "fp8_e4m3fn",
             "float4_e2m1fn_x4": "fp4_e2m1"}


def packed_format(dtype):
    """The element format of a packed MX dtype (nl.float8_e4m3fn_x4: fp8_e4m3fn), else None."""
    return PACKED_MX.get(dtype) if isinstance(dtype, str) else None


def format_name(dtype, what=None):
    """trnsim's format of an NKI dtype: numpy's bool (np.bool_, bool) is NKI's bool_, one byte
    holding 0 or 1 (uint8), as bool arrays given to a kernel are."""
    if packed_format(dtype):
        from trnsim.nki._ctx import unsupported

        unsupported(f"the packed MX dtype nl.{dtype}" + (f" as {what}" if what else ""),
                    "packed tensors are made by nl.ndarray / nl.zeros, t.view() or "
                    "t.ap(dtype=), and taken by indexing, reshape, nisa.dma_copy, tensor_copy, "
                    "memset, quantize_mx and nc_matmul_mx")
    if dtype is bool or dtype is np.bool_ or (isinstance(dtype, np.dtype) and dtype.kind == "b"):
        dtype = np.uint8
    return _format_name(dtype, what)
