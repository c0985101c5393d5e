"""neuronxcc.nki for trnsim: the legacy NKI 0.1 dialect (ISA calls return tiles,
``nl.arange`` / ``nl.mgrid`` indices, ``mask=``, ``nl.load`` / ``nl.store``,
``psum += nisa.nc_matmul(...)``). Entry points as in neuronxcc.nki: jit, simulate_kernel,
baremetal, benchmark, profile. ``trnsim.nki.install_alias()`` makes ``from neuronxcc import
nki`` import this package."""

from __future__ import annotations

from trnsim import nki as _cur
from trnsim.nki import Kernel, KernelRun, NkiError, last_run, run, set_dma_policy
from trnsim.nki import compiler
from trnsim.nki._tensor import NkiTensor as tensor  # NKI 0.1's tensor class (annotations)
from trnsim.nki.legacy import isa, language, typing


def jit(func=None, mode="auto", chip=None, platform_target=None, **options):
    """Marks a legacy kernel; calling it runs it on trnsim (every mode, incl. "simulation")."""
    chip = chip or platform_target
    if func is not None:  # not callable: Kernel says so
        return Kernel(func, "legacy", chip, options=options)
    return lambda f: Kernel(f, "legacy", chip, options=options)


def trace(func=None, **options):
    """A function a legacy kernel calls (a sub-kernel): traced inline inside a kernel, run
    as a kernel of its own from host code."""
    if func is not None:
        return Kernel(func, "legacy", options=options)
    return lambda f: Kernel(f, "legacy", options=options)


baremetal = _cur._decorator("baremetal", "legacy")
benchmark = _cur._decorator("benchmark", "legacy")
profile = _cur._decorator("profile", "legacy")


def simulate_kernel(kernel, *args, **kwargs):
    """Runs the kernel once on trnsim and returns its outputs."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel, "legacy")
    return k(*args, **kwargs)


simulate = _cur.simulate

__all__ = ["jit", "simulate_kernel", "simulate", "baremetal", "benchmark", "profile", "run",
           "last_run", "set_dma_policy", "trace", "isa", "language", "typing", "compiler", "tensor",
           "Kernel", "KernelRun", "NkiError"]
