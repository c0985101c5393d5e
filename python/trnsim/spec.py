"""Trainium generations as data (spec/chips/*.toml): load, override, compare.

The loader, validation and every derived figure are C++ (src/arch); this module returns the
resolved spec as plain Python dicts (the same document as ``trnsim spec NAME --json``).
"""

from __future__ import annotations

import json

from trnsim import _core
from trnsim._paths import export_spec_dir


def _overrides(set) -> list[str]:
    if set is None:
        return []
    if isinstance(set, dict):
        return [f"{k}={v}" for k, v in set.items()]
    return list(set)


def load(name: str, set=None) -> dict:
    """Resolved spec of a generation ("trn1", "trn2", "trn3", "trn4-projected") or a what-if
    TOML file, with provenance and derived figures.

    ``set`` overrides keys, as ``--set`` does on the command line: a dict
    ``{"core.tensor.clock_ghz": 3.0}`` or a list of ``"key=value"`` strings.
    Raises ValueError naming the file, line and key of a malformed spec.
    """
    export_spec_dir()
    return json.loads(_core.chip_json(name, _overrides(set)))


def compare(*names: str) -> dict:
    """Generation-over-generation ratios (to the first name) as ``trnsim spec --compare``."""
    export_spec_dir()
    return json.loads(_core.compare_json(list(names)))


def chips() -> list[str]:
    """Names of the generation files shipped with trnsim."""
    export_spec_dir()
    return list(_core.list_chips())
