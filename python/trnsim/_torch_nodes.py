"""What trnsim.torch's translation shares: the ATen operator tables, the refusal, and a traced
node's source line, shape and module path, and an activation as the translation tracks it."""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

aten = torch.ops.aten

# Layout-only operators: on the chip an activation is [tokens, features] whatever its view.
_ALIASES = {
    aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.transpose.int,
    aten.permute.default, aten.contiguous.default, aten.clone.default, aten.unsqueeze.default,
    aten.squeeze.dim, aten.flatten.using_ints, aten.alias.default, aten._to_copy.default,
    aten.to.dtype, aten.to.dtype_layout, aten.detach.default, aten.dropout.default,
    aten.type_as.default,
}
# Checks torch.export leaves in the graph; they compute nothing.
_CHECKS = {aten._assert_tensor_metadata.default}
_ACTS = {aten.silu.default: "silu", aten.relu.default: "relu", aten.gelu.default: "gelu"}

_ALTERNATIVES = {
    "softmax": "F.scaled_dot_product_attention, or softmax over q @ k^T scores (attention)",
    "_softmax": "F.scaled_dot_product_attention, or softmax over q @ k^T scores (attention)",
    "matmul": "nn.Linear (a weight), F.scaled_dot_product_attention, or q @ k^T and probs @ v "
              "of an attention",
    "bmm": "nn.Linear or F.scaled_dot_product_attention",
    "mm": "nn.Linear",
    "addmm": "nn.Linear",
    "cat": "separate linears (rotary embeddings inside attention are not taken from torch yet)",
    "slice": "whole tensors (rotary embeddings are not taken from torch yet)",
    "tanh": "nn.GELU(approximate='tanh') or SiLU",
    "sigmoid": "nn.SiLU (x * sigmoid(x))",
    "pow": "an RMSNorm module (class name containing RMSNorm) or nn.RMSNorm",
    "rsqrt": "an RMSNorm module or nn.RMSNorm",
    "mean": "an RMSNorm / LayerNorm module",
}


class UnsupportedOperator(ValueError):
    """An ATen operator of the exported graph that trnsim does not translate."""


def _source(node) -> str:
    st = node.meta.get("stack_trace") or ""
    hits = re.findall(r'File "([^"]+)", line (\d+)', st)
    if not hits:
        return ""
    f, line = hits[-1]
    return f"{f.rsplit('/', 1)[-1]}:{line}"


def _shape(node) -> tuple[int, ...]:
    v = node.meta.get("val")
    return tuple(int(s) for s in v.shape) if v is not None else ()


def _module_name(node, kind: str) -> str:
    """The module path a node ran in ("layers.0.q" for a linear's own module; an operator of a
    module's forward gets the module's path and the operator: "layers.0.attention")."""
    stack = node.meta.get("nn_module_stack") or {}
    paths = [v[0] for v in stack.values() if v and v[0]]
    if not paths:
        return node.name
    path = paths[-1].replace("L['self'].", "").replace("L__self___", "")
    if kind in ("linear", "embedding", "norm"):
        return path
    return f"{path}.{kind}"


@dataclass
class _Act:
    vid: int  # IR value id
    shape: tuple[int, ...]  # the torch view's shape
    swapped: bool = False  # its last two dims transposed (k^T of an attention)
