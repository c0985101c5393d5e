"""NKI names public kernels use that trnsim's front end lacked (docs/nki.md, "API coverage"):
each one runs with NKI's meaning, checked against a numpy reference, or raises
NotImplementedError naming it."""

import importlib
import sys

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import legacy
from trnsim.nki.legacy import isa as lisa


@pytest.fixture
def aliases(monkeypatch):
    """install_alias() for one test: the nki / neuronxcc modules it adds are removed after."""
    def ours(m):
        return m == "nki" or m.startswith(("nki.", "neuronxcc"))

    for m in [m for m in sys.modules if ours(m)]:
        monkeypatch.delitem(sys.modules, m)
    nki.install_alias()
    yield
    for m in [m for m in sys.modules if ours(m)]:
        del sys.modules[m]


# --- nki.compiler / neuronxcc.nki.compiler ---

def test_compiler_namespace_imports_in_both_dialects(aliases):
    ncc = importlib.import_module("neuronxcc.nki.compiler")
    assert importlib.import_module("nki.compiler") is ncc
    from neuronxcc import nki as old

    assert old.compiler is ncc and nki.compiler is ncc
    dims = importlib.import_module("neuronxcc.nki.compiler.backends.neuron.dimensions")
    assert dims.nc is nl.nc
    with pytest.raises(NotImplementedError, match="dimensions.VNC"):
        dims.VNC


def test_sbuf_mod_alloc_double_buffer_computes_the_same_values(rng):
    ncc = nki.compiler

    @ncc.enable_stack_allocator
    @ncc.skip_middle_end_transformations
    @legacy.jit
    def scale_blocks(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        buf = nl.ndarray((4, nl.par_dim(128), 64), dtype=x.dtype,
                         buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        for i in nl.affine_range(4, directives=ncc.multi_buffer(2)):
            buf[i, :, :] = nl.load(x[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(buf[i, :, :], 3.0))
        return out

    x = rng.standard_normal((512, 64)).astype(np.float32)
    np.testing.assert_array_equal(scale_blocks(x), x * np.float32(3.0))


def test_psum_mod_alloc_and_sbuf_alloc_hold_matmul_blocks(rng):
    ncc = nki.compiler

    @legacy.jit
    def two_matmuls(a, b):
        out = nl.ndarray((2, 64, 32), nl.float32, buffer=nl.shared_hbm)
        sb = nl.ndarray((2, nl.par_dim(128), 64), nl.float32,
                        buffer=ncc.sbuf.alloc(lambda idx, p, f: (0, idx[0] * f)))
        ps = nl.ndarray((2, nl.par_dim(64), 32), nl.float32,
                        buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(2,)))
        rhs = nl.load(b)
        for i in range(2):
            sb[i, :, :] = nl.load(a[i])
            ps[i, :, :] = lisa.nc_matmul(sb[i, :, :], rhs)
            nl.store(out[i], value=ps[i, :, :])
        return out

    a = rng.standard_normal((2, 128, 64)).astype(np.float32)
    b = rng.standard_normal((128, 32)).astype(np.float32)
    ref = np.einsum("ikm,kn->imn", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(two_matmuls(a, b), ref, rtol=1e-5, atol=1e-4)


def test_compiler_allocations_check_their_arguments():
    ncc = nki.compiler
    assert ncc.sbuf.auto_alloc() is ncc.sbuf
    with pytest.raises(nki.NkiError, match="base_addr is required"):
        ncc.sbuf.mod_alloc(num_free_tiles=(2,))
    with pytest.raises(nki.NkiError, match="base_bank is required"):
        ncc.psum.mod_alloc(num_bank_tiles=(2,))
    with pytest.raises(nki.NkiError, match="callable"):
        ncc.sbuf.alloc(3)
    with pytest.raises(nki.NkiError, match="num_free_tiles"):
        ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(0,))


def test_no_reorder_keeps_the_kernel_and_its_values(rng):
    @nki.jit
    def add_one(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        with nl.no_reorder():
            nisa.dma_copy(dst=t, src=x)
            nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
        with nki.compiler.no_reorder():
            nisa.dma_copy(dst=out, src=t)
        return out

    x = rng.standard_normal((128, 32)).astype(np.float32)
    np.testing.assert_array_equal(add_one(x), x + np.float32(1.0))


# --- typing, isa.constants ---

def test_typing_is_a_real_submodule_of_both_dialects(aliases):
    cur = importlib.import_module("trnsim.nki.typing")
    old = importlib.import_module("trnsim.nki.legacy.typing")
    assert importlib.import_module("nki.typing") is cur
    assert importlib.import_module("neuronxcc.nki.typing") is old
    assert old.tensor is cur.tensor and cur.tensor[128, 512] is cur.tensor

    @nki.jit
    def double(x: cur.tensor[128, 16], s: cur.scalar):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=s)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = np.arange(128 * 16, dtype=np.float32).reshape(128, 16)
    np.testing.assert_array_equal(double(x, 2.0), 2 * x)


def test_isa_constants_module_holds_the_isa_enums(aliases):
    c = importlib.import_module("nki.isa.constants")
    assert importlib.import_module("neuronxcc.nki.isa.constants") is c
    assert c.oob_mode is nisa.oob_mode and c.dge_mode is nisa.dge_mode
    assert c.engine is nisa.engine and c.reduce_cmd is lisa.reduce_cmd

    @nki.jit
    def copy(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x, oob_mode=c.oob_mode.error, dge_mode=c.dge_mode.unknown)
        nisa.tensor_copy(dst=t, src=t, engine=c.engine.gpsimd)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = np.linspace(-1, 1, 128 * 8, dtype=np.float32).reshape(128, 8)
    np.testing.assert_array_equal(copy(x), x)


# --- reduce_cmd ---

def test_reduce_cmd_has_every_documented_value():
    assert [c.name for c in nisa.reduce_cmd] == ["idle", "reset", "reduce", "reset_reduce",
                                                 "load_reduce"]


def test_reduce_cmd_reset_reduce_is_one_instructions_sum(rng):
    @nki.jit
    def exp_sum(x):
        out = nl.ndarray((128, 1), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        s = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.activation(dst=t, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=s,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.dma_copy(dst=out, src=s)
        return out

    x = rng.uniform(-1, 1, (128, 64)).astype(np.float32)
    ref = np.exp(x.astype(np.float64)).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(exp_sum(x), ref, rtol=1e-5)


@pytest.mark.parametrize("cmd", ["reduce", "load_reduce"])
def test_reduce_cmd_carried_across_instructions_raises_naming_it(cmd):
    @nki.jit
    def acc(x):
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        s = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.activation(dst=t, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=s,
                        reduce_cmd=getattr(nisa.reduce_cmd, cmd))

    @legacy.jit
    def acc_legacy(x):
        s = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        lisa.tensor_scalar_reduce(nl.load(x), np.multiply, 2.0, np.add, s,
                                  reduce_cmd=getattr(nisa.reduce_cmd, cmd))

    x = np.ones((128, 8), np.float32)
    for k in (acc, acc_legacy):
        with pytest.raises(NotImplementedError, match=f"reduce_cmd.{cmd}"):
            k(x)


# --- nki.trace ---

@pytest.mark.parametrize("dialect", [nki, legacy])
def test_trace_marks_a_subkernel_traced_inline(dialect, rng):
    @dialect.trace
    def scaled(t, k):
        return nl.multiply(t, k)

    @dialect.jit
    def outer(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=scaled(nl.load(x), 5.0))
        return out

    x = rng.standard_normal((64, 32)).astype(np.float32)
    np.testing.assert_array_equal(outer(x), x * np.float32(5.0))


def test_trace_subkernel_with_a_grid_inside_a_kernel_is_an_error():
    @nki.trace
    def inner(t):
        pass

    @nki.jit
    def outer(x):
        inner[4, 4](x)

    with pytest.raises(nki.NkiError, match="SPMD grid inside another kernel"):
        outer(np.ones((4, 4), np.float32))
