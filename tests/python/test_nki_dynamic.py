"""Virtual registers and dynamic loops (NKI API reference: register_alloc / move / load / store,
nl.dynamic_range, while on a register, .ap(scalar_offset=), tensor_copy_dynamic_src / _dst;
"NKI Dynamic Loops"), against numpy references written here: the body is traced once and runs
on the engines' registers and branches, trip counts may come from memory (zero included), a
register indexes a tensor, iterations do not overlap, and misuse is a clear error."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import NkiError
from trnsim.nki.legacy import isa as lisa

CHIPS = ["trn1", "trn2", "trn3"]


def hbm(shape, dtype):
    return nl.ndarray(shape, dtype, buffer=nl.shared_hbm)


@pytest.mark.parametrize("chip", CHIPS)
def test_dynamic_range_over_row_blocks(chip, rng):
    x = rng.standard_normal((512, 64)).astype(np.float32)

    @nki.jit(chip=chip)
    def kernel(x):
        out = hbm(x.shape, x.dtype)
        for i in nl.dynamic_range(x.shape[0] // 128):
            t = nl.load(x[i * 128:(i + 1) * 128, :])
            nl.store(out[nl.ds(i * 128, 128), :], nl.multiply(t, 2.0))
        return out

    np.testing.assert_array_equal(kernel(x), 2 * x)


def test_the_body_is_traced_once(rng):
    x = rng.standard_normal((1024, 64)).astype(np.float32)
    calls = []

    @nki.jit
    def kernel(x, blocks):
        out = hbm(x.shape, x.dtype)
        for i in nl.dynamic_range(blocks):
            calls.append(i)
            nl.store(out[i * 128:(i + 1) * 128, :], nl.load(x[i * 128:(i + 1) * 128, :]))
        return out

    kernel(x, 8)
    assert len(calls) == 1 and isinstance(calls[0], nisa.VirtualRegister)


@pytest.mark.parametrize("n", [0, 3, 8])
def test_trip_count_from_memory(n, rng):
    x = rng.standard_normal((8, 64)).astype(np.float32)

    @nki.jit
    def kernel(x, count):
        out = hbm(x.shape, x.dtype)
        nl.store(out, nl.zeros(x.shape, dtype=x.dtype, buffer=nl.sbuf))
        reg = nisa.register_alloc()
        nisa.register_load(reg, count)
        for i in nl.dynamic_range(reg):
            t = nl.ndarray((1, 64), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x.ap([[64, 1], [1, 64]], scalar_offset=i))
            u = nl.ndarray((1, 64), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=u, data=t, op0=nl.add, operand0=1.0)
            nisa.dma_copy(dst=out.ap([[64, 1], [1, 64]], scalar_offset=i), src=u)
        return out

    want = np.zeros_like(x)
    want[:n] = x[:n] + 1
    np.testing.assert_array_equal(kernel(x, np.array([[n]], dtype=np.int32)), want)


def test_register_bounds_and_step_as_in_the_guide(rng):
    # "NKI Dynamic Loops": start / stop registers, a step of 128 rows, scalar_offset on dim 0.
    x = rng.standard_normal((512, 512)).astype(np.float32)

    @nki.jit
    def kernel(x):
        out = hbm(x.shape, x.dtype)
        start = nisa.register_alloc(0)
        stop = nisa.register_alloc(512)
        for i in nl.dynamic_range(start, stop, 128):
            tile = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            result = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(src=x.ap([[512, 128], [1, 512]], scalar_offset=i), dst=tile)
            nisa.tensor_scalar(dst=result, data=tile, op0=nl.add, operand0=2.0)
            nisa.dma_copy(src=result, dst=out.ap([[512, 128], [1, 512]], scalar_offset=i))
        return out

    # i = 0, 128, 256, 384; scalar_offset moves by i steps of the pattern's dim 0 (i rows).
    np.testing.assert_array_equal(kernel(x), x + 2)


@pytest.mark.parametrize("n", [5, 0])
def test_while_on_a_register_the_body_reloads(n):
    @nki.jit
    def kernel(count):
        c = nl.load(count)
        acc = nl.zeros((1, 1), dtype=nl.float32, buffer=nl.sbuf)
        reg = nisa.register_alloc()
        nisa.register_load(reg, c)
        while reg:
            nisa.tensor_scalar(dst=acc, data=acc, op0=nl.add, operand0=1.0)
            nisa.tensor_scalar(dst=c, data=c, op0=nl.subtract, operand0=1)
            nisa.register_load(reg, c)
        out = hbm((1, 1), nl.float32)
        nl.store(out, acc)
        return out

    assert kernel(np.array([[n]], dtype=np.int32))[0, 0] == n


def test_fori_loop_and_while_loop(rng):
    x = rng.standard_normal((4, 32)).astype(np.float32)

    @nki.jit
    def kernel(x, count):
        out = hbm(x.shape, x.dtype)
        nl.store(out, nl.zeros(x.shape, dtype=x.dtype, buffer=nl.sbuf))

        def body(i):
            nl.store(out[i, :], nl.multiply(nl.load(x[i, :]), 3.0))

        nl.fori_loop(1, 3, body)
        c = nl.load(count)
        acc = nl.zeros((1, 1), dtype=nl.float32, buffer=nl.sbuf)
        left = nisa.register_alloc()
        nisa.register_load(left, c)

        def countdown(r):
            nisa.tensor_scalar(dst=acc, data=acc, op0=nl.add, operand0=1.0)
            nisa.tensor_scalar(dst=c, data=c, op0=nl.subtract, operand0=1)
            nxt = nisa.register_alloc()
            nisa.register_load(nxt, c)
            return nxt

        nl.while_loop(left, countdown)
        nl.store(out[0:1, 0:1], acc)
        return out

    want = np.zeros_like(x)
    want[1:3] = 3 * x[1:3]
    want[0, 0] = 4
    np.testing.assert_array_equal(kernel(x, np.array([[4]], dtype=np.int32)), want)


def test_register_store_and_move():
    @nki.jit
    def kernel():
        t = nl.full((1, 4), -1, dtype=nl.int32, buffer=nl.sbuf)
        for i in nl.dynamic_range(1, 4):
            nisa.register_store(t[:, nl.ds(i, 1)], i)
        a = nisa.register_alloc(7)
        b = nisa.register_alloc()
        nisa.register_move(b, a)
        nisa.register_store(t[:, 0:1], b)
        out = hbm((1, 4), nl.int32)
        nl.store(out, t)
        return out

    np.testing.assert_array_equal(kernel(), [[7, 1, 2, 3]])


def test_tensor_copy_dynamic_src_and_dst(rng):
    data = rng.standard_normal((128, 64)).astype(np.float32)

    @nki.jit
    def kernel(data, where):
        d = nl.load(data)
        w = nl.load(where)
        r = nisa.register_alloc()
        nisa.register_load(r, w)
        got = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy_dynamic_src(dst=got, src=d[:, nl.ds(r, 8)])
        put = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy_dynamic_dst(dst=put[:, nl.ds(r * 2, 8)], src=got)
        out = hbm((128, 64), nl.float32)
        nl.store(out, put)
        return out

    want = np.zeros_like(data)
    want[:, 20:28] = data[:, 10:18]
    np.testing.assert_array_equal(kernel(data, np.array([[10]], dtype=np.int32)), want)


def test_legacy_tensor_copy_dynamic_src(rng):
    data = rng.standard_normal((128, 64)).astype(np.float32)

    @nki.jit(dialect="legacy")
    def kernel(data, where):
        d = nl.load(data)
        r = nisa.register_alloc()
        nisa.register_load(r, nl.load(where))
        out = hbm((128, 4), nl.float32)
        nl.store(out, lisa.tensor_copy_dynamic_src(d[:, nl.ds(r, 4)]))
        return out

    np.testing.assert_array_equal(kernel(data, np.array([[33]], dtype=np.int32)),
                                  data[:, 33:37])


def test_a_register_past_the_tensor_faults(rng):
    x = rng.standard_normal((8, 64)).astype(np.float32)

    @nki.jit
    def kernel(x, count):
        out = hbm(x.shape, x.dtype)
        reg = nisa.register_alloc()
        nisa.register_load(reg, count)
        for i in nl.dynamic_range(reg):
            nl.store(out[i, :], nl.load(x[i, :]))
        return out

    with pytest.raises(Exception, match="index_range"):
        kernel(x, np.array([[9]], dtype=np.int32))


def test_iterations_do_not_overlap(rng):
    # Each iteration drains every engine: a dynamic loop takes longer than the unrolled loop
    # of the same body, which overlaps one block's load with another's compute ("NKI Dynamic
    # Loops": ~17.9 us against ~7.5 us per iteration on trn1).
    x = rng.standard_normal((128 * 16, 512)).astype(np.float32)

    def make(rng_fn):
        @nki.jit(chip="trn1")
        def kernel(x):
            out = hbm(x.shape, x.dtype)
            for i in rng_fn(16):
                t = nl.load(x[i * 128:(i + 1) * 128, :])
                nl.store(out[i * 128:(i + 1) * 128, :], nl.exp(t))
            return out
        return kernel

    dyn, unrolled = make(nl.dynamic_range), make(nl.static_range)
    np.testing.assert_allclose(dyn(x), unrolled(x))
    assert dyn.last_run.execution_ps > 1.3 * unrolled.last_run.execution_ps


def test_misuse_is_a_clear_error():
    @nki.jit
    def as_int():
        for i in nl.dynamic_range(4):
            range(i)

    with pytest.raises(NkiError, match="device register"):
        as_int()

    @nki.jit
    def python_branch():
        for i in nl.dynamic_range(4):
            if i == 0:
                pass

    with pytest.raises(NkiError, match="cannot branch"):
        python_branch()

    @nki.jit
    def register_step():
        r = nisa.register_alloc(2)
        for _ in nl.dynamic_range(0, 8, r):
            pass

    with pytest.raises(NkiError, match="step"):
        register_step()

    @nki.jit
    def partition_index():
        t = nl.zeros((128, 4), dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.dynamic_range(4):
            nl.add(t[i, :], 1.0)

    with pytest.raises(NotImplementedError, match="partition dim"):
        partition_index()

    @nki.jit
    def two_registers():
        r = nisa.register_alloc(1)
        return r + r

    with pytest.raises(NotImplementedError, match="register arithmetic"):
        two_registers()
