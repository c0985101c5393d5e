"""NKI kernels on trnsim (the current ``nki`` dialect; ``trnsim.nki.legacy`` is
``neuronxcc.nki``).

Write or take a kernel for NKI, run it with numpy inputs, get what the hardware would compute
plus the simulated latency and trace:

    import numpy as np
    from trnsim import nki
    import trnsim.nki.language as nl
    import trnsim.nki.isa as nisa

    @nki.jit
    def add(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        ta = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray(b.shape, b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a)
        nisa.dma_copy(dst=tb, src=b)
        nisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=nl.add)
        nisa.dma_copy(dst=out, src=ta)
        return out

    c = add(np.ones((128, 512), np.float32), np.ones((128, 512), np.float32))
    nki.last_run().latency_us

``trnsim.nki.install_alias()`` makes ``import nki`` and ``from neuronxcc import nki`` reach
these modules, so kernels run unchanged. The target is the ``chip=`` argument, else
``$NEURON_PLATFORM_TARGET_OVERRIDE`` (trn1, trn2, trn3), else trn2. docs/nki.md lists what
is supported.
"""

from __future__ import annotations

import functools
import os
import sys

from trnsim.nki import _ctx, _torch_io
from trnsim.nki._ctx import NkiError
from trnsim.nki._launch import (TARGET_ENV, KernelRun, check_grid, compile_overrides, last_run,
                                launch, target)


class Kernel:
    """A kernel ready to launch: ``k(*args)`` runs it once; ``k[g0, g1](*args)`` runs an SPMD
    grid (``k[nl.nc(2)]``: LNC=2, two instances on two cores). After a call, ``k.last_run``
    holds the latency, figures and trace; benchmark / profile kernels also fill
    ``benchmark_result`` / write their trace file."""

    def __init__(self, fn, dialect="nki", chip=None, grid=(), mode="run", options=None):
        if not callable(fn):
            raise TypeError(f"nki: a kernel must be a function, got {type(fn).__name__} {fn!r}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.dialect = dialect
        self.chip = chip
        self.grid = tuple(grid)
        self.mode = mode
        self.options = dict(options or {})
        self.last_run = None
        self.benchmark_result = None

    def __getitem__(self, grid):
        grid = check_grid(grid)  # kernel[0], kernel[-3], kernel["a"]: an error, not no launch
        k = Kernel(self.fn, self.dialect, self.chip, grid, self.mode, self.options)
        k._parent = self
        return k

    def __call__(self, *args, **kwargs):
        if _ctx._current is not None:  # a kernel calling another: trace it inline
            if self.grid:
                raise NkiError(f"{self.fn.__name__}[{', '.join(map(repr, self.grid))}]: "
                               "calling a kernel with an SPMD grid inside another kernel is "
                               "not supported (NKI: err_nested_kernel_with_spmd_grid)")
            return self.fn(*args, **kwargs)
        opts = dict(policy=self.options.get("dma_policy"),
                    overrides=compile_overrides(self.options))
        try:
            out, run = launch(self.fn, args, kwargs, self.grid, self.chip, self.dialect, **opts)
        except _ctx.LogicalCoreNeeded:
            grid = _as_logical_core(self.grid)
            if grid is None:
                raise
            out, run = launch(self.fn, args, kwargs, grid, self.chip, self.dialect, **opts)
        if any(_torch_io.is_torch(a) for a in _flat([args, kwargs])):
            out = _torch_io.to_torch(out)  # torch in, torch out
        self.last_run = run
        if getattr(self, "_parent", None) is not None:
            self._parent.last_run = run
        if self.mode == "benchmark":
            self.benchmark_result = _BenchmarkResult(run)
            if getattr(self, "_parent", None) is not None:
                self._parent.benchmark_result = self.benchmark_result
        if self.mode in ("benchmark", "profile"):
            path = _trace_path(self.options)
            if path:
                run.write_trace(path)
        return out


def _flat(x):
    """The leaves of nested tuples, lists and dicts (a kernel's arguments)."""
    if isinstance(x, (tuple, list)):
        for v in x:
            yield from _flat(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _flat(v)
    else:
        yield x


def _as_logical_core(grid):
    """kernel[n](...) whose instances meet each other (core_barrier, sendrecv): public kernels
    launch the physical cores of a logical core so (kernel[_lnc_degree()]), so a 1-D grid of
    ints runs as kernel[nl.nc(n)] when the first launch found its instances must share one."""
    from trnsim.nki.language import nc

    if len(grid) != 1 or type(grid[0]) is not int or grid[0] < 2:
        return None
    return (nc(grid[0]),)


def _trace_path(options):
    name = options.get("save_trace_name")
    if not name:
        return None
    return os.path.join(options.get("working_directory") or ".", name)


class _Latency:
    def __init__(self, us):
        self.us = us

    def get_latency_percentile(self, p=50):
        """Simulated latency in microseconds (every percentile: the simulation is exact)."""
        return self.us


class _BenchmarkResult:
    def __init__(self, run):
        self.nc_latency = _Latency(run.latency_us)
        self.run = run


def _decorator(mode, dialect="nki"):
    """nki.baremetal / benchmark / profile: as a decorator, with or without options."""

    def deco(func=None, *, chip=None, **options):
        if func is not None:
            return Kernel(func, dialect, chip, mode=mode, options=options)
        return lambda f: Kernel(f, dialect, chip, mode=mode, options=options)

    return deco


def jit(func=None, mode="auto", chip=None, platform_target=None, **options):
    """Marks a kernel. Calling it traces the kernel and runs it on the simulated NeuronCore
    (any ``mode``: "simulation", "baremetal", "auto", ...); numpy outputs are returned and
    writes into argument arrays show up in them."""
    if platform_target is not None:
        chip = chip or platform_target
    if func is not None:  # not callable: Kernel says so (a decorator of a decorator it isn't)
        return Kernel(func, "nki", chip, options=options)
    return lambda f: Kernel(f, "nki", chip, options=options)


def trace(func=None, **options):
    """Marks a function a kernel calls (a sub-kernel): called inside a kernel it is traced
    inline, as NKI traces it; called from host code it runs as a kernel of its own."""
    if func is not None:
        return Kernel(func, "nki", options=options)
    return lambda f: Kernel(f, "nki", options=options)


baremetal = _decorator("run")
benchmark = _decorator("benchmark")
profile = _decorator("profile")


def simulate(kernel, *args, chip=None, **kwargs):
    """``nki.simulate(kernel)(*args)`` (NKI 0.3) or ``nki.simulate(kernel, *args)``: runs the
    kernel on trnsim and returns its outputs."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel, "nki", chip)
    if chip is not None:
        k = Kernel(k.fn, k.dialect, chip, k.grid, k.mode, k.options)
    if args or kwargs:
        return k(*args, **kwargs)
    return k


def simulate_kernel(kernel, *args, **kwargs):
    """Runs the kernel once on trnsim and returns its outputs (legacy entry point)."""
    return simulate(kernel, *args, **kwargs)


def run(kernel, *args, chip=None, grid=(), mode="functional+timing", trace=True, set=None,
        **kwargs):
    """trnsim's own entry point: (outputs, KernelRun) of one launch. ``set``: spec overrides
    as ``trnsim.spec.load`` and ``--set`` take them (what-if chips), after those of the
    kernel's ``additional_compile_opt``."""
    from trnsim.spec import _overrides

    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel, "nki")
    fn, dialect = k.fn, k.dialect
    # `grid or ...` would take grid=0 for "no grid": only the default () means none.
    grid = k.grid if isinstance(grid, tuple) and not grid else check_grid(grid)
    overrides = compile_overrides(k.options) + _overrides(set, "set")
    return launch(fn, args, kwargs, grid, chip, dialect, trace=trace, mode=mode,
                  policy=k.options.get("dma_policy"), overrides=overrides)


def set_dma_policy(load_triggers=("sync",), store_trigger="gpsimd"):
    """trnsim extension, called inside a kernel: which engine streams trigger loads (round
    robin) and stores (kernel/operands.h DmaPolicy). The C++ example kernels use it."""
    from trnsim.nki import _ops

    c = _ctx.ctx()
    c.kb.set_dma_policy([_ops.engine(e) for e in load_triggers], _ops.engine(store_trigger))


#: Module names NKI kernels import -> trnsim's module (install_alias). The legacy dialect
#: shares the modules that do not differ between dialects.
_CURRENT = {"": "trnsim.nki", ".isa": "trnsim.nki.isa",
            ".isa.constants": "trnsim.nki.isa.constants", ".language": "trnsim.nki.language",
            ".language.constants": "trnsim.nki._lang_constants", ".typing": "trnsim.nki.typing",
            ".compiler": "trnsim.nki.compiler", ".collectives": "trnsim.nki.collectives",
            ".tensor": "trnsim.nki.tensor",
            ".compiler.backends": "trnsim.nki.compiler.backends",
            ".compiler.backends.neuron": "trnsim.nki.compiler.backends.neuron",
            ".compiler.backends.neuron.dimensions":
                "trnsim.nki.compiler.backends.neuron.dimensions"}
_LEGACY = {**_CURRENT, "": "trnsim.nki.legacy", ".isa": "trnsim.nki.legacy.isa",
           "._private": "trnsim.nki.private_api", "._private.private_api": "trnsim.nki.private_api",
           ".language": "trnsim.nki.legacy.language", ".typing": "trnsim.nki.legacy.typing"}


def install_alias(legacy=True, current=True):
    """Makes ``import nki`` (current dialect) and ``import neuronxcc.nki`` / ``from neuronxcc
    import nki`` (legacy dialect) import trnsim's modules, so kernels written for NKI run
    unchanged (and ``from torch_neuronx import nki_jit``, NKI Beta 1's decorator, where the
    Neuron SDK is not installed). Replaces modules of those names already imported."""
    import importlib
    import importlib.util
    import types

    # Every submodule by its own name too: Python would otherwise load a second copy of a
    # trnsim package's file under the alias (nki.isa.constants), with enums of its own.
    if current:
        for suffix, target in _CURRENT.items():
            sys.modules["nki" + suffix] = importlib.import_module(target)
    if legacy:
        pkg = sys.modules.get("neuronxcc")
        if pkg is None or not getattr(pkg, "_trnsim_alias", False):
            pkg = types.ModuleType("neuronxcc")
            pkg.__path__ = []
            pkg._trnsim_alias = True
            sys.modules["neuronxcc"] = pkg
        for suffix, target in _LEGACY.items():
            sys.modules["neuronxcc.nki" + suffix] = importlib.import_module(target)
        pkg.nki = sys.modules["neuronxcc.nki"]
        # Kernel files written on Neuron machines call logging.disable(logging.OFF), a level
        # the standard library lacks and the Neuron SDK's import makes available: above
        # CRITICAL, so it disables every message, as there.
        import logging

        if not hasattr(logging, "OFF"):
            logging.OFF = logging.CRITICAL + 10
        # NKI Beta 1's examples decorate kernels with torch_neuronx.nki_jit (later SDK code
        # imports it from torch_neuronx.xla_impl.ops); without the Neuron SDK installed that
        # is the legacy jit (a real torch_neuronx is left alone).
        tnx = sys.modules.get("torch_neuronx")
        if tnx is None and importlib.util.find_spec("torch_neuronx") is None:
            tnx = types.ModuleType("torch_neuronx")
            tnx.__path__ = []
            tnx._trnsim_alias = True
            sys.modules["torch_neuronx"] = tnx
        if getattr(tnx, "_trnsim_alias", False):
            tnx.nki_jit = sys.modules["neuronxcc.nki"].jit
            for sub in ("xla_impl", "xla_impl.ops"):
                name = "torch_neuronx." + sub
                mod = sys.modules.get(name) or types.ModuleType(name)
                mod.__path__ = []
                sys.modules[name] = mod
            tnx.xla_impl = sys.modules["torch_neuronx.xla_impl"]
            tnx.xla_impl.ops = sys.modules["torch_neuronx.xla_impl.ops"]
            tnx.xla_impl.ops.nki_jit = tnx.nki_jit


from trnsim.nki import collectives, compiler, isa, language, tensor, typing  # noqa: E402
from trnsim.nki._ranks import RankRun, run_ranks  # noqa: E402

class dtype:  # noqa: N801 - NKI's name
    """NKI's dtype annotation (``def kernel(x, dt: nki.dtype = nl.float32)``): an NKI dtype
    is a numpy / ml_dtypes dtype or its name, so it marks a parameter and holds nothing."""


__all__ = ["dtype", "jit", "simulate", "simulate_kernel", "baremetal", "benchmark", "profile", "run",
           "install_alias", "last_run", "set_dma_policy", "Kernel", "KernelRun", "NkiError",
           "TARGET_ENV", "target", "trace", "isa", "language", "compiler", "typing", "collectives",
           "run_ranks", "RankRun", "tensor"]
