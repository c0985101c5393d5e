"""Values of mixture-of-experts models against a numpy reference of the Hugging Face forward.

trnsim runs a MoE block as its router linear and top-k kernel, then per expert the gather of
the tokens routed to it, its GLU and down projection, and the weighted combine
(src/graph/value_runner_moe.cc). The reference here is transformers' Qwen3-MoE / Mixtral
forward in float64 (softmax over the router logits, top k, optionally renormalised, each
token's experts summed with those weights). A token whose k-th and (k+1)-th router logits
are nearly tied in the reference may be routed the other way by any bf16 implementation (the
choice is ill-conditioned there), so such tokens are left out of the comparison, and the test
checks that they are few.
"""

import json
import os

import numpy as np
import pytest

import trnsim.models as tm
from trnsim._paths import spec_dir

import hf_reference


def moe_reference(w, ids, cfg, seq, norm_topk, qk_norm, perturb=False):
    """Logits [seq, vocab] and, per token, the smallest gap between the k-th and (k+1)-th
    router logit over the layers (relative to that router's largest |logit|)."""
    E, k, inter = cfg["experts"], cfg["experts_per_token"], cfg["expert_intermediate"]
    gap = np.full(seq, np.inf)

    def moe(lin, h, cfg):
        nonlocal gap
        logits = lin("mlp.gate", h, E)
        order = np.argsort(-logits, axis=-1, kind="stable")
        srt = np.take_along_axis(logits, order, -1)
        gap = np.minimum(gap, (srt[:, k - 1] - srt[:, k]) / np.abs(logits).max())
        probs = np.exp(logits - srt[:, :1])
        probs /= probs.sum(-1, keepdims=True)
        top = order[:, :k]
        wts = np.take_along_axis(probs, top, -1)
        if norm_topk:
            wts /= wts.sum(-1, keepdims=True)
        if perturb:  # the first expert only, at full weight
            wts = np.zeros_like(wts)
            wts[:, 0] = 1
        y = np.zeros_like(h)
        for e in range(E):
            rows, slot = np.nonzero(top == e)
            if rows.size == 0:
                continue
            e_p = f"mlp.experts.{e}."
            hg = lin(e_p + "gate_proj", h[rows], inter)
            hu = lin(e_p + "up_proj", h[rows], inter)
            y[rows] += wts[rows, slot][:, None] * lin(e_p + "down_proj", hg / (1 + np.exp(-hg)) * hu,
                                                      cfg["hidden"])
        return y

    logits = hf_reference.decoder(w, ids, cfg, seq, cfg["layers"], qk_norm=qk_norm, mlp=moe)
    return logits, gap


def _check(r, cfg, seq, norm_topk, qk_norm):
    got = r.outputs["lm_head"].reshape(seq, cfg["vocab"])
    ids = r.weights["input_ids"]
    want, gap = moe_reference(r.weights, ids, cfg, seq, norm_topk, qk_norm)
    # A near tie: within ~1.3 bf16 ulps (2^-8) of the router's largest logit.
    clear = gap > 0.005
    assert clear.mean() > 0.85, clear.mean()
    scale = np.abs(want).max()
    err = np.abs(got - want)[clear].max() / scale
    assert err < 2e-2, err
    # The check can fail: the reference with each token's first expert alone is far off.
    bad, _ = moe_reference(r.weights, ids, cfg, seq, norm_topk, qk_norm, perturb=True)
    assert np.abs(got - bad)[clear].max() / scale > 0.1


@pytest.mark.parametrize("chip", ["trn1", "trn2", "trn3"])
def test_moe_values_match_numpy_reference(chip):
    cfg = tm.config("tiny-qwen3-moe")
    seq = 96
    r = tm.run("tiny-qwen3-moe", chip, tp=1, seq=seq, values=True, seed=3)
    _check(r, cfg, seq, norm_topk=True, qk_norm=True)
    # The timing is the balanced-routing block's: every expert's kernels counted once each.
    rows = {o["name"]: o for o in r.ops}
    assert rows["layers.*.mlp.experts.gate_up"]["count"] == cfg["layers"] * cfg["experts"]


@pytest.mark.parametrize("model_type", ["qwen3_moe", "mixtral"])
def test_moe_routing_weights_follow_the_config(tmp_path, model_type):
    # Qwen3-MoE without norm_topk_prob (its config class's default) weights each chosen expert
    # by the softmax over all experts; Mixtral renormalises over the top k.
    tiny = os.path.join(spec_dir(), "models", "tiny-qwen3-moe.json")
    spec = {k: v for k, v in json.loads(open(tiny).read()).items() if not k.startswith("_")}
    spec["model_type"] = model_type
    spec["num_hidden_layers"] = 1
    if model_type == "mixtral":
        spec["num_local_experts"] = spec.pop("num_experts")
        spec["intermediate_size"] = spec.pop("moe_intermediate_size")
    else:
        spec.pop("norm_topk_prob")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(spec))
    cfg = tm.config(str(path))
    assert cfg["norm_top_k"] is (model_type == "mixtral")
    seq = 64
    r = tm.run(str(path), "trn2", tp=1, seq=seq, values=True, seed=5)
    norm = model_type == "mixtral"
    _check(r, cfg, seq, norm_topk=norm, qk_norm=model_type == "qwen3_moe")
    # ... and the other normalisation is measurably different.
    want, gap = moe_reference(r.weights, r.weights["input_ids"], cfg, seq, not norm,
                              model_type == "qwen3_moe")
    got = r.outputs["lm_head"].reshape(seq, cfg["vocab"])
    assert np.abs(got - want)[gap > 0.005].max() / np.abs(want).max() > 3e-2


def test_from_hf_state_dict_maps_mixtral_names(tmp_path):
    tiny = os.path.join(spec_dir(), "models", "tiny-qwen3-moe.json")
    spec = {k: v for k, v in json.loads(open(tiny).read()).items() if not k.startswith("_")}
    spec.update(model_type="mixtral", num_hidden_layers=1)
    spec["num_local_experts"] = spec.pop("num_experts")
    spec["intermediate_size"] = spec.pop("moe_intermediate_size")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(spec))
    cfg = tm.config(str(path))
    H, V, E, I = cfg["hidden"], cfg["vocab"], cfg["experts"], cfg["expert_intermediate"]
    q, kv = cfg["heads"] * cfg["head_dim"], cfg["kv_heads"] * cfg["head_dim"]
    shapes = {"embed_tokens.weight": (V, H), "lm_head.weight": (H, V),
              "layers.0.self_attn.q_proj.weight": (H, q), "layers.0.self_attn.k_proj.weight": (H, kv),
              "layers.0.self_attn.v_proj.weight": (H, kv), "layers.0.self_attn.o_proj.weight": (q, H),
              "layers.0.mlp.gate.weight": (H, E)}
    for e in range(E):
        for n, s in (("gate_proj", (H, I)), ("up_proj", (H, I)), ("down_proj", (I, H))):
            shapes[f"layers.0.mlp.experts.{e}.{n}.weight"] = s
    r = tm.run(str(path), "trn2", tp=1, seq=16, values=True, seed=2)
    hf = {}
    for name, a in r.weights.items():
        if name == "input_ids":
            continue
        hname = name if name.startswith("lm_head") else "model." + name
        for old, new in ((".mlp.", ".block_sparse_moe."), (".gate_proj.", ".w1."),
                         (".up_proj.", ".w3."), (".down_proj.", ".w2.")):
            hname = hname.replace(old, new)
        if name in shapes:  # torch's [out, in], the embedding as it is
            a = a.reshape(shapes[name])
            hf[hname] = a if name.startswith("embed") else a.T.copy()
        else:
            hf[hname] = a
    assert any(".block_sparse_moe.experts.3.w2." in n for n in hf)
    w = tm.from_hf_state_dict(hf, str(path))
    assert set(w) == set(r.weights) - {"input_ids"}
    for name, a in w.items():
        np.testing.assert_array_equal(a.ravel(), r.weights[name].ravel(), err_msg=name)
    again = tm.run(str(path), "trn2", tp=1, seq=16, values=True, weights=w,
                   input_ids=r.weights["input_ids"])
    np.testing.assert_array_equal(again.outputs["lm_head"], r.outputs["lm_head"])


def test_expert_parallel_timing():
    # Qwen3-30B-A3B on one Trn2 chip, tp 8: the experts' 768 columns split 8 ways (96-column
    # matmuls), or with ep 8 each core holding 16 whole experts: the same weight bytes and
    # flops, larger matmuls.
    split = tm.run("qwen3-30b-a3b", "trn2", seq=512, layers=1, tp=8)
    ep = tm.run("qwen3-30b-a3b", "trn2", seq=512, layers=1, tp=8, ep=8)
    assert (split.json["ep"], ep.json["ep"]) == (1, 8)
    rows = {o["name"]: o for o in ep.ops}
    assert rows["layers.*.mlp.experts.gate_up"]["count"] == 16
    assert rows["layers.*.mlp.experts.gate_up"]["detail"].startswith("32x2048")  # 512 x 8 / 128
    assert ep.json["weight_bytes_per_rank"] == split.json["weight_bytes_per_rank"]
    assert abs(ep.json["flops"] - split.json["flops"]) < 1e-3 * split.json["flops"]

    def experts_us(r):
        return sum(o["total_us"] for o in r.ops if ".experts." in o["name"])

    assert experts_us(ep) < experts_us(split)
    with pytest.raises(Exception, match="expert"):
        tm.run("tiny-llama", tp=2, ep=2)
    # A decode step of 4 sequences: 32 token slots, so 32 experts run one token each (4 per
    # rank with ep 8), not all 128.
    for e, active in ((1, 32), (8, 4)):
        d = tm.run("qwen3-30b-a3b", "trn2", seq=1, batch=4, layers=1, tp=8, ep=e)
        row = {o["name"]: o for o in d.ops}["layers.*.mlp.experts.gate_up"]
        assert row["count"] == active and row["detail"].startswith("1x2048"), row
    s = tm.serve("qwen3-30b-a3b", chip="trn2", tp=8, ep=8, batch=4, input_tokens=256,
                 output_tokens=8)
    assert s["ep"] == 8 and s["ttft_ms"] > 0


def test_moe_training_step_with_expert_parallelism():
    # A MoE model's training step (its blocks' backward, graph/lower_moe.cc) under TP 4 x DP 8
    # on a trn1.32xlarge, each expert split over the TP group or (ep 4) whole experts per rank.
    kw = dict(system="trn1.32xlarge", tp=4, dp=8, seq=128, global_batch=16)
    split = tm.train("tiny-qwen3-moe", **kw)
    ep = tm.train("tiny-qwen3-moe", ep=4, **kw)
    assert (split["ep"], ep["ep"]) == (1, 4)
    assert "EP 4" in ep["text"]
    for r in (split, ep):
        st = r["stages"][0]
        assert st["backward_s"] > st["forward_s"] > 0
        assert 0 < r["mfu"] < 1
    assert ep["stages"][0]["weight_bytes"] == split["stages"][0]["weight_bytes"]
    assert (ep["stages"][0]["activation_bytes_per_micro_batch"]
            < split["stages"][0]["activation_bytes_per_micro_batch"])
    with pytest.raises(Exception, match="expert-parallel"):
        tm.train("tiny-llama", ep=2, **kw)
    # ep 8 = TP 4 x 2 replicas: one whole expert per core, the rows crossing replicas by
    # all-to-alls (inside the compute), the experts' gradients among 4 replicas, not 8.
    wide = tm.train("tiny-qwen3-moe", ep=8, **kw)
    assert (wide["ep"], wide["expert_dp"]) == (8, 2)
    assert 0 < wide["breakdown"]["ep_comm_s"] < wide["breakdown"]["compute_s"]
    assert "EP 8 over 2 replicas" in wide["text"]
    assert wide["stages"][0]["weight_bytes"] < ep["stages"][0]["weight_bytes"]
