"""Where the installed package keeps its data files."""

import os
from pathlib import Path


def spec_dir() -> str:
    """The generation data files: $TRNSIM_SPEC_DIR if set, else the copy inside the package."""
    env = os.environ.get("TRNSIM_SPEC_DIR")
    if env:
        return env
    return str(Path(__file__).resolve().parent / "spec")


def export_spec_dir() -> None:
    """Make the C++ core find the package's spec files (it reads TRNSIM_SPEC_DIR)."""
    os.environ.setdefault("TRNSIM_SPEC_DIR", spec_dir())
