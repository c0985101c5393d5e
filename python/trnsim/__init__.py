"""trnsim: the AWS Trainium family in software.

A bit-accurate, cycle-approximate simulator whose logic is all C++ (``trnsim._core``); this
package marshals numpy arrays in and presents results.

Modules:
    trnsim.numerics  number formats, casts with RNE / stochastic / toward-zero rounding, MX
    trnsim.spec      Trainium generations as data: load, override, compare
    trnsim.kernel    the C++ kernel-building API: tensors, tiles, engine instructions
    trnsim.run       running programs on a NeuronCore: outputs, latency, figures, traces
    trnsim.profile   traces: Chrome / Perfetto JSON, summaries, merging
    trnsim.nki       NKI kernels (``nki`` and ``neuronxcc.nki`` dialects) on trnsim
    trnsim.fabric    systems of chips and collectives: timing records and functional runs
    trnsim.models    models (Hugging Face configs) compiled for a chip: per-op time, MFU, values
    trnsim.torch     PyTorch modules (torch.export) compiled for a chip, called like the module
"""

from trnsim import _core
from trnsim import fabric, kernel, models, numerics, profile, run, spec

__version__ = _core.__version__
__all__ = [
    "numerics", "spec", "kernel", "run", "profile", "fabric", "models", "nki", "__version__"
]


def __getattr__(name):  # trnsim.nki and trnsim.torch on first use (torch is a large import)
    if name in ("nki", "torch"):
        import importlib

        return importlib.import_module(f"trnsim.{name}")
    raise AttributeError(f"module 'trnsim' has no attribute {name!r}")
