"""The `trnsim` command and the spec API from Python."""

import json
import subprocess
import sys

import pytest

from trnsim import spec


def run(*args):
    return subprocess.run([sys.executable, "-m", "trnsim", *args], capture_output=True, text=True)


def test_default_job_runs_the_tutorial_matmul_on_three_generations():
    r = run()
    assert r.returncode == 0, r.stderr
    assert "trnsim run matmul_fully_optimized" in r.stdout
    for chip in ("trn1", "trn2", "trn3"):
        assert f"== {chip} (functional+timing)" in r.stdout
    assert "TensorE utilisation" in r.stdout


def test_run_and_validate_as_json():
    r = run("run", "softmax", "128", "256", "--chip", "trn3", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["runs"][0]["outputs"][0]["nans"] == 0
    v = run("validate", "dma", "--json")
    assert v.returncode == 0, v.stderr
    (rec,) = json.loads(v.stdout)
    assert {"target", "case", "measured", "simulated", "unit"} <= set(rec)
    assert rec["within"]


def test_spec_compare_shows_the_seed_ratios():
    r = run("spec", "--compare", "trn1", "trn2", "trn3", "trn4-projected")
    assert r.returncode == 0, r.stderr
    assert "6.8x" in r.stdout and "13.2x" in r.stdout


def test_spec_json_and_errors():
    r = run("spec", "trn3", "--json")
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)
    bad = run("spec", "trn9")
    assert bad.returncode == 2
    assert "trn9" in bad.stderr


def test_spec_load_from_python():
    trn3 = spec.load("trn3")
    assert trn3["values"]["numerics"]["overflow"] in ("inf", "saturate")
    assert trn3["values"]["chip"]["cores"] == 8
    with pytest.raises(ValueError, match="no_such_key"):
        spec.load("trn3", set={"core.no_such_key": 1})
    assert set(spec.chips()) >= {"trn1", "trn2", "trn3", "trn4-projected"}
