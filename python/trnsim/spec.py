"""Trainium generations as data (spec/chips/*.toml): load, override, compare.

The loader, validation and every derived figure are C++ (src/arch); this module returns the
resolved spec as plain Python dicts (the same document as ``trnsim spec NAME --json``).
"""

from __future__ import annotations

import json

from trnsim import _check, _core
from trnsim._paths import export_spec_dir


def _value(v) -> str:
    # The values are TOML: Python's True / False would not parse, and None has no TOML form.
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        raise TypeError("spec override: a value is needed, got None")
    return str(v)


def _overrides(set, what: str = "set") -> list[str]:
    """``key=value`` strings of a dict, a list of such strings, or one such string."""
    if set is None:
        return []
    if isinstance(set, dict):
        out = []
        for k, v in set.items():
            _check.string(k, f"{what}: key")
            try:
                out.append(f"{k}={_value(v)}")
            except TypeError:
                raise TypeError(f"{what}: {k!r}: a value is needed, got None") from None
        return out
    if isinstance(set, str):  # one override, not its characters
        return [set]
    overrides = _check.items(set, what, "a dict {key: value} or a list of 'key=value' strings")
    return [_check.string(s, f"{what}: override") for s in overrides]


def load(name: str, set=None) -> dict:
    """Resolved spec of a generation ("trn1", "trn2", "trn3", "trn4-projected") or a what-if
    TOML file, with provenance and derived figures.

    ``set`` overrides keys, as ``--set`` does on the command line: a dict
    ``{"core.tensor.clock_ghz": 3.0}`` or a list of ``"key=value"`` strings.
    Raises ValueError naming the file, line and key of a malformed spec.
    """
    name = _check.name_or_path(name, "spec.load: name")
    sets = _overrides(set, "spec.load: set")
    export_spec_dir()
    return json.loads(_core.chip_json(name, sets))


def compare(*names: str) -> dict:
    """Generation-over-generation ratios (to the first name) as ``trnsim spec --compare``."""
    if not names:
        raise ValueError("spec.compare: name at least one chip (the first is the baseline)")
    names = [_check.name_or_path(n, "spec.compare: name") for n in names]
    export_spec_dir()
    return json.loads(_core.compare_json(names))


def chips() -> list[str]:
    """Names of the generation files shipped with trnsim."""
    export_spec_dir()
    return list(_core.list_chips())
