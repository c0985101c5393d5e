"""NKI names the front end used to refuse although the core's instructions express them
(docs/nki.md, "API coverage"): each checked against a numpy reference on the generations it
applies to, in both dialects where it exists in both; the ones that need the core raise
NotImplementedError saying what is missing."""

import importlib

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import legacy
from trnsim.nki.legacy import isa as lisa

CHIPS = ["trn1", "trn2", "trn3"]


# --- nki.language.constants ---

def test_language_constants_module_in_both_dialects(aliases):
    c = importlib.import_module("nki.language.constants")
    assert importlib.import_module("neuronxcc.nki.language.constants") is c
    from neuronxcc.nki.language.constants import sizeinbytes

    assert sizeinbytes is c.sizeinbytes and nl.constants is c and legacy.language.constants is c
    sizes = {nl.float32: 4, nl.bfloat16: 2, nl.float16: 2, nl.float8_e4m3: 1, nl.int8: 1,
             nl.uint16: 2, nl.int32: 4, nl.bool_: 1, nl.tfloat32: 4, np.float32: 4,
             nl.float8_e5m2_x4: 4, nl.float4_e2m1fn_x4: 2}
    for dt, n in sizes.items():
        assert sizeinbytes(dt) == n, dt
    assert c.sbuf_min_align == nl.tile_size.sbuf_min_align == 64
    assert c.psum_min_align == nl.tile_size.psum_min_align == 8
    with pytest.raises(nki.NkiError, match="sizeinbytes"):
        sizeinbytes("no_such_dtype")


# --- reductions: nl.all / nl.any, axes that are not the innermost ---

@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("jit", [nki.jit, legacy.jit], ids=["current", "legacy"])
def test_all_any_against_numpy(chip, jit, rng):
    x = rng.integers(0, 2, (16, 6, 5)).astype(np.float32)
    x[0, 0, :] = 1
    x[1, 1, :] = 0
    x[2, 2, 0] = np.nan  # numpy: NaN is true

    def kernel(x):
        t = nl.load(x)
        a = nl.ndarray((16, 6), nl.uint8, buffer=nl.shared_hbm)
        nl.store(a, nl.all(t, axis=2))
        b = nl.ndarray((16, 6, 1), nl.uint8, buffer=nl.shared_hbm)
        nl.store(b, nl.any(t, axis=-1, keepdims=True))
        c = nl.ndarray((16, 5), nl.uint8, buffer=nl.shared_hbm)
        nl.store(c, nl.all(t, axis=1))  # not the innermost axis
        d = nl.ndarray((16, 1), nl.uint8, buffer=nl.shared_hbm)
        nl.store(d, nl.any(t, axis=(1, 2)))
        return a, b, c, d

    a, b, c, d = jit(kernel, chip=chip)(x)
    np.testing.assert_array_equal(a, np.all(x, 2))
    np.testing.assert_array_equal(b, np.any(x, 2, keepdims=True))
    np.testing.assert_array_equal(c, np.all(x, 1))
    np.testing.assert_array_equal(d[:, 0], np.any(x, (1, 2)))


@pytest.mark.parametrize("chip", CHIPS)
def test_reductions_over_axes_that_are_not_innermost(chip, rng):
    x = rng.standard_normal((8, 5, 3, 4)).astype(np.float32)

    @nki.jit(chip=chip)
    def kernel(x):
        t = nl.load(x)
        o1 = nl.ndarray((8, 5, 4), nl.float32, buffer=nl.shared_hbm)
        nl.store(o1, nl.max(t, axis=2))
        o2 = nl.ndarray((8, 1, 3, 4), nl.float32, buffer=nl.shared_hbm)
        nl.store(o2, nl.min(t, axis=1, keepdims=True))
        o3 = nl.ndarray((8, 3), nl.float32, buffer=nl.shared_hbm)
        nl.store(o3, nl.sum(t, axis=(1, 3)))
        o4 = nl.ndarray((8, 5, 4), nl.float32, buffer=nl.shared_hbm)
        r = nl.ndarray((8, 5, 4), nl.float32)
        nisa.tensor_reduce(dst=r, op=nl.add, data=t, axis=2, negate=True)
        nl.store(o4, r)
        return o1, o2, o3, o4

    o1, o2, o3, o4 = kernel(x)
    np.testing.assert_array_equal(o1, x.max(2))
    np.testing.assert_array_equal(o2, x.min(1, keepdims=True))
    # One fp32 rounding per step, in the order the permuted pattern walks (axis 1, then 3).
    ref = np.zeros((8, 3), np.float32)
    for p in range(8):
        for j in range(3):
            acc = np.float32(0)
            for k, v in enumerate(x[p, :, j, :].reshape(-1)):
                acc = v if k == 0 else np.float32(acc + v)
            ref[p, j] = acc
    np.testing.assert_array_equal(o3, ref)
    xs = x.astype(np.float32)
    np.testing.assert_array_equal(o4, -np.float32(np.float32(xs[:, :, 0] + xs[:, :, 1]) +
                                                   xs[:, :, 2]))
    assert nki.last_run().instances[0][2] > 0


def test_legacy_tensor_reduce_over_a_middle_axis(rng):
    x = rng.standard_normal((8, 5, 3)).astype(np.float32)

    @legacy.jit
    def kernel(x, out):
        nl.store(out, lisa.tensor_reduce(np.max, nl.load(x), axis=1))

    out = np.zeros((8, 3), np.float32)
    kernel(x, out)
    np.testing.assert_array_equal(out, x.max(1))


def test_a_reduction_over_the_partition_dim_still_refuses():
    @nki.jit
    def kernel(x):
        t = nl.load(x)
        o = nl.ndarray((1, 4), nl.float32, buffer=nl.shared_hbm)
        nl.store(o, nl.sum(t, axis=0))

    with pytest.raises(NotImplementedError, match="partition dim"):
        kernel(np.zeros((8, 4), np.float32))


# --- predicated copy and select_reduce (one VectorE select; the reduce follows it) ---

@pytest.mark.parametrize("chip", CHIPS)
def test_tensor_copy_predicated_against_numpy(chip, rng):
    src = rng.standard_normal((32, 48)).astype(np.float32)
    old = rng.standard_normal((32, 48)).astype(np.float32)
    pred = rng.integers(0, 3, (32, 48)).astype(np.uint8)  # 2 is true too

    @nki.jit(chip=chip)
    def kernel(src, old, pred):
        outs = []
        for rev, value in ((False, None), (True, None), (False, 7.5)):
            d = nl.load(old)
            p = nl.load(pred)
            s = nl.load(src) if value is None else value
            nisa.tensor_copy_predicated(dst=d, src=s, predicate=p, reverse_pred=rev)
            o = nl.ndarray(old.shape, nl.float32, buffer=nl.shared_hbm)
            nl.store(o, d)
            outs.append(o)
        return outs

    a, b, c = kernel(src, old, pred)
    np.testing.assert_array_equal(a, np.where(pred != 0, src, old))
    np.testing.assert_array_equal(b, np.where(pred == 0, src, old))
    np.testing.assert_array_equal(c, np.where(pred != 0, np.float32(7.5), old))


def test_legacy_tensor_copy_predicated_writes_dst_in_place(rng):
    src = rng.standard_normal((16, 8)).astype(np.float32)
    pred = rng.integers(0, 2, (16, 8)).astype(np.uint16)

    @legacy.jit
    def kernel(src, pred, out):
        d = nl.zeros((16, 8), nl.float32)
        lisa.tensor_copy_predicated(src=nl.load(src), dst=d, predicate=nl.load(pred))
        nl.store(out, d)

    out = np.ones((16, 8), np.float32)
    kernel(src, pred, out)
    np.testing.assert_array_equal(out, np.where(pred != 0, src, 0))


def test_tensor_copy_predicated_checks_the_documented_dtypes():
    @nki.jit
    def kernel(x):
        t = nl.load(x)
        nisa.tensor_copy_predicated(dst=t, src=t, predicate=t)

    with pytest.raises(nki.NkiError, match="uint8, uint16 or uint32 predicate"):
        kernel(np.zeros((4, 4), np.float32))


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dialect", ["current", "legacy"])
def test_select_reduce_against_numpy(chip, dialect, rng):
    x = rng.standard_normal((32, 40)).astype(np.float32)
    pred = rng.integers(0, 2, (32, 40)).astype(np.uint8)
    col = rng.standard_normal((32, 1)).astype(np.float32)
    call = lisa.select_reduce if dialect == "legacy" else nisa.select_reduce
    jit = legacy.jit if dialect == "legacy" else nki.jit

    def kernel(x, pred, col):
        res = []
        for on_false, rev in ((-3.0, False), ("col", True)):
            d = nl.ndarray(x.shape, nl.float32)
            m = nl.ndarray((x.shape[0], 1), nl.float32)
            f = nl.load(col) if on_false == "col" else on_false
            call(dst=d, predicate=nl.load(pred), on_true=nl.load(x), on_false=f,
                 reduce_res=m, reduce_op=nl.maximum, reverse_pred=rev)
            o = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
            om = nl.ndarray((x.shape[0], 1), nl.float32, buffer=nl.shared_hbm)
            nl.store(o, d)
            nl.store(om, m)
            res += [o, om]
        return res

    a, am, b, bm = jit(kernel, chip=chip)(x, pred, col)
    ra = np.where(pred != 0, x, np.float32(-3.0))
    rb = np.where(pred == 0, x, np.broadcast_to(col, x.shape))
    np.testing.assert_array_equal(a, ra)
    np.testing.assert_array_equal(am[:, 0], ra.max(1))
    np.testing.assert_array_equal(b, rb)
    np.testing.assert_array_equal(bm[:, 0], rb.max(1))


# --- max8, iota, affine_select: already exposed; checked on every generation ---

@pytest.mark.parametrize("chip", CHIPS)
def test_max8_iota_affine_select_current_dialect(chip, rng):
    x = rng.standard_normal((64, 100)).astype(np.float32)

    @nki.jit(chip=chip)
    def kernel(x):
        t = nl.load(x)
        m = nl.ndarray((64, 8), nl.float32)
        nisa.max8(dst=m, src=t)
        io = nl.ndarray((64, 100), nl.int32)
        nisa.iota(dst=io, pattern=[[1, 100]], offset=3, channel_multiplier=100)
        sel = nl.ndarray((64, 100), nl.float32)
        nisa.affine_select(dst=sel, pattern=[[-1, 100]], offset=0, channel_multiplier=1,
                           on_true_tile=t, on_false_value=-5.0, cmp_op=nl.greater_equal)
        outs = []
        for v, dt in ((m, nl.float32), (io, nl.int32), (sel, nl.float32)):
            o = nl.ndarray(v.shape, dt, buffer=nl.shared_hbm)
            nl.store(o, v)
            outs.append(o)
        return outs

    m, io, sel = kernel(x)
    p, i = np.arange(64)[:, None], np.arange(100)[None, :]
    np.testing.assert_array_equal(m, -np.sort(-x, 1)[:, :8])
    np.testing.assert_array_equal(io, 3 + 100 * p + i)
    np.testing.assert_array_equal(sel, np.where(p - i >= 0, x, np.float32(-5)))


@pytest.mark.parametrize("chip", CHIPS)
def test_affine_select_of_a_psum_tile(chip, rng):
    """NKI takes a PSUM on_true_tile (nki-samples' flash attention backward selects its matmul
    result); GpSimd reads no PSUM, so it goes through SBUF (a VectorE copy) first. Both
    dialects; the values are the matmul's, masked."""
    w = rng.integers(-3, 4, (32, 64)).astype(np.float32)
    y = rng.integers(-3, 4, (32, 64)).astype(np.float32)

    @legacy.jit(chip=chip)
    def old(w, y):
        out = nl.ndarray((64, 64), nl.float32, buffer=nl.shared_hbm)
        ps = nl.ndarray((64, 64), nl.float32, buffer=nl.psum)
        ps[...] = lisa.nc_matmul(nl.load(w), nl.load(y))
        i_p, i_f = nl.mgrid[0:64, 0:64]
        nl.store(out, lisa.affine_select(i_p - i_f >= 0, ps, -9984.0))
        return out

    @nki.jit(chip=chip)
    def new(w, y):
        out = nl.ndarray((64, 64), nl.float32, buffer=nl.shared_hbm)
        ps = nl.ndarray((64, 64), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=nl.load(w), moving=nl.load(y))
        sel = nl.ndarray((64, 64), nl.float32)
        nisa.affine_select(dst=sel, pattern=[[-1, 64]], offset=0, channel_multiplier=1,
                           on_true_tile=ps, on_false_value=-9984.0, cmp_op=nl.greater_equal)
        nl.store(out, sel)
        return out

    p, i = np.arange(64)[:, None], np.arange(64)[None, :]
    ref = np.where(p - i >= 0, w.T @ y, np.float32(-9984))
    np.testing.assert_array_equal(old(w, y), ref)
    np.testing.assert_array_equal(new(w, y), ref)


@pytest.mark.parametrize("chip", CHIPS)
def test_nc_matmul_of_psum_operands(chip, rng):
    """TensorE reads SBUF only, but NKI takes a PSUM nc_matmul operand (nki-samples' flash
    attention backward multiplies an nc_transpose result): each goes through SBUF (a VectorE
    copy) first. Both dialects, stationary and moving; the values are the matmul's."""
    a = rng.integers(-3, 4, (64, 32)).astype(np.float32)
    c = rng.integers(-3, 4, (48, 32)).astype(np.float32)

    @legacy.jit(chip=chip)
    def old(a, c):
        out = nl.ndarray((64, 48), nl.float32, buffer=nl.shared_hbm)
        ps = nl.ndarray((64, 48), nl.float32, buffer=nl.psum)
        ps[...] = lisa.nc_matmul(lisa.nc_transpose(nl.load(a)), lisa.nc_transpose(nl.load(c)))
        nl.store(out, ps)
        return out

    @nki.jit(chip=chip)
    def new(a, c):
        out = nl.ndarray((64, 48), nl.float32, buffer=nl.shared_hbm)
        at = nl.ndarray((32, 64), nl.float32, buffer=nl.psum)
        ct = nl.ndarray((32, 48), nl.float32, buffer=nl.psum)
        nisa.nc_transpose(dst=at, data=nl.load(a))
        nisa.nc_transpose(dst=ct, data=nl.load(c))
        ps = nl.ndarray((64, 48), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=at, moving=ct)
        nl.store(out, ps)
        return out

    for kernel in (old, new):
        out, run = nki.run(kernel, a, c, chip=chip)
        np.testing.assert_array_equal(out, a @ c.T)
        # the two operands' copies to SBUF and the result's on its way to the store
        assert run.figures["engines"]["dve"]["by_opcode"]["tensor_copy"] == 3


def test_legacy_tensor_tensor_broadcasts_size_1_free_dims(rng):
    """nki-samples' double-row FP8 matmul scales [P, F] results by a [P, 1] tile with
    nisa.tensor_tensor: NKI takes it (its docs recommend tensor_scalar as faster); it used to
    fail the instruction's shape check. Still one tensor_tensor each, operand order kept."""
    x = rng.standard_normal((128, 64)).astype(np.float32)
    s = rng.standard_normal((128, 1)).astype(np.float32)
    x3 = rng.standard_normal((128, 4, 8)).astype(np.float32)
    s3 = rng.standard_normal((128, 1, 8)).astype(np.float32)

    @legacy.jit
    def kernel(x, s, x3, s3):
        out = nl.ndarray((2, 128, 64), nl.float32, buffer=nl.shared_hbm)
        out3 = nl.ndarray((128, 4, 8), nl.float32, buffer=nl.shared_hbm)
        t, c = nl.load(x), nl.load(s)
        nl.store(out[0], lisa.tensor_tensor(t, c, np.subtract))
        nl.store(out[1], lisa.tensor_tensor(c, t, np.subtract))
        nl.store(out3, lisa.tensor_tensor(nl.load(x3), nl.load(s3), np.multiply))
        return out, out3

    (out, out3), run = legacy.run(kernel, x, s, x3, s3)
    np.testing.assert_array_equal(out[0], x - s)
    np.testing.assert_array_equal(out[1], s - x)
    np.testing.assert_array_equal(out3, x3 * s3)
    dve = run.figures["engines"]["dve"]["by_opcode"]
    assert dve.get("tensor_tensor") == 3 and not dve.get("tensor_scalar")


@pytest.mark.parametrize("chip", CHIPS)
def test_iota_and_affine_select_take_any_pattern(chip, rng):
    """Patterns the GpSimd instructions' own walk (offset + cm p + running index) is not: a
    step 0 (the value repeats), dims in another order, a scale, mixed signs. One count in
    another order is one instruction over a permuted view; the others are built from
    several (docs/nki.md "Lowering")."""
    x = rng.standard_normal((32, 4, 6)).astype(np.float32)
    patterns = [[[0, 4], [1, 6]], [[1, 4], [4, 6]], [[12, 4], [2, 6]], [[1, 4], [-1, 6]],
                [[3, 4], [1, 6]]]

    @nki.jit(chip=chip)
    def kernel(x):
        t = nl.load(x)
        outs = []
        for pat in patterns:
            io = nl.ndarray((32, 4, 6), nl.int32)
            nisa.iota(dst=io, pattern=pat, offset=-5, channel_multiplier=3)
            sel = nl.ndarray((32, 4, 6), nl.float32)
            nisa.affine_select(dst=sel, pattern=pat, offset=-20, channel_multiplier=1,
                               on_true_tile=t, on_false_value=-7.0, cmp_op=nl.greater_equal)
            for v in (io, sel):
                o = nl.ndarray(v.shape, v.dtype, buffer=nl.shared_hbm)
                nl.store(o, v)
                outs.append(o)
        return outs

    outs = kernel(x)
    p, a, b = np.meshgrid(*map(np.arange, (32, 4, 6)), indexing="ij")
    for k, pat in enumerate(patterns):
        value = pat[0][0] * a + pat[1][0] * b
        np.testing.assert_array_equal(outs[2 * k], -5 + 3 * p + value, err_msg=str(pat))
        np.testing.assert_array_equal(outs[2 * k + 1],
                                      np.where(-20 + p + value >= 0, x, np.float32(-7)),
                                      err_msg=str(pat))


@pytest.mark.parametrize("chip", CHIPS)
def test_max8_iota_affine_select_legacy_dialect(chip, rng):
    x = rng.standard_normal((64, 100)).astype(np.float32)

    @legacy.jit(chip=chip)
    def kernel(x, m, io, sel):
        t = nl.load(x)
        nl.store(m, lisa.max8(src=t))
        i_p, i_f = nl.mgrid[0:64, 0:100]
        nl.store(io, lisa.iota(i_p * 100 + i_f + 3, dtype=nl.int32))
        nl.store(sel, lisa.affine_select(i_p - i_f >= 0, t, -5.0))

    m, io = np.zeros((64, 8), np.float32), np.zeros((64, 100), np.int32)
    sel = np.zeros_like(x)
    kernel(x, m, io, sel)
    p, i = np.arange(64)[:, None], np.arange(100)[None, :]
    np.testing.assert_array_equal(m, -np.sort(-x, 1)[:, :8])
    np.testing.assert_array_equal(io, 3 + 100 * p + i)
    np.testing.assert_array_equal(sel, np.where(p - i >= 0, x, np.float32(-5)))


# --- legacy ISA calls: an unknown keyword is an error naming it, never ignored ---

def test_legacy_isa_unknown_keyword_is_an_error_naming_it(rng):
    x = rng.standard_normal((8, 16)).astype(np.float32)

    @legacy.jit
    def misspelt(x, out):
        t = nl.load(x)
        nl.store(out, lisa.tensor_scalar(t, np.multiply, 2.0, reverse_0=True))

    with pytest.raises(nki.NkiError, match="nisa.tensor_scalar: unexpected keyword argument "
                                           "'reverse_0'.*reverse0") as e:
        misspelt(x, np.zeros_like(x))
    assert isinstance(e.value, TypeError)  # as Python's own, for code that catches those

    @legacy.jit
    def named(x, out):  # name= labels any NKI instruction: accepted
        nl.store(out, lisa.tensor_scalar(nl.load(x), np.multiply, 2.0, name="twice"))

    out = np.zeros_like(x)
    named(x, out)
    np.testing.assert_array_equal(out, 2 * x)

    @legacy.jit
    def missing(x):
        lisa.activation(data=nl.load(x))

    with pytest.raises(nki.NkiError, match="nisa.activation: .*'op'"):
        missing(x)


# --- nl.spmd_dim: a grid axis split over the physical cores ---

@pytest.mark.parametrize("chip", ["trn2", "trn3"])
def test_spmd_dim_splits_an_axis_into_blocks_per_core(chip):
    @nki.jit(chip=chip)
    def kernel(x, out):
        i, j = nl.program_id(0), nl.program_id(1)
        t = nl.load(x[i * 8:(i + 1) * 8, j * 4:(j + 1) * 4])
        value = float(100 * i + 10 * j + nl.num_programs(0))
        nl.store(out[i * 8:(i + 1) * 8, j * 4:(j + 1) * 4], nl.add(t, value))

    x = np.zeros((32, 8), np.float32)
    out = np.zeros_like(x)
    kernel[nl.spmd_dim(nl.nc(2), 2), 2](x, out)
    i, j = np.arange(32)[:, None] // 8, np.arange(8)[None, :] // 4
    np.testing.assert_array_equal(out, 100 * i + 10 * j + 4)
    # NKI: core 0 runs instances 0 and 1 of the axis, core 1 runs 2 and 3; the instances of
    # one step run together, one per core (listed by core).
    assert [pids for pids, _ in nki.last_run().groups] == [
        [(0, 0), (2, 0)], [(0, 1), (2, 1)], [(1, 0), (3, 0)], [(1, 1), (3, 1)]]


def test_spmd_dim_checks_its_dims():
    with pytest.raises(nki.NkiError, match="nl.spmd_dim: dim"):
        nl.spmd_dim(nl.nc(2), 0)
    with pytest.raises(nki.NkiError, match="at least one dim"):
        nl.spmd_dim()

    @nki.jit(chip="trn1")  # trn1 has no logical cores of two
    def kernel(x):
        pass

    with pytest.raises(nki.NkiError, match="logical core"):
        kernel[nl.spmd_dim(nl.nc(2), 2)](np.zeros((4, 4), np.float32))


# --- masks over several ranges ---

@pytest.mark.parametrize("chip", CHIPS)
def test_masks_joining_ranges_keep_a_box(chip, rng):
    x = rng.standard_normal((16, 32)).astype(np.float32)

    @legacy.jit(chip=chip)
    def kernel(x, out):
        i_p, i_f = nl.mgrid[0:16, 0:32]
        box = (i_p < 10) & (i_f < 20) & (i_f <= 25)
        t = nl.load(x[i_p, i_f], mask=box)
        nl.store(out[i_p, i_f], value=nl.multiply(t, 2.0, mask=box), mask=box)

    out = np.full_like(x, 7)
    kernel(x, out)
    ref = np.full_like(x, 7)
    ref[:10, :20] = 2 * x[:10, :20]
    np.testing.assert_array_equal(out, ref)


def _instructions(run):
    return sum(n for e in run.figures["engines"].values()
               for n in e.get("by_opcode", {}).values())


@pytest.mark.parametrize("flag", [bool, np.bool_])
def test_a_bool_mask_runs_or_skips_the_instruction(rng, flag):
    """NKI's mask is "an execution predicate known at compile-time, which informs the compiler
    to skip generating the instruction" (NKI API Masking): flash attention passes comparisons
    of loop indices (plain bools). True is no mask; False skips the instruction, so its
    destination keeps its values. Both used to be refused."""
    @legacy.jit
    def kernel(x, y, w):
        out = nl.ndarray((3, 16, 32), nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((16, 32), nl.float32)
        psum = nl.zeros((16, 32), nl.float32, buffer=nl.psum)
        skipped = nl.zeros((16, 32), nl.float32)
        wt = nl.load(w)
        for i in range(4):
            on = flag(i % 2 == 0)
            t = nl.load(x[i])
            acc[...] = nl.add(acc, t, mask=on)
            psum += lisa.nc_matmul(wt, nl.load(y[i]), mask=on)
            skipped[...] = lisa.tensor_scalar(t, np.multiply, 2.0, mask=flag(False))
        nl.store(out[0], value=acc)
        nl.store(out[1], value=nl.copy(psum))
        nl.store(out[2], value=skipped, mask=flag(True))
        nl.store(out[2], value=acc, mask=flag(False))  # skipped: out[2] keeps the zeros
        return out

    x = rng.standard_normal((4, 16, 32)).astype(np.float32)
    y = rng.integers(-3, 4, (4, 8, 32)).astype(np.float32)
    w = rng.integers(-3, 4, (8, 16)).astype(np.float32)
    out = kernel(x, y, w)
    np.testing.assert_array_equal(out[0], x[0] + x[2])
    np.testing.assert_array_equal(out[1], w.T @ (y[0] + y[2]))
    np.testing.assert_array_equal(out[2], 0)


@pytest.mark.parametrize("dialect", ["legacy language", "legacy isa"])
def test_a_mask_that_leaves_no_element_skips_the_instruction(rng, dialect):
    """A tail mask over tiles past the tensor's end (nki-samples' allocated RMSNorm-QKV with
    seqlen 128): the second tile keeps no row, so NKI generates none of its instructions;
    its index, all outside the tensor, is not resolved. It used to raise "mask= leaves no
    element"."""
    def kernel(a, tiles):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        for t in range(tiles):
            i_p, i_f = nl.mgrid[0:128, 0:32]
            live = t * 128 + i_p < a.shape[0]
            x = nl.load(a[t * 128 + i_p, i_f], mask=live)
            if dialect == "legacy isa":
                y = lisa.activation(op=nl.exp, data=x, mask=live)
            else:
                y = nl.exp(x, mask=live)
            nl.store(out[t * 128 + i_p, i_f], value=y, mask=live)
        return out

    a = rng.standard_normal((100, 32)).astype(np.float32)
    one, run1 = legacy.run(legacy.jit(kernel), a, 1)
    two, run2 = legacy.run(legacy.jit(kernel), a, 2)
    np.testing.assert_allclose(two, np.exp(a), rtol=2e-6)
    np.testing.assert_array_equal(two, one)
    assert _instructions(run2) == _instructions(run1)
