"""trnsim.torch: PyTorch modules captured by torch.export, compiled and run on simulated chips,
values checked against the same module on PyTorch's CPU (float32).

Tolerance: trnsim computes in bf16 (weights and every kernel's result rounded to 8 significant
bits) where the reference is float32, so outputs agree to a few bf16 ulps of their scale:
max |error| <= 3e-2 x max |reference| (about four ulps); a wrong operator (a dropped norm,
mask or residual) moves them by far more, which the perturbed-module checks show.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional
tt = pytest.importorskip("trnsim.torch")


class HFRMSNorm(nn.Module):  # as Hugging Face's LlamaRMSNorm computes it
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.variance_epsilon = eps

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.variance_epsilon)
        return self.weight * x.to(dt)


class LlamaBlock(nn.Module):
    def __init__(self, d=256, h=4, kv=2, inter=512, causal=True):
        super().__init__()
        self.h, self.kv, self.hd, self.causal = h, kv, d // h, causal
        self.input_layernorm, self.post_attention_layernorm = HFRMSNorm(d), HFRMSNorm(d)
        self.q_proj = nn.Linear(d, h * self.hd, bias=False)
        self.k_proj = nn.Linear(d, kv * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv * self.hd, bias=False)
        self.o_proj = nn.Linear(h * self.hd, d, bias=False)
        self.gate_proj = nn.Linear(d, inter, bias=False)
        self.up_proj = nn.Linear(d, inter, bias=False)
        self.down_proj = nn.Linear(inter, d, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, s, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.kv, self.hd).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, enable_gqa=True)
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, s, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class TinyLM(nn.Module):
    def __init__(self, vocab=512, d=256, layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([LlamaBlock(d) for _ in range(layers)])
        self.norm = HFRMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


class GPTBlock(nn.Module):  # LayerNorm, biases, GELU (tanh), nn.RMSNorm-free, not causal
    def __init__(self, d=128, h=2):
        super().__init__()
        self.h, self.hd = h, d // h
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.ModuleList([nn.Linear(d, d) for _ in range(3)])
        self.proj, self.fc, self.out = nn.Linear(d, d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        h = self.ln_1(x)
        q, k, v = (m(h).view(b, s, self.h, self.hd).transpose(1, 2) for m in self.qkv)
        a = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.out(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


def rel_err(got, want):
    return float((got - want).abs().max() / want.abs().max())


@pytest.mark.parametrize("chip", ["trn1", "trn2", "trn3"])
def test_tiny_llama_module_matches_pytorch(chip):
    torch.manual_seed(0)
    m = TinyLM().eval()
    ids = torch.randint(0, 512, (1, 64))
    traced = tt.trace(m, (ids,), chip=chip)
    got = traced(ids)
    with torch.no_grad():
        want = m(ids)
    assert got.shape == want.shape
    assert rel_err(got, want) < 3e-2
    run = traced.last_run
    assert run.latency_us > 0 and run.json["layers"] == 2
    # Fusion: qkv, attention, o, gate-up (GLU) and down per layer; the norms and residual
    # adds inside the linears; one embedding, one lm head.
    assert run.json["kernels"] == 12
    names = {o["name"] for o in run.ops}
    # Rows are named by module path, the layers folded: one row per fused kernel of a layer.
    for name in ("layers.*.attention", "layers.*.q_proj+k_proj+v_proj", "layers.*.o_proj",
                 "layers.*.gate_proj+up_proj", "layers.*.down_proj", "embed_tokens", "lm_head"):
        assert name in names, (name, sorted(names))
    # A second input of the traced shape: the traced model is reusable.
    ids2 = torch.randint(0, 512, (1, 64))
    with torch.no_grad():
        assert rel_err(traced(ids2), m(ids2)) < 3e-2


def test_float_input_layernorm_gelu_bias_block():
    torch.manual_seed(1)
    m = GPTBlock().eval()
    x = torch.randn(2, 40, 128)
    traced = tt.trace(m, (x,), chip="trn2")
    with torch.no_grad():
        want = m(x)
    got = traced(x)
    assert rel_err(got, want) < 3e-2
    # The check can fail: without the attention's output the result is far off.
    with torch.no_grad():
        m.proj.weight.zero_()
        wrong = m(x)
    assert rel_err(got, wrong) > 0.05


def test_timing_only_and_trace():
    torch.manual_seed(0)
    traced = tt.trace(TinyLM().eval(), (torch.randint(0, 512, (1, 128)),), chip="trn2")
    r = traced.time()
    assert r.latency_us > 0 and r.outputs == {}
    assert any(o["kernel"] == "attention" for o in r.ops)


def test_unsupported_operator_names_itself_line_and_alternative():
    class Softmaxy(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(64, 64)

        def forward(self, x):
            return torch.softmax(self.lin(x), dim=-1)

    with pytest.raises(tt.UnsupportedOperator) as e:
        tt.trace(Softmaxy(), (torch.randn(1, 8, 64),))
    msg = str(e.value)
    assert "softmax" in msg and "test_torch_frontend.py:" in msg
    assert "scaled_dot_product_attention" in msg  # the nearest supported form


def test_wrong_input_shape_is_refused():
    torch.manual_seed(0)
    traced = tt.trace(TinyLM(layers=1).eval(), (torch.randint(0, 512, (1, 32)),))
    with pytest.raises(ValueError, match="traced with"):
        traced(torch.randint(0, 512, (1, 16)))


class ExplicitAttention(nn.Module):
    """Attention written out as ops, in the three ways public models write it: nanoGPT's
    masked_fill of a tril buffer, Hugging Face Llama's eager path (repeat_kv for GQA, an added
    mask of 0 / finfo.min, softmax in float32 cast back), GPT-2's torch.where."""

    def __init__(self, style, hidden=256, heads=4, kv_heads=4, max_seq=64, scale=None, mask=None):
        super().__init__()
        self.style, self.nh, self.nkv, self.scale = style, heads, kv_heads, scale
        d = hidden // heads
        self.q, self.o = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
        self.k, self.v = nn.Linear(hidden, kv_heads * d), nn.Linear(hidden, kv_heads * d)
        tri = torch.tril(torch.ones(max_seq, max_seq)) if mask is None else mask
        self.register_buffer("bias", tri.view(1, 1, max_seq, max_seq))

    def forward(self, x):
        b, t, c = x.shape
        d = c // self.nh
        q = self.q(x).view(b, t, self.nh, d).transpose(1, 2)
        k = self.k(x).view(b, t, self.nkv, d).transpose(1, 2)
        v = self.v(x).view(b, t, self.nkv, d).transpose(1, 2)
        if self.nkv != self.nh:  # Hugging Face's repeat_kv
            r = self.nh // self.nkv
            k = k[:, :, None, :, :].expand(b, self.nkv, r, t, d).reshape(b, self.nh, t, d)
            v = v[:, :, None, :, :].expand(b, self.nkv, r, t, d).reshape(b, self.nh, t, d)
        scale = d**-0.5 if self.scale is None else self.scale
        if self.style == "nanogpt":
            att = (q @ k.transpose(-2, -1)) * scale
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
        elif self.style == "hf":
            att = torch.matmul(q, k.transpose(2, 3)) * scale
            att = att + torch.full((t, t), torch.finfo(torch.float32).min).triu(1)[None, None]
            att = F.softmax(att, dim=-1, dtype=torch.float32).to(q.dtype)
        else:  # GPT-2
            att = torch.matmul(q, k.transpose(-1, -2)) * scale
            att = torch.where(self.bias[:, :, :t, :t].bool(), att, torch.full([], torch.finfo(att.dtype).min))
            att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.o(y)


@pytest.mark.parametrize("style,kv_heads", [("nanogpt", 4), ("hf", 2), ("gpt2", 4)])
def test_attention_written_out_as_ops_is_eager_attention(style, kv_heads):
    torch.manual_seed(3)
    m = ExplicitAttention(style, kv_heads=kv_heads).eval()
    x = torch.randn(1, 48, 256)
    traced = tt.trace(m, (x,), chip="trn2")
    got = traced(x).float()
    want = m(x)
    assert (got - want).abs().max() <= 3e-2 * want.abs().max()
    att = [o for o in traced.last_run.ops if o["kernel"] == "attention"]
    assert len(att) == 1 and att[0]["detail"].endswith(f"4q/{kv_heads}kv heads x 64 causal eager")
    # The comparison can fail: the same module without its mask is far off.
    unmasked = ExplicitAttention(style, kv_heads=kv_heads, mask=torch.ones(64, 64)).eval()
    unmasked.load_state_dict(m.state_dict() | {"bias": torch.ones(1, 1, 64, 64)})
    if style != "hf":  # its mask is not the buffer
        assert (unmasked(x) - got).abs().max() > 0.1 * want.abs().max()


def test_attention_written_out_with_what_trnsim_does_not_take_is_refused():
    x = torch.randn(1, 32, 256)
    with pytest.raises(tt.UnsupportedOperator, match="1/sqrt"):
        tt.trace(ExplicitAttention("nanogpt", scale=1.0).eval(), (x,))
    banded = torch.tril(torch.ones(64, 64)) - torch.tril(torch.ones(64, 64), -8)  # a sliding window
    with pytest.raises(tt.UnsupportedOperator, match="causal mask") as e:
        tt.trace(ExplicitAttention("nanogpt", mask=banded).eval(), (x,))
    assert "test_torch_frontend.py:" in str(e.value)


def test_attention_written_out_without_a_mask_attends_to_every_key():
    class Bidirectional(nn.Module):  # an encoder's attention: a scale buffer, fp32 softmax
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(128, 128) for _ in range(3))
            self.register_buffer("scale", torch.tensor(64**-0.5))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = (p(x).view(b, t, 2, 64).transpose(1, 2) for p in (self.q, self.k, self.v))
            att = F.softmax((self.scale * (q @ k.transpose(-1, -2))).float(), dim=-1).type_as(q)
            return (att @ v).transpose(1, 2).reshape(b, t, c)

    torch.manual_seed(4)
    m = Bidirectional().eval()
    x = torch.randn(1, 40, 128)
    traced = tt.trace(m, (x,))
    want = m(x)
    assert (traced(x).float() - want).abs().max() <= 3e-2 * want.abs().max()
    att = [o for o in traced.last_run.ops if o["kernel"] == "attention"]
    assert att[0]["detail"] == "1x40 tokens, 2q/2kv heads x 64 eager"  # not causal
