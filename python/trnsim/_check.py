"""Argument checks shared by the Python front ends: a user mistake becomes a TypeError or
ValueError naming the argument and what was expected, before it reaches the C++ core (whose
binding layer would otherwise answer with nanobind's "incompatible function arguments" or a
conversion error that names neither)."""

from __future__ import annotations

import numbers
import operator
import os

import numpy as np

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1


def _show(x) -> str:
    r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


def _got(x) -> str:
    return f"got {type(x).__name__} {_show(x)}"


def integer(x, what: str, lo: int | None = INT64_MIN, hi: int | None = INT64_MAX) -> int:
    """``x`` as a Python int (int or numpy integer; bool and floats are mistakes here)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Integral, np.integer)):
        raise TypeError(f"{what}: expected an integer, {_got(x)}")
    v = operator.index(x)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        need = (f">= {lo}" if hi is None else f"<= {hi}" if lo is None
                else f"in {lo}..{hi}")
        raise ValueError(f"{what}: {_show(v)} is out of range (must be {need})")
    return v


def seed(x, what: str) -> int:
    """A 64-bit unsigned key (stochastic-rounding seed or stream)."""
    return integer(x, what, 0, UINT64_MAX)


def boolean(x, what: str) -> bool:
    """True / False (numpy bools and the ints 0 and 1 too; a string such as "no" is not)."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (numbers.Integral, np.integer)) and int(x) in (0, 1):
        return bool(x)
    raise TypeError(f"{what}: expected True or False, {_got(x)}")


def string(x, what: str) -> str:
    if not isinstance(x, str):
        raise TypeError(f"{what}: expected a string, {_got(x)}")
    return x


def name_or_path(x, what: str) -> str:
    """A chip name or a what-if TOML file path (str or os.PathLike)."""
    if isinstance(x, os.PathLike):
        x = os.fspath(x)
    if not isinstance(x, str):
        raise TypeError(f"{what}: expected a chip name such as 'trn2' or a .toml path, {_got(x)}")
    return x


def is_real(x) -> bool:
    """Whether ``x`` is a real number: an int, float or bool, a numpy real scalar, or an
    ml_dtypes scalar (``ml_dtypes.bfloat16(2)``, ``ml_dtypes.finfo(bfloat16).min``: an
    np.generic but not an np.number)."""
    if isinstance(x, (numbers.Real, np.number, np.bool_)):
        return not isinstance(x, np.complexfloating)
    return isinstance(x, np.generic) and type(x).__module__.split(".")[0] == "ml_dtypes"


def number(x, what: str) -> float:
    """A real number as a float (ints, floats, numpy and ml_dtypes numbers; not complex, not
    strings)."""
    if isinstance(x, (bool, np.bool_)):
        return float(x)
    if not is_real(x):
        raise TypeError(f"{what}: expected a real number, {_got(x)}")
    try:
        return float(x)
    except OverflowError:
        raise ValueError(f"{what}: {_show(x)} is too large for a float") from None


def items(x, what: str, expected: str = "a list") -> list:
    """The elements of a list / tuple / other iterable (not a string, a dict or a 0-d array,
    which has __iter__ but cannot iterate) as a list."""
    if isinstance(x, (str, bytes, dict)) or not hasattr(x, "__iter__"):
        raise TypeError(f"{what}: expected {expected}, {_got(x)}")
    try:
        return list(x)
    except TypeError:
        raise TypeError(f"{what}: expected {expected}, {_got(x)}") from None


def sequence(x, what: str) -> list:
    return items(x, what)


def shape(x, what: str, allow_empty: bool = True) -> list[int]:
    """A shape: a sequence of integers (numpy arrays of ints too), each within int64."""
    dims = items(x, what, "a sequence of integers such as (128, 512)")
    if not dims and not allow_empty:
        raise ValueError(f"{what}: expected at least one dim, got ()")
    out = []
    for i, d in enumerate(dims):
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (numbers.Integral, np.integer)):
            raise TypeError(f"{what}: dim {i} must be an integer, {_got(d)} (shape "
                            f"{_show(x)})")
        d = operator.index(d)
        if not INT64_MIN <= d <= INT64_MAX:
            raise ValueError(f"{what}: dim {i} ({d}) does not fit a 64-bit integer")
        out.append(d)
    return out


def fits_int64(dims, item_bytes: int, what: str) -> None:
    """The C++ core counts elements and bytes in int64: a shape whose byte count does not fit
    is refused here, with the shape, rather than overflowing there."""
    n = item_bytes
    for d in dims:
        n *= max(d, 1)
    if n > INT64_MAX:
        raise ValueError(f"{what}: shape {tuple(dims)} has more bytes than fit in 64 bits")


def array(x, what: str) -> np.ndarray:
    """``np.asarray(x)`` for arrays of numbers; None, strings, objects and complex numbers
    are refused by name (numpy would make an object / str / complex array of them)."""
    if x is None:
        raise TypeError(f"{what}: expected an array of numbers, got None")
    a = np.asarray(x)
    if a.dtype.kind in "OUSMmc" or a.dtype.fields is not None:
        raise TypeError(f"{what}: expected an array of real numbers, got an array of "
                        f"{a.dtype} ({type(x).__name__})")
    return a


# --- nanobind's "incompatible function arguments": which argument, and what it needed ---

def exact_float64(a: np.ndarray, what: str) -> np.ndarray:
    """64-bit integers as float64 (trnsim has no 64-bit integer format), refusing values that
    float64 cannot hold exactly."""
    f = a.astype(np.float64)
    if a.size and np.any(f.astype(a.dtype) != a):
        raise ValueError(f"{what}: {a.dtype} values beyond 2**53 do not convert exactly; "
                         "give an array of a trnsim format (int32, float32, ...)")
    return f


def _split_params(sig: str) -> list[tuple[str, str]]:
    """(name, annotation) of each parameter of a nanobind signature 'def f(a: T, b: U = \\0)'."""
    inner = sig[sig.index("(") + 1:sig.rindex(")")]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    out = []
    for p in parts:
        if p in ("/", "*") or p.startswith("*"):
            continue
        name, _, rest = p.partition(":")
        out.append((name.strip(), rest.split(" = ")[0].strip()))
    return out


def _type_ok(ann: str, v) -> str | None:
    """What ``v`` should have been for annotation ``ann``, or None if it fits the type."""
    from trnsim import _core

    if ann == "object":  # a nanobind handle: any Python object but None
        return "given (not None)" if v is None else None
    if ann.endswith(" | None"):
        if v is None:
            return None
        ann = ann[: -len(" | None")]
    named = {"trnsim._core.View": (_core.View, "a View (an HBM tensor or an on-chip tile)"),
             "trnsim._core.Engine": (_core.Engine, "a trnsim.kernel.Engine"),
             "trnsim._core.AluOp": (_core.AluOp, "a trnsim.kernel.AluOp"),
             "trnsim._core.ActFunc": (_core.ActFunc, "a trnsim.kernel.ActFunc"),
             "trnsim._core.Chip": (_core.Chip, "a trnsim.kernel.Chip"),
             "trnsim._core.Program": (_core.Program, "a trnsim.kernel.Program"),
             "trnsim._core.Trace": (_core.Trace, "a trnsim.profile.Trace")}
    if ann in named:
        cls, desc = named[ann]
        return None if isinstance(v, cls) else desc
    if ann == "int":
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, np.integer)):
            return "an integer"
        return "an integer in the range of its C++ type"  # the type fits: the value did not
    if ann == "float":
        return None if isinstance(v, (numbers.Real, np.number)) and not isinstance(
            v, (complex, np.complexfloating)) else "a real number"
    if ann == "bool":
        return None if isinstance(v, (bool, np.bool_)) else "True or False"
    if ann == "str":
        return None if isinstance(v, str) else "a string"
    if ann.startswith("collections.abc.Sequence["):
        if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
            return f"a list ({ann.replace('collections.abc.', '')})"
        elem = ann[len("collections.abc.Sequence["):-1]
        for x in v:
            bad = _type_ok(elem, x) if elem in named or elem in ("int", "float", "str") else None
            if bad is not None:
                return f"a list of {bad.removeprefix('a ').removeprefix('an ')}s"
        return f"a list ({ann.replace('collections.abc.', '')})"
    return None  # object and anything else: accepted as is


def explain_call(func, qualname: str, args, kwargs) -> str:
    """A message naming the first argument of ``func`` (a nanobind function or method; a
    method's ``args`` start with self) that does not fit its parameter's type."""
    try:
        sig = func.__nb_signature__[0][0]
    except (AttributeError, IndexError, TypeError):
        return f"{qualname}: an argument has the wrong type"
    params = _split_params(sig)
    bound = dict(zip([p for p, _ in params], args))
    if params and params[0][0] == "self":
        params, args = params[1:], args[1:]
    bound.update(kwargs)
    for name, ann in params:
        if name in bound:
            need = _type_ok(ann, bound[name])
            if need is not None:
                return f"{qualname}: argument '{name}' must be {need}, {_got(bound[name])}"
    unknown = [k for k in kwargs if k not in dict(params)]
    if unknown:
        return f"{qualname}: no parameter named {unknown[0]!r} (has {[p for p, _ in params]})"
    if len(args) > len(params):
        return f"{qualname}: takes {len(params)} arguments, got {len(args)}"
    return f"{qualname}: an argument has the wrong type ({sig.removeprefix('def ')})"


def call(func, qualname: str, *args, **kwargs):
    """``func(*args, **kwargs)`` with nanobind's argument-type error made to name the
    argument."""
    try:
        return func(*args, **kwargs)
    except TypeError as e:
        if "incompatible function arguments" not in str(e):
            raise
        raise TypeError(explain_call(func, qualname, args, kwargs)) from None
