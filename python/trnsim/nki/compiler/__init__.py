"""nki.compiler (``neuronxcc.nki.compiler``, ``ncc``) for trnsim: allocation hints, kernel
decorators and loop directives for the Neuron compiler.

trnsim places every SBUF / PSUM tile itself, by live range, after the kernel is traced (as
the compiler's automatic allocation does; src/kernel/placement.h), and its builder takes no
address: the direct allocations (``sbuf.alloc``, ``sbuf.mod_alloc``, ``psum.alloc``,
``psum.mod_alloc``) are checked and accepted as buffers of their memory, and their addresses
are not used. Tiles that hold live values at the same time still get separate memory, and
bytes are reused only once their values are dead, so a kernel that never reads a logical tile
after another one of the same physical tile overwrote it computes the same values; its timing
follows trnsim's placement, not the addresses it asked for. The decorators and directives
change how the compiler transforms or schedules a kernel, which trnsim does not do (it runs
the instructions in the order the kernel traced them): they are accepted and change
nothing."""

from __future__ import annotations

from trnsim.nki import _ops
from trnsim.nki._ctx import NkiError
from trnsim.nki.language import _Buffer, no_reorder  # noqa: F401 - ncc.no_reorder


def _ints(x, what, lo=0):
    """() or a tuple / list of ints >= lo (num_par_tiles, num_free_tiles, num_bank_tiles)."""
    if not isinstance(x, (tuple, list)):
        raise NkiError(f"{what}: expected a tuple of ints, got {type(x).__name__} {x!r}")
    return tuple(_ops.integer(v, what, lo) for v in x)


class _Allocation(_Buffer):
    """A tensor's buffer with a direct allocation: the memory is used, the placement is not
    (module docstring). ``hint`` keeps the arguments for repr and tests."""

    def __init__(self, name, space, **hint):
        super().__init__(name, space)
        self.hint = hint

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.hint.items())
        return f"ncc.{self.name}({args})"


class _Memory(_Buffer):
    """``ncc.sbuf`` / ``ncc.psum``: the buffer itself (automatic allocation) and its
    allocators."""

    def auto_alloc(self):
        """Automatic allocation: the same as the buffer itself."""
        return self

    def alloc(self, func):
        """Places each logical tile where ``func(idx, pdim_size, fdim_size)`` says; trnsim
        checks that ``func`` is callable and places the tiles itself."""
        if not callable(func):
            raise NkiError(f"ncc.{self.name}.alloc: func must be a callable (block index, "
                           f"partitions, bytes per partition) -> address, got {func!r}")
        return _Allocation(f"{self.name}.alloc", self.space, func=func)

    def mod_alloc(self, *, base_addr=None, base_partition=0, num_par_tiles=(),
                  num_free_tiles=(), base_bank=None, num_bank_tiles=()):
        """Modulo allocation of the logical tiles over a few physical ones (double
        buffering); trnsim checks the arguments and places the tiles itself."""
        call = f"ncc.{self.name}.mod_alloc"
        hint = {"base_partition": _ops.integer(base_partition, f"{call}: base_partition", 0),
                "num_par_tiles": _ints(num_par_tiles, f"{call}: num_par_tiles", 1),
                "num_free_tiles": _ints(num_free_tiles, f"{call}: num_free_tiles", 1)}
        if self.space == "psum":
            if base_bank is None:
                raise NkiError(f"{call}: base_bank is required")
            hint["base_bank"] = _ops.integer(base_bank, f"{call}: base_bank", 0)
            hint["base_addr"] = _ops.integer(base_addr or 0, f"{call}: base_addr", 0)
            hint["num_bank_tiles"] = _ints(num_bank_tiles, f"{call}: num_bank_tiles", 1)
        else:
            if base_addr is None:
                raise NkiError(f"{call}: base_addr is required")
            if base_bank is not None or num_bank_tiles:
                raise NkiError(f"{call}: base_bank / num_bank_tiles are PSUM's (ncc.psum)")
            hint["base_addr"] = _ops.integer(base_addr, f"{call}: base_addr", 0)
        return _Allocation(f"{self.name}.mod_alloc", self.space, **hint)


sbuf = _Memory("sbuf", "sbuf")
psum = _Memory("psum", "psum")


def _decorator(name):
    def deco(func=None, **options):
        """Accepted: trnsim does not transform or reallocate kernels (module docstring)."""
        if func is None:
            return lambda f: f
        if not callable(func):
            raise NkiError(f"ncc.{name}: decorates a kernel function, got {func!r}")
        return func

    deco.__name__ = name
    return deco


skip_middle_end_transformations = _decorator("skip_middle_end_transformations")
enable_stack_allocator = _decorator("enable_stack_allocator")
force_auto_alloc = _decorator("force_auto_alloc")


class multi_buffer:
    """``directives=ncc.multi_buffer(n)`` of a loop: the compiler keeps n copies of the
    loop's tiles so iterations overlap. trnsim's placement by live range already gives each
    iteration's tiles their own bytes while SBUF / PSUM has room, so it changes nothing."""

    def __init__(self, n):
        self.n = _ops.integer(n, "ncc.multi_buffer: n", 1)

    def __repr__(self):
        return f"ncc.multi_buffer({self.n})"


__all__ = ["sbuf", "psum", "skip_middle_end_transformations", "enable_stack_allocator",
           "force_auto_alloc", "multi_buffer", "no_reorder"]
