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
