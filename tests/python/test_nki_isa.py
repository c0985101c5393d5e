"""The current NKI dialect (nki.isa, dst first) on trnsim: every supported instruction
against a numpy reference, with errors and left-out names."""

import ml_dtypes
import numpy as np
import pytest
from nki_helpers import ACT_REF, ALU_REF, POSITIVE_ONLY, ref32

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl

P, F = 128, 64


def loaded(x, dtype=None):
    t = nl.ndarray(x.shape, dtype or x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t


def stored(out, t):
    nisa.dma_copy(dst=out, src=t)


@pytest.fixture
def x(rng):
    return rng.uniform(-2, 2, (P, F)).astype(np.float32)


@pytest.mark.parametrize("name", sorted(ACT_REF))
def test_activation_functions(name, x):
    xv = np.abs(x) + 0.1 if name in POSITIVE_ONLY else x
    fn = getattr(nl, name)

    @nki.jit
    def k(a, out):
        t = loaded(a)
        nisa.activation(dst=t, op=fn, data=t)
        stored(out, t)

    out = np.zeros_like(xv)
    k(xv, out)
    np.testing.assert_allclose(out, ref32(ACT_REF[name], xv), rtol=2e-6, atol=1e-7)


def test_activation_scale_bias_column_and_reduce(x, rng):
    bias = rng.uniform(-1, 1, (P, 1)).astype(np.float32)

    @nki.jit
    def k(a, b, out, red):
        t, bt = loaded(a), loaded(b)
        r = nl.ndarray((P, 1), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=t, op=np.exp, data=t, bias=bt, scale=0.5, reduce_op=nl.add,
                        reduce_res=r)
        stored(out, t)
        stored(red, r)

    out, red = np.zeros_like(x), np.zeros((P, 1), np.float32)
    k(x, bias, out, red)
    want = np.exp(x.astype(np.float64) * 0.5 + bias)
    np.testing.assert_allclose(out, want.astype(np.float32), rtol=2e-6)
    np.testing.assert_allclose(red[:, 0], want.sum(1), rtol=1e-5)


@pytest.mark.parametrize("name", sorted(ALU_REF))
def test_tensor_tensor_ops(name, x, rng):
    y = rng.uniform(0.5, 2, (P, F)).astype(np.float32) if name == "power" else \
        rng.uniform(-2, 2, (P, F)).astype(np.float32)
    xv = np.abs(x) + 0.5 if name == "power" else x
    y[:, :4] = xv[:, :4]  # some equal pairs for the comparisons
    op = getattr(nl, name)

    @nki.jit
    def k(a, b, out):
        ta, tb = loaded(a), loaded(b)
        nisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=op)
        stored(out, ta)

    out = np.zeros_like(xv)
    k(xv, y, out)
    tol = 2e-6 if name in ("divide", "power") else 0
    np.testing.assert_allclose(out, ref32(ALU_REF[name], xv, y), rtol=tol)


def test_tensor_tensor_on_gpsimd_with_numpy_ops(x):
    @nki.jit
    def k(a, out):
        t = loaded(a)
        nisa.tensor_tensor(dst=t, data1=t, data2=t, op=np.multiply, engine=nisa.gpsimd_engine)
        stored(out, t)

    out = np.zeros_like(x)
    k(x, out)
    np.testing.assert_array_equal(out, x * x)


def test_tensor_scalar_two_ops_reverse_and_columns(x, rng):
    col = rng.uniform(1, 2, (P, 1)).astype(np.float32)

    @nki.jit
    def k(a, c, out1, out2):
        t, ct = loaded(a), loaded(c)
        o = nl.ndarray((P, F), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o, data=t, op0=nl.subtract, operand0=ct, reverse0=True,
                           op1=nl.multiply, operand1=3.0)
        stored(out1, o)
        nisa.tensor_scalar(dst=o, data=t, op0=np.maximum, operand0=0.0)
        stored(out2, o)

    o1, o2 = np.zeros_like(x), np.zeros_like(x)
    k(x, col, o1, o2)
    np.testing.assert_array_equal(o1, (col - x) * np.float32(3))
    np.testing.assert_array_equal(o2, np.maximum(x, 0))


def test_scalar_tensor_tensor_and_scan_and_tensor_scalar_reduce(rng):
    a = rng.integers(-3, 4, (P, F)).astype(np.float32)
    b = rng.integers(-3, 4, (P, F)).astype(np.float32)

    @nki.jit
    def k(x, y, stt, scan, tsr, red):
        tx, ty = loaded(x), loaded(y)
        o = nl.ndarray((P, F), nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=o, data=tx, op0=nl.multiply, operand0=2.0, op1=nl.add,
                                  operand1=ty)
        stored(stt, o)
        nisa.tensor_tensor_scan(dst=o, data0=tx, data1=ty, initial=1.0, op0=nl.multiply,
                                op1=nl.add)
        stored(scan, o)
        r = nl.ndarray((P, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(dst=o, data=tx, op0=nl.add, operand0=1.0, reduce_op=nl.max,
                                  reduce_res=r)
        stored(tsr, o)
        stored(red, r)

    outs = [np.zeros((P, F), np.float32) for _ in range(3)] + [np.zeros((P, 1), np.float32)]
    k(a, b, *outs)
    np.testing.assert_array_equal(outs[0], a * 2 + b)
    want = np.zeros_like(a)
    prev = np.ones(P, np.float32)
    for i in range(F):
        prev = a[:, i] * prev + b[:, i]
        want[:, i] = prev
    np.testing.assert_array_equal(outs[1], want)
    np.testing.assert_array_equal(outs[2], a + 1)
    np.testing.assert_array_equal(outs[3][:, 0], (a + 1).max(1))


@pytest.mark.parametrize("op,ref", [(nl.add, np.sum), (nl.max, np.max), (nl.min, np.min),
                                    (nl.multiply, np.prod)])
def test_tensor_reduce_and_partition_reduce(op, ref, rng):
    a = rng.integers(-2, 3, (P, 4, 8)).astype(np.float32)

    @nki.jit
    def k(x, r1, r2, pr):
        t = loaded(x)
        o1 = nl.ndarray((P, 4), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=o1, op=op, data=t, axis=2)
        stored(r1, o1)
        o2 = nl.ndarray((P, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=o2, op=op, data=t, axis=(1, 2), negate=True)
        stored(r2, o2)
        o3 = nl.ndarray((1, 4, 8), nl.float32, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(dst=o3, op=op, data=t)
        stored(pr, o3)

    r1, r2, pr = (np.zeros(s, np.float32) for s in ((P, 4), (P, 1), (1, 4, 8)))
    k(a, r1, r2, pr)
    np.testing.assert_array_equal(r1, ref(a, axis=2))
    np.testing.assert_array_equal(r2[:, 0], -ref(a.reshape(P, -1), axis=1))
    np.testing.assert_array_equal(pr[0], ref(a, axis=0))


def test_matmul_accumulates_and_transposes(rng):
    a = rng.integers(-2, 3, (256, 128)).astype(ml_dtypes.bfloat16)  # [K, M]
    b = rng.integers(-2, 3, (256, 512)).astype(ml_dtypes.bfloat16)  # [K, N]

    @nki.jit
    def k(lhsT, rhs, out, tr):
        ps = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
        for kt in range(2):
            nisa.nc_matmul(ps, loaded(lhsT[kt * 128:(kt + 1) * 128]),
                           loaded(rhs[kt * 128:(kt + 1) * 128]))
        o = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=ps)
        stored(out, o)
        tp = nl.ndarray((128, 128), nl.float32, buffer=nl.psum)
        src = loaded(lhsT[0:128], nl.float32)
        nisa.nc_transpose(dst=tp, data=src)
        ts = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=ts, src=tp, engine=nisa.scalar_engine)
        stored(tr, ts)

    out, tr = np.zeros((128, 512), np.float32), np.zeros((128, 128), np.float32)
    k(a, b, out, tr)
    np.testing.assert_array_equal(out, a.astype(np.float32).T @ b.astype(np.float32))
    np.testing.assert_array_equal(tr, a[0:128].astype(np.float32).T)


def test_matmul_accumulate_false_starts_over(rng):
    a = rng.integers(-2, 3, (128, 128)).astype(np.float32)

    @nki.jit
    def k(x, out):
        t = loaded(x)
        ps = nl.ndarray((128, 128), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(ps, t, t)
        nisa.nc_matmul(ps, t, t, accumulate=True)
        nisa.nc_matmul(ps, t, t, accumulate=False)
        o = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=ps)
        stored(out, o)

    out = np.zeros((128, 128), np.float32)
    k(a, out)
    np.testing.assert_array_equal(out, a.T @ a)


def test_iota_affine_select_memset_select_and_identity(rng):
    a = rng.uniform(-1, 1, (P, F)).astype(np.float32)

    @nki.jit
    def k(x, io, io_rev, masked, sel, ident):
        t = loaded(x)
        o = nl.ndarray((P, F), nl.float32, buffer=nl.sbuf)
        nisa.iota(dst=o, pattern=[[1, F]], offset=5, channel_multiplier=2)
        stored(io, o)
        nisa.iota(dst=o, pattern=[[-1, F]], offset=0, channel_multiplier=1)
        stored(io_rev, o)
        nisa.affine_select(dst=o, pattern=[[-1, F]], offset=0, channel_multiplier=1,
                           on_true_tile=t, on_false_value=-9.0, cmp_op=nl.greater_equal)
        stored(masked, o)
        z = nl.zeros((P, F), nl.float32)
        pred = nl.ndarray((P, F), nl.float32)
        nisa.tensor_scalar(dst=pred, data=t, op0=nl.greater, operand0=0.0)
        nisa.select(o, pred, t, z)
        stored(sel, o)
        stored(ident, nl.shared_identity_matrix(P, nl.float32))

    io, io_rev, masked, sel = (np.zeros((P, F), np.float32) for _ in range(4))
    ident = np.zeros((P, P), np.float32)
    k(a, io, io_rev, masked, sel, ident)
    p, i = np.arange(P)[:, None], np.arange(F)[None, :]
    np.testing.assert_array_equal(io, 5 + 2 * p + i)
    np.testing.assert_array_equal(io_rev, p - i)
    np.testing.assert_array_equal(masked, np.where(p - i >= 0, a, -9))
    np.testing.assert_array_equal(sel, np.where(a > 0, a, 0))
    np.testing.assert_array_equal(ident, np.eye(P))


def test_bn_stats_bn_aggr_reciprocal_max8(rng):
    a = rng.uniform(-1, 1, (P, 256)).astype(np.float32)

    @nki.jit
    def k(x, mv, rec, top):
        t = loaded(x)
        st = nl.ndarray((P, 6), nl.float32)
        nisa.bn_stats(dst=st, data=t)
        o = nl.ndarray((P, 2), nl.float32)
        nisa.bn_aggr(dst=o, data=st)
        stored(mv, o)
        r = nl.ndarray((P, 256), nl.float32)
        nisa.reciprocal(dst=r, data=t)
        stored(rec, r)
        m = nl.ndarray((P, 8), nl.float32)
        nisa.max8(dst=m, src=t)
        stored(top, m)

    mv, rec, top = np.zeros((P, 2), np.float32), np.zeros_like(a), np.zeros((P, 8), np.float32)
    k(a, mv, rec, top)
    np.testing.assert_allclose(mv[:, 0], a.mean(1), atol=1e-6)
    np.testing.assert_allclose(mv[:, 1], a.var(1), rtol=1e-4)
    np.testing.assert_allclose(rec, 1 / a, rtol=2e-6)
    np.testing.assert_array_equal(top, -np.sort(-a, 1)[:, :8])


def test_dma_transpose_and_access_patterns(rng):
    a = rng.uniform(-1, 1, (64, 32)).astype(np.float32)

    @nki.jit
    def k(x, t_out, ap_out):
        t = nl.ndarray((32, 64), nl.float32)
        nisa.dma_copy(dst=t, src=x.ap([[1, 32], [32, 64]]))  # x.T by an explicit pattern
        stored(t_out, t)
        u = nl.ndarray((64, 32), nl.float32)
        nisa.dma_copy(dst=u, src=x)
        v = nl.ndarray((64, 16), nl.float32)
        nisa.tensor_copy(dst=v, src=u.ap([[32, 64], [2, 16]], offset=1))  # odd columns
        stored(ap_out, v)

    t_out, ap_out = np.zeros((32, 64), np.float32), np.zeros((64, 16), np.float32)
    k(a, t_out, ap_out)
    np.testing.assert_array_equal(t_out, a.T)
    np.testing.assert_array_equal(ap_out, a[:, 1::2])


def test_dma_transpose_instruction_on_trn2(rng):
    a = rng.uniform(-1, 1, (64, 128)).astype(ml_dtypes.bfloat16)

    @nki.jit
    def k(x, out):
        t = nl.ndarray((128, 64), nl.bfloat16)
        nisa.dma_transpose(dst=t, src=x)
        stored(out, t)

    out = np.zeros((128, 64), ml_dtypes.bfloat16)
    nki.simulate(k, a, out, chip="trn2")
    np.testing.assert_array_equal(out, a.T)


def test_uninitialised_tiles_read_nan():
    @nki.jit
    def k(out):
        t = nl.ndarray((P, F), nl.float32)
        stored(out, t)

    out = np.zeros((P, F), np.float32)
    k(out)
    assert np.isnan(out).all()


def test_limits_raise_like_nki():
    @nki.jit
    def too_many_partitions(out):
        nl.ndarray((129, 4), nl.float32)

    with pytest.raises(ValueError, match="129 partitions"):
        too_many_partitions(np.zeros(1, np.float32))

    @nki.jit
    def too_big(out):
        nl.ndarray((128, 1 << 20), nl.float32)

    with pytest.raises(ValueError, match="bytes"):
        too_big(np.zeros(1, np.float32))

    @nki.jit
    def psum_matmul_too_wide(a, out):
        t = loaded(a)
        ps = nl.ndarray((128, 1024), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(ps, t[:, 0:128], t)

    with pytest.raises(ValueError, match="matmul"):
        psum_matmul_too_wide(np.zeros((128, 1024), np.float32), np.zeros(1, np.float32))


@pytest.mark.parametrize("chip", ["trn1", "trn2", "trn3"])
def test_dma_compute_sums_in_fp32_and_rounds_once(chip, rng):
    # dst = srcs[0] + srcs[1] + srcs[2] in float32, cast to dst's bf16 once (NKI API reference).
    a, b, c = (rng.standard_normal((64, 96)).astype(np.float32) for _ in range(3))

    @nki.jit(chip=chip)
    def kernel(a, b, c):
        sb = nl.load(b)
        out = nl.ndarray((64, 96), nl.bfloat16, buffer=nl.shared_hbm)
        nisa.dma_compute(out, [a, sb, c], nl.add)
        return out

    want = ((a + b) + c).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(kernel(a, b, c), want)


def test_dma_compute_refuses_what_the_hardware_does_not_do(rng):
    a = rng.standard_normal((8, 8)).astype(np.float32)

    @nki.jit
    def scaled(a):
        out = nl.ndarray((8, 8), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_compute(out, [a, a], [1.0, 2.0], nl.add)
        return out

    with pytest.raises(NotImplementedError, match="scales"):
        scaled(a)

    @nki.jit
    def maximum(a):
        out = nl.ndarray((8, 8), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_compute(out, [a, a], reduce_op=nl.maximum)
        return out

    with pytest.raises(NotImplementedError, match="reduce_op"):
        maximum(a)


def test_tensor_view_methods(rng):
    a = rng.standard_normal((128, 4, 16)).astype(np.float32)

    @nki.jit
    def k(x, perm, sl, sel, flat):
        t = loaded(x)
        assert t.strides == (64, 16, 1) and t.is_contiguous()
        assert t.expand_dim(1).shape == (128, 1, 4, 16)
        assert t.expand_dim(1).squeeze_dim(1).shape == (128, 4, 16)
        assert t.get_pattern() == [[64, 128], [16, 4], [1, 16]]
        p = t.permute(0, 2, 1)
        assert p.shape == (128, 16, 4) and not p.is_contiguous()
        o = nl.ndarray((128, 16, 4), nl.float32)
        nisa.tensor_copy(dst=o, src=p)
        stored(perm, o)
        stored(sl, t.slice(2, 2, 10, 2))
        stored(sel, t.select(1, 3))
        stored(flat, t.flatten_dims(1, 2))

    perm, sl = np.zeros((128, 16, 4), np.float32), np.zeros((128, 4, 4), np.float32)
    sel, flat = np.zeros((128, 16), np.float32), np.zeros((128, 64), np.float32)
    k(a, perm, sl, sel, flat)
    np.testing.assert_array_equal(perm, a.transpose(0, 2, 1))
    np.testing.assert_array_equal(sl, a[:, :, 2:10:2])
    np.testing.assert_array_equal(sel, a[:, 3])
    np.testing.assert_array_equal(flat, a.reshape(128, 64))


def test_reshape_dim_and_rearrange_are_views(rng):
    a = rng.standard_normal((8, 6, 8)).astype(np.float32)

    @nki.jit
    def k(x, split, arranged, tile):
        nisa.dma_copy(dst=split, src=x.reshape_dim(0, (2, -1))[1])  # HBM: dim 0 as (2, 4)
        nisa.dma_copy(dst=arranged, src=x.rearrange("(g n) a b -> n g (a b)", g=2))
        t = nl.ndarray((8, 6, 8), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=tile, src=t.reshape_dim(2, (4, 2)).rearrange("p a b c -> p c a b"))

    split = np.zeros((4, 6, 8), np.float32)
    arranged = np.zeros((4, 2, 48), np.float32)
    tile = np.zeros((8, 2, 6, 4), np.float32)
    k(a, split, arranged, tile)
    np.testing.assert_array_equal(split, a.reshape(2, 4, 6, 8)[1])
    np.testing.assert_array_equal(arranged, a.reshape(2, 4, 48).transpose(1, 0, 2))
    np.testing.assert_array_equal(tile, a.reshape(8, 6, 4, 2).transpose(0, 3, 1, 2))


@pytest.mark.parametrize("call, match", [
    (lambda t: t.reshape_dim(1, (3, -1)), "3 does not divide"),
    (lambda t: t.reshape_dim(0, (2, 64)), "partition dim"),
    (lambda t: t.rearrange("p a -> a p"), "partition dim"),
    (lambda t: t.rearrange("p (a b) -> p b a", a=2), None),  # a strided view: fine
    (lambda t: t.rearrange("p (a b) -> p (b a)", a=2), "not one strided dim"),
    (lambda t: t.rearrange("p ... -> p", a=2), "axis names"),
])
def test_reshape_dim_and_rearrange_errors(call, match):
    @nki.jit
    def k(out):
        call(nl.ndarray((128, 8), nl.float32, buffer=nl.sbuf))

    if match is None:
        k(np.zeros(1, np.float32))
        return
    with pytest.raises(nki.NkiError, match=match):
        k(np.zeros(1, np.float32))


@pytest.mark.parametrize("name", ["vector_select", "indirect"])
def test_left_out_tensor_methods_raise(name):
    @nki.jit
    def k(out):
        getattr(nl.ndarray((128, 8), nl.float32), name)(0)

    with pytest.raises(NotImplementedError, match=f"NkiTensor.{name}"):
        k(np.zeros(1, np.float32))


def test_exponential_on_trn3_and_its_absence_before(rng):
    a = rng.uniform(-2, 2, (P, F)).astype(np.float32)
    m = a.max(1, keepdims=True)

    @nki.jit
    def k(x, mx, out, sums):
        t, mt = loaded(x), loaded(mx)
        s = nl.ndarray((P, 1), nl.float32)
        nisa.exponential(dst=t, src=t, max_value=mt, reduce_res=s)
        stored(out, t)
        stored(sums, s)

    out, sums = np.zeros_like(a), np.zeros((P, 1), np.float32)
    nki.simulate(k, a, m, out, sums, chip="trn3")
    want = np.exp((a - m).astype(np.float64)).astype(np.float32)  # fp32 subtract, then exp
    np.testing.assert_array_equal(out, want)
    np.testing.assert_allclose(sums[:, 0], want.sum(1), rtol=1e-6)
    with pytest.raises(ValueError, match="exponential"):
        nki.simulate(k, a, m, out, sums, chip="trn2")


def test_language_wrappers_in_the_current_dialect(rng):
    """nl.load / nl.store / nl.matmul / nl.transpose / nl.max / nl.exp / nl.reciprocal next to
    dst-first ISA calls, as the NKI attention tutorial's first kernel mixes them."""
    q, k, v = (rng.standard_normal((128, 128)).astype(np.float32) * 0.2 for _ in range(3))

    @nki.jit
    def attention(q, k, v):
        out = nl.ndarray((128, 128), dtype=q.dtype, buffer=nl.shared_hbm)
        qs, ks, vs = nl.load(q), nl.load(k), nl.load(v)
        s = nl.ndarray((128, 128), nl.float32)
        nisa.tensor_copy(dst=s, src=nl.matmul(x=qs, y=ks, transpose_x=True))
        e = nl.ndarray((128, 128), nl.float32)
        nisa.tensor_scalar(dst=e, data=s, op0=nl.subtract, operand0=nl.max(s, axis=1, keepdims=True))
        e = nl.exp(e)
        p = nl.ndarray((128, 128), nl.float32)
        nisa.tensor_scalar(dst=p, data=e, op0=nl.multiply,
                           operand0=nl.reciprocal(nl.sum(e, axis=1, keepdims=True)))
        pt, vt = nl.copy(nl.transpose(p)), nl.copy(nl.transpose(vs))
        nl.store(dst=out, value=nl.copy(nl.matmul(pt, vt, transpose_x=True)))
        return out

    s = q.T.astype(np.float64) @ k
    p = np.exp(s - s.max(1, keepdims=True))
    want = (p / p.sum(1, keepdims=True)) @ v.T
    np.testing.assert_allclose(attention(q, k, v), want, atol=1e-6)
