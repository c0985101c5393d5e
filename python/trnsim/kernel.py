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

from trnsim import _check, _core
from trnsim._paths import export_spec_dir
from trnsim.numerics import _container, format_info, format_name

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
    from trnsim.spec import _overrides

    name = _check.name_or_path(name, "chip")
    key = (name, tuple(_overrides(overrides, "overrides")))
    if key not in _chips:
        export_spec_dir()
        _chips[key] = _core.load_chip(name, list(key[1]))
    return _chips[key]


def _decl(kb, call, name, dtype, shape):
    """(name, format, shape) of a tensor or tile declaration, checked by argument."""
    _live(kb, call)
    what = f"KernelBuilder.{call}"
    _check.string(name, f"{what}: name")
    fmt = format_name(dtype, f"{what}('{name}'): dtype")
    dims = _check.shape(shape, f"{what}('{name}'): shape")
    _check.fits_int64(dims, _container(format_info(fmt)).itemsize, f"{what}('{name}')")
    return name, fmt, dims


class KernelBuilder(_core.KernelBuilder):
    """Builds one NeuronCore program (see ``src/kernel/builder.h`` for every call)."""

    def __init__(self, chip="trn2"):
        self.chip = load_chip(chip)
        self._spent = False
        super().__init__(self.chip)

    def build(self):
        """Finishes the program (semaphores, validation); the builder is spent afterwards."""
        _live(self, "build")
        try:
            return _core.KernelBuilder.build(self)
        finally:
            self._spent = True

    def input(self, name, dtype, shape):
        """An HBM tensor the host fills before the run."""
        return super().input(*_decl(self, "input", name, dtype, shape))

    def output(self, name, dtype, shape):
        """An HBM tensor the host reads after the run."""
        return super().output(*_decl(self, "output", name, dtype, shape))

    def inout(self, name, dtype, shape):
        """An HBM tensor the host fills and reads."""
        return super().inout(*_decl(self, "inout", name, dtype, shape))

    def scratch(self, name, dtype, shape):
        """Device-only HBM working memory."""
        return super().scratch(*_decl(self, "scratch", name, dtype, shape))

    def sbuf(self, name, dtype, shape):
        """An SBUF tile: shape[0] partitions (<= 128), the rest free dims."""
        return super().sbuf(*_decl(self, "sbuf", name, dtype, shape))

    def psum(self, name, dtype, shape):
        """A PSUM tile (a tile of at most one bank per partition stays inside one bank)."""
        return super().psum(*_decl(self, "psum", name, dtype, shape))

    # --- between the physical cores of one logical core (run with trnsim.run.run_spmd) ---
    def core_barrier(self, data, engine=Engine.gpsimd):
        """Waits until every core of the logical core reached its barrier of the same index
        (the k-th barrier of each core meets). ``data`` is the shared HBM tensor the cores
        synchronise on: this core's earlier accesses of it come first, later ones wait."""
        _live(self, "core_barrier")
        return _check.call(_core.KernelBuilder.core_barrier, "KernelBuilder.core_barrier",
                           self, data, engine)

    def sendrecv(self, dst, src, send_to_rank, recv_from_rank, pipe_id=0, trigger=None):
        """``src`` (SBUF) goes to core ``send_to_rank``'s ``dst``; core ``recv_from_rank``'s
        ``src`` arrives in this core's ``dst`` (SBUF, the same dtype and shape). The k-th
        sendrecv on ``pipe_id`` meets the peer's k-th on that pipe."""
        _live(self, "sendrecv")
        return _check.call(_core.KernelBuilder.sendrecv, "KernelBuilder.sendrecv", self, dst,
                           src, send_to_rank, recv_from_rank, pipe_id, trigger)


def _live(kb, call):
    # The C++ builder refuses a second build() but took later calls without a word, so an
    # instruction added after build() was silently not in the program.
    if kb._spent:
        raise ValueError(f"KernelBuilder.{call}: build() was called already and spent the "
                         "builder; start a new KernelBuilder")


def _checked(name):
    """A builder call whose argument-type errors name the argument (_check.call)."""
    core = getattr(_core.KernelBuilder, name)

    def method(self, *args, **kwargs):
        _live(self, name)
        try:
            return core(self, *args, **kwargs)
        except TypeError as e:
            if "incompatible function arguments" not in str(e):
                raise
            raise TypeError(_check.explain_call(core, f"KernelBuilder.{name}", (self, *args),
                                                kwargs)) from None

    method.__name__ = name
    method.__doc__ = core.__doc__
    return method


for _name in dir(_core.KernelBuilder):
    if not _name.startswith("_") and _name not in KernelBuilder.__dict__ and callable(
            getattr(_core.KernelBuilder, _name)):
        setattr(KernelBuilder, _name, _checked(_name))


__all__ = ["KernelBuilder", "View", "Program", "Chip", "Engine", "AluOp", "ActFunc", "load_chip"]
