"""The kernel being traced: one C++ KernelBuilder per SPMD instance, the instance's program
ids, names for tiles, and the results of ISA calls not yet placed (legacy dialect)."""

from __future__ import annotations

from trnsim.nki._cse import TrackedBuilder
from trnsim.nki._split import SplittingBuilder


class NkiError(ValueError):
    """A kernel mistake NKI's compiler would reject (shape, partition or buffer rules)."""


class NkiArgumentError(NkiError, TypeError):
    """A call with a keyword argument the NKI function does not take (a TypeError too, as
    Python's own for an unexpected keyword)."""


class Ctx:
    __slots__ = ("kb", "chip", "pids", "grid", "names", "used", "pending", "outputs",
                 "dialect", "constants", "lnc", "rank", "ones", "fresh_broadcasts", "ranks",
                 "prepared")

    def __init__(self, kb, chip, pids, grid, dialect, lnc=1, rank=0):
        # write counts for common-subexpression elimination; VectorE calls over the engine's
        # limit split into parts (_split.py)
        self.kb = TrackedBuilder(SplittingBuilder(kb, self.name))
        self.chip = chip
        self.pids = pids  # this instance's program id per grid axis
        self.grid = grid  # grid sizes
        self.lnc = lnc  # physical cores of the logical core this instance runs on (nl.nc)
        self.rank = rank  # this instance's physical core in it
        self.names = {}  # name prefix -> how many names it has given
        self.used = set()  # every name given (HBM tensors' names must differ)
        self.pending = []  # ISA results not yet written anywhere (see _tensor.Pending)
        self.outputs = []  # HBM tensors the kernel created (nl.ndarray(buffer=shared_hbm))
        self.constants = {}  # HBM tensor name -> array (nl.shared_constant), written at launch
        self.dialect = dialect
        self.ones = {}  # (partitions, dtype) -> the ones row of partition broadcasts (_ops)
        self.fresh_broadcasts = 0  # PSUM-resident broadcasts not used yet (_tensor.py)
        self.ranks = None  # the rank run this trace is a rank of (_ranks.RankInfo), if any
        self.prepared = None  # the last nki.collectives *_v_prepare (collectives.py)

    def name(self, prefix: str) -> str:
        while True:  # skip names already taken (an argument named out1, say)
            n = self.names.get(prefix, 0)
            self.names[prefix] = n + 1
            name = f"{prefix}{n}" if n or prefix[-1:].isdigit() else prefix
            if name not in self.used:
                self.used.add(name)
                return name

    def flush(self):
        """Places every pending ISA result in a tile of its own: called before any other
        instruction is emitted, so that instructions keep the kernel's order."""
        while self.pending:
            self.pending[0].materialize()


_current: Ctx | None = None


class LogicalCoreNeeded(NkiError):
    """A call between the physical cores of a logical core in a launch that is not one."""


def ctx() -> Ctx:
    if _current is None:
        raise NkiError("an NKI call outside a kernel: run the kernel through nki.jit, "
                       "nki.simulate_kernel, nki.simulate, nki.baremetal, nki.benchmark or "
                       "nki.profile")
    return _current


def set_ctx(c: Ctx | None) -> Ctx | None:
    global _current
    old, _current = _current, c
    return old


def unsupported(name: str, why: str = ""):
    """Raises NotImplementedError naming an NKI API trnsim does not implement (docs/nki.md)."""
    raise NotImplementedError(
        f"{name} is not supported by trnsim's NKI front end" + (f": {why}" if why else "")
        + " (docs/nki.md lists what is)")


def stub(name: str, why: str = ""):
    """A stand-in for a documented NKI name trnsim leaves out: calling it raises."""

    def f(*args, **kwargs):
        unsupported(name, why)

    f.__name__ = name.rsplit(".", 1)[-1]
    f.__doc__ = f"Not supported by trnsim: calling it raises NotImplementedError. {why}"
    return f
