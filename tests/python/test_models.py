"""trnsim.models: built-in configs, timing runs and values against a numpy reference.

The reference is the Hugging Face Llama forward (hf_reference.py) in float64 from the weights and
ids the run used, with no rounding of its own: the simulator rounds each kernel's result to
bf16 (8 significant bits), so over two layers the logits agree to a few bf16 ulps of their
scale; the bound 3e-2 x max |logit| is about four ulps, and a wrong op (a missing norm, RoPE
sign, mask or residual) moves them by far more (the test of a perturbed reference checks it).
"""

import json
import os

import numpy as np
import pytest

import trnsim.models as tm

import hf_reference


def test_list_and_config():
    names = tm.list()
    for n in ("llama-3.1-8b", "qwen3-32b", "bert-large", "gpt3-175b", "tiny-llama"):
        assert n in names
    c = tm.config("llama-3.1-8b")
    assert (c["hidden"], c["layers"], c["heads"], c["kv_heads"]) == (4096, 32, 32, 8)
    assert abs(c["params"] - 8.03e9) / 8.03e9 < 0.02
    assert tm.config("qwen3-8b")["qk_norm"] is True


def test_unknown_model_lists_builtins():
    with pytest.raises(Exception, match="llama-3.1-8b"):
        tm.config("no-such-model")


def test_timing_run_figures_and_trace(tmp_path):
    r = tm.run("llama-3.1-8b", "trn2", seq=256, layers=2)
    assert r.latency_us > 0 and 0 < r.mfu < 1
    assert r.json["tp"] == 8 and r.json["layers"] == 2 and r.fits
    kinds = {o["kernel"] for o in r.ops}
    assert {"linear", "attention", "all_reduce", "embedding"} <= kinds
    assert abs(sum(o["total_us"] for o in r.ops) + r.json["launch_us"] - r.latency_us) < 1e-3 * r.latency_us
    assert r.json["kernels_simulated"] < r.json["kernels"]  # layer 1 reuses layer 0's kernels
    p = tmp_path / "t.json"
    r.write_trace(str(p))
    ev = json.loads(p.read_text())["traceEvents"]
    assert sum(1 for e in ev if e.get("ph") == "X") == r.json["kernels"]


def test_moe_timing():
    r = tm.run("mixtral-8x7b", "trn2", seq=512, layers=2)
    rows = {o["name"]: o for o in r.ops}
    # 8 experts, top 2, balanced: each expert's kernels see 512 * 2 / 8 = 128 tokens, 8 per layer
    assert rows["layers.*.mlp.experts.gate_up"]["count"] == 16
    assert rows["layers.*.mlp.experts.gate_up"]["detail"].startswith("128x4096")
    assert {"router", "embedding", "all_reduce"} <= {o["kernel"] for o in r.ops}


def test_deterministic():
    a = tm.run("tiny-llama", tp=1, seq=64)
    b = tm.run("tiny-llama", tp=1, seq=64)
    assert a.json == b.json


def test_fusion_saves_time():
    fused = tm.run("tiny-llama", tp=1, seq=256)
    unfused = tm.run("tiny-llama", tp=1, seq=256, fuse=False)
    assert fused.json["kernels"] < unfused.json["kernels"]
    assert fused.latency_us < unfused.latency_us


def test_bad_inputs():
    with pytest.raises(Exception, match="tp"):
        tm.run("tiny-llama", tp=3)
    with pytest.raises(Exception, match="gpt-oss"):  # its experts are not plain GLUs
        tm.run("gpt-oss-120b", layers=1, tp=1, seq=16, values=True)
    with pytest.raises(Exception, match="tp"):
        tm.run("tiny-llama", tp=2, values=True)
    with pytest.raises(ValueError, match="input_ids"):
        tm.run("tiny-llama", tp=1, seq=8, values=True, input_ids=[1, 2, 3])


def llama_reference(w, ids, cfg, seq, layers, perturb=False, inv=None):
    return hf_reference.decoder(w, ids, cfg, seq, layers, causal=not perturb, inv=inv)


@pytest.mark.parametrize("chip", ["trn1", "trn2", "trn3"])
def test_values_match_numpy_reference(chip):
    cfg = tm.config("tiny-llama")
    seq = 96
    r = tm.run("tiny-llama", chip, tp=1, seq=seq, values=True, seed=7)
    got = r.outputs["lm_head"].reshape(seq, cfg["vocab"])
    ids = r.weights["input_ids"]
    want = llama_reference(r.weights, ids, cfg, seq, cfg["layers"])
    scale = np.abs(want).max()
    err = np.abs(got - want).max() / scale
    assert err < 3e-2, err
    # The check can fail: the same reference without the causal mask is far off.
    bad = llama_reference(r.weights, ids, cfg, seq, cfg["layers"], perturb=True)
    assert np.abs(got - bad).max() / scale > 0.1


def test_llama31_rope_scaling_in_values(tmp_path):
    # tiny-llama with Llama 3.1's rope_scaling, its pretraining context scaled to the tiny
    # model's 64-dim heads (wavelengths above 256 positions / 8, a blend from 64 to 256).
    spec = {k: v for k, v in json.loads(open(_spec("tiny-llama")).read()).items()
            if not k.startswith("_")}
    rs = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 256}
    spec["rope_scaling"] = rs
    path = tmp_path / "config.json"
    path.write_text(json.dumps(spec))
    cfg = tm.config(str(path))
    seq = 96
    w = tm.run(str(path), "trn2", tp=1, seq=seq, values=True, layers=1, seed=4).weights
    ids = w.pop("input_ids")
    # Larger q and k weights make attention sharp, so that positions (the tables) matter.
    for n in ("q_proj", "k_proj"):
        w[f"layers.0.self_attn.{n}.weight"] = w[f"layers.0.self_attn.{n}.weight"] * 4
    r = tm.run(str(path), "trn2", tp=1, seq=seq, values=True, layers=1, weights=w, input_ids=ids)
    got = r.outputs["lm_head"].reshape(seq, cfg["vocab"])
    inv = hf_reference.llama3_inv(cfg["rope_theta"], cfg["head_dim"], 8.0, 1.0, 4.0, 256)
    want = llama_reference(w, ids, cfg, seq, 1, inv=inv)
    scale = np.abs(want).max()
    err = np.abs(got - want).max() / scale
    plain = llama_reference(w, ids, cfg, seq, 1)
    err_plain = np.abs(got - plain).max() / scale
    assert err < 3e-2
    assert err_plain > 0.1  # the unscaled tables are far off
    # A rope type whose tables move with the sequence is refused for values, timed otherwise.
    spec["rope_scaling"] = {"rope_type": "dynamic", "factor": 2.0}
    path.write_text(json.dumps(spec))
    with pytest.raises(Exception, match="dynamic"):
        tm.run(str(path), "trn2", tp=1, seq=seq, values=True, layers=1)
    assert tm.run(str(path), "trn2", tp=1, seq=seq, layers=1).latency_us > 0


def _spec(name):
    from trnsim._paths import spec_dir

    return os.path.join(spec_dir(), "models", name + ".json")


def test_given_weights_and_ids_are_used():
    cfg = tm.config("tiny-llama")
    first = tm.run("tiny-llama", tp=1, seq=32, values=True, layers=1, seed=1)
    w = {k: v for k, v in first.weights.items() if k != "input_ids"}
    ids = np.arange(32) % cfg["vocab"]
    again = tm.run("tiny-llama", tp=1, seq=32, values=True, layers=1, weights=w, input_ids=ids)
    assert again.weights == {}  # nothing generated
    want = llama_reference(w, ids, cfg, 32, 1)
    got = again.outputs["lm_head"].reshape(32, cfg["vocab"])
    assert np.abs(got - want).max() / np.abs(want).max() < 3e-2
    w.pop("norm.weight")
    with pytest.raises(Exception, match="norm.weight"):
        tm.run("tiny-llama", tp=1, seq=32, values=True, layers=1, weights=w, input_ids=ids)


def test_serve_from_python():
    r = tm.serve("tiny-llama", tp=2, input_tokens=100, output_tokens=20)
    assert r["prefill_bucket"] == 128
    assert r["ttft_ms"] > 0 and r["tpot_ms"] > 0
    assert abs(r["e2e_ms"] - (r["ttft_ms"] + 19 * r["tpot_ms"])) < 1e-6 * r["e2e_ms"]
    assert "TTFT" in r["text"]
    with pytest.raises(Exception, match="bucket"):
        tm.serve("tiny-llama", tp=2, input_tokens=300, bucket=256)


def test_serve_compiled_shapes_and_load_from_python():
    one = tm.serve("tiny-llama", tp=2, input_tokens=100, output_tokens=20)
    padded = tm.serve("tiny-llama", tp=2, input_tokens=100, output_tokens=20, compiled_batch=4,
                      max_seq=512, kv_buckets="max")
    assert (padded["compiled_batch"], padded["max_seq"], padded["kv_buckets"]) == (4, 512, "max")
    assert padded["decode_samples"] == [
        {"kv_tokens": 512, "step_ms": padded["tpot_ms"], "steps": 19}]
    assert padded["tpot_ms"] > one["tpot_ms"]  # four sequences over 512 positions every step
    load = tm.serve("tiny-llama", tp=2, input_tokens=100, output_tokens=20, concurrency=2,
                    requests=6, input_spread=10, output_spread=4, seed=3)
    assert load["requests"] == 6 and len(load["per_request"]) == 6
    assert load["compiled_batch"] == 2 and load["ctx_batch"] == 1
    p = load["percentiles"]["ttft_ms"]
    assert p["p50"] <= p["p90"] <= p["p99"]
    assert all(90 <= r["input_tokens"] <= 110 for r in load["per_request"])
    assert "TTFT" in load["text"] and "closed loop" in load["text"]
    with pytest.raises(ValueError, match="kv_buckets"):
        tm.serve("tiny-llama", kv_buckets="linear")


def test_speculative_decoding_from_python():
    plain = tm.serve("tiny-llama", tp=2, input_tokens=100, output_tokens=20)
    spec = tm.serve("tiny-llama", tp=2, input_tokens=100, output_tokens=20,
                    draft_model="tiny-llama", speculation_length=2, acceptance=1.0)
    assert spec["speculation"]["tokens_per_iteration"] == 3
    assert spec["speculation"]["draft_model"] == "tiny-llama"
    assert plain["speculation"] is None
    with pytest.raises(Exception, match="draft"):
        tm.serve("tiny-llama", speculation_length=2)


def test_energy_from_python():
    r = tm.serve("tiny-llama", tp=2, input_tokens=100, output_tokens=20)
    e = r["energy"]
    assert e["joules"] == pytest.approx(e["static_j"] + e["tensor_j"] + e["hbm_j"] + e["link_j"])
    assert r["joules_per_output_token"] == pytest.approx(e["joules"] / 20)
    assert r["power_model"]["chip"] == "trn2" and r["power_model"]["tdp_w"] == 500
    # A what-if power: the static share scales with it.
    hot = tm.serve("tiny-llama", tp=2, input_tokens=100, output_tokens=20,
                   set=["chip.power.static_w=300"])
    assert hot["energy"]["static_j"] == pytest.approx(2 * e["static_j"])


def test_serve_with_a_cached_prefix():
    # Prefix caching: the prefill runs the prompt's uncached rest, reading the cached keys.
    kw = dict(chip="trn2", tp=2, input_tokens=1024, output_tokens=4)
    whole = tm.serve("tiny-llama", **kw)
    cached = tm.serve("tiny-llama", cached_prefix=768, **kw)
    assert cached["cached_prefix"] == 768 and cached["prefill_bucket"] == 256
    assert cached["ttft_ms"] < whole["ttft_ms"]
    assert "prefix caching" in cached["text"]
    with pytest.raises(Exception, match="cached"):
        tm.serve("tiny-llama", cached_prefix=1024, **kw)


def test_serve_with_an_fp8_kv_cache():
    # vLLM Neuron's kv_cache_dtype="fp8": the cache's bytes per rank halve, and so do a decode
    # step's cache reads; a format the cache cannot hold is refused by name.
    kw = dict(chip="trn2", tp=2, input_tokens=1024, output_tokens=4)
    bf = tm.serve("tiny-llama", **kw)
    f8 = tm.serve("tiny-llama", kv_cache_dtype="fp8", **kw)
    assert bf["kv_cache_dtype"] == "bf16" and f8["kv_cache_dtype"] == "fp8"
    assert 2 * f8["decode"]["kv_cache_bytes_per_rank"] == bf["decode"]["kv_cache_bytes_per_rank"]
    assert f8["decode"]["hbm_bytes"] < bf["decode"]["hbm_bytes"]
    assert "KV cache: fp8" in f8["text"]
    with pytest.raises(Exception, match="kv_cache_dtype"):
        tm.serve("tiny-llama", kv_cache_dtype="int4", **kw)


def test_serve_with_eagle():
    # EAGLE: the target's head drafts (one decoder layer and the LM head).
    kw = dict(chip="trn2", tp=2, input_tokens=100, output_tokens=30, speculation_length=3,
              acceptance=0.8)
    eagle = tm.serve("tiny-llama", eagle=True, **kw)
    own = tm.serve("tiny-llama", draft_model="tiny-llama", **kw)
    assert eagle["speculation"]["draft_model"] == "tiny-llama-eagle"
    assert eagle["tpot_ms"] < own["tpot_ms"]
    with pytest.raises(Exception, match="EAGLE"):
        tm.serve("tiny-llama", eagle=True, draft_model="tiny-llama", **kw)


def dequantized(w, fmt):
    """The weights as a per-channel symmetric quantization leaves them (NxD's, and the
    simulator's for quant_weights): codes of the format times scale = max |column| / the
    format's largest value, recomputed here in numpy / ml_dtypes from the drawn weights."""
    import ml_dtypes

    out = dict(w)
    for name in w:
        if not name.endswith(".scale"):
            continue
        wn = name[: -len("scale")] + "weight"
        n = w[name].size
        x = np.asarray(w[wn], np.float64).reshape(-1, n)
        qmax = 127.0 if fmt == "int8" else float(ml_dtypes.finfo(ml_dtypes.float8_e4m3).max)
        scale = (np.abs(x).max(axis=0) / qmax).astype(np.float32).astype(np.float64)
        assert np.allclose(scale, w[name], rtol=1e-6)  # the run's own scales
        q = x / scale
        if fmt == "int8":
            codes = np.clip(np.rint(q), -127, 127)
        else:
            codes = q.astype(ml_dtypes.float8_e4m3).astype(np.float64)
        out[wn] = (codes * scale).reshape(-1)
    return out


@pytest.mark.parametrize("fmt", ["int8", "fp8"])
def test_quantized_weights_match_the_dequantized_reference(fmt):
    # Weight-only quantization (NxD Inference's): the run quantizes the drawn bf16 weights per
    # channel; the reference runs on the dequantized ones. FP8 on trn2 is the legacy E4M3
    # (max 240), as NxD compiles an e4m3fn checkpoint for Trn2.
    cfg = tm.config("tiny-llama")
    seq = 64
    r = tm.run("tiny-llama", "trn2", tp=1, seq=seq, values=True, seed=7, quant_weights=fmt)
    got = r.outputs["lm_head"].reshape(seq, cfg["vocab"])
    ids = r.weights["input_ids"]
    want = llama_reference(dequantized(r.weights, fmt), ids, cfg, seq, cfg["layers"])
    assert np.abs(got - want).max() / np.abs(want).max() < 3e-2
    # Served with FP8 weights: half the decoder weights' bytes, a faster decode step.
    kw = dict(chip="trn2", tp=2, input_tokens=128, output_tokens=4)
    assert tm.serve("tiny-llama", quant_weights="fp8", **kw)["weights"] == "fp8"
    with pytest.raises(Exception, match="weights"):
        tm.serve("tiny-llama", quant_weights="int4", **kw)
    with pytest.raises(ValueError, match="quantize"):
        tm.serve("tiny-llama", quant_weights="fp8", quantize="attention", **kw)


def test_serve_with_chunked_prefill():
    kw = dict(chip="trn2", tp=2, input_tokens=1024, output_tokens=8)
    whole = tm.serve("tiny-llama", **kw)
    chunked = tm.serve("tiny-llama", prefill_chunk=256, **kw)
    assert chunked["prefill_chunk"] == 256 and chunked["ttft_ms"] > whole["ttft_ms"]
    load = tm.serve("tiny-llama", prefill_chunk=256, concurrency=2, requests=4, **kw)
    assert load["prefills"] == 4 and "chunked prefill" in load["text"]
    with pytest.raises(Exception, match="prefill-chunk"):
        tm.serve("tiny-llama", prefill_chunk=64, **kw)
