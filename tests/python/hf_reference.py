"""A float64 numpy forward of the Hugging Face decoder equations (Llama, Qwen3, Qwen3-MoE,
Mixtral), written here from the weights and ids a trnsim run used, with no rounding of its
own: the reference the model-layer value tests compare against."""

import numpy as np


def rms(x, g, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def rope(x, pos, theta, inv=None):
    """Rotary embedding of x [seq, d] (rotate_half), with frequencies `inv` or theta's."""
    d = x.shape[-1]
    if inv is None:
        inv = theta ** (-np.arange(0, d // 2) * 2.0 / d)
    ang = (pos[:, None].astype(np.float32) * inv[None, :].astype(np.float32)).astype(np.float64)
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + np.concatenate([-x2, x1], -1) * sin


def llama3_inv(theta, d, factor, low, high, old):
    """transformers' Llama 3.1 ("llama3") RoPE frequencies, written from its formula."""
    inv = (1.0 / theta ** (np.arange(0, d, 2) / d)).astype(np.float32).astype(np.float64)
    wl = 2 * np.pi / inv
    out = np.where(wl > old / low, inv / factor, inv)
    smooth = (old / wl - low) / (high - low)
    mid = (wl >= old / high) & (wl <= old / low)
    return np.where(mid, (1 - smooth) * inv / factor + smooth * inv, out)


def dense_mlp(lin, h, cfg):
    gt = lin("mlp.gate_proj", h, cfg["intermediate"])
    up = lin("mlp.up_proj", h, cfg["intermediate"])
    return lin("mlp.down_proj", gt / (1 + np.exp(-gt)) * up, cfg["hidden"])


def decoder(w, ids, cfg, seq, layers, *, causal=True, inv=None, qk_norm=False, mlp=dense_mlp):
    """Logits [seq, vocab]. `mlp(lin, h, cfg)` is each layer's MLP on the normed stream, `lin`
    that layer's linear by module name; causal=False drops the mask (a wrong reference)."""
    H, nh, nkv, d = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    eps, theta = cfg["eps"], cfg["rope_theta"]
    W = {k: np.asarray(v, dtype=np.float64) for k, v in w.items()}
    x = W["embed_tokens.weight"].reshape(cfg["vocab"], H)[ids.astype(int)]
    pos = np.arange(seq)
    mask = np.tril(np.ones((seq, seq), bool)) if causal else np.ones((seq, seq), bool)
    for l in range(layers):
        p = f"layers.{l}."

        def lin(name, a, n_out, p=p):
            return a @ W[p + name + ".weight"].reshape(a.shape[-1], n_out)

        h = rms(x, W[p + "input_layernorm.weight"], eps)
        q = lin("self_attn.q_proj", h, nh * d).reshape(seq, nh, d)
        k = lin("self_attn.k_proj", h, nkv * d).reshape(seq, nkv, d)
        v = lin("self_attn.v_proj", h, nkv * d).reshape(seq, nkv, d)
        if qk_norm:
            q = rms(q, W[p + "self_attn.q_norm.weight"], eps)
            k = rms(k, W[p + "self_attn.k_norm.weight"], eps)
        q = np.stack([rope(q[:, i], pos, theta, inv) for i in range(nh)], 1)
        k = np.stack([rope(k[:, i], pos, theta, inv) for i in range(nkv)], 1)
        out = np.zeros((seq, nh, d))
        for i in range(nh):
            g = i // (nh // nkv)
            s = q[:, i] @ k[:, g].T / np.sqrt(d)
            s = np.where(mask, s, -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            out[:, i] = (s / s.sum(-1, keepdims=True)) @ v[:, g]
        x = x + lin("self_attn.o_proj", out.reshape(seq, nh * d), H)
        x = x + mlp(lin, rms(x, W[p + "post_attention_layernorm.weight"], eps), cfg)
    h = rms(x, W["norm.weight"], eps)
    return h @ W["lm_head.weight"].reshape(H, cfg["vocab"])
