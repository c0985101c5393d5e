"""The C++ kernel API and runners from Python (trnsim.kernel, trnsim.run): numpy in and out,
errors as ValueError with the C++ message, latency, figures and traces."""

import json

import ml_dtypes
import numpy as np
import pytest

from trnsim import kernel, run
from trnsim.kernel import ActFunc, AluOp, Engine


def exp_kernel(chip="trn2", dtype="fp32"):
    kb = kernel.KernelBuilder(chip)
    x = kb.input("x", dtype, [128, 64])
    y = kb.output("y", "fp32", [128, 64])
    t = kb.sbuf("t", "fp32", [128, 64])
    kb.dma_copy(t, x)
    kb.activation(t, t, ActFunc.exp, scale=0.5, bias=1.0)
    kb.dma_copy(y, t)
    return kb.build()


def test_builder_run_values_time_and_trace(rng, tmp_path):
    x = rng.uniform(-1, 1, (128, 64)).astype(np.float32)
    r = run.run(exp_kernel(), {"x": x}, trace=True)
    assert r.ok and r.total_ps > 0 and r.latency_us == r.total_ps / 1e6
    np.testing.assert_allclose(r.outputs["y"], np.exp(x * 0.5 + 1.0), rtol=2e-6)
    assert r.figures["engines"]["act"]["instructions"] == 1
    assert "TensorE" in r.summary
    r.write_trace(tmp_path / "t.json")
    events = json.loads((tmp_path / "t.json").read_text())
    assert any(e.get("ph") == "X" for e in (events["traceEvents"] if isinstance(events, dict)
                                            else events))
    assert r.trace.num_spans >= 3 and "act" in r.trace.summary()


def test_modes_and_low_precision_dtypes(rng):
    p = exp_kernel(dtype=ml_dtypes.bfloat16)
    x = rng.uniform(-1, 1, (128, 64)).astype(ml_dtypes.bfloat16)
    f = run.run(p, {"x": x}, mode="functional")
    ft = run.run(p, {"x": x})
    t = run.run(p, mode="timing")
    assert f.total_ps == 0 and t.outputs == {} and t.total_ps == ft.total_ps
    np.testing.assert_array_equal(f.outputs["y"], ft.outputs["y"])
    # Inputs in another dtype are cast to the tensor's format (RNE) on the way in.
    r = run.run(p, {"x": x.astype(np.float32)})
    np.testing.assert_array_equal(r.outputs["y"], ft.outputs["y"])
    assert r.outputs["x"].dtype == ml_dtypes.bfloat16


def test_views_index_like_numpy_and_describe_themselves():
    kb = kernel.KernelBuilder("trn1")
    t = kb.sbuf("t", "bf16", [128, 4, 512])
    v = t[0:64, 2, 10:20:2]
    assert v.shape == [64, 5] and v.dtype == "bf16" and v.space == "sbuf"
    assert t[:, -1].shape == [128, 512] and t[..., 0:8].shape == [128, 4, 8]
    assert t.reshape([128, 2048]).shape == [128, 2048]
    assert t.pattern([[2048, 16], [1, 8]], offset=4096 + 3).start_partition == 2
    assert t.bitcast("fp32").shape == [128, 4, 256]
    assert "'t' sbuf[0:128] [128, 4, 512] bf16" == t.describe()


def test_cpp_errors_arrive_as_value_errors_with_the_message():
    kb = kernel.KernelBuilder("trn2")
    with pytest.raises(ValueError, match="partitions"):
        kb.sbuf("big", "fp32", [129, 4])
    t = kb.sbuf("t", "fp32", [128, 8])
    with pytest.raises(ValueError, match="outside"):
        t[0:200]
    a = kb.sbuf("a", "fp32", [128, 8])
    with pytest.raises(ValueError, match="matmul"):
        kb.matmul(a, t, t)  # dst must be in PSUM
    with pytest.raises(ValueError, match="no tensor 'nope'"):
        run.run(exp_kernel(), {"nope": np.zeros(1)})


def test_vector_gpsimd_and_scan_calls(rng):
    kb = kernel.KernelBuilder("trn2")
    x = kb.input("x", "fp32", [128, 32])
    outs = {n: kb.output(n, "fp32", s) for n, s in
            [("tt", [128, 32]), ("ts", [128, 32]), ("red", [128, 1]), ("scan", [128, 32]),
             ("iota", [128, 32]), ("colsum", [1, 32])]}
    xt = kb.sbuf("x", "fp32", [128, 32])
    kb.dma_copy(xt, x)
    tiles = {n: kb.sbuf(n, "fp32", v.shape) for n, v in outs.items()}
    kb.tensor_tensor(tiles["tt"], xt, xt, AluOp.mult, Engine.gpsimd)
    kb.tensor_scalar(tiles["ts"], xt, AluOp.add, 1.0, op1=AluOp.mult, arg1=2.0)
    kb.tensor_reduce(tiles["red"], xt, AluOp.max)
    kb.tensor_tensor_scan(tiles["scan"], xt, xt, 0.0, AluOp.add, AluOp.bypass)
    kb.iota(tiles["iota"], 3, 100)
    kb.partition_reduce(tiles["colsum"], xt, AluOp.add)
    for n in outs:
        kb.dma_copy(outs[n], tiles[n])
    xv = rng.integers(-4, 5, (128, 32)).astype(np.float32)
    o = run.run(kb.build(), {"x": xv}).outputs
    np.testing.assert_array_equal(o["tt"], xv * xv)
    np.testing.assert_array_equal(o["ts"], (xv + 1) * 2)
    np.testing.assert_array_equal(o["red"][:, 0], xv.max(1))
    np.testing.assert_array_equal(o["scan"], np.cumsum(xv, 1))
    np.testing.assert_array_equal(o["iota"], 3 + 100 * np.arange(128)[:, None] + np.arange(32))
    np.testing.assert_array_equal(o["colsum"][0], xv.sum(0))


def test_example_kernels_build_from_python():
    names = kernel._core.example_kernels()
    assert "matmul_fully_optimized" in names and "softmax" in names
    p = kernel._core.build_example("softmax", kernel.load_chip("trn1"), [128, 256])
    assert p.num_instructions > 0 and "softmax" not in p.text()[:0]
    r = run.run(p, {"x": np.zeros((128, 256), np.float32)})
    np.testing.assert_allclose(r.outputs["y"], 1 / 256, rtol=1e-6)


def test_profile_module_writes_summarises_and_merges(rng, tmp_path):
    from trnsim import profile

    x = rng.uniform(-1, 1, (128, 64)).astype(np.float32)
    t1 = run.run(exp_kernel("trn1"), {"x": x}, trace=True).trace
    t2 = run.run(exp_kernel("trn3"), {"x": x}, trace=True).trace
    profile.write_chrome_trace(t1, tmp_path / "a.json")
    assert json.loads((tmp_path / "a.json").read_text()) == json.loads(profile.chrome_json(t1))
    assert "act" in profile.summary(t1, top=3)
    both = profile.merge([t1, t2], [0, 10**6], ["trn1", "trn3"])
    assert both.num_spans == t1.num_spans + t2.num_spans
    ev = [e for e in profile.events(both) if e.get("ph") == "X"]
    assert min(e["ts"] for e in ev) < 1.0 <= max(e["ts"] for e in ev)
