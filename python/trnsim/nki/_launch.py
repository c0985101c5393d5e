"""Running NKI kernels on trnsim: trace the Python kernel into the C++ kernel builder (one
program per SPMD instance), run it on a simulated NeuronCore with the caller's numpy arrays as
HBM tensors, write results back into them, and keep the latency and trace."""

from __future__ import annotations

import inspect
import itertools
import json
import os

import numpy as np

from trnsim import _core
from trnsim.kernel import KernelBuilder, load_chip
from trnsim.nki import _ctx
from trnsim.nki._ctx import Ctx, NkiError
from trnsim.nki._tensor import NkiTensor
from trnsim.numerics import format_name
from trnsim.run import from_bytes, to_bytes

#: The environment variable NKI users set to pick the target (trn1, trn2, trn3).
TARGET_ENV = "NEURON_PLATFORM_TARGET_OVERRIDE"
_RESERVED = {"sbuf", "psum", "hbm"}
_last = None


def target(chip=None):
    """The generation to simulate: `chip`, else $NEURON_PLATFORM_TARGET_OVERRIDE, else trn2."""
    name = chip or os.environ.get(TARGET_ENV) or "trn2"
    return {"inf2": "trn1", "gen2": "trn1", "gen3": "trn2", "gen4": "trn3"}.get(name, name)


class KernelRun:
    """One simulated launch of a kernel (all its SPMD instances).

    Attributes:
        outputs: the kernel's return value as numpy arrays (None if it returns nothing).
        total_ps: simulated latency in picoseconds (instances on one core run one after the
            other; LNC=2 instances run side by side).
        instances: per-instance (program ids, total_ps, instructions).
        figures: the first instance's timed figures (core/result_json.h) as a dict.
        summary: its text summary.
        trace: the merged trace (a ``_core.Trace``) or None.
    """

    def __init__(self):
        self.outputs = None
        self.total_ps = 0
        self.instances = []
        self.figures = {}
        self.summary = ""
        self.trace = None
        self.chip = ""

    @property
    def latency_us(self) -> float:
        return self.total_ps / 1e6

    def write_trace(self, path):
        """Writes the Chrome / Perfetto trace JSON (ui.perfetto.dev opens it)."""
        if self.trace is None:
            raise ValueError("this launch recorded no trace")
        with open(path, "w") as f:
            f.write(self.trace.chrome_json())

    def __repr__(self):
        return (f"KernelRun(chip={self.chip}, latency_us={self.latency_us:.3f}, "
                f"instances={len(self.instances)})")


def last_run() -> KernelRun | None:
    """The most recent launch (its latency, figures and trace)."""
    return _last


def _is_array(a):
    return isinstance(a, np.ndarray) or (hasattr(a, "__array__") and hasattr(a, "dtype")
                                         and hasattr(a, "shape") and not isinstance(a, NkiTensor))


def _trace(fn, args, kwargs, chip, pids, grid, dialect, policy):
    """One instance: the kernel traced into a fresh builder. Returns (program, arrays by
    tensor name, return value, created outputs)."""
    kb = KernelBuilder(chip)
    if policy:
        kb.set_dma_policy(*policy)
    c = Ctx(kb, chip, pids, grid, dialect)
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{fn.__name__}: {e}") from None
    arrays = {}

    def tensor(name, a):
        a = np.asarray(a)
        name = name + "_" if name in _RESERVED else name
        c.names[name] = 1
        arrays[name] = a
        shape = list(a.shape) or [1]
        return NkiTensor(kb.inout(name, format_name(a.dtype), shape))

    for name, val in list(bound.arguments.items()):
        kind = bound.signature.parameters[name].kind
        if _is_array(val):
            bound.arguments[name] = tensor(name, val)
        elif kind == inspect.Parameter.VAR_POSITIONAL:
            bound.arguments[name] = tuple(
                tensor(f"{name}{i}", v) if _is_array(v) else v for i, v in enumerate(val))
        elif isinstance(val, (list, tuple)) and any(_is_array(v) for v in val):
            bound.arguments[name] = type(val)(
                tensor(f"{name}{i}", v) if _is_array(v) else v for i, v in enumerate(val))
    old = _ctx.set_ctx(c)
    try:
        ret = fn(*bound.args, **bound.kwargs)
        c.flush()
    finally:
        _ctx.set_ctx(old)
    return kb.build(), arrays, ret, c.constants


def _returned(ret, outputs):
    if ret is None:
        return None
    if isinstance(ret, NkiTensor):
        if ret.name not in outputs:
            raise NkiError(f"the kernel returned {ret!r}, which is not an HBM tensor it created "
                           "(nl.ndarray(..., buffer=nl.shared_hbm))")
        return outputs[ret.name]
    if isinstance(ret, (tuple, list)):
        return type(ret)(_returned(r, outputs) for r in ret)
    if isinstance(ret, dict):
        return {k: _returned(v, outputs) for k, v in ret.items()}
    return ret


def _grid_dims(grid):
    """(sizes, LNC cores) of a launch grid: ints and nl.nc(n) (n instances on n cores)."""
    from trnsim.nki.language import nc

    sizes, cores = [], 1
    for g in grid:
        if isinstance(g, nc):
            cores *= g.n
        sizes.append(int(g))
    return sizes, cores


def launch(fn, args, kwargs, grid=(), chip=None, dialect="nki", trace=True,
           mode="functional+timing", policy=None) -> tuple:
    """Traces and runs every SPMD instance of `fn` on `chip`; returns (return value, KernelRun).
    Instances see one shared HBM: each starts from the tensors the previous one left."""
    global _last
    spec = load_chip(target(chip))
    sizes, cores = _grid_dims(grid)
    pids_list = list(itertools.product(*[range(s) for s in sizes])) if sizes else [()]
    run = KernelRun()
    run.chip = spec.name
    state, decl, arrays, traces, offsets, names = {}, {}, {}, [], [], []
    wave_start = wave_len = 0
    ret = None
    for i, pids in enumerate(pids_list):
        program, arrays, ret, consts = _trace(fn, args, kwargs, spec, pids, sizes, dialect,
                                              policy)
        decl = {n: (f, s) for n, f, s, _ in program.tensors}
        if not state and mode != "timing":
            state = {n: to_bytes(a.reshape(decl[n][1]), decl[n][0], decl[n][1])
                     for n, a in arrays.items()}
        if mode != "timing":
            for n, a in consts.items():
                state.setdefault(n, to_bytes(a, decl[n][0], decl[n][1]))
        inputs = [(n, b) for n, b in state.items() if n in decl]
        outs, figures, summary, tr = _core.run_program(spec, program, mode, inputs, trace)
        for n, b in outs:
            state[n] = np.frombuffer(b, dtype=np.uint8)
        figs = json.loads(figures)
        if figs.get("faults"):
            f = figs["faults"][0]
            raise RuntimeError(f"simulated hardware fault in {fn.__name__}: {f.get('kind')}: "
                               f"{f.get('message')} ({f.get('text', '')})")
        t = int(figs.get("total_ps", 0))
        if i % cores == 0:
            wave_start += wave_len
            wave_len = 0
        wave_len = max(wave_len, t)
        if i == 0:
            run.figures, run.summary = figs, summary
        run.instances.append((pids, t, program.num_instructions))
        if tr is not None:
            traces.append(tr)
            offsets.append(wave_start)
            names.append(f"nc{i % cores}" + (f" pid{list(pids)}" if sizes else ""))
    run.total_ps = wave_start + wave_len
    if traces:
        run.trace = traces[0] if len(traces) == 1 and not sizes else _core.merge_traces(
            traces, offsets, names)
    if mode != "timing":
        for n, a in arrays.items():
            out = from_bytes(state[n].tobytes(), decl[n][0], decl[n][1]).reshape(a.shape)
            if a.flags.writeable:
                np.copyto(a, out.astype(a.dtype, copy=False), casting="unsafe")
        outputs = {n: from_bytes(state[n].tobytes(), f, s) for n, (f, s) in decl.items()
                   if n not in arrays and n in state}
        run.outputs = _returned(ret, outputs)
    _last = run
    return run.outputs, run
