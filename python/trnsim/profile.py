"""Profiles and traces of timed runs (src/profile, core/timing/timing_profile.h).

``run(target, ...)`` profiles a kernel on one NeuronCore as ``trnsim profile`` does: where each
engine's time went, the bound, MFU / HFU, the roofline and the critical path (docs/profile.md);
with ``lnc`` / ``cores``, on several physical cores as ``trnsim profile --lnc / --cores`` does.

A trace comes from ``trnsim.run.run(..., trace=True).trace`` or an NKI launch
(``trnsim.nki.last_run().trace``); it holds one span per executed instruction on per-engine
and per-DMA-queue tracks; here it becomes Chrome / Perfetto JSON, a text summary, or one of
several merged. Everything here is C++ (profile/chrome_trace.h, summary.h); Python marshals.
"""

from __future__ import annotations

import json
import os
import re

from trnsim import _check, _core
from trnsim._files import write_text_atomically

Trace = _core.Trace


def _trace(t, what):
    if not isinstance(t, Trace):
        raise TypeError(f"{what}: expected a Trace (run(..., trace=True).trace), got "
                        f"{type(t).__name__}")
    return t


def chrome_json(trace: Trace) -> str:
    """The trace as Chrome / Perfetto trace-event JSON (ui.perfetto.dev opens it); identical
    traces give byte-identical text."""
    return _trace(trace, "chrome_json: trace").chrome_json()


def write_chrome_trace(trace: Trace, path: str) -> None:
    """Writes the trace as Chrome / Perfetto JSON to ``path``."""
    write_text_atomically(path, _trace(trace, "write_chrome_trace: trace").chrome_json())


def perfetto_trace(trace: Trace) -> bytes:
    """The trace in Perfetto's native protobuf format (profile/perfetto_trace.h): interned
    names, counter tracks, flow arrows; times in ns. ui.perfetto.dev opens it."""
    return _trace(trace, "perfetto_trace: trace").perfetto_trace()


def write_trace(trace: Trace, path) -> None:
    """Writes the trace in the format the name says: ``.json`` Chrome JSON, ``.perfetto-trace``
    or ``.pftrace`` Perfetto protobuf (ValueError for another name)."""
    from trnsim._trace_files import write_trace_file

    write_trace_file(_trace(trace, "write_trace: trace"), path)


def window(trace: Trace, start_ns: float, end_ns: float | None = None) -> Trace:
    """The part of the trace in [start_ns, end_ns): the spans that overlap it, the flows
    between them, each counter from its value at start_ns (end_ns None: to the end)."""
    start = _check.number(start_ns, "window: start_ns")
    end = None if end_ns is None else _check.number(end_ns, "window: end_ns")
    if not (0 <= start and (end is None or start < end)):
        raise ValueError(f"window: expected 0 <= start_ns < end_ns, got {start_ns}, {end_ns}")
    end_ps = 2**63 - 1 if end is None else min(int(end * 1000), 2**63 - 1)
    return _trace(trace, "window: trace").window(int(start * 1000), end_ps)


def summary(trace: Trace, top: int = 10) -> str:
    """Per track: spans, busy time and its share of the span; then the `top` labels by time."""
    # top is a count of labels: anything past the number of labels lists them all.
    top = min(_check.integer(top, "summary: top", 0, None), 2**31 - 1)
    return _trace(trace, "summary: trace").summary(top)


def events(trace: Trace) -> list:
    """The trace's events as Python dicts (name, ph, ts in microseconds, dur, pid, tid, args)."""
    doc = json.loads(_trace(trace, "events: trace").chrome_json())
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def merge(traces, offsets_ps, processes) -> Trace:
    """Several runs' traces in one, each shifted by its offset (picoseconds): SPMD instances
    or cores side by side. ``processes[i]`` names run i's process (a str), or renames its
    processes (a dict: ``{"core0": "nc0"}`` also turns "core0 dma" into "nc0 dma")."""
    traces = [_trace(t, f"merge: traces[{i}]")
              for i, t in enumerate(_check.sequence(traces, "merge: traces"))]
    offsets = [_check.integer(o, f"merge: offsets_ps[{i}]")
               for i, o in enumerate(_check.sequence(offsets_ps, "merge: offsets_ps"))]
    names = _check.sequence(processes, "merge: processes")
    for i, p in enumerate(names):
        ok = isinstance(p, str) or (isinstance(p, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in p.items()))
        if not ok:
            raise TypeError(f"merge: processes[{i}]: expected a process name (str) or a dict "
                            f"{{old name: new name}}, got {type(p).__name__}")
    return _core.merge_traces(traces, offsets, names)


# Where each core's profile starts in the text of several cores (chip/chip_profile_report.h).
_CORE_HEADING = re.compile(r"\n== core \d+ \([^\n]*\) ==\n")


class Profile:
    """A profiled run (core/timing/profile_report.h has every key of ``figures``; for several
    cores, chip/chip_profile_report.h).

    Attributes:
        figures: the profile as a dict: ``engines`` (per engine ``busy_ns``,
            ``wait_semaphore_ns``, ``waited_on_ns``, ``wait_dma_ns``, ``wait_port_ns``,
            ``wait_own_ns``, ``idle_ns``, ...), ``critical_path`` (``length``, ``time_ns``,
            ``per_engine_ns``, ``top``), ``bound``, ``mfu``, ``hfu``, ``roofline``, ``faults``.
            A profile of several cores (``lnc`` / ``cores``) is ``{"chip": {...}, "cores":
            [one core's figures, ...]}``: the chip's time (its slowest core's end), MFU / HFU
            over all cores, HBM per stack, the bound (the slowest core's), ``per_core``.
        text: the summary ``trnsim profile`` prints.
        bound: the run's bound (pe, dve, act, pool, sp, dma or latency); ``roofline["verdict"]``
            is the same with HBM as one more unit (``hbm``). Several cores: the slowest core's
            roofline verdict.
        cores: each core's Profile (a one-core profile: itself). For several cores,
            ``engines``, ``critical_path`` and ``roofline`` are the slowest core's (its end is
            the chip's), ``total_ns``, ``mfu`` and ``hfu`` the chip's, and ``faults`` every
            core's with its ``core``.
    """

    def __init__(self, figures: dict, text: str):
        self.figures = figures
        self.text = text

    @property
    def several(self) -> bool:
        """Whether this profiles several cores (``lnc`` / ``cores``)."""
        return isinstance(self.figures.get("chip"), dict)

    def _slowest(self) -> dict:
        f = self.figures
        return f["cores"][f["chip"]["slowest_core"]] if self.several else f

    def _overall(self) -> dict:
        return self.figures["chip"] if self.several else self.figures

    @property
    def cores(self) -> list:
        if not self.several:
            return [self]
        texts = _CORE_HEADING.split(self.text)[1:]
        figures = self.figures["cores"]
        texts += [""] * (len(figures) - len(texts))
        return [Profile(f, t) for f, t in zip(figures, texts)]

    @property
    def faults(self) -> list:
        if not self.several:
            return self.figures["faults"]
        return [dict(f, core=i) for i, c in enumerate(self.figures["cores"]) for f in c["faults"]]

    chip = property(lambda self: self.figures["chip"]["name"] if self.several
                    else self.figures["chip"])
    total_ns = property(lambda self: self._overall()["total_ns"])
    engines = property(lambda self: self._slowest()["engines"])
    critical_path = property(lambda self: self._slowest()["critical_path"])
    bound = property(lambda self: self._overall()["bound"]["verdict"])
    mfu = property(lambda self: self._overall()["mfu"])
    hfu = property(lambda self: self._overall()["hfu"])
    roofline = property(lambda self: self._slowest()["roofline"])

    def __str__(self):
        return self.text

    def __repr__(self):
        several = f", cores={len(self.figures['cores'])}" if self.several else ""
        return (f"Profile(chip={self.chip!r}{several}, total_ns={self.total_ns:.1f}, "
                f"bound={self.bound!r}, mfu={self.mfu:.4f})")


def run(target, *args, chip=None, set=None, top: int = 10, lnc: int | None = None,
        cores: int | None = None, **kwargs) -> Profile:
    """Profiles ``target`` timing-only on one NeuronCore, as ``trnsim profile`` does; with
    ``lnc`` / ``cores``, on several, as ``trnsim profile --lnc N / --cores N`` does.

    Args:
        target: an example kernel's name (``trnsim run --list``) with its arguments as
            ``args`` (integers in parameter order) or ``kwargs`` (NAME=VALUE); a text program
            file's path; a built :class:`trnsim.kernel.Program`; or an NKI kernel (a function
            or ``@nki.jit`` kernel) with its arrays as ``args`` / ``kwargs`` (one instance: no
            grid).
        chip: the generation (default: the program's or kernel's, else trn2).
        set: spec overrides (``"key=value"`` strings or a dict), as ``--set`` takes them.
        top: instructions listed on the critical path.
        lnc: physical cores per logical core. Alone, the run is one logical core of ``lnc``
            physical cores (an SPMD kernel's programs side by side); with ``cores``, the
            logical cores' size (default: the chip's LNC for an SPMD kernel, else 1).
        cores: physical cores of the chip to run on at once (1 .. chip.cores).
        A built Program or a program file runs a copy on every core. An NKI kernel is profiled
        on one core only.
    """
    from trnsim.kernel import Program, load_chip
    from trnsim.spec import _overrides

    top = min(_check.integer(top, "profile.run: top", 0, None), 1_000_000)
    if lnc is not None:
        lnc = _check.integer(lnc, "profile.run: lnc", 1, 2**31 - 1)
    if cores is not None:
        cores = _check.integer(cores, "profile.run: cores", 1, 2**31 - 1)
    sets = _overrides(set, "profile.run: set")
    if chip is not None:
        chip = _check.name_or_path(chip, "profile.run: chip")
    if isinstance(target, Program):
        if args or kwargs:
            raise TypeError("profile.run: a built Program takes no arguments")
        figures, text = _core.profile_program(load_chip(chip or target.chip or "trn2", sets),
                                              target, top, lnc, cores)
    elif isinstance(target, (str, os.PathLike)):
        target = os.fspath(target)
        if target.endswith(".py"):
            raise ValueError(f"profile.run: {target}: an NKI kernel file is profiled from the "
                             "command line (trnsim profile FILE.py ...); here, pass its kernel "
                             "function and arrays")
        words = [str(_check.integer(a, f"profile.run: args[{i}]")) if not isinstance(a, str)
                 else a for i, a in enumerate(args)]
        words += [f"{k}={_check.integer(v, f'profile.run: {k}')}" for k, v in kwargs.items()]
        figures, text = _core.profile_target(target, words, chip or "trn2", sets, top, lnc,
                                             cores)
    elif callable(target):
        if lnc is not None or cores is not None:
            raise ValueError("profile.run: an NKI kernel is profiled on one core (lnc and cores "
                             "take an example kernel, a program file or a Program)")
        figures, text = _profile_nki(target, args, kwargs, chip, sets, top)
    else:
        raise TypeError(f"profile.run: target: expected a kernel name, a program file, a Program "
                        f"or an NKI kernel, got {type(target).__name__}")
    return Profile(json.loads(figures), text)


def plot(profile: Profile, path) -> None:
    """Draws a profile to ``path`` (``.png`` or ``.svg``; ValueError for another suffix): each
    engine's busy / wait / idle time, its share of the critical path, and the roofline with the
    kernel's point. Needs matplotlib (trnsim/profile_plot.py)."""
    from trnsim.profile_plot import plot as _plot

    _plot(profile, path)


def _profile_nki(kernel, args, kwargs, chip, sets, top):
    """An NKI kernel traced into programs and profiled: one instance, or with a grid the
    instances of its first logical core (nl.nc axes: one per physical core, profiled together
    as `trnsim profile --lnc` does). Other grid axes repeat that work on other program ids:
    the first group stands for them."""
    from trnsim.kernel import load_chip
    from trnsim.nki import Kernel, compile_overrides, target
    from trnsim.nki import _launch

    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel, "nki")
    spec = load_chip(target(chip or k.chip), compile_overrides(k.options) + sets)
    programs, cores, _ = _launch.trace_first_group(k.fn, args, kwargs, spec, k.grid, k.dialect,
                                                   k.options.get("dma_policy"))
    if cores > 1:
        return _core.profile_programs(spec, programs, cores, top)
    return _core.profile_program(spec, programs[0], top)


__all__ = ["Trace", "chrome_json", "write_chrome_trace", "perfetto_trace", "write_trace", "window",
           "summary", "events", "merge", "run", "Profile", "plot"]
