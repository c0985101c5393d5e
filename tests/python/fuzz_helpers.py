"""Shared by the Hypothesis property tests (test_fuzz_*.py): what counts as a clean outcome of
a call with random (often wrong) arguments, and strategies for the junk those arguments are
drawn from. docs/fuzzing_python.md describes the campaign."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

# trnsim's documented error types (docs/nki.md, trnsim.kernel, trnsim.run): ValueError for a
# bad value (NkiError is one), TypeError for a wrong type, NotImplementedError for an NKI API
# trnsim leaves out, RuntimeError for a simulated hardware fault.
DOCUMENTED = (ValueError, TypeError, NotImplementedError, RuntimeError)

# Messages that mean an argument slipped through unchecked: nanobind's overload listing, a
# C++ cast failure, Python's generic conversion errors.
_LEAKS = ("incompatible function arguments", "std::bad_cast", "invalid literal for int()",
          "object is not iterable", "has no attribute", "object is not subscriptable",
          "could not convert string to float", "not enough values to unpack",
          "too many values to unpack", "unsupported operand type")


def clean_error(e: BaseException) -> str | None:
    """Why ``e`` is not a clean, documented error (None if it is)."""
    if not isinstance(e, DOCUMENTED) or type(e) in (OverflowError,):
        return f"undocumented type {type(e).__name__}"
    msg = str(e)
    if not msg.strip():
        return "empty message"
    if getattr(e, "unchecked", False):
        return "the NKI front end's fallback (an argument it did not check)"
    if isinstance(e, RuntimeError) and not isinstance(e, NotImplementedError) and \
            "simulated hardware fault" not in msg:
        return "RuntimeError other than a simulated hardware fault"
    for leak in _LEAKS:
        if leak in msg:
            return f"message leaks an internal error ({leak!r})"
    return None


def outcome(fn, *args, **kwargs):
    """("ok", result) or ("error", exception); anything but a clean documented error fails the
    test with the exception as its cause."""
    try:
        return "ok", fn(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 - classifying every outcome is the point
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        why = clean_error(e)
        if why is not None:
            raise AssertionError(f"{why}: {type(e).__name__}: {e}") from e
        return "error", e


# --- junk: values of every kind a caller might pass by mistake ---

junk_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
    st.complex_numbers(max_magnitude=10), st.text(max_size=4), st.binary(max_size=3),
    st.sampled_from([np.float32(2.5), np.int64(3), np.bool_(True), np.int8(-1),
                     np.float64("nan"), Ellipsis, slice(1, 2), object(), [], {}, (), [1, 2],
                     (3, -1), {"a": 1}, np.float16, np.int64, "fp32", "bf16", "float32"]),
)


def _hashable(x):
    try:
        hash(x)
        return True
    except TypeError:
        return False


junk_keys = junk_scalars.filter(_hashable)  # dict keys


def junk_arrays():
    """Arrays of awkward kinds: empty, 0-d, bool, object, strings, complex, int64, big-endian,
    non-contiguous."""
    return st.sampled_from([
        np.zeros((0, 4), np.float32), np.array(3.0, np.float32), np.ones((2, 3), bool),
        np.array([[1, None]], dtype=object), np.array(["a", "b"]),
        np.ones((2, 2), np.complex64), np.arange(6).reshape(2, 3), np.ones((2, 2), ">f4"),
        np.arange(16, dtype=np.float32).reshape(4, 4)[:, ::2], np.ones((2, 2), np.uint64),
        np.ones((3,), ml_dtypes.bfloat16), np.full((2, 2), np.nan, np.float32),
        np.ones((2, 2), ml_dtypes.int4),
    ])


def junk():
    return st.one_of(junk_scalars, junk_arrays())


# --- indexing against a model of the rules (numpy's, except: a stop past the dim, an
# empty slice and a step < 1 are errors; an int keeps an on-chip tile's partition dim) ---

def expected_index(shape, key, on_chip):
    """The shape of view[key], or None for an error."""
    items = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in items) > 1:
        return None
    named = len(items) - (Ellipsis in items)
    if named > len(shape):
        return None
    full = []
    for k in items:
        full += [slice(None)] * (len(shape) - named) if k is Ellipsis else [k]
    full += [slice(None)] * (len(shape) - len(full))
    out = []
    for d, (n, k) in enumerate(zip(shape, full)):
        if isinstance(k, (bool, np.bool_)):
            return None
        if isinstance(k, (int, np.integer)):
            if not -n <= k < n:
                return None
            if d == 0 and on_chip:
                out.append(1)
            continue
        if not isinstance(k, slice):
            return None
        if any(v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)))
               for v in (k.start, k.stop, k.step)):
            return None
        if k.step is not None and (k.step < 1 or (d == 0 and on_chip and k.step > 1)):
            return None  # partitions are contiguous: no step on a tile's partition dim
        if k.stop is not None and k.stop > n:
            return None
        m = len(range(*k.indices(n)))
        if m == 0:
            return None
        out.append(m)
    return out


index_items = st.one_of(
    st.integers(-10, 10), st.just(Ellipsis),
    st.builds(slice, st.one_of(st.none(), st.integers(-10, 10)),
              st.one_of(st.none(), st.integers(-10, 12)),
              st.one_of(st.none(), st.integers(-2, 4))),
    st.sampled_from([None, 1.5, "a", [0], np.int64(1), True, 2**70, slice(0.5, 2)]))
