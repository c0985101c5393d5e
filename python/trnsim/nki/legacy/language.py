"""neuronxcc.nki.language for trnsim: the same module as trnsim.nki.language (which carries
the legacy names too: nl.arange, nl.mgrid, nl.par_dim, nl.load / nl.store, mask=)."""

from trnsim.nki.language import *  # noqa: F401,F403
from trnsim.nki.language import abs, all, any, max, min, sum  # noqa: F401,A004

import sys as _sys

from trnsim.nki import _lang_constants as constants  # noqa: E402

_sys.modules[__name__ + ".constants"] = constants
