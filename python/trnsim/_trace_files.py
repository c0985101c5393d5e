"""Trace files by name (as the C++ CLI decides, profile/perfetto_trace.h): ``.json`` is Chrome
JSON, ``.perfetto-trace`` / ``.pftrace`` Perfetto protobuf; ui.perfetto.dev opens both. Any
other name is refused: a ``.ntff`` would promise neuron-profile's format."""

from __future__ import annotations

from trnsim._files import write_bytes_atomically, write_text_atomically

JSON_SUFFIXES = (".json",)
PERFETTO_SUFFIXES = (".perfetto-trace", ".pftrace")
FORMATS_HELP = ("name the file .json (Chrome JSON) or .perfetto-trace / .pftrace (Perfetto "
                "protobuf); ui.perfetto.dev opens both")


def trace_format(path) -> str | None:
    """"json", "perfetto", or None for a name that is neither."""
    name = str(path)
    if name.endswith(JSON_SUFFIXES):
        return "json"
    if name.endswith(PERFETTO_SUFFIXES):
        return "perfetto"
    return None


def check_trace_name(path) -> str:
    """The format of ``path``; ValueError naming both formats when it has neither's suffix."""
    fmt = trace_format(path)
    if fmt is None:
        raise ValueError(f"{path}: traces are Perfetto protobuf or Chrome JSON: {FORMATS_HELP}")
    return fmt


def write_trace_file(trace, path) -> None:
    """Writes a ``_core.Trace`` to ``path`` in the format its name says."""
    if check_trace_name(path) == "json":
        write_text_atomically(path, trace.chrome_json())
    else:
        write_bytes_atomically(path, trace.perfetto_trace())
