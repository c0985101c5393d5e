"""`trnsim validate`'s NKI targets (trnsim.validation): the fused Mamba kernels compute the
layer, and the target's records reach the command line."""

import json
import subprocess
import sys

import numpy as np
import pytest

from trnsim import _core, nki
from trnsim.validation import mamba


@pytest.mark.parametrize("ver", ["v1", "v2", "v3"])
def test_mamba_kernels_compute_the_layer(ver):
    x = mamba.inputs(256, 1024, batch=2, states=4, seed=3)
    out, _ = nki.run(mamba.KERNELS[ver], *x, chip="trn1")
    ref = mamba.reference(*x)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_mamba_versions_run_the_same_vector_work_but_v2_computes_delta_u_once():
    x = [np.empty(a.shape, a.dtype) for a in mamba.inputs(512, 512)]
    counts = {}
    for ver in ("v1", "v2"):
        _, run = nki.run(mamba.KERNELS[ver], *x, chip="trn1", mode="timing")
        counts[ver] = run.figures["engines"]["dve"]["by_opcode"]["tensor_tensor"]
    tiles, states = 4, 16
    assert counts["v1"] == tiles * states * 4  # delta*u, *B, *C, += per state and tile
    assert counts["v2"] == tiles * states * 3 + tiles


def run_cli(*args):
    p = subprocess.run([sys.executable, "-m", "trnsim", *args], capture_output=True, text=True,
                       timeout=600)
    return p.returncode, p.stdout, p.stderr


def test_validate_lists_and_runs_the_mamba_target():
    rc, out, err = run_cli("validate", "--list")
    assert rc == 0 and "mamba-tutorial" in out, err
    rc, out, err = run_cli("validate", "mamba-tutorial", "--json")
    assert rc in (0, 1), err  # 1: a case outside its band (reported, not an error)
    records = json.loads(out)
    cases = {r["case"]: r for r in records}
    assert {"mamba_v1 c256", "mamba_v1 c4096", "mamba_v2 c4096",
            "speedup v1/v2 c4096"} <= set(cases)
    v2 = cases["mamba_v2 c4096"]
    assert v2["measured"] == 1610.0 and v2["unit"] == "us" and v2["fitted"] == ""
    assert v2["simulated"] > 0 and "VALIDATION.md s6" in v2["source"]


def test_an_added_target_must_return_records():
    _core.add_validate_target("broken", "returns no dicts", lambda: [1])
    _core.add_validate_target("short", "lacks keys", lambda: [{"case": "x"}])
    try:
        for name, why in (("broken", "list of dicts"), ("short", "lacks 'unit'")):
            rc = _core.cli_main([b"validate", name.encode()])
            assert rc == 2, (name, why)
    finally:
        _core.clear_validate_targets()
        from trnsim import validation

        validation._registered = False


@pytest.mark.parametrize("ver", ["v1", "v2"])
def test_layernorm_kernels_compute_layernorm(ver):
    from trnsim.validation import layernorm

    rng = np.random.default_rng(5)
    x = rng.random((300, 1000)).astype(np.float32)  # ragged rows: the masked last tile
    g, b = rng.random((2, 1000)).astype(np.float32)
    out = np.zeros_like(x)
    nki.run(layernorm.KERNELS[ver], x, 1e-5, g, b, out, chip="trn1")
    np.testing.assert_allclose(out, layernorm.reference(x, 1e-5, g, b), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("free_dim", [1000, 2000])
def test_trn2_vector_add_and_transpose_compute_their_results(free_dim):
    from trnsim.validation import streaming

    rng = np.random.default_rng(2)
    a, b = rng.random((2, 256000)).astype(np.float32)
    out, run = nki.run(streaming.vector_add_stream(free_dim), a, b, chip="trn2")
    np.testing.assert_array_equal(out, streaming.reference_add(a, b))
    # Per tile two loads and a store, one add.
    assert run.figures["dma"]["transfers"] == 3 * 2000 // free_dim
    x = rng.random((256, 384)).astype(np.float32)
    out, run = nki.run(streaming.transpose, x, chip="trn2")
    np.testing.assert_array_equal(out, streaming.reference_transpose(x))
    assert run.figures["engines"]["pe"]["by_opcode"]["transpose_pe"] == 2 * 3


def test_disable_dge_takes_the_descriptor_time_off_the_issuing_engines():
    """neuronx-cc's --disable-dge (additional_compile_opt), or the same spec override through
    nki.run(set=): a DMA trigger then costs its engine one cycle, not the DGE's 600 ns."""
    from trnsim.validation import streaming

    x = np.empty((512, 512), np.float32)
    _, dge = nki.run(streaming.transpose, x, chip="trn2", mode="timing")
    _, no_dge = nki.run(streaming.transpose, x, chip="trn2", mode="timing",
                        set=["core.dma.hwdge_per_core=0"])
    triggers = sum(e["busy_ps"] for k, e in dge.figures["engines"].items() if k in ("sp", "pool"))
    assert triggers >= 32 * 600_000  # 16 loads and 16 stores at 600 ns each
    assert sum(e["busy_ps"] for k, e in no_dge.figures["engines"].items()
               if k in ("sp", "pool")) < 32 * 10_000
    k = nki.benchmark(streaming.transpose.fn, chip="trn2",
                      additional_compile_opt="-O1 --disable-dge")
    k(x)
    assert k.benchmark_result.nc_latency.get_latency_percentile(99) == pytest.approx(
        no_dge.latency_us)
    with pytest.raises(nki.NkiError, match="additional_compile_opt"):
        nki.jit(streaming.transpose.fn, additional_compile_opt=3)(x)


def test_trn2_target_fits_launch_and_descriptor_time_and_checks_the_two_tile_add():
    from trnsim import validation

    records = {r["case"]: r for r in validation.trn2_kernel_records()}
    assert set(records) == {c for c, _ in validation.TRN2_PUBLISHED}
    for case, key in validation.TRN2_FITTED.items():
        assert records[case]["fitted"] == key
        assert records[case]["simulated"] == pytest.approx(records[case]["measured"], rel=0.01)
    assert sum("fitted" in r for r in records.values()) == len(validation.TRN2_FITTED) == 2
    checked = records["vector_add_stream fd1000"]
    assert abs(checked["simulated"] / checked["measured"] - 1) < 0.15
    for r in records.values():
        assert r["unit"] == "us" and r["simulated"] > r["measured"] / 2
