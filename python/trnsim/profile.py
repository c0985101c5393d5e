"""Traces of timed runs (src/profile): Chrome / Perfetto JSON, text summaries, merging.

A trace comes from ``trnsim.run.run(..., trace=True).trace`` or an NKI launch
(``trnsim.nki.last_run().trace``); it holds one span per executed instruction on per-engine
and per-DMA-queue tracks. Everything here is C++ (profile/chrome_trace.h, summary.h).
"""

from __future__ import annotations

import json

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


__all__ = ["Trace", "chrome_json", "write_chrome_trace", "summary", "events", "merge"]
