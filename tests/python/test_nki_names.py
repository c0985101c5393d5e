"""NKI names public kernels use that trnsim's front end lacked (docs/nki.md, "API coverage"):
each one runs with NKI's meaning, checked against a numpy reference, or raises
NotImplementedError naming it."""

import importlib

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import legacy
from trnsim.nki.legacy import isa as lisa


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


# --- nl.NKIObject ---

def test_nkiobject_is_a_base_of_kernel_configuration_classes(aliases, rng):
    """The attention tutorial defines ``class MemManager(nl.NKIObject)`` at module level, and
    NKI kernels derive dataclasses from it: the module used to fail to import."""
    import dataclasses

    from neuronxcc.nki import language as old_nl

    assert old_nl.NKIObject is nl.NKIObject
    assert importlib.import_module("nki.language").NKIObject is nl.NKIObject

    @dataclasses.dataclass(frozen=True)
    class Tiling(nl.NKIObject):
        rows: int
        scale: float = 2.0

    class Buffers(nl.NKIObject):
        t = None

    @nki.jit
    def scaled(x, cfg):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        bufs = Buffers()
        bufs.t = nl.ndarray((cfg.rows, x.shape[1]), x.dtype, buffer=nl.sbuf)
        for i in range(x.shape[0] // cfg.rows):
            rows = slice(i * cfg.rows, (i + 1) * cfg.rows)
            nisa.dma_copy(dst=bufs.t, src=x[rows, :])
            nisa.tensor_scalar(dst=bufs.t, data=bufs.t, op0=nl.multiply, operand0=cfg.scale)
            nisa.dma_copy(dst=out[rows, :], src=bufs.t)
        return out

    x = rng.standard_normal((256, 64)).astype(np.float32)
    np.testing.assert_array_equal(scaled(x, Tiling(rows=128, scale=3.0)), x * np.float32(3))
    assert nl.NKIObject(a=1, b="two").b == "two"


# --- nl.static_cast in host code ---

@pytest.mark.parametrize("dtype", [nl.bfloat16, nl.float16, nl.float8_e4m3, nl.int32,
                                   np.float32])
def test_static_cast_of_a_numpy_array_is_numpys_astype(rng, dtype):
    """nki-samples' tests cast their inputs with nl.static_cast(np.random..., dtype) before
    launching: that used to raise "expected a tile or tensor, got a numpy array"."""
    x = rng.standard_normal((16, 8)) * 4
    y = nl.static_cast(x, dtype)
    assert isinstance(y, np.ndarray) and y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y, x.astype(np.dtype(dtype)))
    s = nl.static_cast(2.75, dtype)
    assert s.dtype == np.dtype(dtype) and s == np.asarray(2.75).astype(np.dtype(dtype))


def test_static_cast_to_bool_and_unknown_dtypes():
    np.testing.assert_array_equal(nl.static_cast(np.array([2.0, 0.0, -1.0]), nl.bool_),
                                  [True, False, True])
    with pytest.raises(nki.NkiError, match="no numpy type"):
        nl.static_cast(np.ones(4), nl.tfloat32)
    with pytest.raises(nki.NkiError, match="expected a tile or tensor"):
        nl.static_cast([1.0, 2.0], nl.float32)


def test_static_cast_inputs_then_the_kernel_casts_a_tile(rng):
    """As the nki-samples tests run: inputs cast in host code, the kernel casts a tile."""
    @legacy.jit
    def widen(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.static_cast(nl.load(x), nl.float32))
        return out

    x = nl.static_cast(rng.random((128, 64)), nl.bfloat16)
    out = widen(x)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, x.astype(np.float32))


# --- dtypes: limits, finfo, bool ---

def test_dtype_limits_are_numpys_finfo_and_iinfo():
    import ml_dtypes

    assert nl.fp32.min == np.finfo(np.float32).min and nl.float32.max == np.finfo(np.float32).max
    assert nl.bfloat16.min == ml_dtypes.finfo(ml_dtypes.bfloat16).min
    assert nl.finfo(nl.float16).max == np.finfo(np.float16).max
    assert nl.finfo(nl.bfloat16).eps == ml_dtypes.finfo(ml_dtypes.bfloat16).eps
    assert nl.int8.min == -128 and nl.uint16.max == 65535 and nl.bool_.max == 255
    # Still the dtypes numpy and the rest of trnsim take.
    assert nl.float32 == np.float32 and np.dtype("float32") == nl.float32
    assert np.zeros(2, nl.bfloat16).dtype == ml_dtypes.bfloat16 and nl.float32.itemsize == 4


def test_fp32_min_fills_a_causal_mask(rng):
    @legacy.jit
    def masked(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:64, 0:64]
        t = lisa.affine_select(pred=(i_p - i_f >= 0), on_true_tile=nl.load(x),
                               on_false_value=nl.fp32.min)
        nl.store(out, value=t)
        return out

    x = rng.standard_normal((64, 64)).astype(np.float32)
    ref = np.where(np.tril(np.ones((64, 64), bool)), x, np.finfo(np.float32).min)
    np.testing.assert_array_equal(masked(x), ref)


def test_bool_arrays_are_kernel_arguments_and_np_bool_a_dtype(rng):
    @legacy.jit
    def pick(x, keep, positive):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out, value=nl.where(nl.load(keep), t, 0.0))
        nl.store(positive, value=nl.greater(t, 0.0, dtype=np.bool_))
        return out

    x = rng.standard_normal((32, 16)).astype(np.float32)
    keep = rng.random((32, 16)) < 0.5
    positive = np.zeros((32, 16), bool)
    np.testing.assert_array_equal(pick(x, keep, positive), np.where(keep, x, 0))
    np.testing.assert_array_equal(positive, x > 0)


# --- nl.mgrid fields, reshape(shape=), nl.store of a number ---

def test_mgrid_p_and_x_fields_index_like_the_unpacked_ranges(rng):
    @legacy.jit
    def shifted(x):
        out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)
        g = nl.mgrid[0:128, 0:64]
        nl.store(out[g.p, g.x], value=nl.load(x[g.p, g.x + 64]))
        return out

    x = rng.standard_normal((128, 128)).astype(np.float32)
    np.testing.assert_array_equal(shifted(x), x[:, 64:])


def test_mgrid_y_and_z_fields_are_grid_axes_2_and_3(rng):
    """NKI kernels name a grid's third and fourth ranges .y and .z (nki.isa.nc_matmul's
    double-row example, nki-samples' select-and-scatter)."""
    @legacy.jit
    def shifted(x):
        out = nl.ndarray((32, 2, 3, 4), x.dtype, buffer=nl.shared_hbm)
        g = nl.mgrid[0:32, 0:2, 0:3, 0:4]
        nl.store(out[g.p, g.x, g.y, g.z], value=nl.load(x[g.p, g.x, g.y, g.z + 4]))
        return out

    x = rng.standard_normal((32, 2, 3, 8)).astype(np.float32)
    np.testing.assert_array_equal(shifted(x), x[..., 4:])
    g = nl.mgrid[0:8, 0:4, 0:2]
    assert (g.p, g.x, g.y) == tuple(g)
    with pytest.raises(AttributeError, match="grid axis 3; this grid has 3 axes"):
        g.z


def test_an_mgrid_object_as_the_whole_index_is_its_fields_in_order(rng):
    """nki.isa.reciprocal's example loads and stores t[nl.mgrid[0:128, 0:512]]: the grid object
    (a tuple of its ranges) indexes as t[g.p, g.x], on HBM tensors and on tiles."""
    @legacy.jit
    def recip(x):
        out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)
        t[nl.mgrid[0:128, 0:64]] = nl.load(x[nl.mgrid[0:128, 0:64]])
        y = lisa.reciprocal(t[nl.mgrid[0:128, 0:64]])
        nl.store(out[nl.mgrid[0:128, 0:64]], value=y)
        return out

    x = rng.uniform(0.5, 2.0, (128, 64)).astype(np.float32)
    np.testing.assert_allclose(recip(x), 1 / x, rtol=1e-6)


def test_reshape_takes_the_shape_keyword(rng):
    @nki.jit
    def split(x):
        out = nl.ndarray((128, 4, 8), x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=out, src=t.reshape(shape=(128, 4, 8)))
        return out

    x = rng.standard_normal((128, 32)).astype(np.float32)
    np.testing.assert_array_equal(split(x), x.reshape(128, 4, 8))
    with pytest.raises(nki.NkiError, match="give the shape once"):
        nki.jit(lambda x: nl.ndarray((4, 8), nl.float32).reshape((8, 4), shape=(8, 4)))(x)


@pytest.mark.parametrize("value", [3.5, -2, np.float32(0.25)])
def test_store_of_a_number_writes_every_element(value):
    @legacy.jit
    def fill(out):
        nl.store(out[0:64, 0:32], value=value)

    out = np.full((128, 32), 7.0, np.float32)
    fill(out)
    ref = np.full((128, 32), 7.0, np.float32)
    ref[:64] = value
    np.testing.assert_array_equal(out, ref)


# --- tensor_copy(dtype=), nl.loop_reduce, nl.tile_size on the host ---

def test_tensor_copy_dtype_names_dsts_dtype(rng):
    import ml_dtypes

    @nki.jit
    def to_bf16(x, dtype):
        out = nl.ndarray(x.shape, nl.bfloat16, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        u = nl.ndarray(x.shape, nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_copy(dst=u, src=t, dtype=dtype)
        nisa.dma_copy(dst=out, src=u)
        return out

    x = rng.standard_normal((128, 16)).astype(np.float32)
    np.testing.assert_array_equal(to_bf16(x, nl.bfloat16), x.astype(ml_dtypes.bfloat16))
    with pytest.raises(nki.NkiError, match="converts to dst's dtype"):
        to_bf16(x, nl.float16)


@pytest.mark.parametrize("op,ref", [(np.add, np.sum), (np.max, np.max)])
def test_loop_reduce_accumulates_into_the_assigned_tile(op, ref, rng):
    @legacy.jit
    def reduce_blocks(x):
        out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        acc = nl.full((128, 64), 0.0 if op is np.add else nl.fp32.min, nl.float32)
        for i in nl.affine_range(4):
            acc[...] = nl.loop_reduce(nl.load(x[i]), op=op, loop_indices=[i], dtype=nl.float32)
        nl.store(out, value=acc)
        return out

    x = rng.standard_normal((4, 128, 64)).astype(np.float32)
    want = ref(x.astype(np.float64), axis=0) if op is np.max else np.float32(0)
    if op is np.add:  # fp32 additions in loop order, as VectorE does them
        for i in range(4):
            want = (x[i] + want).astype(np.float32)
    np.testing.assert_array_equal(reduce_blocks(x), np.asarray(want, np.float32))


def test_loop_reduce_rebound_to_a_name_is_an_error():
    @legacy.jit
    def rebound(x):
        b = nl.zeros((128, 8), nl.float32)
        b = nl.loop_reduce(nl.load(x), op=np.add, loop_indices=[0])
        nl.store(x, value=b)

    with pytest.raises(nki.NkiError, match="assign the result into its accumulator"):
        rebound(np.ones((128, 8), np.float32))


def test_tile_size_is_readable_in_host_code(monkeypatch):
    monkeypatch.delenv(nki.TARGET_ENV, raising=False)
    assert nl.tile_size.pmax == 128 and nl.tile_size.psum_fmax == 512
    assert nl.tile_size.gemm_stationary_fmax == 128

    @nki.jit
    def pmax_inside(out):
        t = nl.ndarray((nl.tile_size.pmax, 1), nl.float32)
        nisa.memset(dst=t, value=float(nl.tile_size.psum_fmax))
        nisa.dma_copy(dst=out, src=t)

    out = np.zeros((nl.tile_size.pmax, 1), np.float32)
    pmax_inside(out)
    np.testing.assert_array_equal(out, 512.0)
