"""neuronxcc.nki.compiler.backends.neuron.dimensions: ``nc``, the physical-core axis of a
launch grid (``kernel[nc(2)]``), is nl.nc. The module's other names are compiler internals
with no documented meaning: using one raises NotImplementedError naming it."""

from trnsim.nki._ctx import unsupported
from trnsim.nki.language import nc  # noqa: F401


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    unsupported(f"neuronxcc.nki.compiler.backends.neuron.dimensions.{name}",
                "an undocumented compiler internal; trnsim has only nc (nl.nc)")
