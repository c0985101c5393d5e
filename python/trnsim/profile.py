"""Traces of timed runs (src/profile): Chrome / Perfetto JSON, text summaries, merging.

A trace comes from ``trnsim.run.run(..., trace=True).trace`` or an NKI launch
(``trnsim.nki.last_run().trace``); it holds one span per executed instruction on per-engine
and per-DMA-queue tracks. Everything here is C++ (profile/chrome_trace.h, summary.h).
"""

from __future__ import annotations

import json

from trnsim import _core
from trnsim._files import write_text_atomically

Trace = _core.Trace


def chrome_json(trace: Trace) -> str:
    """The trace as Chrome / Perfetto trace-event JSON (ui.perfetto.dev opens it); identical
    traces give byte-identical text."""
    return trace.chrome_json()


def write_chrome_trace(trace: Trace, path: str) -> None:
    """Writes the trace as Chrome / Perfetto JSON to ``path``."""
    write_text_atomically(path, trace.chrome_json())


def summary(trace: Trace, top: int = 10) -> str:
    """Per track: spans, busy time and its share of the span; then the `top` labels by time."""
    return trace.summary(top)


def events(trace: Trace) -> list:
    """The trace's events as Python dicts (name, ph, ts in microseconds, dur, pid, tid, args)."""
    doc = json.loads(trace.chrome_json())
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def merge(traces, offsets_ps, processes) -> Trace:
    """Several runs' traces in one, each shifted by its offset (picoseconds): SPMD instances
    or cores side by side. ``processes[i]`` names run i's process (a str), or renames its
    processes (a dict: ``{"core0": "nc0"}`` also turns "core0 dma" into "nc0 dma")."""
    return _core.merge_traces(list(traces), [int(o) for o in offsets_ps], list(processes))


__all__ = ["Trace", "chrome_json", "write_chrome_trace", "summary", "events", "merge"]
