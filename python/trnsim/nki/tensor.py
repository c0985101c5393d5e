"""``nki.tensor``: trace-time tensors, host data a kernel builds while it is traced and hands to
``nl.shared_constant`` (``nl.shared_constant(nki.tensor.identity(128, nl.int8),
dtype=nl.float16)``). They are numpy arrays of the dtype asked for (``TraceTimeTensor`` is
numpy's ndarray), so their values are exact and known when the kernel is traced."""

from __future__ import annotations

import numpy as np

from trnsim.nki._ctx import NkiError
from trnsim.nki._dtypes import format_name
from trnsim.numerics import numpy_dtype

TraceTimeTensor = np.ndarray


def _np(dtype, what):
    if dtype is None:
        return np.dtype(np.float32)
    try:
        dt = numpy_dtype(format_name(dtype, what))
    except ValueError as e:
        raise NkiError(str(e)) from None
    if dt is None:
        raise NkiError(f"{what}: {dtype} has no numpy dtype to hold trace-time values")
    return np.dtype(dt)


def _shape(shape, what):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0 for d in shape):
        raise NkiError(f"{what}: shape {shape!r} is not a tuple of sizes >= 0")
    return shape


def zeros(shape, dtype=None):
    """A trace-time tensor of zeros."""
    return np.zeros(_shape(shape, "nki.tensor.zeros"), _np(dtype, "nki.tensor.zeros: dtype"))


def ones(shape, dtype=None):
    """A trace-time tensor of ones."""
    return np.ones(_shape(shape, "nki.tensor.ones"), _np(dtype, "nki.tensor.ones: dtype"))


def full(shape, fill_value, dtype=None):
    """A trace-time tensor of `fill_value`."""
    return np.full(_shape(shape, "nki.tensor.full"), fill_value,
                   _np(dtype, "nki.tensor.full: dtype"))


def identity(n, dtype=None):
    """The n x n identity matrix."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise NkiError(f"nki.tensor.identity: n={n!r}, a size >= 1")
    return np.eye(int(n), dtype=_np(dtype, "nki.tensor.identity: dtype"))


def arange(*args, dtype=None):
    """numpy's arange (start, stop, step) in `dtype` (default int32)."""
    dt = _np(dtype if dtype is not None else "int32", "nki.tensor.arange: dtype")
    return np.arange(*args).astype(dt)


__all__ = ["TraceTimeTensor", "zeros", "ones", "full", "identity", "arange"]
