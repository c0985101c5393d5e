"""neuronxcc.nki.typing for trnsim: the same annotations as the current dialect's
(trnsim.nki.typing)."""

from trnsim.nki.typing import mutable_tensor, scalar, tensor  # noqa: F401

__all__ = ["tensor", "mutable_tensor", "scalar"]
