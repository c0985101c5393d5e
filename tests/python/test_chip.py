"""A whole chip from Python and the CLI: trnsim.run.run_chip and `trnsim run --cores N`
(every physical core in one timing run, sharing the HBM stacks; chip/chip_run.h), and where
NKI launch grids put their instances (docs/nki.md, Logical cores)."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim import kernel
from trnsim.run import run, run_chip

ROWS, COLS = 128, 16384  # 8 MiB of fp32
TRN2_HBM_GBPS = 2900


def big_load(chip):
    """One dma_copy of an 8 MiB HBM tensor into SBUF."""
    kb = kernel.KernelBuilder(chip)
    x = kb.input("x", "fp32", [ROWS, COLS])
    t = kb.sbuf("t", "fp32", [ROWS, COLS])
    kb.dma_copy(t, x)
    return kb.build()


def trn2_at(scale):
    # Without descriptor time: it runs at the stack-bound rate too (docs/timing.md "DMA"), which
    # would blur the fixed costs this test separates from the bytes.
    return kernel.load_chip("trn2", {"chip.hbm.bandwidth_gbps": TRN2_HBM_GBPS * scale,
                                     "core.dma.descriptor_overhead_ns": 0})


def test_eight_cores_share_the_stacks_and_follow_the_hbm_bandwidth():
    times = {}
    for scale in (0.25, 0.5, 1.0, 2.0):
        chip = trn2_at(scale)
        r = run_chip([big_load(chip)] * 8, chip=chip, mode="timing")
        assert r.ok and len(r.cores) == 8 and r.lnc == 1
        assert r.total_ps == max(c["total_ps"] for c in r.cores)
        times[scale] = r.total_ps
    alone = run(big_load(trn2_at(1.0)), chip=trn2_at(1.0), mode="timing").total_ps
    # Two cores per stack: 362.5 GB/s each at 1x (one core alone gets its engines' 368).
    assert times[1.0] > alone
    assert times[2.0] == alone  # the engines bind, not the stack
    # HBM-bound below 1x: the transfer (time less the fixed costs) doubles as bandwidth halves.
    fixed = alone - ROWS * COLS * 4 * 1e12 / 368e9
    assert (times[0.25] - fixed) / (times[0.5] - fixed) == pytest.approx(2.0, rel=1e-4)
    assert (times[0.5] - fixed) / (times[1.0] - fixed) == pytest.approx(2.0, rel=1e-4)


def pair_swap(chip, rank):
    """Core `rank` of a logical core of two loads its half of x, trades it with the other core
    and stores what it received into its half of y."""
    kb = kernel.KernelBuilder(chip)
    x = kb.input("x", "fp32", [256, 64])
    y = kb.output("y", "fp32", [256, 64])
    a = kb.sbuf("a", "fp32", [128, 64])
    b = kb.sbuf("b", "fp32", [128, 64])
    kb.dma_copy(a, x[rank * 128:(rank + 1) * 128])
    kb.sendrecv(b, a, send_to_rank=1 - rank, recv_from_rank=1 - rank)
    kb.dma_copy(y[rank * 128:(rank + 1) * 128], b)
    return kb.build()


def test_run_chip_logical_cores_of_two_trade_inside_their_pair(rng):
    x = rng.standard_normal((256, 64)).astype(np.float32)
    programs = [pair_swap("trn2", r % 2) for r in range(8)]
    r = run_chip(programs, {"x": x}, chip="trn2", lnc=2, trace=True)
    assert r.ok and r.lnc == 2 and len(r.cores) == 8
    np.testing.assert_array_equal(r.outputs["y"], np.concatenate([x[128:], x[:128]]))
    assert r.summary.startswith("chip of 8 physical cores (4 logical cores of LNC=2)")
    procs = {e["args"]["name"] for e in json.loads(r.trace.chrome_json())["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert {f"core{i}" for i in range(8)} <= procs
    # Deterministic: the same run again gives the same figures.
    again = run_chip(programs, {"x": x}, chip="trn2", lnc=2)
    assert [c["total_ps"] for c in again.cores] == [c["total_ps"] for c in r.cores]


def test_run_chip_bad_input_names_the_argument_and_key():
    p = big_load("trn2")
    with pytest.raises(ValueError, match=r"run_chip: programs.*chip\.cores.*trn2 has 8"):
        run_chip([p] * 9, chip="trn2", mode="timing")
    with pytest.raises(ValueError, match=r"run_chip: lnc.*LNC=2 does not divide 3 cores"):
        run_chip([p] * 3, chip="trn2", lnc=2, mode="timing")
    with pytest.raises(ValueError, match=r"run_chip: lnc.*chip\.lnc\.degrees"):
        run_chip([p] * 8, chip="trn2", lnc=4, mode="timing")
    with pytest.raises(ValueError, match=r"chip\.cores.*trn1 has 2"):
        run_chip([big_load("trn1")] * 4, chip="trn1", mode="timing")
    with pytest.raises(TypeError, match="run_chip: lnc"):
        run_chip([p] * 2, chip="trn2", lnc="2")
    with pytest.raises(TypeError, match="one Program"):
        run_chip(p, chip="trn2")
    with pytest.raises(ValueError, match="no program"):
        run_chip([], chip="trn2")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "trnsim", "run", *args], capture_output=True,
                          text=True, timeout=300)


def cli_total(*args):
    p = cli(*args, "--mode", "timing", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["runs"][0]


def test_cli_cores_runs_the_whole_chip_and_bandwidth_matters():
    one = cli_total("softmax", "--chip", "trn2")["result"]["total_ps"]
    runs = {s: cli_total("softmax", "--chip", "trn2", "--cores", "8", "--set",
                         f"chip.hbm.bandwidth_gbps={TRN2_HBM_GBPS * s}") for s in (0.5, 1, 2)}
    for r in runs.values():
        assert r["lnc"] == 1 and r["physical_cores"] == 8 and len(r["cores"]) == 8
        assert r["result"]["total_ps"] == max(c["total_ps"] for c in r["cores"])
    t = {s: r["result"]["total_ps"] for s, r in runs.items()}
    assert t[0.5] > t[1] >= t[2] == one
    # matmul_lnc on four logical cores of two: each pair as one logical core alone (at 1x
    # every pair has a stack of its own).
    pair = cli_total("matmul_lnc", "128", "4096", "512", "--chip", "trn2", "--lnc", "2")
    chip = cli_total("matmul_lnc", "128", "4096", "512", "--chip", "trn2", "--cores", "8")
    assert chip["lnc"] == 2 and chip["result"]["total_ps"] == pair["result"]["total_ps"]


@pytest.mark.parametrize("args, message", [
    (("--cores", "9"), r"--cores: 'chip\.cores': 9 cores: trn2 has 8"),
    (("--cores", "3", "--lnc", "2"), r"--lnc: .*LNC=2 does not divide 3 cores"),
    (("--cores", "8", "--lnc", "4"), r"--lnc: 'chip\.lnc\.degrees'"),
    (("--cores", "0"), r"--cores: 'chip\.cores'"),
])
def test_cli_cores_bad_input(args, message):
    p = cli("matmul_lnc", "--chip", "trn2", *args)
    assert p.returncode != 0
    assert re.search(message, p.stderr), p.stderr


def test_nki_nc_axis_picks_the_physical_core_and_other_axes_run_in_sequence(rng):
    """kernel[nl.nc(2), 2] as the nki.language.nc docs lay it out: physical core 0 runs
    instances (0, 0) and (0, 1), core 1 runs (1, 0) and (1, 1); the two cores run at the same
    time, each core's instances one after the other."""
    x = rng.standard_normal((512, 64)).astype(np.float32)
    out = np.zeros_like(x)

    def blocks(x, out):
        b = nl.program_id(0) * 2 + nl.program_id(1)
        t = nl.ndarray((128, x.shape[1]), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[b * 128:(b + 1) * 128])
        nisa.dma_copy(dst=out[b * 128:(b + 1) * 128], src=t)

    k = nki.jit(blocks)
    k[nl.nc(2), 2](x, out)
    np.testing.assert_array_equal(out, x)
    run = k.last_run
    assert [ids for ids, _ in run.groups] == [[(0, 0), (1, 0)], [(0, 1), (1, 1)]]
    procs = {e["args"]["name"] for e in json.loads(run.trace.chrome_json())["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert {"nc0 pid[0, 0]", "nc0 pid[0, 1]", "nc1 pid[1, 0]", "nc1 pid[1, 1]"} <= procs
    assert run.execution_ps == sum(t for _, t in run.groups)  # one launch for all
