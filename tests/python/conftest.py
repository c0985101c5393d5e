import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# Hypothesis profiles of the property tests (test_fuzz_*.py; docs/fuzzing_python.md). The
# default is deterministic (derandomize: the same examples on every run, so the suite is
# reproducible and CI cannot turn red by chance) and quick; "long" is the campaign, random
# and a hundred times larger, chosen with TRNSIM_HYPOTHESIS_PROFILE=long.
_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])
settings.register_profile("default", max_examples=100, derandomize=True, **_COMMON)
settings.register_profile("ci", max_examples=100, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=10_000, derandomize=False, **_COMMON)
_profile = os.environ.get("TRNSIM_HYPOTHESIS_PROFILE", "default")
if os.environ.get("TRNSIM_HYPOTHESIS_EXAMPLES"):  # a campaign of another size
    settings.register_profile("sized", settings.get_profile(_profile),
                              max_examples=int(os.environ["TRNSIM_HYPOTHESIS_EXAMPLES"]))
    _profile = "sized"
settings.load_profile(_profile)


@pytest.fixture
def rng():
    return np.random.default_rng(20261120)


@pytest.fixture
def aliases(monkeypatch):
    """install_alias() for one test: the nki / neuronxcc modules it adds are removed after."""
    import trnsim.nki as nki

    def ours(m):
        return m == "nki" or m.startswith(("nki.", "neuronxcc"))

    for m in [m for m in sys.modules if ours(m)]:
        monkeypatch.delitem(sys.modules, m)
    nki.install_alias()
    yield
    for m in [m for m in sys.modules if ours(m)]:
        del sys.modules[m]
