"""PyTorch tensors as kernel arguments (as NKI kernels are called from torch_neuronx code): a CPU
tensor is read through a numpy view of its memory (so an argument the kernel writes is updated
in place), bf16 and fp8 through their bit patterns (numpy has no such dtypes; ml_dtypes does),
and a kernel called with torch tensors returns torch tensors. torch is optional: none of this
imports it unless an argument is one."""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np

# torch dtype name -> (the integer dtype of the same width, the ml_dtypes dtype)
_BITS = {
    "bfloat16": ("int16", ml_dtypes.bfloat16),
    "float8_e4m3fn": ("uint8", ml_dtypes.float8_e4m3fn),
    "float8_e5m2": ("uint8", ml_dtypes.float8_e5m2),
}


def is_torch(a) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(a, torch.Tensor)


def as_numpy(a):
    """A numpy view of a CPU torch tensor (bf16 / fp8 as ml_dtypes); anything else as is."""
    if not is_torch(a):
        return a
    torch = sys.modules["torch"]
    t = a.detach()
    if t.device.type != "cpu":
        raise ValueError(f"a torch tensor on {t.device} is a kernel argument: trnsim reads host "
                         "(cpu) tensors")
    name = str(t.dtype).removeprefix("torch.")
    if name in _BITS:
        width, dt = _BITS[name]
        return t.view(getattr(torch, width)).numpy().view(dt)
    return t.numpy()


def to_torch(x):
    """numpy results (nested in tuples, lists, dicts) as torch tensors."""
    if isinstance(x, np.ndarray):
        torch = sys.modules["torch"]
        for name, (width, dt) in _BITS.items():
            if x.dtype == dt and hasattr(torch, name):
                return torch.from_numpy(x.view(width)).view(getattr(torch, name))
        return torch.from_numpy(x)
    if isinstance(x, (tuple, list)):
        return type(x)(to_torch(v) for v in x)
    if isinstance(x, dict):
        return {k: to_torch(v) for k, v in x.items()}
    return x
