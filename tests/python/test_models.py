"""trnsim.models: built-in configs, timing runs and values against a numpy reference.

The reference is the Hugging Face Llama forward written here in float64 from the weights and
ids the run used, with no rounding of its own: the simulator rounds each kernel's result to
bf16 (8 significant bits), so over two layers the logits agree to a few bf16 ulps of their
scale; the bound 3e-2 x max |logit| is about four ulps, and a wrong op (a missing norm, RoPE
sign, mask or residual) moves them by far more (the test of a perturbed reference checks it).
"""

import json

import numpy as np
import pytest

import trnsim.models as tm


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
    with pytest.raises(Exception, match="mixture-of-experts"):
        tm.run("qwen3-30b-a3b", layers=1, tp=1, seq=16, values=True)
    with pytest.raises(Exception, match="tp"):
        tm.run("tiny-llama", tp=2, values=True)
    with pytest.raises(ValueError, match="input_ids"):
        tm.run("tiny-llama", tp=1, seq=8, values=True, input_ids=[1, 2, 3])


def _rms(x, g, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def _rope(x, pos, theta):
    d = x.shape[-1]
    inv = theta ** (-np.arange(0, d // 2) * 2.0 / d)
    ang = (pos[:, None].astype(np.float32) * inv[None, :].astype(np.float32)).astype(np.float64)
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + np.concatenate([-x2, x1], -1) * sin


def llama_reference(w, ids, cfg, seq, layers, perturb=False):
    H, nh, nkv, d = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    eps, theta = cfg["eps"], cfg["rope_theta"]
    W = {k: np.asarray(v, dtype=np.float64) for k, v in w.items()}
    x = W["embed_tokens.weight"].reshape(cfg["vocab"], H)[ids.astype(int)]
    pos = np.arange(seq)
    for l in range(layers):
        p = f"layers.{l}."

        def lin(name, a, n_out, p=p):
            return a @ W[p + name + ".weight"].reshape(a.shape[-1], n_out)

        h = _rms(x, W[p + "input_layernorm.weight"], eps)
        q = lin("self_attn.q_proj", h, nh * d).reshape(seq, nh, d)
        k = lin("self_attn.k_proj", h, nkv * d).reshape(seq, nkv, d)
        v = lin("self_attn.v_proj", h, nkv * d).reshape(seq, nkv, d)
        q = np.stack([_rope(q[:, i], pos, theta) for i in range(nh)], 1)
        k = np.stack([_rope(k[:, i], pos, theta) for i in range(nkv)], 1)
        out = np.zeros((seq, nh, d))
        mask = np.tril(np.ones((seq, seq), bool))
        if perturb:
            mask = np.ones((seq, seq), bool)
        for i in range(nh):
            g = i // (nh // nkv)
            s = q[:, i] @ k[:, g].T / np.sqrt(d)
            s = np.where(mask, s, -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            out[:, i] = (s / s.sum(-1, keepdims=True)) @ v[:, g]
        x = x + lin("self_attn.o_proj", out.reshape(seq, nh * d), H)
        h = _rms(x, W[p + "post_attention_layernorm.weight"], eps)
        inter = cfg["intermediate"]
        gt = lin("mlp.gate_proj", h, inter)
        up = lin("mlp.up_proj", h, inter)
        x = x + lin("mlp.down_proj", gt / (1 + np.exp(-gt)) * up, H)
    h = _rms(x, W["norm.weight"], eps)
    return h @ W["lm_head.weight"].reshape(H, cfg["vocab"])


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
