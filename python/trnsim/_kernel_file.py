"""An NKI kernel file as the command line sees it (`trnsim run k.py`, `trnsim check k.py`):
load the file, pick its kernel, and turn the command's input arguments into the kernel's
arguments. Every user mistake is a UsageError naming the parameter or the file and line; the
commands themselves are in _kernel_cli.py."""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import os
import re
import sys
import types

import numpy as np

from trnsim.numerics import format_name, numpy_dtype

#: `128x512:bfloat16`, `128:int32`, `4x128x512` (float32): random inputs of that shape.
_SHAPE = re.compile(r"^(\d+(?:x\d+)*)(?::(\w+))?$")
_counter = itertools.count()


class UsageError(Exception):
    """A mistake in the command line or the kernel file: one line, exit code 2."""


def _shown(path) -> str:
    """A path as the user would write it: relative to the working directory when under it."""
    path = os.path.abspath(path)
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def location(exc) -> str | None:
    """`file.py:LINE` of the innermost frame of the user's own code (not trnsim's, numpy's or
    Python's) that `exc` passed through, or None when it never reached user code."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return f"{_shown(exc.filename)}:{exc.lineno}"
    here = None
    for frame, line in _frames(exc):
        name = frame.f_globals.get("__name__", "")
        file = frame.f_code.co_filename
        if name.split(".")[0] in ("trnsim", "numpy", "ml_dtypes", "importlib", "runpy") or \
                file.startswith("<") or file.startswith(os.path.dirname(os.__file__)):
            continue
        here = f"{_shown(file)}:{line}"
    return here


def _frames(exc):
    tb = exc.__traceback__
    while tb is not None:
        yield tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next


def load(path):
    """The kernel file run as a module (not as __main__: its `if __name__ == "__main__":`
    block, which usually launches the kernel itself, stays out), with both NKI dialects'
    imports reaching trnsim and the file's directory importable, as `python3 file.py` has."""
    import trnsim.nki

    if not os.path.isfile(path):
        raise UsageError(f"{path}: " + ("is a directory; expected an NKI kernel file"
                                        if os.path.isdir(path) else "no such file"))
    trnsim.nki.install_alias()
    name = f"_nki_kernel_file_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the file's own error, shown where it happened
        where = location(e) or _shown(path)
        raise UsageError(f"{where}: {type(e).__name__}: {_message(e)}") from e
    finally:
        sys.path.remove(folder)
    return module


def _message(e) -> str:
    return e.msg if isinstance(e, SyntaxError) else str(e)


def kernels(module):
    """{name: Kernel} of the @nki.jit (or baremetal, benchmark, ...) kernels the file
    defines; kernels it only imports are left out (they are someone else's)."""
    from trnsim.nki import Kernel

    found = {}
    for name, obj in vars(module).items():
        if isinstance(obj, Kernel) and getattr(obj.fn, "__module__", None) == module.__name__ \
                and obj not in found.values():
            found[name] = obj
    return found


def pick(module, path, wanted):
    """The kernel to run: `wanted` (any kernel or function of the file by name), else the
    file's only kernel. Plain functions run as kernels of the dialect the file imports."""
    from trnsim.nki import Kernel

    found = kernels(module)
    names = ", ".join(found) or "none"
    if wanted is None:
        if len(found) == 1:
            return next(iter(found.items()))
        if not found:
            raise UsageError(f"{path}: defines no @nki.jit kernel; name a function with "
                             "--kernel NAME")
        raise UsageError(f"{path}: defines {len(found)} kernels ({names}); pick one with "
                         "--kernel NAME")
    obj = getattr(module, wanted, None)
    if isinstance(obj, Kernel):
        return wanted, obj
    if isinstance(obj, types.FunctionType):
        return wanted, Kernel(obj, _dialect(module))
    raise UsageError(f"{path}: --kernel {wanted}: " + (
        f"is a {type(obj).__name__}, not a kernel" if obj is not None else "no such kernel") +
        f" (the file's kernels: {names})")


def _dialect(module) -> str:
    legacy = any(isinstance(v, types.ModuleType) and v.__name__.startswith("trnsim.nki.legacy")
                 for v in vars(module).values())
    return "legacy" if legacy else "nki"


class Inputs:
    """The kernel's arguments from the command line: `NAME=VALUE` or positional VALUEs in
    parameter order, and arrays of an .npz by parameter name (--inputs). `sources` says where
    each came from, for the manifest."""

    def __init__(self, kernel, args, npz=None, seed=0, values=True, ranks=0):
        self.kernel, self.args, self.npz = kernel, args, npz
        self.ranks = ranks  # --ranks: `ranks` names every rank as one ReplicaGroup list
        self.fn = kernel.fn
        self.sig = inspect.signature(self.fn)
        self.params = self.sig.parameters
        self.seed = seed
        self.values = values  # False: random inputs are zeros (only their shapes are used)
        self.given = {}  # parameter -> (text, value)
        self.extra = []  # positional values beyond the named parameters (*args)
        if npz:
            for key, a in self._npz_all(npz).items():
                self.given[key] = (f"{npz}:{key}", a)
        self._parse(args)
        self._check_missing()

    def _names(self) -> str:
        return ", ".join(p for p, v in self.params.items()
                         if v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)) or "nothing"

    def _parse(self, args):
        positional = [p for p, v in self.params.items()
                      if v.kind in (v.POSITIONAL_ONLY, v.POSITIONAL_OR_KEYWORD)]
        var_pos = any(v.kind == v.VAR_POSITIONAL for v in self.params.values())
        var_kw = any(v.kind == v.VAR_KEYWORD for v in self.params.values())
        named = False
        for i, a in enumerate(args):
            name, eq, text = a.partition("=")
            if eq and name.isidentifier():
                named = True
                p = self.params.get(name)
                if (p is None and not var_kw) or (p is not None and p.kind in (
                        p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY)):
                    raise UsageError(f"{name}: no such parameter; {self.fn.__name__} takes "
                                     f"{self._names()}")
                self.given[name] = (text, self._value(name, text))
                continue
            if named:
                raise UsageError(f"{a}: a positional input after NAME=VALUE ones (write "
                                 "NAME=VALUE for every input after the first named one)")
            if i < len(positional):
                self.given[positional[i]] = (a, self._value(positional[i], a))
            elif var_pos:
                self.extra.append((a, self._value(f"*args[{len(self.extra)}]", a)))
            else:
                raise UsageError(f"{a}: {self.fn.__name__} takes {len(positional)} "
                                 f"input(s) ({self._names()}), this is one more")

    def _check_missing(self):
        if self.ranks:  # a ReplicaGroup parameter left out: every rank, one list
            for p, v in self.params.items():
                if p not in self.given and "ReplicaGroup" in str(v.annotation):
                    self.given[p] = ("ranks", self._all_ranks())
        missing = [p for p, v in self.params.items() if p not in self.given and
                   v.default is v.empty and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)]
        if missing:
            groups = [p for p in missing if "ReplicaGroup" in str(self.params[p].annotation)]
            hint = (f" ({', '.join(groups)}: a ReplicaGroup; `trnsim run --ranks N` runs a "
                    "collective kernel on N ranks)") if groups else ""
            raise UsageError(f"{self.fn.__name__}: no input for parameter(s) "
                             f"{', '.join(missing)}; give NAME=FILE.npy, NAME=FILE.npz:KEY, "
                             f"NAME=SHAPE:DTYPE (e.g. 128x512:float32) or NAME=NUMBER{hint}")

    def arguments(self):
        """(args, kwargs, arrays) for one launch: fresh copies, since a launch writes into
        them, and {parameter: array} of those copies. The leading positional parameters go by
        position (so *args can follow), the rest by name."""
        copies = {p: v.copy() if isinstance(v, np.ndarray) else v
                  for p, (_, v) in self.given.items()}
        by_position = []
        for p, v in self.params.items():
            if v.kind not in (v.POSITIONAL_ONLY, v.POSITIONAL_OR_KEYWORD) or p not in copies:
                break
            by_position.append(p)
        extra = [v.copy() if isinstance(v, np.ndarray) else v for _, v in self.extra]
        args = [copies[p] for p in by_position] + extra
        kwargs = {p: v for p, v in copies.items() if p not in by_position}
        return args, kwargs, {p: v for p, v in copies.items() if isinstance(v, np.ndarray)}

    def per_rank(self, n):
        """arguments() for each of n ranks: rank r's random inputs drawn from seed + r (files
        and numbers alike for all)."""
        return [self.arguments()] + [
            Inputs(self.kernel, self.args, self.npz, self.seed + r, self.values,
                   self.ranks).arguments() for r in range(1, n)]

    def _all_ranks(self):
        from trnsim.nki.collectives import ReplicaGroup

        return ReplicaGroup([list(range(self.ranks))])

    def manifest(self):
        out = []
        items = list(self.given.items()) + [(f"*args[{i}]", e) for i, e in enumerate(self.extra)]
        for name, (text, v) in items:
            if isinstance(v, np.ndarray):
                out.append({"name": name, "shape": list(v.shape), "dtype": _dtype_name(v.dtype),
                            "source": text})
            else:
                out.append({"name": name, "value": v if isinstance(v, (int, float, str, bool))
                            else repr(v), "source": text})
        return out

    # --- one value ---

    def _value(self, name, text):
        if text.endswith(".npy"):
            return self._array(name, self._npy(name, text), text)
        if ".npz" in text:
            file, _, key = text.partition(".npz")
            return self._array(name, self._npz(name, file + ".npz", key.removeprefix(":")), text)
        m = _SHAPE.match(text)
        if m and ("x" in text or ":" in text) and not text.lower().startswith("0x"):
            return self._random(name, [int(d) for d in m.group(1).split("x")],
                                m.group(2) or "float32")
        number = _number(text)
        if number is not None:
            return number
        if text == "ranks" and self.ranks:
            return self._all_ranks()
        default = self.params[name].default if name in self.params else None
        if isinstance(default, str):  # a string parameter (an activation's name, ...)
            return text
        raise UsageError(f"{name}={text}: expected FILE.npy, FILE.npz[:KEY], SHAPE[:DTYPE] "
                         "(e.g. 128x512:bfloat16) or a number")

    def _npy(self, name, file):
        try:
            return np.load(file, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise UsageError(f"{name}={file}: cannot read it as a .npy array: {_reason(e)}") \
                from None

    def _open_npz(self, what, file):
        try:
            z = np.load(file, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise UsageError(f"{what}: cannot read {file} as an .npz archive: {_reason(e)}") \
                from None
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise UsageError(f"{what}: {file} is a single array, not an .npz archive")
        return z

    def _npz(self, name, file, key):
        with self._open_npz(f"{name}={file}", file) as z:
            if not key:  # the parameter's name, else the archive's only array
                key = name if name in z.files else z.files[0] if len(z.files) == 1 else None
            if key not in z.files:
                raise UsageError(f"{name}={file}: " + (f"no array '{key}'" if key else
                                 f"holds {len(z.files)} arrays; name one as {file}:KEY") +
                                 f" (it holds {', '.join(z.files) or 'nothing'})")
            try:
                return z[key]
            except ValueError as e:
                raise UsageError(f"{name}={file}:{key}: {_reason(e)}") from None

    def _npz_all(self, file):
        with self._open_npz(f"--inputs {file}", file) as z:
            extra = [k for k in z.files if k not in self.params]
            if extra:
                raise UsageError(f"--inputs {file}: array '{extra[0]}' names no parameter of "
                                 f"{self.fn.__name__} (it takes {self._names()})")
            out = {}
            for k in z.files:
                try:
                    out[k] = self._array(k, z[k], f"{file}:{k}")
                except ValueError as e:
                    raise UsageError(f"--inputs {file}:{k}: {_reason(e)}") from None
            return out

    def _array(self, name, a, text):
        """Arrays NKI has tensors of; the rest refused here, naming the parameter and the
        file, rather than by the launch with advice meant for Python callers."""
        if a.dtype.kind in "OUSMmcV":
            raise UsageError(f"{name}={text}: an array of {a.dtype}; a kernel input holds "
                             "numbers (float32, bfloat16, int32, ...)")
        if a.dtype.kind == "b":
            return a
        try:
            format_name(a.dtype)
        except (TypeError, ValueError):
            raise UsageError(f"{name}={text}: {a.dtype} has no NKI dtype (NKI integers are 8, "
                             "16 and 32 bits; save it as int32 or float32)") from None
        if a.size == 0:
            raise UsageError(f"{name}={text}: shape {a.shape} has no element")
        return np.ascontiguousarray(a)

    def _random(self, name, shape, dtype):
        dt = _dtype(name, dtype)
        if 0 in shape:
            raise UsageError(f"{name}: shape {'x'.join(map(str, shape))} has no element")
        if int(np.prod(shape, dtype=np.float64)) * dt.itemsize > 1 << 36:
            raise UsageError(f"{name}: shape {'x'.join(map(str, shape))} is over 64 GiB")
        if not self.values:
            return np.zeros(shape, dt)
        # A stream per parameter position: an input's values do not depend on the others'.
        pos = list(self.params).index(name) if name in self.params else len(self.params)
        rng = np.random.default_rng([self.seed, pos])
        if dt.kind == "b":
            return rng.integers(0, 2, shape).astype(dt)
        if dt.kind in "iu":  # small integers: indices and counts stay meaningful
            return rng.integers(0 if dt.kind == "u" else -8, 8, shape, dtype=np.int32).astype(dt)
        return rng.uniform(-1.0, 1.0, shape).astype(np.float32).astype(dt)


def _dtype(name, text):
    if text in ("bool", "bool_"):
        return np.dtype(np.bool_)
    try:
        dt = numpy_dtype(format_name(text))
    except (TypeError, ValueError):
        dt = None
    if dt is None:
        raise UsageError(f"{name}: unknown dtype '{text}' (float32, bfloat16, float16, "
                         "float8_e4m3, int32, int8, uint8, bool, ...)")
    return np.dtype(dt)


def _dtype_name(dt) -> str:
    return "bool" if dt.kind == "b" else str(dt)


def _number(text):
    """An int (decimal or 0x hex), a float, or True / False; None for anything else."""
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def _reason(e) -> str:
    return e.strerror if isinstance(e, OSError) and e.strerror else str(e) or type(e).__name__
