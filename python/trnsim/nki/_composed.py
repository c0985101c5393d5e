"""The ``nki.language`` math functions that neither ScalarE's function table nor a VectorE ALU op
computes (cos, tan, trunc, exp2, log2, log1p, expm1, arcsin, arccos, sinh, cosh, rint, round),
each composed from ones that do, as a compiler lowers them: the instructions and their cost are
those of the composition, and so is the rounding (every step rounds to fp32; log1p and expm1 of
a tiny x lose the digits 1 + x loses, as their naive forms do)."""

from __future__ import annotations

import math


def _nl():
    from trnsim.nki import language

    return language


def _f32(f):
    """A composition: its steps in fp32, the last one into the caller's dtype."""

    def g(x, dtype=None, mask=None, **kwargs):
        if dtype is None and _is_int(x):
            dtype = _nl().float32  # as numpy: the function of an integer tile is a float
        return f(_nl(), x, dtype, mask)

    g.__name__ = f.__name__
    g.__doc__ = f.__doc__
    return g


def _is_int(x):
    import numpy as np

    dt = getattr(x, "dtype", None)
    try:
        return dt is not None and np.dtype(dt).kind in "iub"
    except TypeError:
        return False


@_f32
def cos(nl, x, dtype, mask):
    """cos(x) = sin(x + pi/2) (ScalarE sin)."""
    return nl.sin(nl.add(x, math.pi / 2, dtype=nl.float32, mask=mask), dtype=dtype, mask=mask)


@_f32
def tan(nl, x, dtype, mask):
    """tan(x) = sin(x) / cos(x) (two ScalarE sins, a VectorE divide)."""
    s = nl.sin(x, dtype=nl.float32, mask=mask)
    c = nl.sin(nl.add(x, math.pi / 2, dtype=nl.float32, mask=mask), dtype=nl.float32, mask=mask)
    return nl.divide(s, c, dtype=dtype, mask=mask)


@_f32
def trunc(nl, x, dtype, mask):
    """The integer part of x, towards zero: sign(x) * floor(|x|) (exact)."""
    f = nl.floor(nl.abs(x, dtype=nl.float32, mask=mask), dtype=nl.float32, mask=mask)
    return nl.multiply(nl.sign(x, dtype=nl.float32, mask=mask), f, dtype=dtype, mask=mask)


@_f32
def exp2(nl, x, dtype, mask):
    """2^x = exp(x ln 2)."""
    return nl.exp(nl.multiply(x, math.log(2.0), dtype=nl.float32, mask=mask), dtype=dtype,
                  mask=mask)


@_f32
def log2(nl, x, dtype, mask):
    """log2(x) = ln(x) / ln 2."""
    return nl.multiply(nl.log(x, dtype=nl.float32, mask=mask), 1.0 / math.log(2.0), dtype=dtype,
                       mask=mask)


@_f32
def log1p(nl, x, dtype, mask):
    """ln(1 + x), the sum rounded to fp32 first."""
    return nl.log(nl.add(x, 1.0, dtype=nl.float32, mask=mask), dtype=dtype, mask=mask)


@_f32
def expm1(nl, x, dtype, mask):
    """exp(x) - 1, the exponential rounded to fp32 first."""
    return nl.subtract(nl.exp(x, dtype=nl.float32, mask=mask), 1.0, dtype=dtype, mask=mask)


def _arcsin(nl, x, mask):
    """arcsin(x) = arctan(x / sqrt(1 - x^2)) in fp32 (|x| = 1: x / 0 = +-inf, arctan pi/2)."""
    one_minus = nl.subtract(1.0, nl.multiply(x, x, dtype=nl.float32, mask=mask),
                            dtype=nl.float32, mask=mask)
    q = nl.divide(x, nl.sqrt(one_minus, dtype=nl.float32, mask=mask), dtype=nl.float32,
                  mask=mask)
    return nl.arctan(q, dtype=nl.float32, mask=mask)


@_f32
def arcsin(nl, x, dtype, mask):
    """arcsin(x) = arctan(x / sqrt(1 - x^2))."""
    return nl.add(_arcsin(nl, x, mask), 0.0, dtype=dtype, mask=mask)


@_f32
def arccos(nl, x, dtype, mask):
    """arccos(x) = pi/2 - arcsin(x)."""
    return nl.subtract(math.pi / 2, _arcsin(nl, x, mask), dtype=dtype, mask=mask)


def _exps(nl, x, mask):
    return (nl.exp(x, dtype=nl.float32, mask=mask),
            nl.exp(nl.multiply(x, -1.0, dtype=nl.float32, mask=mask), dtype=nl.float32,
                   mask=mask))


@_f32
def sinh(nl, x, dtype, mask):
    """(exp(x) - exp(-x)) / 2."""
    a, b = _exps(nl, x, mask)
    return nl.multiply(nl.subtract(a, b, dtype=nl.float32, mask=mask), 0.5, dtype=dtype,
                       mask=mask)


@_f32
def cosh(nl, x, dtype, mask):
    """(exp(x) + exp(-x)) / 2."""
    a, b = _exps(nl, x, mask)
    return nl.multiply(nl.add(a, b, dtype=nl.float32, mask=mask), 0.5, dtype=dtype, mask=mask)


# fp32 adds round to nearest even, so (x + 1.5 * 2^23) - 1.5 * 2^23 is x rounded to an integer,
# ties to even, for |x| < 2^22; larger fp32 values are integers already.
_MAGIC = 1.5 * 2.0**23


@_f32
def rint(nl, x, dtype, mask):
    """x rounded to the nearest integer, ties to even (as numpy's rint): the fp32 magic-number
    add and subtract, exact; |x| >= 2^22 kept as it is."""
    r = nl.subtract(nl.add(x, _MAGIC, dtype=nl.float32, mask=mask), _MAGIC, dtype=nl.float32,
                    mask=mask)
    small = nl.less(nl.abs(x, dtype=nl.float32, mask=mask), 2.0**22, dtype=nl.float32,
                    mask=mask)
    return nl.where(small, r, x, dtype=dtype, mask=mask)


round = rint  # noqa: A001 - NKI's name; numpy's round of decimals=0 also ties to even

__all__ = ["cos", "tan", "trunc", "exp2", "log2", "log1p", "expm1", "arcsin", "arccos", "sinh",
           "cosh", "rint", "round"]
