"""PyTorch models on simulated Trainium, as ``torch_neuronx.trace`` is used.

    >>> import trnsim.torch
    >>> traced = trnsim.torch.trace(model, (input_ids,), chip="trn2")
    >>> logits = traced(input_ids)          # torch tensor, computed by the simulated chip
    >>> traced.last_run.latency_us, print(traced.last_run.table)

``trace`` captures the model with ``torch.export`` and translates its ATen graph into trnsim's
graph IR (``src/graph/graph_json.h``); the C++ model compiler then fuses, lowers, times and
(when called) computes it, exactly as for the built-in families (``trnsim.models``). This
module only marshals: which ATen operators map to which IR operators is below, and anything
else is refused with the operator's name, its source line and the nearest supported form.

Supported: ``nn.Embedding``; ``nn.Linear`` (any bias); ``nn.LayerNorm``; RMSNorm (``nn.RMSNorm``,
or any module whose class name contains "RMSNorm" and computes x * rsqrt(mean(x^2) + eps) * w,
as Hugging Face's do); SiLU / GELU (exact or tanh) / ReLU; elementwise add and mul of two
activations; ``F.scaled_dot_product_attention`` (causal or not, GQA by ``enable_gqa`` or equal
heads) on q, k, v that come from linears through view / transpose / reshape; and attention
written out as its ops, as nanoGPT, Megatron-LM and Hugging Face's eager attention write it:
``(q @ k.transpose(-2, -1)) * scale``, a causal mask (``masked_fill`` / ``where`` with a
lower-triangular mask, or an added mask of 0 and -inf below and above the diagonal), ``softmax``
over the keys, ``@ v``; repeat_kv's expand and reshape of k and v for GQA. That becomes one
eager attention (the [S, S] scores and probabilities through HBM as those ops have them, not
flash attention). Operators on constants alone (a mask built from a buffer, ``tril``,
comparisons) are evaluated when tracing. Views, reshapes, transposes, dtype casts and
``contiguous`` are layout only: activations are token-major ``[tokens, features]`` on the
chip. Values run on one rank (tp 1) in bf16.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np
import torch

from trnsim import _core
from trnsim._torch_attention import _EagerAttention, _Scores, _swapped
from trnsim.models import ModelRun
from trnsim._torch_nodes import (
    _ACTS,
    _ALIASES,
    _ALTERNATIVES,
    _CHECKS,
    UnsupportedOperator,
    _Act,
    _module_name,
    _shape,
    _source,
    aten,
)

__all__ = ["trace", "TracedModel", "UnsupportedOperator"]


class _Converter(_EagerAttention):
    def __init__(self, ep: torch.export.ExportedProgram):
        self.ep = ep
        sig = ep.graph_signature
        self.params = dict(sig.inputs_to_parameters)
        self.params.update(sig.inputs_to_buffers)
        self.consts = {**ep.state_dict, **getattr(ep, "constants", {})}
        self.values: list[dict] = []
        self.nodes: list[dict] = []
        self.weights: dict[str, np.ndarray] = {}
        self.env: dict[Any, Any] = {}
        self.inputs: list[tuple[str, int, tuple[int, ...], bool]] = []  # name, vid, shape, ids?
        self.batch = self.seq = None
        self.norm_modules: dict[str, dict] = {}

    # --- values ---
    def value(self, name, shape, kind="activation", dtype="bf16") -> int:
        self.values.append({"name": name, "shape": list(shape), "kind": kind, "dtype": dtype})
        return len(self.values) - 1

    def weight(self, fqn, array, dtype="bf16") -> int:
        a = np.ascontiguousarray(np.asarray(array, dtype=np.float32))
        self.weights[fqn] = a.reshape(-1)
        return self.value(fqn, a.shape, "weight", dtype)

    def param(self, node) -> tuple[str, torch.Tensor]:
        fqn = self.params.get(node.name)
        if fqn is None:
            raise UnsupportedOperator(f"{node.name}: expected a parameter of the model here")
        return fqn, self.consts[fqn].detach().float().cpu()

    def tokens(self) -> int:
        return self.batch * self.seq

    def act(self, node, features=None) -> int:
        f = features if features is not None else _shape(node)[-1]
        return self.value(node.name, (self.tokens(), f))

    def get(self, arg, node) -> _Act:
        a = self.env.get(arg)
        if not isinstance(a, _Act):
            raise UnsupportedOperator(
                f"{node.target} at {_source(node) or node.name}: argument {arg} is not an activation "
                "(constants and parameters are taken by nn.Linear / nn.Embedding / norms only)"
            )
        return a

    def emit(self, node, kind, inputs, outputs, **attrs) -> None:
        d = {"name": attrs.pop("name", _module_name(node, kind)), "kind": kind, "inputs": inputs,
             "outputs": outputs, "source": _source(node)}
        d.update(attrs)
        self.nodes.append(d)

    # --- the walk ---
    def run(self):
        g = self.ep.graph
        user = [n for n in g.nodes if n.op == "placeholder" and n.name not in self.params]
        for n in g.nodes:
            if n.op == "placeholder":
                if n.name in self.params:
                    self.env[n] = ("param", n)
                    continue
                shp = _shape(n)
                is_ids = not n.meta["val"].dtype.is_floating_point
                if self.batch is None:
                    if is_ids:
                        self.batch, self.seq = (shp[0], shp[1]) if len(shp) == 2 else (1, shp[0])
                    else:
                        self.batch, self.seq = (shp[0], shp[1]) if len(shp) == 3 else (1, shp[0])
                if is_ids:
                    vid = self.value(n.name, (self.tokens(),), "input", "int32")
                else:
                    vid = self.value(n.name, (self.tokens(), shp[-1]), "input")
                self.inputs.append((n.name, vid, shp, is_ids))
                self.env[n] = _Act(vid, shp)
            elif n.op == "call_function":
                self.call(n)
            elif n.op == "output":
                outs = n.args[0] if isinstance(n.args[0], (tuple, list)) else (n.args[0],)
                self.outputs = []
                for o in outs:
                    a = self.env.get(o)
                    if not isinstance(a, _Act):
                        raise UnsupportedOperator(f"model output {o} is not an activation")
                    self.values[a.vid]["kind"] = "output"
                    self.outputs.append((self.values[a.vid]["name"], a.shape))
            elif n.op == "get_attr":
                self.env[n] = ("const", n)
        del user

    def _norm_module(self, n):
        stack = n.meta.get("nn_module_stack") or {}
        for path, cls in reversed(list(stack.values())):
            name = cls if isinstance(cls, str) else getattr(cls, "__name__", str(cls))
            if "RMSNorm" in name.rsplit(".", 1)[-1]:
                return path
        return None

    def call(self, n):
        t = n.target
        if t in _CHECKS:
            return
        whole_slice = t is aten.slice.Tensor and isinstance(self.env.get(n.args[0]), _Act) and \
            _shape(n) == self.env[n.args[0]].shape  # x[:, :, None] and such: every element
        src0 = self.env.get(n.args[0])
        repeat_kv = t is aten.expand.default and isinstance(src0, _Act) and len(src0.shape) == 5 \
            and src0.shape[2] == 1  # k[:, :, None].expand(b, hkv, n_rep, s, d): GQA's k and v
        if t in _ALIASES or repeat_kv or whole_slice:
            src = self.env.get(n.args[0])
            if isinstance(src, _Act):
                self.env[n] = _Act(src.vid, _shape(n), _swapped(n, src))
            elif isinstance(src, tuple) and src[0] == "folded":
                self.env[n] = ("folded", t(src[1], *n.args[1:], **n.kwargs))
            elif isinstance(src, _Scores) and t not in (aten.dropout.default,) and \
                    t not in (aten._to_copy.default, aten.to.dtype, aten.to.dtype_layout,
                              aten.type_as.default, aten.clone.default, aten.contiguous.default,
                              aten.detach.default):
                raise UnsupportedOperator(f"{t} at {_source(n) or n.name}: attention scores are "
                                          "masked, scaled and softmaxed as they are, not reshaped")
            else:
                self.env[n] = src
            return
        if self._fold(n):
            return
        if t is not aten.matmul.default and any(
                isinstance(self.env.get(a), _Scores) for a in n.args if isinstance(a, torch.fx.Node)):
            return self.scores_op(n)
        path = self._norm_module(n)
        if path is not None and t is not aten.rms_norm.default:
            return self.rms_module(n, path)
        if t is aten.embedding.default:
            fqn, w = self.param(n.args[0])
            ids = self.get(n.args[1], n)
            out = self.act(n, w.shape[1])
            self.emit(n, "embedding", [ids.vid], [out], weights=[self.weight(fqn, w)])
            self.env[n] = _Act(out, _shape(n))
        elif t is aten.linear.default:
            x = self.get(n.args[0], n)
            fqn, w = self.param(n.args[1])
            attrs = {"weights": [self.weight(fqn, w.T.numpy())]}
            if len(n.args) > 2 and n.args[2] is not None:
                bf, b = self.param(n.args[2])
                attrs["biases"] = [self.weight(bf, b.numpy(), "fp32")]
            out = self.act(n, w.shape[0])
            self.emit(n, "linear", [x.vid], [out], **attrs)
            self.env[n] = _Act(out, _shape(n))
        elif t in (aten.layer_norm.default, aten.rms_norm.default):
            x = self.get(n.args[0], n)
            layer = t is aten.layer_norm.default
            ws = []
            if len(n.args) > 2 and n.args[2] is not None:
                fqn, w = self.param(n.args[2])
                ws.append(self.weight(fqn, w.numpy(), "fp32"))
            else:
                ws.append(self.weight(n.name + ".weight", np.ones(x.shape[-1]), "fp32"))
            if layer:
                if len(n.args) > 3 and n.args[3] is not None:
                    fqn, b = self.param(n.args[3])
                    ws.append(self.weight(fqn, b.numpy(), "fp32"))
                else:
                    ws.append(self.weight(n.name + ".bias", np.zeros(x.shape[-1]), "fp32"))
            eps_i = 4 if layer else 3
            eps = n.args[eps_i] if len(n.args) > eps_i and n.args[eps_i] is not None else (
                1e-5 if layer else float(torch.finfo(torch.float32).eps))
            out = self.act(n, x.shape[-1])
            self.emit(n, "norm", [x.vid], [out], norm="layernorm" if layer else "rmsnorm",
                      eps=float(eps), norm_weights=ws)
            self.env[n] = _Act(out, _shape(n))
        elif t in _ACTS:
            x = self.get(n.args[0], n)
            act = _ACTS[t]
            if t is aten.gelu.default and n.kwargs.get("approximate", "none") == "tanh":
                act = "gelu_tanh"
            out = self.act(n, x.shape[-1])
            self.emit(n, "act", [x.vid], [out], act=act)
            self.env[n] = _Act(out, _shape(n))
        elif t in (aten.add.Tensor, aten.mul.Tensor):
            a, b = self.get(n.args[0], n), self.get(n.args[1], n)
            if a.shape != b.shape or (t is aten.add.Tensor and n.kwargs.get("alpha", 1) != 1):
                raise UnsupportedOperator(
                    f"{t} at {_source(n) or n.name}: only same-shape activations are added or "
                    f"multiplied ({a.shape} and {b.shape})")
            out = self.act(n, a.shape[-1])
            self.emit(n, "add" if t is aten.add.Tensor else "mul", [a.vid, b.vid], [out])
            self.env[n] = _Act(out, _shape(n))
        elif t is aten.scaled_dot_product_attention.default:
            self.attention(n)
        elif t is aten.matmul.default and isinstance(self.env.get(n.args[0]), _Scores):
            self.probs_v(n)
        elif t is aten.matmul.default and all(isinstance(self.env.get(a), _Act) for a in n.args[:2]):
            self.scores(n)
        else:
            op = str(t).split(".")[-2] if "." in str(t) else str(t)
            alt = _ALTERNATIVES.get(op, "the operators listed in trnsim.torch's documentation")
            raise UnsupportedOperator(
                f"operator {t} at {_source(n) or n.name} is not supported by trnsim's torch front "
                f"end; nearest supported: {alt}")

    def attention(self, n):
        q, k, v = (self.get(a, n) for a in n.args[:3])
        kw = dict(n.kwargs)
        names = ["attn_mask", "dropout_p", "is_causal", "scale"]
        for i, a in enumerate(n.args[3:7]):
            kw[names[i]] = a
        if kw.get("attn_mask") is not None:
            raise UnsupportedOperator(f"scaled_dot_product_attention at {_source(n)}: attn_mask is "
                                      "not supported (use is_causal=True or no mask)")
        if len(q.shape) != 4 or len(k.shape) != 4:
            raise UnsupportedOperator(f"scaled_dot_product_attention at {_source(n)}: q, k, v must "
                                      "be [batch, heads, seq, head_dim]")
        b, hq, s, d = q.shape
        hkv = k.shape[1]
        scale = kw.get("scale")
        if scale is not None and abs(scale - d ** -0.5) > 1e-6 * d ** -0.5:
            raise UnsupportedOperator(f"scaled_dot_product_attention at {_source(n)}: only the "
                                      "default scale 1/sqrt(head_dim)")
        out = self.value(n.name, (self.tokens(), hq * d))
        self.emit(n, "attention", [q.vid, k.vid, v.vid], [out], heads=hq, kv_heads=hkv,
                  head_dim=d, causal=bool(kw.get("is_causal", False)))
        self.env[n] = _Act(out, _shape(n))

    def rms_module(self, n, path):
        """Nodes inside an RMSNorm module become one norm: its input activation, its weight."""
        rec = self.norm_modules.setdefault(path, {"x": None, "w": None, "eps": None, "nodes": []})
        rec["nodes"].append(n)
        for a in n.args:
            e = self.env.get(a)
            if isinstance(e, _Act) and rec["x"] is None and e.vid != rec.get("out"):
                rec["x"] = e
            elif isinstance(e, tuple) and e[0] == "param":
                rec["w"] = a
            elif isinstance(a, float) and n.target is aten.add.Tensor:
                rec["eps"] = a
        # Every node of the module maps to the norm's output; the last one read outside is it.
        x = rec["x"]
        if x is None:
            raise UnsupportedOperator(f"{path}: an RMSNorm module without an activation input")
        if "out" not in rec:
            rec["out"] = self.value(path, (self.tokens(), x.shape[-1]))
            ws = []
            self.nodes.append({"name": path, "kind": "norm", "inputs": [x.vid], "outputs": [rec["out"]],
                               "norm": "rmsnorm", "eps": 1e-6, "norm_weights": ws,
                               "source": _source(n), "_rec": rec})
        self.env[n] = _Act(rec["out"], _shape(n))

    def finish_norms(self):
        for d in self.nodes:
            rec = d.pop("_rec", None)
            if rec is None:
                continue
            if rec["w"] is None:
                w = np.ones(self.values[d["inputs"][0]]["shape"][-1])
                d["norm_weights"].append(self.weight(d["name"] + ".weight", w, "fp32"))
            else:
                fqn, w = self.param(rec["w"])
                d["norm_weights"].append(self.weight(fqn, w.numpy(), "fp32"))
            if rec["eps"] is not None:
                d["eps"] = float(rec["eps"])

    def graph_json(self) -> str:
        self.finish_norms()
        return json.dumps({"batch": self.batch, "seq": self.seq, "tp": 1, "values": self.values,
                           "nodes": self.nodes})


class TracedModel:
    """A model compiled for a simulated chip; call it like the module (positional inputs)."""

    def __init__(self, conv: _Converter, name: str, chip: str, fuse: bool, search: bool,
                 sets: Sequence[str]):
        self._graph = conv.graph_json()
        self._weights = conv.weights
        self._inputs = conv.inputs
        self._outputs = conv.outputs
        self.name, self.chip = name, chip
        self._opts = {"fuse": fuse, "search": search, "sets": list(sets)}
        self.last_run: ModelRun | None = None

    def _run(self, values: bool, args) -> dict:
        inputs = None
        if values:
            if len(args) != len(self._inputs):
                raise TypeError(f"{self.name} takes {len(self._inputs)} inputs, got {len(args)}")
            inputs = {}
            for (name, _, shape, _), a in zip(self._inputs, args):
                arr = a.detach().float().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
                if tuple(arr.shape) != tuple(shape):
                    raise ValueError(f"input {name}: shape {tuple(arr.shape)}, traced with {shape} "
                                     "(re-trace for another shape, as torch_neuronx needs)")
                inputs[name] = np.ascontiguousarray(arr, dtype=np.float32).reshape(-1)
        d = _core.model_run_graph(self._graph, self.name, chip=self.chip, values=values,
                                  weights=self._weights if values else None, inputs=inputs,
                                  **self._opts)
        self.last_run = ModelRun(json=json.loads(d["json"]), table=d["table"], graph=d["graph"],
                                 trace=json.loads(d["trace"]), outputs=dict(d["outputs"]),
                                 weights=dict(d["weights"]))
        return d

    def time(self) -> ModelRun:
        """A timing-only run (no values): latency, per-op table, trace."""
        self._run(False, ())
        return self.last_run

    def __call__(self, *args):
        d = self._run(True, args)
        outs = [torch.from_numpy(np.asarray(d["outputs"][name]).reshape(shape).copy())
                for name, shape in self._outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)


def trace(model: torch.nn.Module, example_inputs: Sequence[Any], chip: str = "trn2", *,
          fuse: bool = True, search: bool = True, set: Sequence[str] = ()) -> TracedModel:  # noqa: A002
    """Capture ``model`` with torch.export on ``example_inputs`` and compile it for ``chip``.

    Raises UnsupportedOperator naming an ATen operator trnsim does not translate, its source
    line and the nearest supported form.
    """
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    model = model.eval()
    with torch.no_grad():
        ep = torch.export.export(model, tuple(example_inputs))
    conv = _Converter(ep)
    conv.run()
    return TracedModel(conv, type(model).__name__, chip, fuse, search, set)
