"""Logical NeuronCores (LNC) from Python: kernel[nl.nc(2)] runs its instances together on the
two physical cores of one logical core (one HBM, the HBM stack's bandwidth shared),
nisa.core_barrier and nisa.sendrecv between them, the kernel API's run_spmd, and the
matmul_lnc example kernel."""

import json
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim import _core, kernel, spec
from trnsim.run import run_spmd


def affine_rows(x, out):
    """Instance i of n: rows [i R / n, (i + 1) R / n) of out = 2 x + 1, in 128-row tiles."""
    n, i = nl.num_programs(0), nl.program_id(0)
    rows = x.shape[0] // n
    for t in range(rows // 128):
        r = i * rows + t * 128
        tile = nl.ndarray((128, x.shape[1]), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[r:r + 128])
        nisa.tensor_scalar(dst=tile, data=tile, op0=nl.multiply, operand0=2.0, op1=nl.add,
                           operand1=1.0)
        nisa.dma_copy(dst=out[r:r + 128], src=tile)


def test_lnc2_splits_rows_and_shares_the_hbm_stack(rng):
    x = rng.standard_normal((1024, 2048)).astype(np.float32)
    outs = {g: np.zeros_like(x) for g in ("one", "half", "lnc")}
    _, one = nki.run(affine_rows, x, outs["one"], chip="trn2")  # all rows on one core
    # Two groups of one core each, one after the other: each instance is half the work alone.
    _, half = nki.run(affine_rows, x, outs["half"], chip="trn2", grid=(2,))
    _, lnc = nki.run(affine_rows, x, outs["lnc"], chip="trn2", grid=(nl.nc(2),))
    for out in outs.values():
        np.testing.assert_array_equal(out, 2 * x + 1)
    alone = half.instances[0][1]
    # The split halves the work per core, so LNC=2 beats one core; but the two cores load and
    # store through one HBM stack whose bandwidth they share, so each takes longer than it
    # does alone with half the work (and the pair more than half the single core's time).
    assert lnc.execution_ps < one.execution_ps
    assert lnc.execution_ps > alone and lnc.execution_ps > one.execution_ps / 2
    assert lnc.execution_ps == max(t for _, t, _ in lnc.instances)


def exchange_halves(x, out, barrier=True):
    """Core i writes 3 x[half i] into half i of a shared HBM tensor, passes the barrier, then
    copies the other core's half into out[half i]."""
    i = nl.program_id(0)
    h = x.shape[0] // 2
    shared = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm, name="shared")
    t = nl.ndarray((h, x.shape[1]), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[i * h:(i + 1) * h])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=3.0)
    nisa.dma_copy(dst=shared[i * h:(i + 1) * h], src=t)
    if barrier:
        nisa.core_barrier(shared, cores=(0, 1))
    u = nl.ndarray((h, x.shape[1]), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=shared[(1 - i) * h:(2 - i) * h])
    nisa.dma_copy(dst=out[i * h:(i + 1) * h], src=u)
    return shared


def private_scratch(x, out):
    """Both cores write (program id + 1) * x into a private_hbm tensor of one name, pass a
    barrier, read it back and write their half of out from it."""
    i = nl.program_id(0)
    h = x.shape[0] // 2
    scratch = nl.ndarray(x.shape, nl.float32, buffer=nl.private_hbm, name="scratch")
    t = nl.ndarray((h, x.shape[1]), nl.float32, buffer=nl.sbuf)
    for half in range(2):
        nisa.dma_copy(dst=t, src=x[half * h:(half + 1) * h])
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(i + 1))
        nisa.dma_copy(dst=scratch[half * h:(half + 1) * h], src=t)
    nisa.core_barrier(out, cores=(0, 1))
    nisa.dma_copy(dst=t, src=scratch[i * h:(i + 1) * h])
    nisa.dma_copy(dst=out[i * h:(i + 1) * h], src=t)


def test_private_hbm_is_one_tensor_per_physical_core(rng):
    # Were the two cores' private tensors one (shared HBM by name), the second writer would
    # win everywhere and one half of out would carry the other core's factor.
    x = rng.standard_normal((256, 512)).astype(np.float32)
    out = np.zeros_like(x)
    nki.jit(private_scratch)[nl.nc(2)](x, out)
    np.testing.assert_array_equal(out[:128], x[:128])
    np.testing.assert_array_equal(out[128:], 2 * x[128:])


def test_core_barrier_orders_writes_to_a_shared_tensor(rng):
    x = rng.standard_normal((256, 512)).astype(np.float32)
    out = np.zeros_like(x)
    shared = nki.jit(exchange_halves)[nl.nc(2)](x, out)
    np.testing.assert_array_equal(shared, 3 * x)
    np.testing.assert_array_equal(out, 3 * np.concatenate([x[128:], x[:128]]))
    # Without the barrier each core reads the other's half before it is written: the read
    # sees the fresh (NaN) HBM contents, which is what the barrier is there to prevent.
    racy = np.zeros_like(x)
    nki.jit(exchange_halves)[nl.nc(2)](x, racy, barrier=False)
    assert np.isnan(racy).any()


def uneven_then_swap(x, out, barrier=True):
    """Core 1 does 16 vector ops, core 0 one, before each stores its block of out; after the
    barrier each reads the other's block back into x."""
    i = nl.program_id(0)
    t = nl.ndarray((128, x.shape[1]), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128])
    for _ in range(1 + 15 * i):
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=out[i * 128:(i + 1) * 128], src=t)
    if barrier:
        nisa.core_barrier(out, cores=(0, 1))
    nisa.dma_copy(dst=t, src=out[(1 - i) * 128:(2 - i) * 128])
    nisa.dma_copy(dst=x[i * 128:(i + 1) * 128], src=t)


def test_core_barrier_holds_the_faster_core(rng):
    x0 = rng.standard_normal((256, 2048)).astype(np.float32)
    times = {}
    for barrier in (False, True):
        x, out = x0.copy(), np.zeros_like(x0)
        run = nki.run(uneven_then_swap, x, out, chip="trn2", grid=(nl.nc(2),),
                      barrier=barrier)[1]
        times[barrier] = [t for _, t, _ in run.instances]
        np.testing.assert_allclose(out, x0 + np.repeat([[1], [16]], 128, axis=0), rtol=1e-6)
        # Without the barrier core 0 reads core 1's block before it is written (the
        # caller's zeros); with it, each reads the other's finished block.
        assert np.array_equal(x, np.concatenate([out[128:], out[:128]])) == barrier
    # Without the barrier core 0 ends long before core 1. With it, core 0 passes when core
    # 1's remote semaphore update reaches it, chip.lnc.remote_semaphore_ns after core 1
    # arrives; core 1, the last to arrive, passes at once. Both then do the same two DMAs,
    # so core 0 ends about that latency after core 1.
    (t0, t1), (free0, _) = times[True], times[False]
    assert free0 < t1 / 2
    remote_ps = spec.load("trn2")["values"]["chip"]["lnc"]["remote_semaphore_ns"] * 1000
    assert t0 - t1 == pytest.approx(remote_ps, rel=0.05)


def trade_tiles(x, out):
    """Core i sends its 128-row tile to the other core and stores what it receives."""
    i = nl.program_id(0)
    mine = nl.ndarray((128, x.shape[1]), x.dtype, buffer=nl.sbuf)
    theirs = nl.ndarray((128, x.shape[1]), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=x[i * 128:(i + 1) * 128])
    nisa.sendrecv(src=mine, dst=theirs, send_to_rank=1 - i, recv_from_rank=1 - i, pipe_id=0)
    nisa.dma_copy(dst=out[i * 128:(i + 1) * 128], src=theirs)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_sendrecv_exchanges_tiles(dtype, rng):
    x = rng.standard_normal((256, 256)).astype(dtype)
    out = np.zeros_like(x)
    nki.jit(trade_tiles)[nl.nc(2)](x, out)
    np.testing.assert_array_equal(out, np.concatenate([x[128:], x[:128]]))


@pytest.mark.parametrize("dst", [((128, 256), nl.bfloat16), ((128, 128), nl.float32)])
def test_sendrecv_needs_the_same_dtype_and_shape(dst):
    def bad(x):
        t = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)
        d = nl.ndarray(dst[0], dst[1], buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.sendrecv(src=t, dst=d, send_to_rank=1 - nl.program_id(0),
                      recv_from_rank=1 - nl.program_id(0), pipe_id=0)

    with pytest.raises(ValueError, match="same dtype and shape"):
        nki.jit(bad)[nl.nc(2)](np.zeros((128, 256), np.float32))


def test_sendrecv_shapes_that_differ_between_the_cores_fault():
    """Each core's own src / dst agree, but core 1 receives into a smaller tile than core 0
    sends: the transfer cannot match (a simulated fault of the run)."""

    def mismatched(x):
        i = nl.program_id(0)
        cols = 256 - 128 * i
        t = nl.ndarray((128, cols), nl.float32, buffer=nl.sbuf)
        d = nl.ndarray((128, cols), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, :cols])
        nisa.sendrecv(src=t, dst=d, send_to_rank=1 - i, recv_from_rank=1 - i, pipe_id=0)

    with pytest.raises(RuntimeError, match="simulated hardware fault"):
        nki.jit(mismatched)[nl.nc(2)](np.zeros((128, 256), np.float32))


def test_sendrecv_rejects_hbm_ranks_and_gpsimd_dma():
    def call(kw):
        def k(x):
            t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
            args = dict(src=t, dst=t, send_to_rank=1 - nl.program_id(0),
                        recv_from_rank=1 - nl.program_id(0), pipe_id=0)
            args.update(kw(x) if callable(kw) else kw)
            nisa.sendrecv(**args)

        nki.jit(k)[nl.nc(2)](np.zeros((128, 64), np.float32))

    with pytest.raises(ValueError, match="SBUF"):
        call(lambda x: {"src": x})
    with pytest.raises(ValueError, match="send_to_rank=2"):
        call({"send_to_rank": 2})
    with pytest.raises(NotImplementedError, match="gpsimd_dma"):
        call({"dma_engine": nisa.dma_engine.gpsimd_dma})


def test_lnc_calls_need_an_lnc_launch_on_nc_v3():
    def barrier(x):
        nisa.core_barrier(x, cores=(0, 1))

    x = np.zeros((128, 64), np.float32)
    with pytest.raises(ValueError, match=r"kernel\[nl.nc\(2\)\]"):
        nki.jit(barrier)(x)  # one core: nothing to meet
    with pytest.raises(ValueError, match=r"only cores=\(0, 1\)"):
        nki.jit(lambda x: nisa.core_barrier(x, cores=(0, 2)))[nl.nc(2)](x)
    with pytest.raises(ValueError, match="shared HBM tensor"):
        nki.jit(lambda x: nisa.core_barrier(nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf),
                                            cores=(0, 1)))[nl.nc(2)](x)


def test_nc2_on_trn1_raises_clearly():
    x = np.zeros((256, 64), np.float32)
    with pytest.raises(ValueError, match=r"kernel\[nl.nc\(2\)\]: .*LNC=2: trn1 has logical "
                                         r"cores of 1 physical core"):
        nki.run(affine_rows, x, np.zeros_like(x), chip="trn1", grid=(nl.nc(2),))
    # nl.nc(1) is a logical core of one physical core: fine everywhere.
    out = np.zeros_like(x)
    nki.run(affine_rows, x, out, chip="trn1", grid=(nl.nc(1),))
    np.testing.assert_array_equal(out, 2 * x + 1)


def test_kernel_run_fields_of_a_grid_of_logical_cores(rng):
    """kernel[2, nl.nc(2)]: two logical cores' worth of instances, one after the other; the
    nl.nc axis picks the physical core."""
    x = rng.standard_normal((512, 256)).astype(np.float32)
    out = np.zeros_like(x)

    def blocks(x, out):
        b = nl.program_id(0) * 2 + nl.program_id(1)
        t = nl.ndarray((128, x.shape[1]), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[b * 128:(b + 1) * 128])
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=float(b))
        nisa.dma_copy(dst=out[b * 128:(b + 1) * 128], src=t)

    k = nki.jit(blocks)
    k[2, nl.nc(2)](x, out)
    np.testing.assert_array_equal(out, x + np.repeat(np.arange(4, dtype=np.float32), 128)[:, None])
    run = k.last_run
    assert [p for p, _, _ in run.instances] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [ids for ids, _ in run.groups] == [[(0, 0), (0, 1)], [(1, 0), (1, 1)]]
    assert run.execution_ps == sum(t for _, t in run.groups) > 0
    for ids, t in run.groups:
        assert t == max(ti for p, ti, _ in run.instances if p in ids)
    assert len(run.cores) == 2 and all(c["total_ps"] > 0 for c in run.cores)
    assert run.summary.startswith("logical core of 2 physical cores")
    assert run.figures == run.cores[0]
    events = json.loads(run.trace.chrome_json())["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    cores = {"nc0 pid[0, 0]", "nc1 pid[0, 1]", "nc0 pid[1, 0]", "nc1 pid[1, 1]"}
    assert set(procs.values()) == cores | {c + " dma" for c in cores}  # a core's DMA queues
    spans = [e for e in events if e.get("ph") == "X"]
    assert {procs[e["pid"]] for e in spans} == set(procs.values())
    # The second logical core's spans start after the first one's end.
    second = [e["ts"] for e in spans if procs[e["pid"]].startswith("nc0 pid[1, 0]")]
    assert min(second) * 1e6 >= run.groups[0][1] - 1


def test_kernel_api_run_spmd_and_cpp_errors(rng):
    """The C++ kernel API from Python: two programs built with core_barrier / sendrecv, run
    together; C++ errors arrive as ValueError with the C++ message."""
    x = rng.standard_normal((256, 64)).astype(np.float32)
    programs = []
    for rank in range(2):
        kb = kernel.KernelBuilder("trn2")
        xs = kb.input("x", "fp32", [256, 64])
        y = kb.output("y", "fp32", [256, 64])
        a = kb.sbuf("a", "fp32", [128, 64])
        b = kb.sbuf("b", "fp32", [128, 64])
        kb.dma_copy(a, xs[rank * 128:(rank + 1) * 128])
        kb.sendrecv(b, a, send_to_rank=1 - rank, recv_from_rank=1 - rank)
        kb.dma_copy(y[rank * 128:(rank + 1) * 128], b)
        kb.core_barrier(y)
        with pytest.raises(ValueError, match="sendrecv moves SBUF to SBUF"):
            kb.sendrecv(y[0:128], a, 1 - rank, 1 - rank)
        programs.append(kb.build())
    r = run_spmd(programs, {"x": x}, chip="trn2", trace=True)
    assert r.ok and len(r.cores) == 2
    np.testing.assert_array_equal(r.outputs["y"], np.concatenate([x[128:], x[:128]]))
    assert r.total_ps == max(c["total_ps"] for c in r.cores)
    procs = {e["args"]["name"] for e in json.loads(r.trace.chrome_json())["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert procs == {"core0", "core1", "core0 dma", "core1 dma"}

    other = kernel.KernelBuilder("trn2")
    other.input("z", "fp32", [8, 8])
    with pytest.raises(ValueError, match="declares other HBM tensors"):
        run_spmd([programs[0], other.build()], chip="trn2")
    with pytest.raises(ValueError, match="LNC=2"):
        _core.lnc_degree(kernel.load_chip("trn1"), 2)
    assert kernel.load_chip("trn2").lnc_degrees == [1, 2]
    assert kernel.load_chip("trn1").lnc_degrees == [1]


def _bf16_matmul_reference(lhsT, rhs):
    return lhsT.astype(np.float32).T @ rhs.astype(np.float32)


def test_matmul_lnc_example_matches_numpy(rng):
    if "matmul_lnc" not in _core.example_kernels():
        pytest.skip("matmul_lnc is not in the example registry")
    chip = kernel.load_chip("trn2")
    m, k, n = 128, 4096, 512
    lhsT = rng.standard_normal((k, m)).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
    ref = _bf16_matmul_reference(lhsT, rhs)
    r = run_spmd(_core.build_example_spmd("matmul_lnc", chip, [m, k, n], 2),
                 {"lhsT": lhsT, "rhs": rhs}, chip="trn2")
    assert r.ok
    # fp32 accumulation in another order than numpy's: a few ulps of the sums' magnitude.
    np.testing.assert_allclose(r.outputs["result"], ref, rtol=1e-5, atol=1e-4 * np.abs(ref).max())
    single = run_spmd(_core.build_example_spmd("matmul_lnc", chip, [m, k, n], 1),
                      {"lhsT": lhsT, "rhs": rhs}, chip="trn2")
    np.testing.assert_allclose(single.outputs["result"], ref, rtol=1e-5,
                               atol=1e-4 * np.abs(ref).max())
    # Half the K tiles per core, at the price of a sendrecv and a barrier: faster at this K
    # (at K = 1024 the exchange and barrier cost more than the 4 K tiles saved).
    assert r.total_ps < single.total_ps


def test_cli_runs_matmul_lnc_on_a_logical_core():
    p = subprocess.run([sys.executable, "-m", "trnsim", "run", "matmul_lnc", "128", "1024", "256",
                        "--chip", "trn2", "--lnc", "2", "--json"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    runs = json.loads(p.stdout)["runs"]
    assert len(runs) == 1 and len(runs[0]["cores"]) == 2
    assert runs[0]["result"]["total_ps"] == max(c["total_ps"] for c in runs[0]["cores"])
