"""`trnsim profile` and trnsim.profile.run: where each engine's time goes, the bound, MFU / HFU,
the roofline and the critical path, for the two kernels docs/profile.md analyses by hand."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import trnsim
from trnsim.kernel import KernelBuilder


def run(*args):
    return subprocess.run([sys.executable, "-m", "trnsim", *args], capture_output=True, text=True)


def profile_json(*args):
    r = run("profile", *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_fully_optimized_matmul_is_tensor_bound_with_tensor_on_its_critical_path():
    p = profile_json("matmul_fully_optimized", "--chip", "trn2")
    assert p["chip"] == "trn2"
    assert p["bound"]["verdict"] == "pe"
    assert p["roofline"]["verdict"] == "pe"
    assert p["roofline"]["roof"] == "compute"
    # 2 x 4096 x 8192 x 8192 FLOPs in 7.04 ms against 78.64 TFLOPS (docs/profile.md).
    assert p["roofline"]["flops"] == pytest.approx(2 * 4096 * 8192 * 8192)
    assert p["mfu"] == pytest.approx(0.9926, abs=1e-3)
    assert p["hfu"] >= p["mfu"]
    assert p["total_ns"] == pytest.approx(7.04e6, rel=2e-3)
    pe = p["engines"]["pe"]
    for key in ("busy_ns", "wait_semaphore_ns", "wait_port_ns", "wait_dma_ns", "wait_own_ns",
                "idle_ns"):
        assert key in pe
    # VectorE waits on TensorE's semaphores; ScalarE and SP on TensorE (the hand analysis).
    assert p["engines"]["dve"]["waited_on_ns"]["pe"] == pytest.approx(4.72e6, rel=1e-2)
    assert p["engines"]["act"]["waited_on_ns"]["pe"] == pytest.approx(6.47e6, rel=1e-2)
    cp = p["critical_path"]
    assert cp["time_ns"] == pytest.approx(p["total_ns"])
    assert cp["per_engine_share"]["pe"] > 0.95
    assert sum(cp["per_engine_ns"].values()) == pytest.approx(cp["time_ns"])
    assert cp["top"][0]["name"] == "multiply_moving"
    assert cp["top"][0]["engine"] == "pe"
    assert cp["length"] > 32768 * 0.9
    assert p["manifest"]["target"] == "matmul_fully_optimized"


def test_tiled_matmul_is_bound_by_issuing_dmas_on_scalar_engine():
    p = profile_json("matmul_tiled", "--chip", "trn2")
    assert p["bound"]["verdict"] == "act"
    assert p["roofline"]["verdict"] == "act"
    assert p["total_ns"] == pytest.approx(19.72e6, rel=2e-3)
    # 32,768 DMA triggers x 600 ns on each of ScalarE and SP: the whole run.
    for e in ("act", "sp"):
        assert p["engines"][e]["busy_ns"] == pytest.approx(32768 * 600)
    assert p["engines"]["pe"]["wait_dma_ns"] == pytest.approx(12.7e6, rel=1e-2)
    assert p["mfu"] == pytest.approx(0.3545, abs=1e-3)
    # ScalarE and SP each trigger half the DMAs at the same pace: the path runs through one.
    cp = p["critical_path"]
    share = cp["per_engine_share"]
    assert share.get("act", 0) + share.get("sp", 0) > 0.99
    top = cp["top"][0]
    assert top["name"] == "dma_copy" and top["engine"] in ("act", "sp")
    assert top["count"] > 32000
    # Below the ridge: under the memory roof, though the DMA triggers bound it first.
    assert p["roofline"]["roof"] == "memory"
    assert 0.5 < p["roofline"]["hbm_share"] < 1


def test_text_summary_is_in_readable_units():
    r = run("profile", "matmul_tiled", "--chip", "trn2", "--top", "3")
    assert r.returncode == 0, r.stderr
    assert "total time: 19.73 ms" in r.stdout
    assert "bound: ScalarE" in r.stdout
    assert "MFU 35.43 %" in r.stdout
    assert "critical path:" in r.stdout and "sp 19.57 ms" in r.stdout
    assert "ps)" not in r.stdout  # no raw picoseconds


def test_kernel_arguments_and_overrides_as_trnsim_run_takes_them():
    p = profile_json("matmul_tiled", "m=512", "k=512", "n=512", "--chip", "trn2",
                     "--set", "core.dma.dge_instruction_ns=x0.5")
    assert p["manifest"]["overrides"] == ["core.dma.dge_instruction_ns=x0.5"]
    assert p["roofline"]["flops"] == pytest.approx(2 * 512 ** 3)
    assert p["engines"]["act"]["busy_ns"] == pytest.approx(
        p["engines"]["act"]["instructions"] * 300)


@pytest.mark.parametrize("args, words", [
    (["no_such_kernel"], "no_such_kernel"),
    (["matmul_tiled", "--chip", "trn9"], "trn9"),
    (["matmul_tiled", "--top", "-1"], "--top"),
    (["matmul_tiled", "--set", "core.nope=1"], "core.nope"),
    ([], "TARGET"),
])
def test_bad_input_is_a_clear_error(args, words):
    r = run("profile", *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert words in r.stderr
    assert "Traceback" not in r.stderr


def test_python_api_gives_the_command_figures():
    p = trnsim.profile.run("matmul_fully_optimized", chip="trn2", top=3)
    cli = profile_json("matmul_fully_optimized", "--chip", "trn2", "--top", "3")
    assert p.bound == "pe"
    assert p.total_ns == cli["total_ns"]
    assert p.critical_path == cli["critical_path"]
    assert p.roofline == cli["roofline"]
    assert p.mfu == cli["mfu"] and p.hfu == cli["hfu"]
    assert "critical path" in str(p) and "bound: TensorE" in p.text
    assert len(p.critical_path["top"]) <= 3


def test_python_api_profiles_a_built_program_and_an_nki_kernel():
    kb = KernelBuilder("trn2")
    x = kb.input("x", "bf16", [128, 512])
    out = kb.output("out", "bf16", [128, 512])
    t = kb.sbuf("t", "bf16", [128, 512])
    kb.dma_copy(t, x)
    kb.dma_copy(out, t)
    p = trnsim.profile.run(kb.build())
    assert p.chip == "trn2"
    assert p.critical_path["per_engine_share"]["dma"] > 0.5  # two transfers, one after the other
    assert p.roofline["hbm_bytes"] == 2 * 128 * 512 * 2

    from trnsim import nki
    import trnsim.nki.isa as nisa
    import trnsim.nki.language as nl

    def add(a, b):
        o = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        ta = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray(b.shape, b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a)
        nisa.dma_copy(dst=tb, src=b)
        nisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=nl.add)
        nisa.dma_copy(dst=o, src=ta)
        return o

    a = np.ones((128, 512), np.float32)
    q = trnsim.profile.run(nki.jit(add), a, a, chip="trn3")
    assert q.chip == "trn3"
    assert q.engines["dve"]["instructions"] >= 1
    # SP's two load triggers (the second waits for the first), the second load, the add, the
    # store's trigger and the store.
    assert q.critical_path["length"] == 6
    lanes = q.critical_path["per_engine_share"]
    assert lanes["dma"] > 0.5 and lanes["dve"] > 0 and lanes["sp"] > 0
    assert q.bound == "latency"


def test_python_api_profiles_a_logical_core_and_a_whole_chip():
    p = trnsim.profile.run("matmul_lnc", chip="trn2", lnc=2, top=3)
    chip = p.figures["chip"]
    assert p.several and chip["cores"] == 2 and chip["lnc"] == 2 and chip["logical_cores"] == 1
    assert p.chip == "trn2" and len(p.cores) == 2
    # The chip's time is its slowest core's end, and `trnsim run --lnc 2`'s.
    assert chip["total_ps"] == max(c["total_ps"] for c in p.figures["cores"])
    assert p.total_ns == chip["total_ns"]
    ran = run("run", "matmul_lnc", "--lnc", "2", "--mode", "timing", "--json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["runs"][0]["result"]["total_ps"] == chip["total_ps"]
    # The matmul split over the two cores; MFU over both cores' peak for the chip's time.
    flops = sum(c.roofline["flops"] for c in p.cores)
    assert flops == 2 * 128 * 4096 * 512
    assert p.mfu == pytest.approx(flops / (2 * chip["peak_tflops"] * 1e12 * chip["total_ns"] * 1e-9),
                                  rel=1e-12)
    slowest = p.cores[chip["slowest_core"]]
    assert p.bound == chip["bound"]["verdict"] == slowest.roofline["verdict"]
    assert p.engines == slowest.engines and p.critical_path == slowest.critical_path
    for c in p.cores:
        assert c.critical_path["time_ns"] == pytest.approx(c.total_ns)
        assert "peer" in c.critical_path["released_by"]
        assert c.text.startswith("total time: ")
    assert sum(c.critical_path["released_by"]["peer"] for c in p.cores) > 0
    assert "== core 1 (logical core 0, rank 1, HBM stack 0) ==" in p.text
    assert p.faults == []
    # The same as the command's JSON.
    cli = profile_json("matmul_lnc", "--lnc", "2", "--top", "3")
    assert cli["chip"] == chip and cli["cores"] == p.figures["cores"]

    whole = trnsim.profile.run("matmul_lnc", cores=8)
    assert whole.figures["chip"]["logical_cores"] == 4 and len(whole.cores) == 8
    assert len(whole.figures["chip"]["stacks"]) == 4
    assert whole.mfu == pytest.approx(4 * flops / (8 * chip["peak_tflops"] * 1e12
                                                   * whole.total_ns * 1e-9), rel=1e-12)
    one = trnsim.profile.run("matmul_lnc")
    assert not one.several and one.cores == [one]
    with pytest.raises(ValueError, match="lnc"):
        trnsim.profile.run("matmul_lnc", lnc=3)
    with pytest.raises(ValueError, match="cores"):
        trnsim.profile.run("matmul_lnc", cores=9)


def test_an_nki_kernel_on_a_logical_core_is_profiled_on_its_cores(tmp_path):
    from trnsim import nki
    import trnsim.nki.isa as nisa
    import trnsim.nki.language as nl

    def halves(x, out):
        """Each physical core of the logical core doubles its half of the rows."""
        r = nl.program_id(0)
        t = nl.ndarray((128, x.shape[1]), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[r * 128:(r + 1) * 128])
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[r * 128:(r + 1) * 128], src=t)

    x = np.ones((256, 512), np.float32)
    k = nki.jit(halves)[nl.nc(2)]
    p = trnsim.profile.run(k, x, np.zeros_like(x), chip="trn2")
    assert p.several and len(p.cores) == 2 and p.figures["chip"]["lnc"] == 2
    # The profile's time is the launch's: both cores together, the slowest one's end.
    k(x, np.zeros_like(x))
    assert p.figures["chip"]["total_ps"] == k.last_run.execution_ps
    for c in p.cores:  # each core's path names the kernel's lines
        assert any(it["source"].endswith(".py:" + str(it["line"])) and it["line"] > 0
                   for it in c.critical_path["top"])

    f = tmp_path / "lnc.py"
    f.write_text(textwrap.dedent("""
        import nki
        import nki.isa as nisa
        import nki.language as nl


        def halves(x, out):
            r = nl.program_id(0)
            t = nl.ndarray((128, x.shape[1]), nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[r * 128:(r + 1) * 128])
            nisa.dma_copy(dst=out[r * 128:(r + 1) * 128], src=t)


        kernel = nki.jit(halves)[nl.nc(2)]
        """))
    r = run("profile", str(f), "256x64:float32", "256x64:float32", "--kernel", "kernel",
            "--chip", "trn2")
    assert r.returncode == 0, r.stderr
    assert "(timing profile of 2 cores of one logical core)" in r.stdout, r.stdout
    assert "== core 1 (logical core 0, rank 1, HBM stack 0) ==" in r.stdout


def test_python_api_refuses_what_it_cannot_profile():
    with pytest.raises(TypeError, match="profile.run: target"):
        trnsim.profile.run(42)
    with pytest.raises(ValueError, match="no_such_kernel"):
        trnsim.profile.run("no_such_kernel")
    with pytest.raises(TypeError, match="top"):
        trnsim.profile.run("matmul_tiled", top="3")
    with pytest.raises(ValueError, match="command line"):
        trnsim.profile.run("kernel.py")


def test_nki_kernel_file_from_the_command_line(tmp_path):
    f = tmp_path / "k.py"
    f.write_text(textwrap.dedent("""
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
        """))
    r = run("profile", str(f), "128x512:bfloat16", "128x512:bfloat16", "--chip", "trn2",
            "--json")
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)
    assert p["chip"] == "trn2"
    assert p["manifest"]["kernel"] == "add"
    assert p["critical_path"]["length"] >= 4
    assert set(p["engines"]) == {"pe", "dve", "act", "pool", "sp"}
    text = run("profile", str(f), "128x512:bfloat16", "128x512:bfloat16")
    assert text.returncode == 0, text.stderr
    assert "add on trn2 (timing profile)" in text.stdout and "critical path" in text.stdout
    two = run("profile", str(f), "128x512:bfloat16", "128x512:bfloat16", "--chip", "trn1,trn2")
    assert two.returncode == 2 and "one generation" in two.stderr
