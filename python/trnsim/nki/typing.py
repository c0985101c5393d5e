"""nki.typing for trnsim: the annotations NKI kernels put on their parameters
(``a: nt.tensor[128, 512]``, ``nt.mutable_tensor``, ``nt.scalar``). They only describe the
parameters: a kernel's arguments are checked and converted by the launch (_launch.py), so any
subscript of them is accepted and means nothing more. ``nki.typing`` and
``neuronxcc.nki.typing`` are this module."""

from __future__ import annotations


class _Annotation:
    """An annotation that takes any subscript (``tensor[shape, dtype]``) and stays itself."""

    def __init__(self, name):
        self._name = name

    def __getitem__(self, key):
        return self

    def __repr__(self):
        return f"nt.{self._name}"


tensor = _Annotation("tensor")
mutable_tensor = _Annotation("mutable_tensor")
scalar = _Annotation("scalar")

__all__ = ["tensor", "mutable_tensor", "scalar"]
