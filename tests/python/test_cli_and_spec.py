"""The `trnsim` command and the spec API from Python."""

import json
import subprocess
import sys

import pytest

from trnsim import spec


def run(*args):
    return subprocess.run([sys.executable, "-m", "trnsim", *args], capture_output=True, text=True)


def test_default_job_prints_comparison_and_trn2():
    r = run()
    assert r.returncode == 0, r.stderr
    assert "Trainium2" in r.stdout or "trn2" in r.stdout
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
