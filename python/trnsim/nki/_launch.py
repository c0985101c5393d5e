"""Running NKI kernels on trnsim: trace the Python kernel into the C++ kernel builder (one
program per SPMD instance), run it on a simulated NeuronCore with the caller's numpy arrays as
HBM tensors, write results back into them, and keep the latency and trace.

The instances of one logical core (the ``nl.nc(n)`` axes of the grid) run together on its n
physical cores (``_core.run_spmd``: one HBM, the HBM stack's bandwidth shared, core_barrier
and sendrecv between them); the logical core's groups of a larger grid run one after the
other."""

from __future__ import annotations

import builtins
import contextlib
import inspect
import itertools
import json
import os

import numpy as np

from trnsim import _core
from trnsim._trace_files import write_trace_file
from trnsim.kernel import KernelBuilder, load_chip
from trnsim.nki import _ctx, _torch_io
from trnsim.nki._ctx import Ctx, NkiError
from trnsim.nki._tensor import NkiTensor
from trnsim.numerics import format_name
from trnsim.run import from_bytes, to_bytes

#: The environment variable NKI users set to pick the target (trn1, trn2, trn3).
TARGET_ENV = "NEURON_PLATFORM_TARGET_OVERRIDE"
_RESERVED = {"sbuf", "psum", "hbm"}
_last = None


#: The most SPMD instances one launch may have: each is traced and simulated in turn, so a
#: larger grid (often a typo, kernel[10**9]) would run for days rather than fail.
MAX_INSTANCES = 65536


def target(chip=None):
    """The generation to simulate: `chip`, else $NEURON_PLATFORM_TARGET_OVERRIDE, else trn2."""
    if chip is not None and not isinstance(chip, (str, os.PathLike)):
        raise NkiError(f"chip={chip!r}: name a generation ('trn1', 'trn2', 'trn3') or a "
                       "what-if .toml file")
    name = chip or os.environ.get(TARGET_ENV) or "trn2"
    return {"inf2": "trn1", "gen2": "trn1", "gen3": "trn2", "gen4": "trn3"}.get(name, name)


# neuronx-cc options that change what the hardware does, as spec overrides. --disable-dge:
# DMA descriptors built ahead of time instead of by the hardware DGE at each instruction, so
# a DMA trigger costs its engine no descriptor-generation time (docs/timing.md "Issue cost").
# The other options steer the compiler's own passes, which trnsim does not have: ignored.
_COMPILE_OPTIONS = {"--disable-dge": ["core.dma.hwdge_per_core=0"]}


def compile_overrides(options) -> list:
    """The spec overrides that a kernel's ``additional_compile_opt`` string asks for."""
    opt = options.get("additional_compile_opt") or ""
    if not isinstance(opt, str):
        raise NkiError(f"additional_compile_opt={opt!r}: a string of neuronx-cc options")
    return [o for tok in opt.split() for o in _COMPILE_OPTIONS.get(tok, [])]


def check_grid(grid) -> tuple:
    """A launch grid as a tuple of positive ints and nl.nc(n) axes; anything else (0, -3,
    "a", 2.5, None, a list) is an NkiError naming it, never an empty or truncated launch."""
    from trnsim.nki.language import nc, spmd_dim

    grid = grid if isinstance(grid, tuple) else (grid,)
    shown = f"kernel[{', '.join(map(repr, grid))}]"
    total = 1
    for a, g in enumerate(grid):
        if isinstance(g, (nc, spmd_dim)):
            n = g.n
        elif isinstance(g, (bool, np.bool_)) or not isinstance(g, (int, np.integer)):
            raise NkiError(f"{shown}: grid axis {a} is {type(g).__name__} {g!r}; a launch grid "
                           "holds positive integers, nl.nc(n) and nl.spmd_dim(...) (kernel[4], "
                           "kernel[2, 3], kernel[nl.nc(2)])")
        else:
            n = int(g)
        if n < 1:
            raise NkiError(f"{shown}: grid axis {a} has size {n}; every axis needs at least "
                           "one instance")
        total *= n
    if total > MAX_INSTANCES:
        raise NkiError(f"{shown}: {total} instances; trnsim traces and simulates the instances "
                       f"one by one and takes at most {MAX_INSTANCES} per launch")
    return grid


class KernelRun:
    """One simulated launch of a kernel (all its SPMD instances).

    Attributes:
        outputs: the kernel's return value as numpy arrays (None if it returns nothing).
        total_ps: simulated latency in picoseconds: execution_ps plus launch_ps.
        execution_ps: the sum over the launch's groups (the instances of one logical core,
            run together) of each group's time, that of its slowest core.
        launch_ps: the device's start-up and tear-down of the launch (spec
            core.launch.overhead_ns; 0 where the chip's spec has none).
        instances: per instance (program ids, total_ps of its core, instructions).
        groups: per group (program ids of its instances by core, total_ps).
        figures: the first instance's timed figures (core/timing/result_json.h) as a dict.
        cores: the first group's figures, one dict per physical core (LNC launches).
        summary: the first group's text summary.
        trace: the merged trace (a ``_core.Trace``) or None; instance tracks under process
            "nc<core> pid[...]".
    """

    def __init__(self):
        self.outputs = None
        self.total_ps = 0
        self.execution_ps = 0
        self.launch_ps = 0
        self.instances = []
        self.groups = []
        self.figures = {}
        self.cores = []
        self.summary = ""
        self.trace = None
        self.chip = ""

    @property
    def latency_us(self) -> float:
        return self.total_ps / 1e6

    def write_trace(self, path):
        """Writes the trace (ui.perfetto.dev opens it): Chrome JSON to a ``.json`` name,
        Perfetto protobuf to a ``.perfetto-trace`` or ``.pftrace`` one."""
        if self.trace is None:
            raise ValueError("this launch recorded no trace")
        write_trace_file(self.trace, path)

    def __repr__(self):
        return (f"KernelRun(chip={self.chip}, latency_us={self.latency_us:.3f}, "
                f"instances={len(self.instances)})")


def last_run() -> KernelRun | None:
    """The most recent launch (its latency, figures and trace)."""
    return _last


def _is_array(a):
    # numpy scalars (np.float32(2.0)) have __array__, dtype and shape too, but are numbers, as
    # Python's are: a scalar operand, not a one-element HBM tensor.
    return isinstance(a, np.ndarray) or (hasattr(a, "__array__") and hasattr(a, "dtype")
                                         and hasattr(a, "shape") and not isinstance(a, NkiTensor)
                                         and not isinstance(a, np.generic))


def _arg_format(fn, name, a):
    """The tensor format of an array argument: bool arrays are uint8 (NKI's bool_), big-endian
    ones their native dtype; dtypes NKI has no tensor of are an error naming the argument."""
    what = f"{fn.__name__}: argument '{name}'"
    if a.dtype.kind in "OUSMmc" or a.dtype.fields is not None:
        raise NkiError(f"{what}: an array of {a.dtype} cannot be a kernel tensor (give numbers: "
                       "float32, bfloat16, int32, ...)")
    if a.size == 0:
        raise NkiError(f"{what}: shape {a.shape} has no element; a kernel tensor needs at least "
                       "one")
    if a.dtype.kind == "b":
        return "uint8"
    dt = a.dtype.newbyteorder("=") if a.dtype.byteorder == ">" else a.dtype
    if dt.kind in "iu" and dt.itemsize > 4:
        raise NkiError(f"{what}: {dt} arrays have no NKI dtype (NKI integers are 8, 16 and 32 "
                       "bits): pass a.astype(np.int32)")
    try:
        return format_name(dt)
    except (TypeError, ValueError) as e:
        raise NkiError(f"{what}: {e}") from None


_BETA2_NAMES = ("sbuf", "psum", "hbm", "shared_hbm", "private_hbm")


@contextlib.contextmanager
def beta2_names(dialect):
    """NKI Beta 2 kernels name the memories without importing them (`sbuf.view(dtype=...,
    shape=...)`, `hbm.view(...)`; their sources mark the names `noqa: F821`): NKI's tracer
    provides them to the kernel body. Here they are builtins while a current-dialect kernel
    is traced, and only names Python does not already define."""
    from trnsim.nki import language  # imported here: language imports from this module

    added = []
    if dialect != "legacy":
        for n in _BETA2_NAMES:
            if not hasattr(builtins, n):
                setattr(builtins, n, getattr(language, n))
                added.append(n)
    try:
        yield
    finally:
        for n in added:
            delattr(builtins, n)


def _trace(fn, args, kwargs, chip, pids, grid, dialect, policy, lnc=1, rank=0, ranks=None):
    """One instance: the kernel traced into a fresh builder (`ranks`: the rank run's
    _ranks.RankInfo of this rank, if any). Returns (program, arrays by tensor name, return
    value, created outputs)."""
    kb = KernelBuilder(chip)
    if policy:
        kb.set_dma_policy(*policy)
    c = Ctx(kb, chip, pids, grid, dialect, lnc, rank)
    c.ranks = ranks
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{fn.__name__}: {e}") from None
    arrays = {}
    params = set(bound.signature.parameters) | _RESERVED

    def tensor(name, a, label):
        a = np.asarray(_torch_io.as_numpy(a))
        fmt = _arg_format(fn, label, a)
        name = name + "_" if name in _RESERVED else name
        while name in c.used:  # "a0" of a list argument a vs a parameter a0: both kept
            name += "_"
        c.used.add(name)
        arrays[name] = a
        shape = list(a.shape) or [1]
        return NkiTensor(kb.inout(name, fmt, shape))

    def elements(name, val, label=None):
        """Arrays inside a tuple / list / dict argument, named name0, name1, ... in order (in
        nested containers name0_0, name0_1, ...)."""
        label = label or name

        def one(i, key, v):
            if _is_array(v):
                return tensor(f"{name}{i}", v, f"{label}[{key!r}]")
            if isinstance(v, (list, tuple, dict)):
                return elements(f"{name}{i}_", v, f"{label}[{key!r}]")
            return v

        if isinstance(val, dict):
            return {k: one(i, k, v) for i, (k, v) in enumerate(val.items())}
        return type(val)(one(i, i, v) for i, v in enumerate(val))

    c.used |= params
    for name, val in list(bound.arguments.items()):
        kind = bound.signature.parameters[name].kind
        if _is_array(val):
            c.used.discard(name)
            bound.arguments[name] = tensor(name, val, name)
        elif kind == inspect.Parameter.VAR_KEYWORD:  # **kw: each keyword is a parameter
            for k, v in list(val.items()):
                if _is_array(v):
                    val[k] = tensor(k, v, k)
                elif isinstance(v, (list, tuple, dict)):
                    val[k] = elements(k, v)
        elif isinstance(val, (list, tuple, dict)):
            bound.arguments[name] = elements(name, val)
    old = _ctx.set_ctx(c)
    try:
        with beta2_names(dialect):
            ret = _onchip_to_hbm(fn(*bound.args, **bound.kwargs))
        c.flush()
    except (AttributeError, TypeError, IndexError, KeyError, ZeroDivisionError,
            OverflowError) as e:
        err = _front_end_error(e)
        if err is e:
            raise
        raise err from e
    finally:
        _ctx.set_ctx(old)
    return kb.build(), arrays, ret, c.constants


_API_PREFIX = {"trnsim.nki.language": "nl.", "trnsim.nki.isa": "nisa.",
               "trnsim.nki._ops": "nisa.", "trnsim.nki.legacy.isa": "nisa.",
               "trnsim.nki._tensor": "NkiTensor.", "trnsim.nki": "nki."}


def _front_end_error(e):
    """A Python error raised inside trnsim's NKI modules while tracing (an argument the front
    end did not check, or a bug of its own) as an NkiError naming the NKI call the kernel
    made; errors of the kernel's own code pass unchanged. The original stays the __cause__."""
    if isinstance(e, NkiError):  # NkiArgumentError is a TypeError too: named already
        return e
    tb = e.__traceback__
    kinds = []  # per frame, outermost first: "trnsim", "lib" (numpy, called by it) or "user"
    frames = []
    while tb is not None:
        mod = tb.tb_frame.f_globals.get("__name__", "")
        kinds.append("trnsim" if mod.startswith("trnsim.") else
                     "lib" if mod.split(".")[0] in ("numpy", "ml_dtypes") else "user")
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    raiser = max((i for i, k in enumerate(kinds) if k != "lib"), default=0)
    if not frames[raiser].f_globals.get("__name__", "").startswith("trnsim.nki"):
        # The kernel's own code (or a library it called); or trnsim's argument-checking
        # layers (numerics, kernel, run, _check), whose TypeErrors name the argument already.
        return e
    call = None
    for i in range(1, raiser + 1):  # the innermost call from the kernel's code into trnsim
        if kinds[i] == "trnsim" and kinds[i - 1] == "user":
            mod = frames[i].f_globals["__name__"]
            call = _API_PREFIX.get(mod, mod + ".") + frames[i].f_code.co_name
    if call is None:  # raised while placing a pending result after the kernel's last call
        call = f"{frames[0].f_locals.get('fn', _trace).__name__} (its last NKI call's result)"
    err = NkiError(f"{call}: {type(e).__name__}: {e} (trnsim's NKI front end could not use the "
                   "arguments of this call; check their types and shapes)")
    err.unchecked = True  # tests flag these: every mistake should have a message of its own
    return err


def _onchip_to_hbm(ret):
    """A returned SBUF / PSUM tile becomes a new HBM output holding its value (one nl.store
    at the kernel's end), as NKI's simulator returns such a tile's value."""
    from trnsim.nki import _ops, language as nl

    if isinstance(ret, NkiTensor):
        if _ops.view(ret).space == "hbm":
            return ret
        out = nl.ndarray(tuple(ret.shape), ret.dtype, buffer=nl.shared_hbm)
        nl.store(out, ret)
        return out
    if isinstance(ret, (tuple, list)):
        return type(ret)(_onchip_to_hbm(r) for r in ret)
    if isinstance(ret, dict):
        return {k: _onchip_to_hbm(v) for k, v in ret.items()}
    return ret


def _returned(ret, outputs, arrays):
    """The kernel's return value with its HBM tensors as numpy arrays: one it created, or an
    argument it updated in place (the caller's array, which now holds the kernel's writes)."""
    if ret is None:
        return None
    if isinstance(ret, NkiTensor):
        got = outputs.get(ret.name)
        if got is None and ret.name in arrays and arrays[ret.name].flags.writeable:
            got = arrays[ret.name]
        if got is not None:
            # A reshape of the whole tensor (t.reshape(...) returned) comes back in its shape.
            shape = tuple(ret.shape)
            return got.reshape(shape) if shape != got.shape and got.size == np.prod(shape) \
                else got
        raise NkiError(f"the kernel returned {ret!r}, which is not an HBM tensor it created "
                       "(nl.ndarray(..., buffer=nl.shared_hbm)) or a writable argument")
    if isinstance(ret, (tuple, list)):
        return type(ret)(_returned(r, outputs, arrays) for r in ret)
    if isinstance(ret, dict):
        return {k: _returned(v, outputs, arrays) for k, v in ret.items()}
    return ret


def _groups(grid, chip):
    """(grid sizes, cores per logical core, groups) of a launch grid of ints and nl.nc(n)
    axes. A group is the instances that differ only in their nl.nc axes: they run together,
    one per physical core of one logical core, as [(rank, program ids)]; groups keep the
    grid's order."""
    from trnsim.nki.language import nc, spmd_dim

    sizes = [int(g) for g in grid]
    # Every axis as its sub-dims (an nl.spmd_dim has several): (axis, size, an nl.nc dim).
    subs = [(a, int(d), isinstance(d, nc)) for a, g in enumerate(grid)
            for d in (g.dims if isinstance(g, spmd_dim) else (g,))]
    lnc = [i for i, (_, _, is_nc) in enumerate(subs) if is_nc]
    cores = int(np.prod([subs[i][1] for i in lnc])) if lnc else 1
    if lnc:
        try:
            _core.lnc_degree(chip, cores, "nl.nc")
        except ValueError as e:
            raise NkiError(f"kernel[{', '.join(map(repr, grid))}]: {cores} instances on the "
                           f"physical cores of one logical core: {e}") from None
    groups = {}
    for ids in itertools.product(*[range(n) for _, n, _ in subs]) if subs else [()]:
        pids = [0] * len(sizes)
        for (a, n, _), i in zip(subs, ids):  # mixed radix: the first sub-dim most significant
            pids[a] = pids[a] * n + i
        key = tuple(i for j, i in enumerate(ids) if j not in lnc)
        rank = 0
        for j in lnc:  # mixed radix over the nc dims, the first one most significant
            rank = rank * subs[j][1] + ids[j]
        groups.setdefault(key, []).append((rank, tuple(pids)))
    return sizes, cores, [sorted(g) for g in groups.values()]


def trace_first_group(fn, args, kwargs, spec, grid, dialect, policy):
    """The programs of a launch's first group: one per physical core of its logical core (one
    program without nl.nc axes), for a profile. Returns (programs, cores, groups)."""
    grid = () if not grid else check_grid(grid)
    sizes, cores, groups = _groups(grid, spec)
    programs = [_trace(fn, args, kwargs, spec, pids, sizes, dialect, policy, cores, rank)[0]
                for rank, pids in groups[0]]
    return programs, cores, len(groups)


def _check_faults(fn, figures):
    for figs in figures:
        if figs.get("faults"):
            f = figs["faults"][0]
            raise RuntimeError(f"simulated hardware fault in {fn.__name__}: {f.get('kind')}: "
                               f"{f.get('message')} ({f.get('text', '')})")


def write_back(fn, arrays, state, decl, initial):
    """The kernel's writes into its array arguments (`state`: bytes by tensor name after the
    run, `initial`: before it, for the read-only ones): copied into the writable arrays; a
    read-only one the kernel changed is an NkiError."""
    for n, a in arrays.items():
        out = from_bytes(bytes(state[n]), decl[n][0], decl[n][1]).reshape(a.shape)
        if a.flags.writeable:
            np.copyto(a, out.astype(a.dtype, copy=False), casting="unsafe")
        elif n in initial and bytes(state[n]) != bytes(initial[n]):
            # Dropping the kernel's writes without a word would be a silent wrong result.
            raise NkiError(f"{fn.__name__} wrote to argument '{n}', a read-only array: pass "
                           "a writable array (a copy) to receive what the kernel writes")


def launch(fn, args, kwargs, grid=(), chip=None, dialect="nki", trace=True,
           mode="functional+timing", policy=None, overrides=()) -> tuple:
    """Traces and runs every SPMD instance of `fn` on `chip` (with spec `overrides`, `--set`
    strings); returns (return value, KernelRun). Instances see one shared HBM: the instances
    of a logical core (nl.nc) share it while they run together, and each group starts from
    the tensors the previous one left."""
    global _last
    if isinstance(mode, str) and mode not in ("functional+timing", "timing", "functional"):
        raise NkiError(f"mode={mode!r}: use functional+timing, timing or functional")
    grid = () if isinstance(grid, tuple) and not grid else check_grid(grid)
    spec = load_chip(target(chip), overrides)
    sizes, cores, groups = _groups(grid, spec)
    run = KernelRun()
    run.chip = spec.name
    state, decl, arrays, traces, offsets, names, initial = {}, {}, {}, [], [], [], {}
    start = 0
    ret = None
    for g, group in enumerate(groups):
        programs = []
        for rank, pids in group:
            program, arrays, r, consts = _trace(fn, args, kwargs, spec, pids, sizes, dialect,
                                                policy, cores, rank)
            if rank == 0:  # the value returned: core 0's (its own copy of a private tensor)
                ret = r
            programs.append(program)
            decl = {n: (f, s) for n, f, s, _ in program.tensors}
            if not state and mode != "timing":
                state = {n: to_bytes(a.reshape(decl[n][1]), decl[n][0], decl[n][1])
                         for n, a in arrays.items()}
                initial = {n: b for n, b in state.items() if not arrays[n].flags.writeable}
            if mode != "timing":
                for n, a in consts.items():
                    state.setdefault(n, to_bytes(a, decl[n][0], decl[n][1]))
        inputs = [(n, b) for n, b in state.items() if n in decl]
        if cores == 1:
            outs, figures, summary, tr = _core.run_program(spec, programs[0], mode, inputs, trace)
            figs = [json.loads(figures)]
            total = int(figs[0].get("total_ps", 0))
        else:
            try:
                outs, figures, total, summary, tr = _core.run_spmd(spec, programs, mode, inputs,
                                                                   trace)
            except ValueError as e:
                raise NkiError(f"{fn.__name__} on a logical core of {cores} cores: {e}") from None
            figs = [json.loads(f) for f in figures]
        for n, b in outs:
            state[n] = np.frombuffer(b, dtype=np.uint8)
        _check_faults(fn, figs)
        if g == 0:
            run.figures, run.summary = figs[0], summary
            run.launch_ps = int(figs[0].get("launch_ps", 0))
            run.cores = figs if cores > 1 else []
        for (rank, pids), program, f in zip(group, programs, figs):
            run.instances.append((pids, int(f.get("total_ps", 0)), program.num_instructions))
        run.groups.append(([pids for _, pids in group], int(total)))
        if tr is not None:
            traces.append(tr)
            offsets.append(start)
            label = {rank: f"nc{rank}" + (f" pid{list(pids)}" if sizes else "")
                     for rank, pids in group}
            names.append(label[0] if cores == 1 else {f"core{r}": n for r, n in label.items()})
        start += int(total)
    run.execution_ps = start
    run.total_ps = start + run.launch_ps
    if traces:
        run.trace = traces[0] if len(traces) == 1 and not sizes else _core.merge_traces(
            traces, offsets, names)
    if mode != "timing":
        write_back(fn, arrays, state, decl, initial)
        outputs = {n: from_bytes(state[n].tobytes(), f, s) for n, (f, s) in decl.items()
                   if n not in arrays and n in state}
        run.outputs = _returned(ret, outputs, arrays)
    _last = run
    return run.outputs, run
