"""Launching NKI kernels on trnsim: entry points (jit, simulate, simulate_kernel, baremetal,
benchmark, profile), SPMD grids and LNC=2, shared HBM, the target generation, tile sizes,
the import aliases and traces."""

import importlib
import json
import sys

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


def double_rows(x, out):
    """Each instance doubles its 128-row slice of x into out (shared HBM)."""
    i = nl.program_id(0)
    t = nl.ndarray((128, x.shape[1]), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out[i * 128:(i + 1) * 128], src=t)


def test_spmd_grid_shares_hbm_and_sums_latency(rng):
    x = rng.standard_normal((512, 64)).astype(np.float32)
    out = np.zeros_like(x)
    k = nki.jit(double_rows)
    k[4](x, out)
    np.testing.assert_array_equal(out, 2 * x)
    run = k.last_run
    assert len(run.instances) == 4 and [p for p, _, _ in run.instances] == [(0,), (1,), (2,), (3,)]
    assert run.execution_ps == sum(t for _, t, _ in run.instances)  # one launch for all


def test_two_dim_grid_program_ids_and_num_programs():
    @nki.jit
    def ids(out):
        i, j = nl.program_id(0), nl.program_id(1)
        assert nl.num_programs(0) == 2 and nl.num_programs(1) == 3 and nl.program_ndim() == 2
        t = nl.ndarray((1, 1), nl.float32)
        nisa.memset(dst=t, value=10 * i + j)
        nisa.dma_copy(dst=out[i, j:j + 1], src=t)

    out = np.zeros((2, 3), np.float32)
    ids[2, 3](out)
    np.testing.assert_array_equal(out, [[0, 1, 2], [10, 11, 12]])


def test_lnc2_instances_run_side_by_side(rng):
    x = rng.standard_normal((256, 64)).astype(np.float32)
    out = np.zeros_like(x)
    k = nki.jit(double_rows)
    k[nl.nc(2)](x, out)
    np.testing.assert_array_equal(out, 2 * x)
    ts = [t for _, t, _ in k.last_run.instances]
    assert k.last_run.execution_ps == max(ts) < sum(ts)
    names = {e.get("args", {}).get("name") for e in
             json.loads(k.last_run.trace.chrome_json())["traceEvents"] if e.get("ph") == "M"}
    assert {"nc0 pid[0]", "nc1 pid[1]"} <= names


def test_nc_times_an_int_is_the_spmd_dim_shorthand(rng):
    """NKI's launch-grid example: kernel[nl.nc(2) * 2, 2] is kernel[nl.spmd_dim(nl.nc(2), 2),
    2] (core 0 runs axis-0 instances 0 and 1), and 2 * nl.nc(2) is nl.spmd_dim(2, nl.nc(2))
    (core 0 runs 0 and 2)."""
    @nki.jit(chip="trn2")
    def copy_block(x, out):
        i, j = nl.program_id(0), nl.program_id(1)
        t = nl.ndarray((8, 4), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 8:(i + 1) * 8, j * 4:(j + 1) * 4])
        nisa.dma_copy(dst=out[i * 8:(i + 1) * 8, j * 4:(j + 1) * 4], src=t)

    x = rng.standard_normal((32, 8)).astype(np.float32)
    for axis, core0 in ((nl.nc(2) * 2, {0, 1}), (2 * nl.nc(2), {0, 2})):
        assert isinstance(axis, nl.spmd_dim)
        out = np.zeros_like(x)
        copy_block[axis, 2](x, out)
        np.testing.assert_array_equal(out, x)
        # each group runs one instance per core, core 0's first
        assert {pids[0][0] for pids, _ in copy_block.last_run.groups} == core0
    with pytest.raises(TypeError):
        nl.nc(2) * 2.5


def add_kernel(a, b):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    ta = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    tb = nl.ndarray(b.shape, b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a)
    nisa.dma_copy(dst=tb, src=b)
    nisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=nl.add)
    nisa.dma_copy(dst=out, src=ta)
    return out


@pytest.mark.parametrize("entry", ["jit", "jit_sim", "simulate", "simulate_call",
                                   "simulate_kernel", "baremetal"])
def test_entry_points_return_outputs(entry, rng):
    a, b = rng.standard_normal((2, 128, 256)).astype(np.float32)
    f = {"jit": lambda: nki.jit(add_kernel)(a, b),
         "jit_sim": lambda: nki.jit(mode="simulation")(add_kernel)(a, b),
         "simulate": lambda: nki.simulate(add_kernel)(a, b),
         "simulate_call": lambda: nki.simulate(add_kernel, a, b),
         "simulate_kernel": lambda: nki.simulate_kernel(nki.jit(add_kernel), a, b),
         "baremetal": lambda: nki.baremetal(add_kernel)(a, b)}[entry]
    np.testing.assert_array_equal(f(), a + b)
    assert nki.last_run().latency_us > 0


def test_benchmark_and_profile_report_latency_and_write_traces(tmp_path, rng):
    a, b = rng.standard_normal((2, 128, 256)).astype(np.float32)
    bench = nki.benchmark(warmup=2, iters=5, save_trace_name=str(tmp_path / "bench.json"))(
        add_kernel)
    bench(a, b)
    lat = bench.benchmark_result.nc_latency.get_latency_percentile(50)
    assert lat == pytest.approx(bench.last_run.latency_us) and lat > 0
    prof = nki.profile(working_directory=str(tmp_path), save_trace_name="p.json")(add_kernel)
    prof(a, b)
    events = json.loads((tmp_path / "p.json").read_text())["traceEvents"]
    assert any(e.get("ph") == "X" for e in events)
    assert (tmp_path / "bench.json").exists()


def test_target_by_argument_and_environment(monkeypatch):
    seen = {}

    @nki.jit
    def sizes(out):
        seen["pmax"] = nl.tile_size.pmax
        seen["fmax"] = nl.tile_size.gemm_moving_fmax
        seen["version"] = nisa.get_nc_version()

    out = np.zeros(1, np.float32)
    monkeypatch.setenv(nki.TARGET_ENV, "trn1")
    sizes(out)
    assert nki.last_run().chip == "trn1" and seen["version"] == nisa.nc_version.gen2
    assert seen["pmax"] == 128 and seen["fmax"] == 512
    nki.simulate(sizes, out, chip="trn3")
    assert nki.last_run().chip == "trn3" and seen["version"] == nisa.nc_version.gen4
    monkeypatch.delenv(nki.TARGET_ENV)
    sizes(out)
    assert nki.last_run().chip == "trn2"


def test_timings_differ_by_generation(rng):
    a, b = rng.standard_normal((2, 128, 2048)).astype(np.float32)
    t = {c: nki.run(add_kernel, a, b, chip=c)[1].total_ps for c in ("trn1", "trn2", "trn3")}
    assert len(set(t.values())) > 1


def test_latency_is_execution_plus_the_chips_launch_overhead(rng):
    """trn1's and trn2's specs have a launch start-up and tear-down (core.launch.overhead_ns,
    fitted on published profiles); trn3's none. Engine percentages stay over the execution."""
    x = rng.uniform(-1, 1, (128, 512)).astype(np.float32)
    for chip, launch_us in (("trn1", 38.0), ("trn2", 13.2), ("trn3", 0.0)):
        _, run = nki.run(add_kernel, x, x, chip=chip)
        assert run.launch_ps == round(launch_us * 1e6), chip
        assert run.total_ps == run.execution_ps + run.launch_ps
        assert run.latency_us == pytest.approx(run.total_ps / 1e6)
        assert run.figures["launch_ps"] == run.launch_ps
        assert run.figures["latency_ps"] == run.figures["total_ps"] + run.launch_ps
        dve = run.figures["engines"]["dve"]
        assert dve["busy_percent"] <= dve["active_percent"] <= 100.0


def test_install_alias_lets_kernels_import_nki_and_neuronxcc(monkeypatch, rng):
    for m in [m for m in sys.modules if m == "nki" or m.startswith(("nki.", "neuronxcc"))]:
        monkeypatch.delitem(sys.modules, m)
    nki.install_alias()
    try:
        new = importlib.import_module("nki")
        import nki.isa as nisa2
        import nki.language as nl2
        from neuronxcc import nki as old
        import neuronxcc.nki.language as nl_old
        assert new is nki and nisa2 is nisa and nl2 is nl and old is nki.legacy
        assert nl_old.arange is nl.arange
    finally:
        for m in [m for m in sys.modules if m == "nki" or m.startswith(("nki.", "neuronxcc"))]:
            del sys.modules[m]
    a = rng.standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_array_equal(old.simulate_kernel(old.jit(add_kernel), a, a), 2 * a)


def test_subkernels_trace_inline_and_errors_name_the_problem():
    @nki.jit
    def inner(t):
        nisa.memset(dst=t, value=3.0)

    @nki.jit
    def outer(out):
        t = nl.ndarray((128, 8), nl.float32)
        inner(t)
        nisa.dma_copy(dst=out, src=t)

    out = np.zeros((128, 8), np.float32)
    outer(out)
    assert (out == 3).all()
    with pytest.raises(ValueError, match="outside a kernel"):
        nl.ndarray((128, 8), nl.float32)

    @nki.jit
    def returns_tile(out):  # a tile's value comes back through an HBM output (NKI's simulator)
        t = nl.ndarray((128, 8), nl.float32)
        nisa.memset(dst=t, value=2.0)
        return t

    np.testing.assert_array_equal(returns_tile(out), np.full((128, 8), 2, np.float32))

    @nki.jit
    def returns_its_argument(out):  # updated in place (the nki-library's scatter_add)
        nl.store(out, nl.full((128, 8), 5.0, nl.float32, buffer=nl.sbuf))
        return out

    got = returns_its_argument(out)
    assert got is out and (out == 5).all()
    frozen = np.zeros((128, 8), np.float32)
    frozen.flags.writeable = False

    @nki.jit
    def returns_a_read_only_argument(x):
        return x

    with pytest.raises(ValueError, match="not an HBM tensor"):
        returns_a_read_only_argument(frozen)
