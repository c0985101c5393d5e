"""Where an NKI kernel's instructions come from: each carries the kernel's file and line that
made it (isa::Origin), deferred legacy results included, and each operand its tile's or
tensor's name; an unnamed tile takes the variable its line assigns to. Traces and profiles
show them."""

import inspect
import json
import os

import numpy as np

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


def scale_kernel(x, out):
    acc = nl.ndarray((128, x.shape[1]), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=acc, src=x)
    nisa.tensor_scalar(dst=acc, data=acc, op0=nl.multiply, operand0=3.0)
    nisa.dma_copy(dst=out, src=acc)


def legacy_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    loaded = nl.load(x)
    squared = nl.multiply(loaded, loaded)
    nl.store(out, value=squared)
    return out


def line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, s in enumerate(lines) if text in s)


def instruction_args(tmp_path, kernel, *args):
    prof = nki.profile(working_directory=str(tmp_path), save_trace_name="t.json")(kernel)
    prof(*args)
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    return [e["args"] for e in events if e.get("ph") == "X" and "opcode" in e.get("args", {})]


def test_instructions_name_the_kernel_line_and_their_tiles(tmp_path, rng):
    x = rng.standard_normal((128, 64)).astype(np.float32)
    args = instruction_args(tmp_path, scale_kernel, x, np.zeros_like(x))
    here = os.path.abspath(__file__)
    mul = [a for a in args if a["opcode"] == "tensor_scalar"]
    assert mul, args
    assert mul[0]["source"] == f"{here}:{line_of(scale_kernel, 'nisa.tensor_scalar')}"
    assert mul[0]["operands"].startswith("dst=acc sbuf[")
    loads = [a for a in args if a["opcode"] == "dma_copy" and "src=x " in a["operands"]]
    assert loads and all(a["source"].endswith(f":{line_of(scale_kernel, 'src=x')}")
                         for a in loads)
    assert all("dst=acc " in a["operands"] for a in loads)


def test_deferred_legacy_results_keep_their_own_line_and_variable(tmp_path, rng):
    x = rng.standard_normal((128, 32)).astype(np.float32)
    args = instruction_args(tmp_path, legacy_kernel, x)
    mul = [a for a in args if a["opcode"] in ("tensor_tensor", "activation")]
    assert mul, args
    # placed when the store needs it, one line later, yet it names the multiply's line
    assert mul[0]["source"].endswith(f":{line_of(legacy_kernel, 'nl.multiply')}")
    assert "dst=squared " in mul[0]["operands"]
    assert "loaded " in mul[0]["operands"]
    load = [a for a in args if a["opcode"] == "dma_copy" and "src=x " in a["operands"]]
    assert load and load[0]["source"].endswith(f":{line_of(legacy_kernel, 'nl.load')}")
