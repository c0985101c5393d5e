"""Where in the kernel's own source a front-end call was made: the first frame outside this
folder. Instructions carry its file and line (isa::Origin: traces, profiles and race reports
show them), and a tile allocated without a name takes the name the line assigns it to, as
NKI's compiler names tensors after the kernel's variables."""

from __future__ import annotations

import linecache
import os
import re
import sys

FRONT_END = os.path.dirname(os.path.abspath(__file__)) + os.sep
# `name = ...` or `name: type = ...` at the start of a line (not `==`).
_ASSIGNED = re.compile(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")


def kernel_frame():
    """The innermost frame that is not the front end's (None outside any)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(FRONT_END):
        f = f.f_back
    return f


def here():
    """(file, line) of the kernel's current line, or None."""
    f = kernel_frame()
    return None if f is None else (f.f_code.co_filename, f.f_lineno)


def assigned_name(default: str, where=None) -> str:
    """The variable the kernel's line `where` (default: the current one) assigns to, else
    `default`."""
    where = where or here()
    if where is None:
        return default
    m = _ASSIGNED.match(linecache.getline(*where))
    return m.group(1) if m else default
