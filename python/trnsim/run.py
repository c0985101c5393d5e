"""Running programs on a simulated NeuronCore: numpy arrays in and out, latency, trace.
``run_spmd`` runs one program per physical core of a logical core (LNC), together;
``run_chip`` the programs of up to all physical cores of a chip, sharing its HBM stacks.

The run itself is C++ (core/timing/timing_run.h); this module converts numpy / ml_dtypes arrays
to the tensors' bytes and back and presents the result.
"""

from __future__ import annotations

import json

import numpy as np

from trnsim import _check, _core
from trnsim._trace_files import write_trace_file
from trnsim.kernel import Program, load_chip
from trnsim.numerics import _container, format_info, numpy_dtype

MODES = ("functional+timing", "timing", "functional")


def host_array(array, what: str) -> np.ndarray:
    """An array the host gives for a tensor, in a dtype trnsim has: bools as uint8 0 / 1,
    other integers (int64, the default of numpy and of Python lists) as float64 when exact,
    big-endian as native; None, strings, objects and complex numbers are refused by name."""
    a = _check.array(array, what)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype.kind == "b":
        a = a.astype(np.uint8)
    elif a.dtype.kind in "iu" and a.dtype.itemsize > 4:
        a = _check.exact_float64(a, what)
    return a


def to_bytes(array, fmt: str, shape, what: str = "array") -> np.ndarray:
    """An array's elements as the bytes of format ``fmt`` (values cast with RNE if needed).
    ``what`` names the array in errors."""
    from trnsim.numerics import cast, format_name

    a = host_array(array, what)
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"{what}: array of shape {a.shape} given for a tensor of shape "
                         f"{tuple(shape)}")
    if format_name(a.dtype, what) != fmt:
        a = cast(a, fmt)
    return np.ascontiguousarray(a).view(np.uint8).reshape(-1)


def from_bytes(data: bytes, fmt: str, shape) -> np.ndarray:
    """Bytes of a tensor as a numpy / ml_dtypes array (raw codes where numpy has no dtype)."""
    info = format_info(fmt)
    item = _container(info).itemsize
    n = int(np.prod(shape)) if len(shape) else 1
    if len(data) != n * item:
        raise ValueError(f"from_bytes: {len(data)} bytes for a {fmt} tensor of shape "
                         f"{tuple(shape)} ({n * item} bytes)")
    a = np.frombuffer(data, dtype=_container(info))
    dt = numpy_dtype(fmt)
    if dt is not None and dt != a.dtype:
        a = a.view(dt)
    return a.reshape(shape).copy()


class RunResult:
    """What one run gives: outputs, simulated latency, figures, and the trace if recorded.

    Attributes:
        outputs: dict tensor name -> numpy array (every non-scratch tensor; functional modes).
        total_ps: simulated time of the run in picoseconds (0 in functional-only mode).
        figures: the timed result as a dict (core/timing/result_json.h: engines, dma, tensor,
            faults).
        summary: the same as text.
        trace: a ``_core.Trace`` (``chrome_json()``, ``summary()``) or None.
    """

    def __init__(self, outputs, figures, summary, trace):
        self.outputs = outputs
        self.figures = figures
        self.summary = summary
        self.trace = trace

    @property
    def total_ps(self) -> int:
        return int(self.figures.get("total_ps", 0))

    @property
    def latency_us(self) -> float:
        return self.total_ps / 1e6

    @property
    def faults(self) -> list:
        return self.figures.get("faults", [])

    @property
    def ok(self) -> bool:
        return not self.faults

    def write_trace(self, path: str) -> None:
        """Writes the trace (open it in ui.perfetto.dev): Chrome JSON to a ``.json`` name,
        Perfetto protobuf to a ``.perfetto-trace`` or ``.pftrace`` one."""
        if self.trace is None:
            raise ValueError("this run recorded no trace: run with trace=True")
        write_trace_file(self.trace, path)

    def __repr__(self):
        return f"RunResult(total_ps={self.total_ps}, outputs={list(self.outputs)}, ok={self.ok})"


def run(program: Program, inputs: dict | None = None, chip=None, mode: str = "functional+timing",
        trace: bool = False) -> RunResult:
    """Runs a built program on one NeuronCore.

    Args:
        program: from ``KernelBuilder.build()``.
        inputs: dict tensor name -> array (cast to the tensor's format with RNE if its dtype
            differs). Tensors not given keep the NaN-filled fresh HBM contents.
        chip: the generation (default: the one the program was built for).
        mode: ``"functional+timing"`` (values and time), ``"timing"`` (time only, no data),
            or ``"functional"`` (values only).
        trace: record the per-instruction trace.
    """
    if not isinstance(program, Program):
        raise TypeError(f"run: program: expected a Program (KernelBuilder.build()), got "
                        f"{type(program).__name__}")
    mode, trace = _mode(mode, "run"), _check.boolean(trace, "run: trace")
    chip = load_chip(chip or program.chip or "trn2")
    decl = {name: (fmt, shape) for name, fmt, shape, _ in program.tensors}
    outs, figures, summary, tr = _core.run_program(chip, program, mode,
                                                   _raw_inputs(decl, inputs, "run"), trace)
    outputs = {n: from_bytes(b, decl[n][0], decl[n][1]) for n, b in outs}
    return RunResult(outputs, json.loads(figures), summary, tr)


def _mode(mode, call):
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"{call}: mode: {mode!r}: use one of {', '.join(MODES)}")
    return mode


def _raw_inputs(decl, inputs, call):
    if inputs is None:
        return []
    if not hasattr(inputs, "items"):
        raise TypeError(f"{call}: inputs: expected a dict {{tensor name: array}}, got "
                        f"{type(inputs).__name__}")
    raw = []
    for name, array in inputs.items():
        if name not in decl:
            raise ValueError(f"{call}: no tensor {name!r} in the program (has {sorted(decl)})")
        fmt, shape = decl[name]
        raw.append((name, to_bytes(array, fmt, shape, f"{call}: input '{name}'")))
    return raw


class SpmdRunResult(RunResult):
    """What a run of several physical cores gives (:func:`run_spmd`, :func:`run_chip`).

    Attributes (besides RunResult's, where ``figures`` is the run's: ``total_ps`` of its
    slowest core, ``instructions`` of all cores, every core's ``faults``):
        cores: each core's figures (core/timing/result_json.h) by physical core.
        lnc: physical cores per logical core (run_chip; None for run_spmd, one logical core).
    """

    def __init__(self, outputs, cores, total_ps, summary, trace):
        faults = [dict(f, core=r) for r, c in enumerate(cores) for f in c.get("faults", [])]
        figures = {"total_ps": int(total_ps), "faults": faults,
                   "instructions": sum(int(c.get("instructions", 0)) for c in cores)}
        super().__init__(outputs, figures, summary, trace)
        self.cores = cores
        self.lnc = None


def run_spmd(programs, inputs: dict | None = None, chip=None, mode: str = "functional+timing",
             trace: bool = False) -> SpmdRunResult:
    """Runs program i on physical core i of one logical core (LNC), all together: one shared
    HBM (every program declares the same tensors), the HBM stack's bandwidth shared, and
    ``core_barrier`` / ``sendrecv`` meeting between the cores. Arguments as for :func:`run`;
    the trace holds core i's tracks under process ``core<i>``."""
    programs = _program_list(programs, "run_spmd", "one per physical core")
    mode, trace = _mode(mode, "run_spmd"), _check.boolean(trace, "run_spmd: trace")
    chip = load_chip(chip or programs[0].chip or "trn2")
    decl = {name: (fmt, shape) for name, fmt, shape, _ in programs[0].tensors}
    outs, cores, total, summary, tr = _core.run_spmd(chip, programs, mode,
                                                     _raw_inputs(decl, inputs, "run_spmd"),
                                                     trace)
    outputs = {n: from_bytes(b, decl[n][0], decl[n][1]) for n, b in outs}
    return SpmdRunResult(outputs, [json.loads(c) for c in cores], total, summary, tr)


def _program_list(programs, call, what):
    if isinstance(programs, Program):
        raise TypeError(f"{call}: programs: expected a list of Programs ({what}), got one "
                        "Program")
    programs = _check.items(programs, f"{call}: programs", f"a list of Programs ({what})")
    if not programs:
        raise ValueError(f"{call}: no program")
    for i, p in enumerate(programs):
        if not isinstance(p, Program):
            raise TypeError(f"{call}: programs[{i}]: expected a Program "
                            f"(KernelBuilder.build()), got {type(p).__name__}")
    return programs


def run_chip(programs, inputs: dict | None = None, chip=None, lnc: int | None = None,
             mode: str = "functional+timing", trace: bool = False) -> SpmdRunResult:
    """Runs program i on physical core i of a chip, all together in one timing run: one shared
    HBM (every program declares the same tensors), core i's HBM traffic through its HBM stack
    (i / cores per stack: chip.cores / chip.hbm.stacks), and ``core_barrier`` / ``sendrecv``
    meeting inside each logical core of ``lnc`` physical cores (cores [g*lnc, (g+1)*lnc)).

    Args:
        programs: one Program per physical core, 1 .. chip.cores of them.
        lnc: physical cores per logical core (default 1); one of the chip's LNC degrees
            (chip.lnc.degrees) that divides the number of programs.
        Others as for :func:`run`. ``total_ps`` is the chip's time, that of its slowest core;
        ``cores`` each core's figures; the trace holds core i's tracks under ``core<i>``.
    """
    programs = _program_list(programs, "run_chip", "one per physical core")
    mode, trace = _mode(mode, "run_chip"), _check.boolean(trace, "run_chip: trace")
    if lnc is not None and (isinstance(lnc, bool) or not isinstance(lnc, (int, np.integer))):
        raise TypeError(f"run_chip: lnc: expected an int (1 or 2), got {type(lnc).__name__}")
    chip = load_chip(chip or programs[0].chip or "trn2")
    lnc = _core.chip_lnc(chip, len(programs), None if lnc is None else int(lnc), 1,
                         "run_chip: programs", "run_chip: lnc")
    decl = {name: (fmt, shape) for name, fmt, shape, _ in programs[0].tensors}
    outs, cores, total, summary, tr = _core.run_chip(chip, programs, lnc, mode,
                                                     _raw_inputs(decl, inputs, "run_chip"),
                                                     trace)
    outputs = {n: from_bytes(b, decl[n][0], decl[n][1]) for n, b in outs}
    result = SpmdRunResult(outputs, [json.loads(c) for c in cores], total, summary, tr)
    result.lnc = lnc
    return result


__all__ = ["run", "run_spmd", "run_chip", "RunResult", "SpmdRunResult", "MODES", "to_bytes",
           "from_bytes"]
