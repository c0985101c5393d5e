"""The C++ kernel API (src/kernel/builder.h) from Python.

A :class:`KernelBuilder` declares HBM tensors, allocates SBUF / PSUM tiles and appends engine
instructions, call by call, exactly as the C++ API does (each method is the C++ method; dtypes
may be given as trnsim format names, numpy or ml_dtypes dtypes). ``build()`` returns a
:class:`Program` for :func:`trnsim.run.run`.

    >>> from trnsim import kernel
    >>> kb = kernel.KernelBuilder("trn2")
    >>> x = kb.input("x", "fp32", [128, 64])
    >>> y = kb.output("y", "fp32", [128, 64])
    >>> t = kb.sbuf("t", "fp32", [128, 64])
    >>> kb.dma_copy(t, x); kb.activation(t, t, kernel.ActFunc.exp); kb.dma_copy(y, t)
    >>> program = kb.build()

Views index like numpy (``t[0:64, 3]``), with ``reshape``, ``broadcast``, ``pattern``
(NKI's ``.ap()``) and ``bitcast``. Errors are ValueError with the C++ message.
"""

from __future__ import annotations

from trnsim import _core
from trnsim._paths import export_spec_dir
from trnsim.numerics import format_name

Engine = _core.Engine
AluOp = _core.AluOp
ActFunc = _core.ActFunc
View = _core.View
Program = _core.Program
Chip = _core.Chip

_chips: dict = {}


def load_chip(name: str = "trn2", overrides=()) -> Chip:
    """A generation's resolved spec (cached per name and overrides)."""
    if isinstance(name, Chip):
        return name
    key = (name, tuple(overrides))
    if key not in _chips:
        export_spec_dir()
        _chips[key] = _core.load_chip(name, list(overrides))
    return _chips[key]


class KernelBuilder(_core.KernelBuilder):
    """Builds one NeuronCore program (see ``src/kernel/builder.h`` for every call)."""

    def __init__(self, chip="trn2"):
        self.chip = load_chip(chip)
        super().__init__(self.chip)

    def input(self, name, dtype, shape):
        """An HBM tensor the host fills before the run."""
        return super().input(name, format_name(dtype), list(shape))

    def output(self, name, dtype, shape):
        """An HBM tensor the host reads after the run."""
        return super().output(name, format_name(dtype), list(shape))

    def inout(self, name, dtype, shape):
        """An HBM tensor the host fills and reads."""
        return super().inout(name, format_name(dtype), list(shape))

    def scratch(self, name, dtype, shape):
        """Device-only HBM working memory."""
        return super().scratch(name, format_name(dtype), list(shape))

    def sbuf(self, name, dtype, shape):
        """An SBUF tile: shape[0] partitions (<= 128), the rest free dims."""
        return super().sbuf(name, format_name(dtype), list(shape))

    def psum(self, name, dtype, shape):
        """A PSUM tile (a tile of at most one bank per partition stays inside one bank)."""
        return super().psum(name, format_name(dtype), list(shape))

    # --- between the physical cores of one logical core (run with trnsim.run.run_spmd) ---
    def core_barrier(self, data, engine=Engine.gpsimd):
        """Waits until every core of the logical core reached its barrier of the same index
        (the k-th barrier of each core meets). ``data`` is the shared HBM tensor the cores
        synchronise on: this core's earlier accesses of it come first, later ones wait."""
        return super().core_barrier(data, engine)

    def sendrecv(self, dst, src, send_to_rank, recv_from_rank, pipe_id=0, trigger=None):
        """``src`` (SBUF) goes to core ``send_to_rank``'s ``dst``; core ``recv_from_rank``'s
        ``src`` arrives in this core's ``dst`` (SBUF, the same dtype and shape). The k-th
        sendrecv on ``pipe_id`` meets the peer's k-th on that pipe."""
        return super().sendrecv(dst, src, send_to_rank, recv_from_rank, pipe_id, trigger)


__all__ = ["KernelBuilder", "View", "Program", "Chip", "Engine", "AluOp", "ActFunc", "load_chip"]
