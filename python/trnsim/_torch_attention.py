"""Attention written out as torch ops (q @ k^T, a scale, a causal mask, softmax, @ v), as nanoGPT,
GPT-2 and Hugging Face's eager attention write it, recognised while tracing and emitted as one
eager attention (graph JSON ``"eager": true``; ops.h AttentionSpec::eager). Operators on
constants alone are folded, so that the mask can be checked."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trnsim._torch_nodes import _ALTERNATIVES, UnsupportedOperator, _Act, _module_name, _shape, _source, aten

# Operators that make a constant tensor from Python values alone (folded when tracing).
_FACTORIES = {
    aten.full.default, aten.ones.default, aten.zeros.default, aten.arange.default,
    aten.arange.start, aten.arange.start_step, aten.scalar_tensor.default,
}


def _swapped(node, src) -> bool:
    """Whether a layout op leaves its input's last two dims swapped (a transpose of them flips
    it; a view or reshape to another rank ends it)."""
    t = node.target
    nd = len(_shape(node))
    if t is aten.transpose.int:
        dims = {d % nd for d in node.args[1:3]}
        return src.swapped != (dims == {nd - 2, nd - 1})
    if t is aten.permute.default:
        perm = [d % nd for d in node.args[1]]
        return src.swapped != (perm[-2:] == [nd - 1, nd - 2])
    if t in (aten.view.default, aten.reshape.default, aten._unsafe_view.default) and \
            len(_shape(node)) != len(src.shape):
        return False
    return src.swapped


@dataclass
class _Scores:
    """q @ k^T of an attention being written out as ops, and what was applied to it since."""

    q: _Act
    k: _Act
    scale: float = 1.0
    causal: bool = False
    probs: bool = False  # softmax taken


class _EagerAttention:
    """The _Converter's part that tracks written-out attention (a mixin: it reads the
    converter's env, values and constants)."""

    def _const(self, a):
        e = self.env.get(a) if not isinstance(a, (int, float, bool, str, type(None))) else None
        if isinstance(e, tuple) and e[0] == "param" and e[1].name not in self.ep.graph_signature.inputs_to_parameters:
            return self.consts[self.params[e[1].name]]
        if isinstance(e, tuple) and e[0] == "folded":
            return e[1]
        if isinstance(e, tuple) and e[0] == "const":
            return getattr(self.ep.graph_module, e[1].target)
        return None

    def _fold(self, n) -> bool:
        """An operator on constants alone (buffers, get_attr, values folded before, Python
        scalars) is evaluated now: masks built from a buffer or from tril / arange."""
        tensors = [a for a in list(n.args) + list(n.kwargs.values()) if isinstance(a, torch.fx.Node)]
        if (not tensors and n.target not in _FACTORIES) or any(self._const(a) is None for a in tensors):
            return False
        sub = lambda a: self._const(a) if isinstance(a, torch.fx.Node) else a  # noqa: E731
        args = [sub(a) if not isinstance(a, (list, tuple)) else type(a)(sub(x) for x in a) for a in n.args]
        kwargs = {k: sub(v) for k, v in n.kwargs.items()}
        with torch.no_grad():
            self.env[n] = ("folded", n.target(*args, **kwargs))
        return True

    def scores(self, n):
        q, kt = self.get(n.args[0], n), self.get(n.args[1], n)
        where = _source(n) or n.name
        if not isinstance(self.env.get(n.args[0]), _Act) or len(q.shape) != 4 or len(kt.shape) != 4 \
                or not kt.swapped or q.swapped or q.shape[-1] != kt.shape[-2]:
            raise UnsupportedOperator(
                f"matmul at {where}: of two activations, trnsim takes q @ k.transpose(-2, -1) of an "
                "attention ([batch, heads, seq, head_dim] each) and its probabilities @ v; nearest "
                f"supported: {_ALTERNATIVES['matmul']}")
        self.env[n] = _Scores(q, kt)

    def scores_op(self, n):
        t = n.target
        s = next(self.env[a] for a in n.args if isinstance(self.env.get(a), _Scores))
        where = _source(n) or n.name
        # The scale: a Python number or a one-element constant, on either side of a mul.
        other = [a for a in n.args if not (isinstance(a, torch.fx.Node) and self.env.get(a) is s)]
        factor = None
        if t in (aten.mul.Tensor, aten.div.Tensor) and len(other) == 1:
            c = self._const(other[0]) if isinstance(other[0], torch.fx.Node) else other[0]
            if isinstance(c, (int, float)) or (isinstance(c, torch.Tensor) and c.numel() == 1):
                factor = float(c)
            if t is aten.div.Tensor and self.env.get(n.args[0]) is not s:
                factor = None  # c / scores is not a scale
        nq = s.q.shape[-2]
        tri = torch.tril(torch.ones(nq, s.k.shape[-1], dtype=torch.bool))
        if s.probs:
            raise UnsupportedOperator(f"{t} at {where}: after the softmax trnsim takes only "
                                      "dropout, a dtype cast and probs @ v")

        def mask_of(x, keep_where_true):
            m = torch.as_tensor(x)
            if m.dim() > 2 and m.numel() == m.shape[-1] * m.shape[-2]:
                m = m.reshape(m.shape[-2], m.shape[-1])
            if m.dim() != 2 or tuple(m.shape) != tuple(tri.shape):
                raise UnsupportedOperator(f"{t} at {where}: the attention mask is not one [seq, seq] "
                                          "pattern for every sequence and head")
            return m.bool() if keep_where_true else ~m.bool()

        if factor is not None:
            s.scale = s.scale * factor if t is aten.mul.Tensor else s.scale / factor
        elif t is aten.masked_fill.Scalar and n.args[2] <= -1e4 and self._const(n.args[1]) is not None:
            keep = mask_of(self._const(n.args[1]), keep_where_true=False)
            if not (torch.equal(keep, tri) or bool(keep.all())):
                raise UnsupportedOperator(f"masked_fill at {where}: only a causal mask (the keys "
                                          "after each query masked) is taken")
            s.causal = s.causal or torch.equal(keep, tri)
        elif t is aten.where.self and self._const(n.args[0]) is not None:
            keep = mask_of(self._const(n.args[0]), keep_where_true=True)
            other = self._const(n.args[2]) if isinstance(n.args[2], torch.fx.Node) else n.args[2]
            if float(torch.as_tensor(other).max()) > -1e4 or not (torch.equal(keep, tri) or bool(keep.all())):
                raise UnsupportedOperator(f"where at {where}: only a causal mask (a large negative "
                                          "value after each query) is taken")
            s.causal = s.causal or torch.equal(keep, tri)
        elif t is aten.add.Tensor and self._const(n.args[1]) is not None:
            add = torch.as_tensor(self._const(n.args[1])).float()
            keep = mask_of(add > -1e4, keep_where_true=True)
            if not bool((add[add > -1e4] == 0).all()) or not (torch.equal(keep, tri) or bool(keep.all())):
                raise UnsupportedOperator(f"add at {where}: only an additive causal mask (0 up to "
                                          "each query, -inf after it) is taken")
            s.causal = s.causal or torch.equal(keep, tri)
        elif t in (aten.softmax.int, aten._softmax.default) and n.args[1] in (-1, 3):
            d = s.q.shape[-1]
            if abs(s.scale - d ** -0.5) > 1e-6 * d ** -0.5:
                raise UnsupportedOperator(f"softmax at {where}: the scores must be scaled by "
                                          f"1/sqrt(head_dim) = {d ** -0.5:g} (got {s.scale:g})")
            s.probs = True
        else:
            raise UnsupportedOperator(
                f"{t} at {where}: on attention scores trnsim takes a scale by 1/sqrt(head_dim), a "
                "causal mask (masked_fill, where, or an added mask) and softmax over the keys")
        self.env[n] = s

    def probs_v(self, n):
        s, v = self.env.get(n.args[0]), self.get(n.args[1], n)
        where = _source(n) or n.name
        if not s.probs or v.swapped or len(v.shape) != 4 or v.shape[-2] != s.k.shape[-1]:
            raise UnsupportedOperator(f"matmul at {where}: attention probabilities (softmax of "
                                      "q @ k^T) times v [batch, heads, seq, head_dim]")
        b, hq, nq, d = s.q.shape
        # A repeat_kv'd k or v has as many heads as q in its view; the value it reads has its own.
        hkv = self.values[s.k.vid]["shape"][-1] // d
        out = self.value(n.name, (self.tokens(), hq * d))
        self.emit(n, "attention", [s.q.vid, s.k.vid, v.vid], [out], name=_module_name(n, "attention"),
                  heads=hq, kv_heads=hkv, head_dim=d, causal=s.causal, eager=True)
        self.env[n] = _Act(out, _shape(n))
