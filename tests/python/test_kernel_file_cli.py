"""`trnsim run KERNEL.py` / `trnsim check KERNEL.py`: NKI kernel files from the command line,
through the real command (python -m trnsim) as a user runs it."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

CURRENT = """
import nki
import nki.isa as nisa
import nki.language as nl


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
"""

LEGACY = """
from neuronxcc import nki
import neuronxcc.nki.language as nl


@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a) + nl.load(b))
    return out


if __name__ == "__main__":
    raise SystemExit("the command must not run the file's main block")
"""

# An out-parameter kernel with a scalar parameter: its output is the argument it writes.
SCALE = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scale(x, out, factor=2.0):
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=factor)
    nisa.dma_copy(dst=out, src=t)
"""

TWO = """
import nki


@nki.jit
def f(a):
    return 1 / 0


@nki.jit
def g(a):
    assert a.shape[0] <= 128, "a: at most 128 rows"
"""

# A collective kernel: it runs on ranks (--ranks), its ReplicaGroup every rank by default.
RANKS = """
import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl
from nki.collectives import ReplicaGroup


@nki.jit
def gather(x, group: ReplicaGroup):
    src = nl.ndarray(x.shape, x.dtype, buffer=nl.hbm)
    dst = nl.ndarray((x.shape[0] * 4, x.shape[1]), x.dtype, buffer=nl.hbm)
    out = nl.ndarray(dst.shape, x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=x)
    ncc.all_gather(srcs=[src], dsts=[dst], replica_group=group, collective_dim=0)
    nisa.dma_copy(dst=out, src=dst)
    return out
"""


def trnsim(cwd, *args):
    return subprocess.run([sys.executable, "-m", "trnsim", *args], capture_output=True,
                          text=True, cwd=cwd)


@pytest.fixture
def files(tmp_path):
    for name, text in (("k.py", CURRENT), ("legacy.py", LEGACY), ("scale.py", SCALE),
                       ("two.py", TWO), ("syntax.py", "import nki\ndef f(:\n"),
                       ("ranks.py", RANKS),
                       ("none.py", "x = 1\n")):
        (tmp_path / name).write_text(textwrap.dedent(text))
    rng = np.random.default_rng(7)
    a = rng.standard_normal((128, 512)).astype(np.float32)
    b = rng.standard_normal((128, 512)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    np.save(tmp_path / "i64.npy", np.arange(8))
    x = rng.standard_normal((128, 64)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x, out=np.zeros_like(x))
    np.savez(tmp_path / "extra.npz", x=x, out=np.zeros_like(x), y=x)
    return tmp_path


@pytest.mark.parametrize("kernel", ["k.py", "legacy.py"])
def test_both_dialects_run_with_npy_inputs_and_save_the_sum(files, kernel):
    r = trnsim(files, "run", kernel, "a=a.npy", "b=b.npy", "--save-outputs", "out.npz")
    assert r.returncode == 0, r.stderr
    assert f"{kernel} add on trn2 (functional+timing, seed 0)" in r.stdout
    assert "== trn2 (functional+timing)" in r.stdout and "total time:" in r.stdout
    assert "outputs:\n  return       fp32" in r.stdout
    want = np.load(files / "a.npy") + np.load(files / "b.npy")
    np.testing.assert_array_equal(np.load(files / "out.npz")["return"], want)


def test_random_inputs_follow_the_seed_and_positions(files):
    def mean(*args):
        r = trnsim(files, "run", "k.py", *args, "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["runs"][0]["outputs"][0]["mean"]

    assert mean("128x512:float32", "128x512") == mean("a=128x512", "b=128x512:float32")
    assert mean("128x512", "128x512", "--seed", "1") != mean("128x512", "128x512")


def test_npz_inputs_scalar_and_written_argument(files):
    x = np.load(files / "in.npz")["x"]
    r = trnsim(files, "run", "scale.py", "--inputs", "in.npz", "factor=0.5",
               "--save-outputs", "s.npz")
    assert r.returncode == 0, r.stderr
    assert "factor=0.5" in r.stdout
    np.testing.assert_array_equal(np.load(files / "s.npz")["out"], x * np.float32(0.5))
    r = trnsim(files, "run", "scale.py", "x=in.npz", "out=in.npz:out", "--save-outputs", "t.npz")
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(files / "t.npz")["out"], x * np.float32(2.0))


def test_bfloat16_outputs_are_saved_as_float32(files):
    r = trnsim(files, "run", "legacy.py", "128x512:bfloat16", "128x512:bfloat16", "--mode",
               "functional", "--save-outputs", "o.npz")
    assert r.returncode == 0, r.stderr
    assert "return       bf16" in r.stdout
    assert np.load(files / "o.npz")["return"].dtype == np.float32


def test_json_manifest_and_several_chips(files):
    r = trnsim(files, "run", "k.py", "a=128x512", "b=b.npy", "--chip", "trn1,trn2", "--seed",
               "3", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    m = doc["manifest"]
    assert m["command"] == "trnsim run k.py a=128x512 b=b.npy --chip trn1,trn2 --seed 3 --json"
    assert (m["kernel_file"], m["kernel"], m["dialect"]) == ("k.py", "add", "nki")
    assert (m["chips"], m["seed"], m["mode"]) == (["trn1", "trn2"], 3, "functional+timing")
    assert m["inputs"] == [
        {"name": "a", "shape": [128, 512], "dtype": "float32", "source": "128x512"},
        {"name": "b", "shape": [128, 512], "dtype": "float32", "source": "b.npy"}]
    assert [run["chip"] for run in doc["runs"]] == ["trn1", "trn2"]
    for run in doc["runs"]:
        assert run["total_ps"] > 0 and run["result"]["total_ps"] > 0
        (out,) = run["outputs"]
        assert out["name"] == "return" and out["nans"] == 0 and out["elements"] == 128 * 512
        assert -6 < out["min"] <= out["mean"] <= out["max"] < 6


def test_text_comparison_of_several_chips(files):
    r = trnsim(files, "run", "k.py", "128x512", "128x512", "--chip", "trn1", "--chip", "trn3")
    assert r.returncode == 0, r.stderr
    assert "trn1          trn3" in r.stdout and "return mean" in r.stdout
    assert "== trn1" in r.stdout and "== trn3" in r.stdout


def test_trace_files_are_perfetto_json(files):
    r = trnsim(files, "run", "k.py", "128x512", "128x512", "--trace", "t.json")
    assert r.returncode == 0, r.stderr
    assert "trace: t.json" in r.stdout
    events = json.loads((files / "t.json").read_text())
    assert (events["traceEvents"] if isinstance(events, dict) else events)
    r = trnsim(files, "run", "k.py", "128x512", "128x512", "--trace", "t.json", "--chip",
               "trn1,trn2", "--mode", "timing")
    assert r.returncode == 0, r.stderr
    for chip in ("trn1", "trn2"):
        json.loads((files / f"t-{chip}.json").read_text())


def test_check_traces_and_runs_the_race_checker(files):
    r = trnsim(files, "check", "legacy.py", "128x512", "128x512", "--chip", "trn1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("legacy.py: add: race-free on trn1")
    r = trnsim(files, "check", "k.py", "128x512", "b=b.npy", "--json", "--save-program", "k.s")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["manifest"]["kernel"] == "add" and doc["checks"][0]["race_free"]
    assert doc["checks"][0]["program"] == "k.s"
    assert ".tensor a hbm fp32 [128, 512]" in (files / "k.s").read_text()


def test_check_of_a_program_too_big_to_check_exits_2_with_its_report(files):
    r = trnsim(files, "check", "k.py", "128x512", "128x512", "--max-instructions", "1")
    assert r.returncode == 2 and "k.py: add: not checked on trn2" in r.stdout, r
    r = trnsim(files, "check", "k.py", "128x512", "128x512", "--max-instructions", "1", "--json")
    assert r.returncode == 2 and json.loads(r.stdout)["checks"][0]["checked"] is False


ERRORS = [  # (command, expected in stderr)
    (["run", "k.py", "a=128x512"], "add: no input for parameter(s) b"),
    (["run", "k.py", "128x512", "128x512", "c=1"], "c: no such parameter; add takes a, b"),
    (["run", "k.py", "128x512", "128x512", "5"], "5: add takes 2 input(s) (a, b)"),
    (["run", "k.py", "a=128x512", "128x512"], "a positional input after NAME=VALUE"),
    (["run", "k.py", "a=128x512", "b=12x:float32"], "b=12x:float32: expected FILE.npy"),
    (["run", "k.py", "a=128x512", "b=128x512:float99"], "b: unknown dtype 'float99'"),
    (["run", "k.py", "a=128x512", "b=i64.npy"], "b=i64.npy: int64 has no NKI dtype"),
    (["run", "k.py", "a=128x512", "b=nope.npy"], "b=nope.npy: cannot read it"),
    (["run", "k.py", "a=128x512", "b=in.npz"], "b=in.npz: holds 2 arrays; name one"),
    (["run", "k.py", "a=128x512", "b=in.npz:q"], "b=in.npz: no array 'q' (it holds x, out)"),
    (["run", "scale.py", "--inputs", "extra.npz"], "array 'y' names no parameter of scale"),
    (["run", "k.py", "a=128x512", "b=64x512"], "k.py:14: tensor_tensor: shape"),
    (["run", "legacy.py", "256x512", "256x512"], "legacy.py:9: sbuf('tile'): 256 partitions"),
    (["run", "two.py", "1"], "two.py: defines 2 kernels (f, g); pick one with --kernel"),
    (["run", "two.py", "1", "--kernel", "h"], "--kernel h: no such kernel (the file's kernels"),
    (["run", "two.py", "1", "--kernel", "f"], "two.py:7: ZeroDivisionError: division by zero"),
    (["run", "two.py", "256x4", "--kernel", "g"], "two.py:12: AssertionError: a: at most 128"),
    (["run", "none.py"], "none.py: defines no @nki.jit kernel"),
    (["run", "syntax.py"], "syntax.py:2: SyntaxError"),
    (["run", "missing.py"], "missing.py: no such file"),
    (["run", "k.py", "1", "2", "--chip", "trn9"], "--chip trn9:"),
    (["run", "k.py", "1", "2", "--mode", "fast"], "--mode fast: expected functional+timing"),
    (["run", "k.py", "1", "2", "--bogus"], "unrecognized arguments: --bogus"),
    (["run", "k.py", "1", "2", "--mode", "functional", "--trace", "t.json"],
     "functional-only runs have no time"),
    (["run", "k.py", "1", "2", "--mode", "timing", "--save-outputs", "o.npz"],
     "timing-only runs compute no values"),
    (["check", "legacy.py", "256x512", "256x512"], "legacy.py:9: sbuf('tile'): 256 partitions"),
]


@pytest.mark.parametrize("args,message", ERRORS, ids=[" ".join(a) for a, _ in ERRORS])
def test_user_mistakes_are_one_line_and_exit_2(files, args, message):
    r = trnsim(files, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith("trnsim: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert message in r.stderr


def test_help_and_plain_programs_still_reach_the_cpp_command(files):
    r = trnsim(files, "run", "k.py", "--help")
    assert r.returncode == 0 and "--save-outputs" in r.stdout
    r = trnsim(files, "run", "prog.s")
    assert r.returncode == 2 and "prog.s" in r.stderr  # the C++ command's own message


def test_set_runs_the_kernel_on_a_what_if_chip(files):
    def total_ps(*args):
        r = trnsim(files, "run", "k.py", "128x4096", "128x4096", "--mode", "timing", "--json",
                   *args)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        return doc["manifest"]["set"], doc["runs"][0]["total_ps"]

    base_set, base = total_ps()
    slow_set, slow = total_ps("--set", "core.dma.engine_bandwidth_practical_gbps=5")
    assert base_set == [] and slow_set == ["core.dma.engine_bandwidth_practical_gbps=5"]
    assert slow > 2 * base  # DMA-bound: a quarter of the engines' rate
    r = trnsim(files, "run", "k.py", "128x512", "128x512", "--set", "core.no_such_key=1")
    assert r.returncode == 2 and "--set" in r.stderr and "no_such_key" in r.stderr
    r = trnsim(files, "check", "k.py", "128x512", "128x512", "--set",
               "core.dma.engine_bandwidth_practical_gbps=5")
    assert r.returncode == 0, r.stderr


def test_ranks_run_a_collective_kernel_with_inputs_per_rank(files):
    r = trnsim(files, "run", "ranks.py", "x=8x16", "--ranks", "4", "--save-outputs", "o.npz",
               "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [o["name"] for o in doc["runs"][0]["outputs"]] == [f"rank{k}.return" for k in range(4)]
    saved = np.load(files / "o.npz")
    # Every rank gathers the four ranks' inputs, each drawn from seed + rank: all different.
    blocks = saved["rank0.return"].reshape(4, 8, 16)
    assert all(not np.array_equal(blocks[0], blocks[k]) for k in range(1, 4))
    for k in range(1, 4):
        np.testing.assert_array_equal(saved[f"rank{k}.return"], saved["rank0.return"])
    text = trnsim(files, "run", "ranks.py", "x=8x16", "group=ranks", "--ranks", "4")
    assert text.returncode == 0 and "4 ranks (logical cores of LNC=1)" in text.stdout


def test_check_a_collective_kernel_traced_for_its_ranks(files):
    r = trnsim(files, "check", "ranks.py", "x=8x16", "--ranks", "4", "--save-program", "g.s")
    assert r.returncode == 0, r.stderr
    # Every rank traces the same program (inputs of one shape): checked once, saved once.
    assert "(ranks 0-3)" not in r.stdout and "race-free" in r.stdout
    assert (files / "g.rank0.s").exists() and "collective" in (files / "g.rank0.s").read_text()
    doc = json.loads(trnsim(files, "check", "ranks.py", "x=8x16", "--ranks", "4",
                            "--json").stdout)
    assert [c["ranks"] for c in doc["checks"]] == [[0, 1, 2, 3]]
    r = trnsim(files, "check", "ranks.py", "x=8x16")
    assert r.returncode == 2 and "--ranks N" in r.stderr


def test_a_replica_group_parameter_needs_ranks(files):
    r = trnsim(files, "run", "ranks.py", "x=8x16")
    assert r.returncode == 2 and "--ranks N" in r.stderr
    r = trnsim(files, "run", "ranks.py", "x=8x16", "--ranks", "0")
    assert r.returncode == 2 and "--ranks" in r.stderr
