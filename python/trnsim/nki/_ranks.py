"""Running one NKI kernel on several ranks at once (``trnsim.nki.run_ranks``): the kernel is
traced once per rank with that rank's inputs, and the programs run together on the rank run
(``_core.run_ranks``, src/fabric/rank_run.h), where their nki.collectives meet and are priced
on the system's fabric."""

from __future__ import annotations

import inspect
import json

from trnsim import _core
from trnsim.kernel import load_chip
from trnsim.nki import _launch, _torch_io
from trnsim.nki._ctx import NkiError
from trnsim.run import from_bytes, to_bytes

#: The system a generation's ranks run on when the caller names none: one instance of it.
DEFAULT_SYSTEM = {"trn1": "trn1.32xlarge", "trn2": "trn2.48xlarge", "trn3": "trn3-ultraserver-64"}
#: The collective runtime whose algorithm choice prices the collectives by default.
DEFAULT_RUNTIME = "neuron-2.28"


class RankInfo:
    """What a rank's trace knows of the run: its rank, how many there are, and the replica
    groups of the whole run (shared by every rank's trace, so that indices agree)."""

    def __init__(self, rank: int, ranks: int, groups: list):
        self.rank = rank
        self.ranks = ranks
        self.groups = groups  # ReplicaGroup objects; a collective names one by index

    def group_index(self, group) -> int:
        for i, g in enumerate(self.groups):
            if g == group:
                return i
        self.groups.append(group)
        return len(self.groups) - 1


class RankRun(_launch.KernelRun):
    """A kernel run on ranks: KernelRun's fields for the whole run (``figures`` / ``summary``
    of rank 0 and the run), plus ``ranks``: per rank (figures, total_ps, instructions), and
    ``system``: the system the collectives were priced on."""

    def __init__(self):
        super().__init__()
        self.ranks = []
        self.system = ""

    def __repr__(self):
        return (f"RankRun(chip={self.chip}, system={self.system}, ranks={len(self.ranks)}, "
                f"latency_us={self.latency_us:.3f})")


def _call_args(entry, r):
    """(args, kwargs) of rank r from its entry: a dict of keyword arguments, or a tuple /
    list of positional ones."""
    if isinstance(entry, dict):
        return (), dict(entry)
    if isinstance(entry, (tuple, list)):
        return tuple(entry), {}
    raise NkiError(f"run_ranks: inputs[{r}] is {type(entry).__name__}; give each rank's "
                   "arguments as a dict (keywords) or a tuple (positional)")


def launch_ranks(fn, inputs, chip=None, system=None, runtime=None, dialect="nki", trace=True,
                 mode="functional+timing", policy=None, overrides=(), lnc=1):
    """Traces `fn` once per physical core of each rank (inputs[r] its (args, kwargs); program
    id k on core k of a rank of `lnc` cores) and runs the ranks together. Returns (per-rank
    return values, RankRun)."""
    if isinstance(mode, str) and mode not in ("functional+timing", "timing", "functional"):
        raise NkiError(f"mode={mode!r}: use functional+timing, timing or functional")
    spec = load_chip(_launch.target(chip), overrides)
    sys_name = system or DEFAULT_SYSTEM.get(spec.name)
    if sys_name is None:
        raise NkiError(f"run_ranks: no default system for chip {spec.name}: name one "
                       f"(system=, one of {_core.fabric_systems()})")
    try:
        sys_spec = _core.fabric_load_system(str(sys_name))
        rt_spec = _core.fabric_load_runtime(str(runtime or DEFAULT_RUNTIME))
    except ValueError as e:
        raise NkiError(f"run_ranks: {e}") from None
    n = len(inputs)
    if lnc > 1:
        try:
            _core.lnc_degree(spec, lnc, "run_ranks")
        except ValueError as e:
            raise NkiError(f"run_ranks: ranks of {lnc} physical cores: {e}") from None
    groups, programs, traced = [], [], []
    for r, (args, kwargs) in enumerate(inputs):
        for k in range(lnc):  # the rank's cores, program id k (nl.program_id(0)) on core k
            pids, sizes = ((k,), [lnc]) if lnc > 1 else ((), ())
            program, arrays, ret, consts = _launch._trace(
                fn, args, kwargs, spec, pids, sizes, dialect, policy, lnc, k,
                ranks=RankInfo(r, n, groups))
            programs.append(program)
            if k == 0:  # the rank's tensors, as its first core declares them
                traced.append((program, arrays, ret, consts))
    per_rank = []
    for program, arrays, _, consts in traced:
        decl = {name: (f, s) for name, f, s, _ in program.tensors}
        items = [(k, to_bytes(a.reshape(decl[k][1]), decl[k][0], decl[k][1]))
                 for k, a in list(arrays.items()) + list(consts.items())] \
            if mode != "timing" else []
        per_rank.append(items)
    lists = [g.replica_groups for g in groups]
    try:
        outs, figures, total, summary, tr = _core.run_ranks(spec, sys_spec, rt_spec, programs,
                                                            lists, mode, per_rank, trace, lnc)
    except ValueError as e:
        raise NkiError(f"{fn.__name__} on {n} ranks: {e}") from None
    figs = [json.loads(f) for f in figures]
    _launch._check_faults(fn, figs)
    run = RankRun()
    run.chip, run.system = spec.name, str(sys_name)
    run.figures, run.summary, run.trace = figs[0], summary, tr
    run.launch_ps = int(figs[0].get("launch_ps", 0))
    run.execution_ps = int(total)
    run.total_ps = run.execution_ps + run.launch_ps
    run.cores = figs  # per physical core
    for r in range(n):
        mine = figs[r * lnc:(r + 1) * lnc]
        t = max(int(f.get("total_ps", 0)) for f in mine)
        count = sum(p.num_instructions for p in programs[r * lnc:(r + 1) * lnc])
        run.ranks.append((mine[0], t, count))
        run.instances.append(((r,), t, count))
    results = []
    if mode != "timing":
        for (program, arrays, ret, _), got, items in zip(traced, outs, per_rank):
            state = dict(got)
            decl = {name: (f, s) for name, f, s, _ in program.tensors}
            initial = {k: b for k, b in items if k in arrays and not arrays[k].flags.writeable}
            _launch.write_back(fn, arrays, state, decl, initial)
            outputs = {k: from_bytes(bytes(b), decl[k][0], decl[k][1]) for k, b in state.items()
                       if k not in arrays}
            results.append(_launch._returned(ret, outputs, arrays))
    run.outputs = results
    _launch._last = run
    return results, run


def _lnc_of(grid, fn) -> int:
    """The physical cores of a rank from a kernel's launch grid: none (1), kernel[n] or
    kernel[nl.nc(n)] (n: NKI launches a rank's logical core so)."""
    from trnsim.nki.language import nc

    if not grid:
        return 1
    if len(grid) == 1 and (isinstance(grid[0], nc) or type(grid[0]) is int):
        return int(grid[0].n if isinstance(grid[0], nc) else grid[0])
    raise NkiError(f"run_ranks: {fn.__name__}{list(grid)}: a rank is one logical core: launch "
                   "the kernel without a grid or as kernel[n] / kernel[nl.nc(n)] for its n "
                   "physical cores")


def run_ranks(kernel, inputs, *, chip=None, system=None, runtime=None,
              mode="functional+timing", trace=True):
    """Runs `kernel` (an nki.jit kernel or a plain function) on ``len(inputs)`` ranks at once,
    rank r called with ``inputs[r]`` (a dict of keyword arguments or a tuple of positional
    ones), its nki.collectives meeting the other ranks'. Each rank is a logical core of one
    physical core with its own HBM; collectives are priced on `system` (default: one instance
    of the chip's generation, e.g. trn2.48xlarge) with `runtime`'s algorithm choice.

    Returns the list of per-rank return values (numpy arrays; torch in, torch out); the run
    (``trnsim.nki.last_run()``, a RankRun) holds the time, per-rank figures and trace.
    ``kernel[2]`` (or ``kernel[nl.nc(2)]``) makes each rank a logical core of two physical
    cores, program id k on core k, sharing the rank's HBM."""
    fn = getattr(kernel, "fn", kernel)
    lnc = _lnc_of(getattr(kernel, "grid", ()), fn)
    if not callable(fn) or not inspect.isfunction(inspect.unwrap(fn)):
        raise NkiError(f"run_ranks: kernel is {type(kernel).__name__}; expected an NKI kernel")
    dialect = getattr(kernel, "dialect", "nki")
    options = getattr(kernel, "options", {}) or {}
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise NkiError("run_ranks: inputs is a list with one entry per rank (a dict of keyword "
                       "arguments or a tuple of positional ones)")
    calls = [_call_args(entry, r) for r, entry in enumerate(inputs)]
    out, run = launch_ranks(fn, calls, chip or getattr(kernel, "chip", None), system, runtime,
                            dialect, trace, mode, options.get("dma_policy"),
                            _launch.compile_overrides(options), lnc)
    if hasattr(kernel, "last_run"):
        kernel.last_run = run
    if any(_torch_io.is_torch(a) for e in inputs
           for a in (e.values() if isinstance(e, dict) else e)):
        out = [_torch_io.to_torch(o) for o in out]
    return out
