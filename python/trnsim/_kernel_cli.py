"""`trnsim run KERNEL.py [INPUTS...]`, `trnsim check KERNEL.py [INPUTS...]` and `trnsim profile
KERNEL.py [INPUTS...]`: an NKI kernel file from the command line, with the outputs `trnsim run`
gives built-in kernels (summary per chip, chips side by side, --json with a manifest, --trace),
the checks `trnsim check` makes of programs and the profile `trnsim profile` prints. Tracing
and simulating are trnsim.nki's (C++ underneath); this module parses the command, marshals the
inputs and prints. Exit codes as docs/reliability.md: 0 ok, 1 faults or findings, 2 bad input,
3 a bug of trnsim."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile

import numpy as np

from trnsim import _core
from trnsim._files import write_bytes_atomically, write_text_atomically
from trnsim._kernel_file import Inputs, UsageError, location, load, pick
from trnsim._trace_files import FORMATS_HELP, trace_format
from trnsim.numerics import format_name

_COMMANDS = ("run", "check", "profile")
_FILE_OPTIONS = {"--trace", "--save-outputs", "--save-program", "--inputs", "--kernel"}
_MODES = {"functional+timing": "functional+timing", "ft": "functional+timing",
          "default": "functional+timing", "timing": "timing", "functional": "functional"}


def wants(args) -> bool:
    """True for `run` / `check` / `profile` of a .py file: the C++ command takes text programs
    only."""
    return bool(args) and args[0] in _COMMANDS and _kernel_path(args[1:]) is not None


def _kernel_path(args):
    for prev, a in zip([None] + list(args), args):
        if a.endswith(".py") and not a.startswith("-") and prev not in _FILE_OPTIONS:
            return a
    return None


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, as the C++ command's parse errors
        raise UsageError(f"{message} ({self.prog} --help lists the options)")


def _parser(command):
    what = {"run": "Run an NKI kernel file on simulated NeuronCores",
            "check": "Trace an NKI kernel file and check the program for races and deadlocks "
                     "(exit 0 race-free, 1 findings, 2 bad input)",
            "profile": "Trace an NKI kernel file and profile it on one NeuronCore: where each "
                       "engine's time goes, the bound, MFU / HFU, the roofline and the critical "
                       "path (docs/profile.md)"}[command]
    p = _Parser(prog=f"trnsim {command} KERNEL.py",
                description=what + " (docs/nki.md, 'From the command line').")
    p.add_argument("file", help="a Python file with an @nki.jit kernel (`import nki` or "
                   "`from neuronxcc import nki`)")
    p.add_argument("inputs", nargs="*", metavar="INPUT", help="NAME=VALUE or VALUE in parameter "
                   "order; VALUE: FILE.npy, FILE.npz[:KEY], SHAPE[:DTYPE] (random, e.g. "
                   "128x512:bfloat16) or a number")
    p.add_argument("--kernel", help="the kernel (function) to run when the file has several")
    p.add_argument("--inputs", dest="npz", metavar="FILE.npz",
                   help="arrays for the parameters of their names")
    p.add_argument("--chip", action="append", default=[],
                   help="generation(s) (repeatable or comma-separated; default "
                   "$NEURON_PLATFORM_TARGET_OVERRIDE, else the kernel's, else trn2)")
    p.add_argument("--seed", type=_seed, default=0,
                   help="seed of the random inputs (floats uniform in [-1, 1), integers small)")
    p.add_argument("--json", action="store_true", help="the results as JSON, with a manifest")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a spec override, repeatable: a what-if chip, as `trnsim spec --set` "
                   "takes it (trnsim spec --keys lists the keys)")
    if command == "profile":
        p.add_argument("--top", type=int, default=10,
                       help="instructions listed on the critical path (default 10)")
    elif command == "run":
        p.add_argument("--mode", default="functional+timing",
                       help="functional+timing (default), timing, or functional")
        p.add_argument("--trace", help="write a trace to this file: Perfetto protobuf "
                       "(.perfetto-trace, .pftrace) or Chrome JSON (.json)")
        p.add_argument("--save-outputs", metavar="FILE.npz",
                       help="write the kernel's outputs (returned, and arguments it wrote)")
        p.add_argument("--ranks", type=_ranks, default=0, metavar="N",
                       help="run the kernel on N ranks (nki.collectives; LNC=1 each), rank r "
                       "with random inputs of seed SEED + r; a ReplicaGroup parameter left "
                       "out, or given as `ranks`, is all N ranks in one list")
    else:
        if command == "check":
            p.add_argument("--ranks", type=_ranks, default=0, metavar="N",
                           help="check the programs of a collective kernel (nki.collectives) "
                           "traced for N ranks, rank r with the inputs `run --ranks` gives it; "
                           "ranks whose programs are the same are checked once")
        p.add_argument("--save-program", metavar="FILE.s",
                       help="write the traced program (text form) here; findings' lines are "
                       "its lines")
        p.add_argument("--max-instructions", type=int,
                       help="executed instructions (loops unrolled) checked at most")
    return p


def _ranks(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 4096:
        raise argparse.ArgumentTypeError(f"{text}: a number of ranks, 1..4096")
    return n


def _seed(text):
    v = int(text, 0)
    if not 0 <= v < 2**64:
        raise ValueError(text)
    return v


def main(args, plot=None) -> int:
    """``plot``: the file of ``trnsim profile ... --plot FILE`` (trnsim/cli.py takes the option
    off the command line and checks it)."""
    command = args[0]
    try:
        o = _parser(command).parse_intermixed_args(args[1:])
        o.plot = plot
        return {"run": _run, "check": _check, "profile": _profile}[command](
            o, " ".join(["trnsim", *args]))
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    except UsageError as e:
        print(f"trnsim: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("trnsim: interrupted", file=sys.stderr)
        return 130
    except AssertionError as e:  # as the C++ command reports its InternalError
        print(f"trnsim: {e}\ntrnsim: this is a bug in trnsim, not in the input; please report "
              "it with the command line above", file=sys.stderr)
        return 3


def _chips(o, kernel):
    from trnsim.kernel import load_chip
    from trnsim.nki import target

    chips = [c for arg in o.chip for c in arg.split(",") if c] or [target(kernel.chip)]
    for c in chips:
        try:
            load_chip(target(c))
        except (ValueError, TypeError) as e:
            raise UsageError(f"--chip {c}: {e}") from None
        try:
            load_chip(target(c), o.set)
        except (ValueError, TypeError) as e:
            raise UsageError(f"--set: {e}") from None
    return chips


def _prepare(o, values):
    module = load(o.file)
    name, kernel = pick(module, o.file, o.kernel)
    inputs = Inputs(kernel, o.inputs, o.npz, o.seed, values, getattr(o, "ranks", 0))
    return name, kernel, inputs, _chips(o, kernel)


def _manifest(o, command, name, kernel, inputs, chips, mode=None):
    from trnsim._paths import spec_dir

    return {"trnsim": _core.__version__, "command": command,
            "kernel_file": o.file, "kernel": name, "dialect": kernel.dialect,
            "inputs": inputs.manifest(), "chips": chips, "set": o.set, "mode": mode,
            "seed": o.seed,
            "spec_dir": spec_dir()}


class _KernelErrors(contextlib.AbstractContextManager):
    """Errors raised while tracing or running the kernel as UsageErrors `file.py:LINE: message`
    (the kernel's line where the error passed through it)."""

    def __init__(self, file):
        self.file = file

    def __exit__(self, kind, e, tb):
        from trnsim.nki import NkiError

        if e is None or isinstance(e, (UsageError, KeyboardInterrupt, SystemExit)):
            return False
        if isinstance(e, AssertionError) and not _raised_by_user(e):
            return False  # the C++ core's internal errors: a bug, exit 3 (main)
        if isinstance(e, MemoryError):
            raise UsageError("out of host memory (lower the problem size)") from None
        msg = str(e) if isinstance(e, (NkiError, ValueError)) or not _raised_by_user(e) \
            else f"{type(e).__name__}: {e}"
        raise UsageError(f"{location(e) or self.file}: {msg}") from None


def _raised_by_user(e) -> bool:
    tb = e.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_globals.get("__name__", "").split(".")[0] != "trnsim"


# --- run ---

def _run(o, command) -> int:
    mode = _MODES.get(o.mode)
    if mode is None:
        raise UsageError(f"--mode {o.mode}: expected functional+timing, timing or functional")
    if o.trace and mode == "functional":
        raise UsageError(f"--trace {o.trace}: functional-only runs have no time, hence no trace")
    if o.trace and trace_format(o.trace) is None:
        # As the C++ command: the name says the format; another (.ntff) would promise one that
        # is not written.
        raise UsageError(f"--trace {o.trace}: traces are Perfetto protobuf or Chrome JSON: "
                         f"{FORMATS_HELP}; .ntff traces are not written")
    if o.save_outputs and mode == "timing":
        raise UsageError(f"--save-outputs {o.save_outputs}: timing-only runs compute no values")
    name, kernel, inputs, chips = _prepare(o, values=mode != "timing")
    status, runs = 0, []
    for chip in chips:
        r = _run_chip(o, kernel, inputs, chip, mode, several=len(chips) > 1)
        status = max(status, 1 if "fault" in r else 0)
        runs.append(r)
    if o.json:
        doc = {"manifest": _manifest(o, command, name, kernel, inputs, chips, mode),
               "runs": [{k: v for k, v in r.items() if k != "run"} for r in runs]}
        print(json.dumps(doc, indent=2, default=_json_default))
        return status
    print(f"{o.file} {name} on {', '.join(chips)} ({mode}, seed {o.seed})")
    print("inputs: " + ", ".join(_input_text(i) for i in inputs.manifest()) if
          inputs.manifest() else "inputs: none")
    if len(runs) > 1:
        print("\n" + _comparison(runs), end="")
    for r in runs:
        print(f"\n== {r['chip']} ({mode})")
        if "fault" in r:
            print(f"fault: {r['fault']}")
            continue
        print(r["run"].summary, end="" if r["run"].summary.endswith("\n") else "\n")
        if r["outputs"]:
            print("outputs:")
            for s in r["outputs"]:
                print(_stats_text(s))
        for what in ("trace", "saved_outputs"):
            if r.get(what):
                print(f"{what.replace('_', ' ')}: {r[what]}" +
                      (" (open in https://ui.perfetto.dev)" if what == "trace" else ""))
    return status


def _run_chip(o, kernel, inputs, chip, mode, several):
    from trnsim.nki import compile_overrides, launch
    from trnsim.nki._ranks import launch_ranks

    per_rank = inputs.per_rank(o.ranks) if o.ranks else [inputs.arguments()]
    befores = [{k: v.copy() for k, v in arrays.items()} for _, _, arrays in per_rank]
    try:
        with _KernelErrors(o.file):
            opts = dict(trace=bool(o.trace), mode=mode, policy=kernel.options.get("dma_policy"),
                        overrides=compile_overrides(kernel.options) + o.set)
            if o.ranks:
                rets, run = launch_ranks(kernel.fn, [(a, kw) for a, kw, _ in per_rank], chip,
                                         dialect=kernel.dialect, **opts)
            else:
                args, kwargs, _ = per_rank[0]
                ret, run = launch(kernel.fn, args, kwargs, kernel.grid, chip, kernel.dialect,
                                  **opts)
                rets = [ret]
    except RuntimeError as e:  # a simulated hardware fault: the run's finding, exit 1
        if "simulated hardware fault" not in str(e):
            raise
        return {"chip": chip, "mode": mode, "fault": str(e)}
    outputs = {}
    for r, (ret, (_, _, arrays), before) in enumerate(zip(rets, per_rank, befores)):
        prefix = f"rank{r}." if o.ranks else ""
        outputs.update({prefix + k: v for k, v in _flatten("return", ret)})
        for k, v in arrays.items():  # out-parameter kernels: the arguments they wrote
            if not np.array_equal(v, before[k], equal_nan=v.dtype.kind == "f"):
                outputs[prefix + k] = v
    r = {"chip": run.chip, "mode": mode, "run": run, "total_ps": run.total_ps,
         "execution_ps": run.execution_ps, "launch_ps": run.launch_ps,
         "latency_us": run.latency_us, "result": run.figures,
         "outputs": [_stats(k, v) for k, v in outputs.items()]}
    if o.trace:
        r["trace"] = _per_chip(o.trace, run.chip, several)
        with _written("--trace", r["trace"]):
            run.write_trace(r["trace"])
    if o.save_outputs:
        r["saved_outputs"] = _per_chip(o.save_outputs, run.chip, several)
        buf = io.BytesIO()
        np.savez(buf, **{k: _portable(v) for k, v in outputs.items()})
        with _written("--save-outputs", r["saved_outputs"]):
            write_bytes_atomically(r["saved_outputs"], buf.getvalue())
    return r


@contextlib.contextmanager
def _written(option, path):
    try:
        yield
    except (OSError, ValueError) as e:
        raise UsageError(f"{option} {path}: {getattr(e, 'strerror', None) or e}") from None


def _per_chip(path, chip, several):
    """With several chips, out.json becomes out-trn1.json, out-trn2.json (as the C++ run)."""
    if not several:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}-{chip}{ext}"


def _flatten(name, v):
    if isinstance(v, np.ndarray):
        yield name, v
    elif isinstance(v, (tuple, list)):
        for i, x in enumerate(v):
            yield from _flatten(f"{name}{i}" if name == "return" else f"{name}_{i}", x)
    elif isinstance(v, dict):
        for k, x in v.items():
            yield from _flatten(f"{name}_{k}", x)


def _portable(a):
    """ml_dtypes arrays (bfloat16, fp8) as float32, which holds their values exactly: numpy
    alone would read them back from the .npz as opaque bytes."""
    return a.astype(np.float32) if a.dtype.type.__module__.startswith("ml_dtypes") else a


def _stats(name, a):
    v = a.astype(np.float64).ravel()
    finite = v[np.isfinite(v)]
    try:
        fmt = format_name(a.dtype if a.dtype.kind != "b" else np.uint8)
    except (TypeError, ValueError):
        fmt = str(a.dtype)
    return {"name": name, "dtype": fmt, "shape": list(a.shape), "elements": int(a.size),
            "min": float(finite.min()) if finite.size else 0.0,
            "max": float(finite.max()) if finite.size else 0.0,
            "mean": float(finite.mean()) if finite.size else 0.0,
            "nans": int(np.isnan(v).sum()), "infs": int(np.isinf(v).sum())}


def _stats_text(s):
    bad = f"  NaN {s['nans']}  inf {s['infs']}" if s["nans"] + s["infs"] else ""
    return (f"  {s['name']:<12} {s['dtype']:<6} {s['elements']:>10} elements  "
            f"min {s['min']:.6g}  max {s['max']:.6g}  mean {s['mean']:.6g}{bad}")


def _input_text(i):
    if "shape" in i:
        return f"{i['name']} {i['dtype']}[{'x'.join(map(str, i['shape']))}] ({i['source']})"
    return f"{i['name']}={i['value']!r}"


def _comparison(runs):
    """The chips side by side, as `trnsim run K --chip a,b` prints them."""
    rows = [("time (us)", lambda r: f"{r['execution_ps'] * 1e-6:.3f}"),
            ("latency with launch (us)",
             lambda r: f"{r['total_ps'] * 1e-6:.3f}" if r["launch_ps"] else "-"),
            ("TensorE utilisation (%)",
             lambda r: f"{100 * r['result']['tensor']['utilisation']:.2f}"),
            ("TensorE peak (TFLOPS bf16)",
             lambda r: f"{r['result']['tensor']['peak_flops'] * 1e-12:.2f}")]
    for e in ("pe", "dve", "act", "pool", "sp"):
        rows.append((f"{e} busy (%)",
                     lambda r, e=e: f"{r['result']['engines'][e]['busy_percent']:.2f}"))
    rows += [("HBM (GB/s)", lambda r: f"{r['result']['dma']['hbm_gbps']:.1f}"),
             ("instructions", lambda r: str(sum(i[2] for i in r["run"].instances)))]
    ok = [r for r in runs if "fault" not in r]
    for i, s in enumerate(ok[0]["outputs"] if ok else []):
        rows.append((f"{s['name']} mean", lambda r, i=i: f"{r['outputs'][i]['mean']:.6g}"
                     if i < len(r["outputs"]) else "-"))
    out = f"{'':<28}" + "".join(f"{r['chip']:>14}" for r in runs) + "\n"
    for label, cell in rows:
        out += f"{label:<28}" + "".join(
            f"{'fault' if 'fault' in r else cell(r):>14}" for r in runs) + "\n"
    return out


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"{type(x).__name__} is not JSON")


# --- profile ---

def _profile(o, command) -> int:
    from trnsim.kernel import load_chip
    from trnsim.nki import _launch, compile_overrides, target

    if not 0 <= o.top <= 1_000_000:
        raise UsageError(f"--top {o.top}: expected 0 .. 1000000")
    name, kernel, inputs, chips = _prepare(o, values=False)
    if len(chips) != 1:
        raise UsageError(f"--chip {','.join(chips)}: profile one generation at a time")
    args, kwargs, _ = inputs.arguments()
    spec = load_chip(target(chips[0]), compile_overrides(kernel.options) + o.set)
    with _KernelErrors(o.file):
        programs, cores, groups = _launch.trace_first_group(
            kernel.fn, args, kwargs, spec, kernel.grid, kernel.dialect,
            kernel.options.get("dma_policy"))
    if cores > 1:  # its first logical core's instances, as `trnsim profile --lnc` profiles
        figures, text = _core.profile_programs(spec, programs, cores, o.top)
    else:
        figures, text = _core.profile_program(spec, programs[0], o.top)
    doc = json.loads(figures)
    several = "cores" in doc
    if o.json:
        doc["manifest"] = _manifest(o, command, name, kernel, inputs, chips, "timing")
        print(json.dumps(doc, indent=2, default=_json_default))
    else:
        chip = doc["chip"]["name"] if several else doc["chip"]
        what = f" of {cores} cores of one logical core" if several else ""
        note = f"; the first of {groups} groups of its grid" if groups > 1 else ""
        print(f"{o.file} {name} on {chip} (timing profile{what}{note})")
        print(text, end="" if text.endswith("\n") else "\n")
    if o.plot:
        from trnsim.profile_plot import plot

        with _written("--plot", o.plot):
            plot(doc, o.plot)
    faults = [f for c in doc["cores"] for f in c["faults"]] if several else doc["faults"]
    return 1 if faults else 0


# --- check ---

def _check(o, command) -> int:
    from trnsim.kernel import load_chip
    from trnsim.nki import target

    name, kernel, inputs, chips = _prepare(o, values=False)
    status, reports = 0, []
    with tempfile.TemporaryDirectory(prefix="trnsim-check-") as tmp:
        for chip in chips:
            spec = load_chip(target(chip), o.set)
            with _KernelErrors(o.file):
                programs = _check_programs(o, kernel, inputs, spec)
            for ranks, program in programs:
                suffix = "" if ranks is None else _rank_suffix(ranks)
                path = os.path.join(tmp, f"{name}{suffix}.s")
                label = f"{o.file}: {name}" + (f" (ranks {_rank_list(ranks)})" if suffix else "")
                if o.save_program:
                    path = label = _per_chip(_with_suffix(o.save_program, suffix), spec.name,
                                             len(chips) > 1)
                with _written("--save-program", path):
                    write_text_atomically(path, program.text())
                argv = ["check", path, "--chip", target(chip)] + (
                    ["--json"] if o.json else []) + (
                    ["--max-instructions", str(o.max_instructions)]
                    if o.max_instructions else []) + [a for kv in o.set for a in ("--set", kv)]
                rc, out, err = _captured(argv)
                status = max(status, rc)
                sys.stderr.write(err.replace(path, label))
                if o.json and out.strip():  # a report, also of a program too big to check
                    report = json.loads(out)
                    report["program"] = o.save_program and path
                    if ranks is not None:
                        report["ranks"] = ranks
                    reports.append(report)
                else:
                    sys.stdout.write(out.replace(path, label))
    if o.json:
        doc = {"manifest": _manifest(o, command, name, kernel, inputs, chips), "checks": reports}
        print(json.dumps(doc, indent=2, default=_json_default))
    return status


def _check_programs(o, kernel, inputs, spec):
    """[(ranks, program)]: the kernel traced once (ranks None), or with --ranks N once per
    rank, as `run --ranks` traces it, ranks with the same program text together."""
    from trnsim.nki import _launch
    from trnsim.nki._ranks import RankInfo

    policy = kernel.options.get("dma_policy")
    if not o.ranks:
        args, kwargs, _ = inputs.arguments()
        return [(None, _launch._trace(kernel.fn, args, kwargs, spec, (), [], kernel.dialect,
                                      policy)[0])]
    groups, by_text = [], {}
    for r, (args, kwargs, _) in enumerate(inputs.per_rank(o.ranks)):
        program = _launch._trace(kernel.fn, args, kwargs, spec, (), [], kernel.dialect, policy,
                                 ranks=RankInfo(r, o.ranks, groups))[0]
        by_text.setdefault(program.text(), ([], program))[0].append(r)
    return list(by_text.values())


def _rank_suffix(ranks):
    return f".rank{ranks[0]}"


def _rank_list(ranks):
    """0-3, 5 for [0, 1, 2, 3, 5]."""
    runs, start = [], ranks[0]
    for a, b in zip(ranks, ranks[1:] + [None]):
        if b != a + 1:
            runs.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    return ", ".join(runs)


def _with_suffix(path, suffix):
    stem, ext = os.path.splitext(path)
    return f"{stem}{suffix}{ext}"


def _captured(argv):
    """(exit code, stdout, stderr) of the C++ command, whose streams are the process's file
    descriptors 1 and 2 (not sys.stdout): its output is rewritten to name the kernel file."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            rc = _core.cli_main([os.fsencode(a) for a in argv])
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
        out.seek(0)
        err.seek(0)
        return rc, out.read().decode(errors="replace"), err.read().decode(errors="replace")
