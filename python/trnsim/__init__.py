"""trnsim: the AWS Trainium family in software.

A bit-accurate, cycle-approximate simulator whose logic is all C++ (``trnsim._core``); this
package marshals numpy arrays in and presents results.

Modules:
    trnsim.numerics  number formats, casts with RNE / stochastic / toward-zero rounding, MX
    trnsim.spec      Trainium generations as data: load, override, compare
"""

from trnsim import _core
from trnsim import numerics, spec

__version__ = _core.__version__
__all__ = ["numerics", "spec", "__version__"]
