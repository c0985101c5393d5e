"""Training steps (trnsim model --train): loss, weight gradients and the AdamW update of a
tiny Llama against PyTorch autograd, and the timing of a training step.

The reference is the Hugging Face Llama forward written here in torch float64 from the weights,
ids and labels the run used, differentiated by torch.autograd: an independent backward. The
simulator keeps activations and their gradients in bf16 (8 significant bits), rounding at each
kernel boundary, weight gradients in fp32; over two layers forward and back each weight's
gradient then agrees with the fp64 one to a few percent of its norm (relative Frobenius error;
measured 0.5-0.8% on Trn2, bound 3%), while a wrong backward rule (a missing residual path, a GQA group
summed wrong, RoPE's transpose) is off by tens of percent (the perturbed reference checks
that the comparison can fail).
"""

import numpy as np
import pytest

import trnsim.models as tm

torch = pytest.importorskip("torch")


def _rms(x, g, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * g


def _rope(x, pos, theta):
    d = x.shape[-1]
    inv = theta ** (-np.arange(0, d // 2) * 2.0 / d)
    ang = (pos[:, None].astype(np.float32) * inv[None, :].astype(np.float32)).astype(np.float64)
    ang = np.concatenate([ang, ang], -1)
    cos, sin = torch.tensor(np.cos(ang)), torch.tensor(np.sin(ang))
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def llama_loss(W, ids, labels, cfg, seq, perturb=False):
    """Cross-entropy of the Llama forward (torch, float64) over one sequence."""
    H, nh, nkv, d = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    eps, theta = cfg["eps"], cfg["rope_theta"]
    x = W["embed_tokens.weight"][torch.tensor(ids.astype(np.int64))]
    pos = np.arange(seq)
    mask = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
    for layer in range(cfg["layers"]):
        p = f"layers.{layer}."
        h = _rms(x, W[p + "input_layernorm.weight"], eps)
        q = (h @ W[p + "self_attn.q_proj.weight"]).reshape(seq, nh, d)
        k = (h @ W[p + "self_attn.k_proj.weight"]).reshape(seq, nkv, d)
        v = (h @ W[p + "self_attn.v_proj.weight"]).reshape(seq, nkv, d)
        q = torch.stack([_rope(q[:, i], pos, theta) for i in range(nh)], 1)
        k = torch.stack([_rope(k[:, i], pos, theta) for i in range(nkv)], 1)
        outs = []
        for i in range(nh):
            g = i // (nh // nkv)
            s = q[:, i] @ k[:, g].T / np.sqrt(d)
            s = s.masked_fill(~mask, float("-inf"))
            outs.append(torch.softmax(s, -1) @ v[:, g])
        attn = torch.cat(outs, -1)
        x = x + attn @ W[p + "self_attn.o_proj.weight"]
        h = _rms(x, W[p + "post_attention_layernorm.weight"], eps)
        gt = h @ W[p + "mlp.gate_proj.weight"]
        up = h @ W[p + "mlp.up_proj.weight"]
        act = gt * torch.sigmoid(gt) if not perturb else gt
        x = x + (act * up) @ W[p + "mlp.down_proj.weight"]
    logits = _rms(x, W["norm.weight"], eps) @ W["lm_head.weight"]
    # trnsim's loss is the mean over all the batch's tokens, an ignored one counting 0.
    return torch.nn.functional.cross_entropy(
        logits, torch.tensor(labels.astype(np.int64)), ignore_index=-100, reduction="sum"
    ) / seq


def _shapes(cfg):
    H, nh, nkv, d, inter = (cfg[k] for k in ("hidden", "heads", "kv_heads", "head_dim", "intermediate"))
    s = {"embed_tokens.weight": (cfg["vocab"], H), "norm.weight": (H,), "lm_head.weight": (H, cfg["vocab"])}
    for layer in range(cfg["layers"]):
        p = f"layers.{layer}."
        s |= {
            p + "input_layernorm.weight": (H,),
            p + "post_attention_layernorm.weight": (H,),
            p + "self_attn.q_proj.weight": (H, nh * d),
            p + "self_attn.k_proj.weight": (H, nkv * d),
            p + "self_attn.v_proj.weight": (H, nkv * d),
            p + "self_attn.o_proj.weight": (nh * d, H),
            p + "mlp.gate_proj.weight": (H, inter),
            p + "mlp.up_proj.weight": (H, inter),
            p + "mlp.down_proj.weight": (inter, H),
        }
    return s


def _reference(run, cfg, seq, labels, perturb=False):
    W = {
        k: torch.tensor(np.asarray(v, dtype=np.float64).reshape(shape), requires_grad=True)
        for k, shape in _shapes(cfg).items()
        for v in [run.weights[k]]
    }
    loss = llama_loss(W, run.weights["input_ids"], labels, cfg, seq, perturb)
    loss.backward()
    return float(loss.detach()), {k: t.grad.numpy() for k, t in W.items()}


@pytest.mark.parametrize("chip", ["trn1", "trn2", "trn3"])
def test_tiny_llama_training_step_matches_torch_autograd(chip):
    cfg = tm.config("tiny-llama")
    seq = 96
    rng = np.random.default_rng(5)
    labels = rng.integers(0, cfg["vocab"], seq)
    labels[:4] = -100  # ignored positions, as a prompt's in supervised fine-tuning
    r = tm.run("tiny-llama", chip, tp=1, seq=seq, values=True, seed=11, train=True, labels=labels, lr=1e-3)
    want_loss, want = _reference(r, cfg, seq, labels)
    assert r.loss == pytest.approx(want_loss, rel=1e-2)
    assert set(r.gradients) == set(want)
    errs = {}
    for name, g in want.items():
        got = r.gradients[name].reshape(g.shape)
        errs[name] = np.linalg.norm(got - g) / np.linalg.norm(g)
    assert max(errs.values()) < 0.03, sorted(errs.items(), key=lambda kv: -kv[1])[:4]
    # The comparison can fail: without the SiLU the MLP's gradients are far off.
    _, bad = _reference(r, cfg, seq, labels, perturb=True)
    name = "layers.1.mlp.gate_proj.weight"
    assert np.linalg.norm(r.gradients[name].reshape(bad[name].shape) - bad[name]) / np.linalg.norm(
        bad[name]
    ) > 0.2


def test_eager_attention_training_step_matches_torch_autograd():
    """Eager attention (the [S, S] scores and probabilities through HBM, autograd's backward
    from the saved probabilities) computes the same step: the loss and every gradient against
    the same fp64 autograd reference, to the same bound as flash attention's."""
    cfg = tm.config("tiny-llama")
    seq = 96
    labels = np.random.default_rng(6).integers(0, cfg["vocab"], seq)
    r = tm.run("tiny-llama", "trn2", tp=1, seq=seq, values=True, seed=12, train=True, labels=labels,
               lr=1e-3, attention="eager")
    attn = [op for op in r.ops if op["kernel"] in ("attention", "attn_grad")]
    assert attn and all(op["detail"].endswith("eager") for op in attn), attn
    want_loss, want = _reference(r, cfg, seq, labels)
    assert r.loss == pytest.approx(want_loss, rel=1e-2)
    errs = {
        name: np.linalg.norm(r.gradients[name].reshape(g.shape) - g) / np.linalg.norm(g)
        for name, g in want.items()
    }
    assert max(errs.values()) < 0.03, sorted(errs.items(), key=lambda kv: -kv[1])[:4]
    with pytest.raises(ValueError, match="attention"):
        tm.run("tiny-llama", attention="sdpa")


def test_adamw_update_is_torch_adamw():
    cfg = tm.config("tiny-llama")
    seq = 64
    labels = np.arange(seq) % cfg["vocab"]
    lr, wd = 1e-2, 0.1
    r = tm.run("tiny-llama", tp=1, seq=seq, layers=1, values=True, seed=2, train=True, labels=labels,
               lr=lr, weight_decay=wd, stochastic_rounding=False)
    for name in ("layers.0.mlp.down_proj.weight", "norm.weight", "embed_tokens.weight"):
        w = torch.tensor(np.asarray(r.weights[name], dtype=np.float64), requires_grad=True)
        w.grad = torch.tensor(np.asarray(r.gradients[name], dtype=np.float64))
        opt = torch.optim.AdamW([w], lr=lr, weight_decay=wd, betas=(0.9, 0.999), eps=1e-8)
        opt.step()
        want = w.detach().numpy().astype(np.float32)
        got = r.updated_weights[name]
        before = np.abs(np.asarray(r.weights[name]))
        if name == "norm.weight":  # norm scales are fp32 weights: the master itself
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7 * before.max())
            continue
        want_bf16 = torch.tensor(want).to(torch.bfloat16).float().numpy()
        # Round to nearest even of the fp32 master. The master's fp32 arithmetic differs from
        # fp64 by a few fp32 ulps of the operands (|w|), which may flip a rounding by one bf16
        # ulp, or, where the update nearly cancels the weight, move a tiny result.
        tol = np.abs(want_bf16) * 2.0**-7 + before * 2.0**-20 + 1e-30
        assert np.all(np.abs(got - want_bf16) <= tol), name
        assert np.mean(got == want_bf16) > 0.99, name


def test_stochastic_rounding_changes_the_update_but_not_its_mean():
    cfg = tm.config("tiny-llama")
    seq = 32
    labels = np.arange(seq) % cfg["vocab"]
    common = dict(tp=1, seq=seq, layers=1, values=True, seed=4, train=True, labels=labels, lr=1e-3)
    sr = tm.run("tiny-llama", **common)
    rne = tm.run("tiny-llama", **common, stochastic_rounding=False)
    name = "layers.0.mlp.up_proj.weight"
    a, b = sr.updated_weights[name], rne.updated_weights[name]
    assert np.any(a != b)
    # Each SR value is one of the two bf16 neighbours of the master: within one ulp of RNE.
    assert np.all(np.abs(a - b) <= np.abs(b) * 2.0**-7 + 1e-30)
    again = tm.run("tiny-llama", **common)
    assert np.array_equal(again.updated_weights[name], a)  # deterministic for a seed


def test_training_step_timing_and_memory():
    r = tm.run("llama-3.1-8b", "trn2", seq=4096, layers=2, train=True)
    kinds = {op["kernel"] for op in r.ops}
    assert {"grad_input", "grad_weight", "attn_grad", "norm_grad", "act_grad", "loss", "adamw"} <= kinds
    fwd = tm.run("llama-3.1-8b", "trn2", seq=4096, layers=2)
    # A step does the forward's matmuls three times (forward, input and weight gradients).
    assert 2.5 * fwd.json["flops"] < r.json["flops"] < 3.6 * fwd.json["flops"]
    assert r.latency_us > 2.5 * fwd.latency_us
    # fp32 master, m and v: 12 bytes per parameter, 6x the bf16 weights (the fp32 norm scales
    # are a few thousandths of them).
    assert r.json["optimizer_bytes_per_rank"] == pytest.approx(6 * r.json["weight_bytes_per_rank"], rel=0.01)
    full = tm.run("llama-3.1-8b", "trn2", seq=4096, train=True, search=False)
    assert not full.fits  # 8B parameters x 18 bytes do not fit one Trn2's 96 GiB
    assert "does not fit" in full.table


def test_bert_trains_through_its_masked_lm_head():
    r = tm.run("bert-large", chip="trn1", tp=1, seq=128, batch=2, layers=2, train=True, search=False)
    names = {row["name"] for row in r.json["ops"]}
    assert "cls.predictions.decoder" in names
    assert "cls.predictions.decoder.grad_weight" in names
    assert "loss" in names


def test_training_refusals():
    # A MoE training step is timed (test_models_moe.py); its values are not computed yet.
    with pytest.raises(Exception, match="MoE block"):
        tm.run("tiny-qwen3-moe", train=True, values=True, tp=1)
    with pytest.raises(ValueError, match="labels"):
        tm.run("tiny-llama", labels=[1] * 128)


def test_train_plan_from_python_and_cli():
    r = tm.train("tiny-llama", system="trn1.32xlarge", tp=2, pp=2, dp=8, seq=256, global_batch=64)
    for key in ("step_time_s", "sequences_per_s", "tokens_per_s", "mfu", "memory_per_chip_bytes"):
        assert r[key] > 0, key
    b = r["breakdown"]
    parts = b["compute_s"] + b["pp_bubble_s"] + b["pp_comm_s"] + b["dp_comm_s"] + b["optimizer_s"]
    assert r["step_time_s"] == pytest.approx(parts)
    assert r["micro_batches"] == 8 and len(r["stages"]) == 2
    assert "pipeline bubble" in r["text"]
    with pytest.raises(Exception, match="ranks"):
        tm.train("tiny-llama", system="trn1.32xlarge", tp=2, pp=2, dp=2)
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "trnsim", "train", "--model", "tiny-llama", "--system", "trn1.32xlarge", "--tp", "2",
         "--dp", "16", "--seq", "128", "--global-batch", "32", "--json"],
        capture_output=True, text=True, check=True,
    )
    j = json.loads(out.stdout)
    assert j["dp"] == 16 and j["sequences_per_s"] > 0 and j["fits"]
    bad = subprocess.run([sys.executable, "-m", "trnsim", "train", "--model", "tiny-llama", "--system", "trn1.32xlarge",
                          "--recompute", "partial"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--recompute" in bad.stderr
    eager = subprocess.run(
        [sys.executable, "-m", "trnsim", "train", "--model", "tiny-llama", "--system", "trn1.32xlarge", "--tp", "2",
         "--dp", "16", "--seq", "128", "--global-batch", "32", "--attention", "eager", "--json"],
        capture_output=True, text=True, check=True,
    )
    je = json.loads(eager.stdout)
    assert je["attention"] == "eager" and j["attention"] == "flash"
    assert je["step_time_s"] > j["step_time_s"]
    py = tm.train("tiny-llama", system="trn1.32xlarge", tp=2, dp=16, seq=128, global_batch=32, attention="eager")
    assert py["step_time_s"] == pytest.approx(je["step_time_s"])
    bad = subprocess.run([sys.executable, "-m", "trnsim", "train", "--model", "tiny-llama", "--system", "trn1.32xlarge",
                          "--attention", "sdpa"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--attention" in bad.stderr
    sp = subprocess.run(
        [sys.executable, "-m", "trnsim", "train", "--model", "tiny-llama", "--system", "trn1.32xlarge", "--tp", "2",
         "--dp", "16", "--seq", "128", "--global-batch", "32", "--sequence-parallel", "--json"],
        capture_output=True, text=True, check=True,
    )
    js = json.loads(sp.stdout)
    assert js["sequence_parallel"] and not j["sequence_parallel"]
    assert js["stages"][0]["activation_bytes_per_micro_batch"] < j["stages"][0]["activation_bytes_per_micro_batch"]
    py = tm.train("tiny-llama", system="trn1.32xlarge", tp=2, dp=16, seq=128, global_batch=32, sequence_parallel=True)
    assert py["step_time_s"] == pytest.approx(js["step_time_s"])
