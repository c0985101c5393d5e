"""Common-subexpression elimination of the traced kernel, as NKI's compiler does it.

The compiler treats tiles as values: an instruction that computes, into a new tile, what an
earlier one computed from the same operands, none of them written since, is dropped and the
earlier tile used. The fused Mamba tutorial shows it (VALIDATION.md s6; docs/nki.md,
"Lowering"): mamba_v2 computes ``delta_i * u_i`` inside its state loop, although neither
changes there, yet its VectorE time per iteration is one 2N tensor_tensor shorter than
mamba_v1's, whose loop order gives the compiler no earlier copy to reuse.

Here: a legacy-dialect ISA call or language op that returns a new tile (a Pending,
_tensor.py) and becomes exactly one pure instruction writing the whole of that tile is looked
up by what it computes: the opcode, its parameters, and each operand's memory, place and
write count. A hit returns the earlier tile while it holds the value (unwritten since). The
memo holds the tiles it can hand out, whatever the kernel still holds: tiles are placed by
live range when the kernel is built (kernel/placement.h), so a tile's bytes are held from its
first to its last use, and a reuse extends its range as the compiler's would. The memo keeps
the MEMO_ENTRIES most recently used results. Write counts are kept per tile and HBM tensor by
TrackedBuilder, which every instruction passes through; a barrier between cores (other cores
may have written HBM) forgets everything.
"""

from __future__ import annotations

import sys
from collections import OrderedDict

from trnsim.nki._source import FRONT_END

# Results the memo keeps, least recently used dropped first: a loop-invariant value is used
# again every iteration, so it stays; the memory stays bounded on kernels of millions of
# instructions.
MEMO_ENTRIES = 4096

# Builder calls that may be one pure instruction into a new tile. Not loads: the compiler
# reloads what a kernel loads again (neuron-profile warns about it, and the fused Mamba
# tutorial's v1 -> v2 step removes such reloads by hand).
_PURE = frozenset({
    "activation", "tensor_tensor", "tensor_scalar",
    "scalar_tensor_tensor", "tensor_reduce", "tensor_copy", "tensor_tensor_scan", "reciprocal",
    "exponential", "transpose", "bn_stats", "bn_aggr", "max8", "find_index8", "select",
    "affine_select", "partition_reduce",
})
# The arguments a builder call writes, when not just the first (dst).
_WRITTEN = {"activation_reduce": (0, 1), "tensor_scalar_reduce": (0, 1),
            "match_replace8": (0, 1), "range_select": (0, 1),
            "quantize_mx": (0, 1),  # dst, scale (given by position, _ops.quantize_mx)
            # a register's home is the builder's own tile, no name of the kernel's
            "register_set": (), "register_load": (),
            "begin_for": (), "begin_while": (), "end_loop": ()}
_WRITTEN_KW = ("dst", "reduce_dst", "dst_idx")
# Calls after which another core may have written shared HBM, and the edges of a hardware
# loop (a body runs again after writes later in it: nothing computed before stands inside).
_BARRIERS = frozenset({"core_barrier", "sendrecv", "begin_for", "begin_while", "end_loop"})
# Builder members that emit nothing.
_QUIET = frozenset({"sbuf", "psum", "input", "output", "inout", "scratch", "build",
                    "set_seed", "set_dma_policy", "program", "num_instructions",
                    "add_source_file", "set_source", "new_register", "free_register"})


class TrackedBuilder:
    """The C++ KernelBuilder, counting the instructions that wrote each memory (a tile or an
    HBM tensor, by name) and the barriers between cores."""

    def __init__(self, kb):
        self._kb = kb
        self.writes = {}
        self.memo = OrderedDict()  # key -> (View of the result, its write count)
        self._files = {}  # source file -> its number in the builder (add_source_file)
        self._path, self._line = None, 0  # the source position last given to the builder
        self.fixed = None  # (file, line) that overrides the current one (a Pending's)

    def _locate(self):
        """Tells the builder the kernel line that makes the next instruction (traces and
        profiles show it, isa::Origin): `fixed` while a deferred result is placed, else the
        line running now. On every builder call, so kept lean: the frame walk inline, the
        builder told only when the line changed."""
        if self.fixed is not None:
            path, line = self.fixed
        else:
            f = sys._getframe(2)
            while f is not None and f.f_code.co_filename.startswith(FRONT_END):
                f = f.f_back
            if f is None:
                return
            path, line = f.f_code.co_filename, f.f_lineno
        if line == self._line and path is self._path:
            return
        file = self._files.get(path)
        if file is None:
            file = self._files[path] = self._kb.add_source_file(path)
        self._path, self._line = path, line
        self._kb.set_source(file, line)

    def __getattr__(self, name):
        f = getattr(self._kb, name)
        if name in _QUIET or not callable(f):
            return f
        written = _WRITTEN.get(name, (0,))
        writes = self.writes
        barrier = name in _BARRIERS

        def call(*args, **kw):
            self._locate()
            r = f(*args, **kw)
            for i in written:
                v = args[i] if i < len(args) else kw.get(_WRITTEN_KW[i])
                if v is not None:
                    writes[v.name] = writes.get(v.name, 0) + 1
            if barrier:
                self.memo.clear()
            return r

        self.__dict__[name] = call  # later calls skip __getattr__
        return call


class _NotOne(Exception):
    """The emission is not one pure builder call."""


class _Recorder:
    """Stands in for the builder while a Pending's emission is looked at."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        if name not in _PURE:
            raise _NotOne(name)

        def rec(*args, **kw):
            if self.calls:
                raise _NotOne(name)
            self.calls.append((name, args, kw))

        return rec


def _sig(x, writes):
    """A hashable description of a builder argument (a View by its memory and place)."""
    if hasattr(x, "space") and hasattr(x, "offset"):
        return ("view", x.space, x.name, x.start_partition, x.offset, tuple(x.strides),
                tuple(x.shape), x.dtype, writes.get(x.name, 0))
    if isinstance(x, (list, tuple)):
        return tuple(_sig(e, writes) for e in x)
    return x


def _layout(v):
    return (v.space, v.start_partition, v.offset, tuple(v.strides), tuple(v.shape), v.dtype)


def emit(ctx, pending, tile_view):
    """Emits `pending` into its new tile `tile_view`; returns the View that holds its value
    (`tile_view`, or an earlier tile holding the same value)."""
    tb = ctx.kb
    if not isinstance(tb, TrackedBuilder):
        pending.emit(tile_view)
        return tile_view
    rec = _Recorder()
    ctx.kb = rec
    try:
        pending.emit(tile_view)
        one = len(rec.calls) == 1
    except _NotOne:
        one = False
    finally:
        ctx.kb = tb
    if not one:
        pending.emit(tile_view)
        return tile_view
    name, args, kw = rec.calls[0]
    dst = args[0] if args else kw.get("dst")
    if dst is None or _layout(dst) != _layout(tile_view):
        getattr(tb, name)(*args, **kw)
        return tile_view
    writes = tb.writes
    key = (name, _layout(dst), _sig(args[1:], writes),
           tuple(sorted((k, _sig(v, writes)) for k, v in kw.items() if k != "dst")))
    try:
        hash(key)
    except TypeError:  # an argument with no value identity: emit it as written
        getattr(tb, name)(*args, **kw)
        return tile_view
    memo = tb.memo
    hit = memo.get(key)
    if hit is not None and writes.get(hit[0].name, 0) == hit[1]:
        memo.move_to_end(key)
        return hit[0]
    getattr(tb, name)(*args, **kw)
    memo[key] = (tile_view, writes.get(tile_view.name, 0))
    if len(memo) > MEMO_ENTRIES:
        memo.popitem(last=False)
    return tile_view
