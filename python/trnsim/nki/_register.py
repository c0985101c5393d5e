"""NKI virtual registers and dynamic loops, on the kernel builder's scalar registers and
hardware loops (src/kernel/builder.h: registers with a home in SBUF, loops of registers and
branches on every engine, drained and barriered every iteration as NKI's compiler does).

A ``VirtualRegister`` stands for ``scale * r + bias`` of builder register ``r``: arithmetic
with Python ints stays affine and costs nothing, because a register-relative operand folds the
scale into its step and the bias into its static offset. Indexing a tensor with one
(``t[i]``, ``t[i * 128:(i + 1) * 128]``, ``nl.ds(i, n)``) or ``t.ap(..., scalar_offset=i)``
makes a dynamic view: the engine that runs the instruction reads the register when it issues.

Loops: ``nl.dynamic_range(start, stop, step)`` (bounds ints or registers) and ``while reg:``
trace their body once and run it as a hardware loop. A register's value is never known while
the kernel is traced."""

from __future__ import annotations

import weakref

from trnsim.nki import _ctx
from trnsim.nki._ctx import NkiError


def _kb():
    from trnsim.nki import _ops

    return _ops.kb()


class VirtualRegister:
    """``scale * r + bias`` of scalar register ``r`` (see the module docstring)."""

    __slots__ = ("r", "scale", "bias", "counter", "_while", "__weakref__")

    def __init__(self, r, scale=1, bias=0, counter=False):
        self.r, self.scale, self.bias, self.counter = r, scale, bias, counter
        self._while = False

    @property
    def plain(self):
        return self.scale == 1 and self.bias == 0

    def _affine(self, scale, bias):
        return VirtualRegister(self.r, scale, bias, self.counter)

    def __add__(self, k):
        if isinstance(k, bool) or not isinstance(k, int):
            return _arith(self, "+", k)
        return self._affine(self.scale, self.bias + k)

    __radd__ = __add__

    def __sub__(self, k):
        if isinstance(k, VirtualRegister) and k.r == self.r:
            if k.scale == self.scale:
                return self.bias - k.bias  # (i + 128) - i: a size
        if isinstance(k, bool) or not isinstance(k, int):
            return _arith(self, "-", k)
        return self._affine(self.scale, self.bias - k)

    def __rsub__(self, k):
        if isinstance(k, bool) or not isinstance(k, int):
            return _arith(k, "-", self)
        return self._affine(-self.scale, k - self.bias)

    def __mul__(self, k):
        if isinstance(k, bool) or not isinstance(k, int):
            return _arith(self, "*", k)
        return self._affine(self.scale * k, self.bias * k)

    __rmul__ = __mul__

    def __neg__(self):
        return self._affine(-self.scale, -self.bias)

    def __index__(self):
        raise NkiError(f"{self!r} is a device register: its value is only known when the kernel "
                       "runs, so it cannot be a Python int (index a tensor with it, or use it as "
                       "scalar_offset / a dynamic_range bound)")

    __int__ = __index__

    def _compare(self, other):
        raise NkiError(f"{self!r} compared with {other!r}: a device register's value is only "
                       "known when the kernel runs, so Python cannot branch on it (NKI: use "
                       "device-side operations, or `while reg:`)")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _compare
    __hash__ = object.__hash__

    def __bool__(self):
        # `while reg:` calls this before the body (start the hardware loop, trace the body once)
        # and after it (end the loop).
        if self.counter or not self.plain:
            raise NkiError(f"{self!r}: `while` takes a register of register_alloc, not a loop's "
                           "counter or an expression of one")
        if not self._while:
            _kb().begin_while(self.r)
            self._while = True
            return True
        _kb().end_loop()
        self._while = False
        return False

    def __repr__(self):
        base = f"r{self.r}"
        if self.scale != 1:
            base = f"{self.scale}*{base}"
        return f"VirtualRegister({base}{'+' if self.bias >= 0 else ''}{self.bias})" \
            if self.bias else f"VirtualRegister({base})"


def _arith(a, op, b):
    _ctx.unsupported(f"register arithmetic {a!r} {op} {b!r}",
                     "registers combine with Python ints (scale and offset) only")


def is_register(x):
    return isinstance(x, VirtualRegister)


def plain(x, what):
    """The builder register of a register that is not an expression."""
    if not isinstance(x, VirtualRegister):
        raise NkiError(f"{what}: expected a register of nisa.register_alloc, got "
                       f"{type(x).__name__}")
    if not x.plain:
        _ctx.unsupported(f"{what} of the expression {x!r}", "give the register itself")
    return x.r


# --- nki.isa ---------------------------------------------------------------------------------

def register_alloc(x=None):
    """A register of every engine, set to ``x`` (an int or a register) when given."""
    reg = VirtualRegister(_kb().new_register())
    if x is not None:
        register_move(reg, x)
    return reg


def register_move(dst, imm):
    """dst = imm: an int, or another register (through an SBUF element)."""
    from trnsim.nki import _ops

    r = plain(dst, "nisa.register_move: dst")
    if isinstance(imm, VirtualRegister):
        tmp = _ops.alloc([1, 1], "int32", name="register_move")
        _kb().register_store(tmp._view(), plain(imm, "nisa.register_move: src"))
        _kb().register_load(r, tmp._view())
        return dst

    _kb().register_set(r, _ops.integer(imm, "nisa.register_move: imm", -2**31, 2**32 - 1))
    return dst


def register_load(dst, src):
    """dst = src, a one-element tensor of SBUF or HBM (floats convert to int32)."""
    from trnsim.nki import _ops

    _kb().register_load(plain(dst, "nisa.register_load: dst"), _ops.view(src))
    return dst


def register_store(dst, src):
    """dst (one element) = src's register."""
    from trnsim.nki import _ops

    _kb().register_store(_ops.view(dst), plain(src, "nisa.register_store: src"))
    return dst


# --- nki.language ----------------------------------------------------------------------------

def _bound(x, what):
    if isinstance(x, VirtualRegister):
        return 0, plain(x, what)
    from trnsim.nki import _ops

    return _ops.integer(x, what, -2**31, 2**31 - 1), -1


def dynamic_range(start, stop=None, step=1):
    """A hardware loop: the body is traced once and runs for i = start, start + step, ... < stop
    (ints or registers; step a positive int). Yields i's register."""
    if stop is None:
        start, stop = 0, start
    if isinstance(step, VirtualRegister) or isinstance(step, bool) or not isinstance(step, int) \
            or step <= 0:
        raise NkiError(f"nl.dynamic_range: step {step!r} must be a positive int known when the "
                       "kernel is traced")
    s, s_reg = _bound(start, "nl.dynamic_range: start")
    e, e_reg = _bound(stop, "nl.dynamic_range: stop")
    kb = _kb()
    r = kb.begin_for(s, s_reg, e, e_reg, step)
    yield VirtualRegister(r, counter=True)
    kb.end_loop()


def fori_loop(lower, upper, body_fun, step=1):
    """for i in dynamic_range(lower, upper, step): body_fun(i)."""
    for i in dynamic_range(lower, upper, step):
        body_fun(i)


def while_loop(init, body_fun):
    """r = init; while r != 0: r = body_fun(r) -- a hardware loop on init's register; the
    register the body returns becomes the next condition."""
    r = plain(init, "nl.while_loop: init")
    kb = _kb()
    kb.begin_while(r)
    nxt = body_fun(init)
    if nxt is None:
        raise NkiError("nl.while_loop: body_fun returns the next condition register")
    if not (isinstance(nxt, VirtualRegister) and nxt.plain and nxt.r == r):
        register_move(init, nxt)
    kb.end_loop()


# --- dynamic views ---------------------------------------------------------------------------

def _register_of(k):
    """A key element's register expression, or None."""
    if isinstance(k, VirtualRegister):
        return k
    if isinstance(k, slice) and isinstance(k.start, VirtualRegister):
        return k.start
    return None


def has_register(key):
    key = key if type(key) is tuple else (key,)
    return any(_register_of(k) is not None or
               (isinstance(k, slice) and isinstance(k.stop, VirtualRegister)) for k in key)


def index(t, key):
    """``t[key]`` with registers in the key: the static view at register 0, made dynamic."""
    from trnsim.nki._tensor import NkiTensor

    key = key if type(key) is tuple else (key,)
    if any(k is Ellipsis or k is None for k in key):
        _ctx.unsupported("a register index with ... or None", "spell every dim out")
    v = t._view()
    strides = list(v.strides)
    static, reg, step = [], None, 0
    for d, k in enumerate(key):
        x = _register_of(k)
        if x is None:
            if isinstance(k, slice) and isinstance(k.stop, VirtualRegister):
                raise NkiError(f"{v.name}[...]: a slice ending at a register must start at one")
            static.append(k)
            continue
        if d == 0 and v.space != "hbm":
            _ctx.unsupported(f"a register index on the partition dim of {v.describe()}",
                             "on chip a register moves an access within the partitions")
        if reg is not None and reg != x.r:
            _ctx.unsupported(f"{v.name}[...] indexed with two registers",
                             "one register moves an access")
        reg = x.r
        step += x.scale * strides[d]
        if isinstance(k, slice):
            size = k.stop - k.start if isinstance(k.stop, VirtualRegister) else None
            if not isinstance(size, int):
                raise NkiError(f"{v.name}[{k.start!r}:{k.stop!r}]: a slice from a register ends at "
                               "the same register plus a number (i * n:(i + 1) * n, nl.ds(i, n))")
            static.append(slice(x.bias, x.bias + size, k.step))
        else:
            static.append(x.bias)
    view = t[tuple(static)]._view()
    try:
        return NkiTensor(view.dynamic(reg, step))
    except ValueError as e:
        raise NkiError(str(e)) from None


def index_dynamic(t, key):
    """``t[nl.arange(n)[:, None] + s, ...]`` with ``s`` a register or one element of a tile
    (_index.DynExpr): the access at s = 0, moved by the register along that dim when the
    instruction issues."""
    from trnsim.nki._index import DynExpr, has_expr, resolve_index
    from trnsim.nki._tensor import NkiTensor

    key = key if type(key) is tuple else (key,)
    if any(k is Ellipsis or k is None for k in key):
        _ctx.unsupported("a run-time index offset with ... or None", "spell every dim out")
    at = [d for d, k in enumerate(key) if isinstance(k, DynExpr)]
    v = t._view()
    if len(at) > 1:
        _ctx.unsupported(f"{v.name}[...] with run-time offsets on two dims",
                         "one register moves an access")
    d = at[0]
    if d == 0 and v.space != "hbm":
        _ctx.unsupported(f"a run-time offset on the partition dim of {v.describe()}",
                         "on chip a register moves an access within the partitions")
    k = key[d]
    made = False
    reg = k.dyn
    if not isinstance(reg, VirtualRegister):
        reg, made = scalar_offset(reg)
    static = key[:d] + (k.expr + reg.bias,) + key[d + 1:]
    try:
        view = resolve_index(v, static, None) if has_expr(static) else v[static]
        out = NkiTensor(view.dynamic(reg.r, reg.scale * v.strides[d]))
    except ValueError as e:
        raise NkiError(str(e)) from None
    if made:
        free_with(out, reg)
    return out


def index_by_elements(t, key):
    """``t[tab[b, 0], :]``: each one-element tile of the key read into a register of its own
    (freed with the view), then ``t`` indexed by the registers."""
    from trnsim.nki._tensor import NkiTensor

    key = key if type(key) is tuple else (key,)
    regs = []
    new = []
    for k in key:
        if isinstance(k, NkiTensor) and k._element:
            reg, _ = scalar_offset(k)
            regs.append(reg)
            new.append(reg)
        else:
            new.append(k)
    out = index(t, tuple(new))
    for reg in regs:
        free_with(out, reg)
    return out


def scalar_offset(offset):
    """``.ap(..., scalar_offset=x)``'s register and whether it was made here: x is a register,
    or a one-element SBUF tile read into a new one (freed with the view, free_with)."""
    from trnsim.nki._tensor import NkiTensor

    if isinstance(offset, NkiTensor):
        reg = VirtualRegister(_kb().new_register())
        register_load(reg, offset)
        return reg, True
    if not isinstance(offset, VirtualRegister):
        raise NkiError("NkiTensor.ap: scalar_offset is a register or a one-element tile, got "
                       f"{type(offset).__name__}")
    return offset, False


def free_with(view, reg):
    """Frees `reg` when `view` is garbage: an instruction that used the view has read the
    register by then, and a later load into it is ordered after that read (the engines read
    registers in program order; the home's writes wait for their readers)."""
    weakref.finalize(view, _kb().free_register, reg.r)


def ds_start(start, size):
    """nl.ds(register, size): the slice i:i+size."""
    return slice(start, start + size)
