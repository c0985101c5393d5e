"""The legacy NKI dialect (neuronxcc.nki, NKI 0.1) on trnsim: ISA calls returning tiles,
nl.arange / nl.mgrid indices, mask=, nl.load / nl.store, psum += nisa.nc_matmul, the
nki.language math, reductions and operators, against numpy references."""

import ml_dtypes
import numpy as np
import pytest
from nki_helpers import ACT_REF, ALU_REF, POSITIVE_ONLY, ref32

from trnsim.nki import legacy as nki
from trnsim.nki.legacy import isa as nisa
from trnsim.nki.legacy import language as nl


def test_tutorial_add_kernel_with_arange_and_returned_output(rng):
    @nki.jit
    def add(a_input, b_input):
        c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
        ix, iy = nl.arange(128)[:, None], nl.arange(512)[None, :]
        a_tile = nl.load(a_input[ix, iy])
        b_tile = nl.load(b_input[ix, iy])
        nl.store(c_output[ix, iy], value=a_tile + b_tile)
        return c_output

    a, b = rng.standard_normal((2, 128, 512)).astype(np.float32)
    c = nki.simulate_kernel(add, a, b)
    np.testing.assert_array_equal(c, a + b)
    assert nki.last_run().latency_us > 0


def test_mgrid_offsets_and_mask_for_ragged_tiles(rng):
    @nki.jit
    def copy_ragged(t, result):
        for i in range(2):
            for j in range(2):
                i_p, i_f = nl.mgrid[0:128, 0:512]
                m = (i_p + 128 * i < 129) & (i_f + 512 * j < 513)
                tile = nl.load(t[i_p + 128 * i, i_f + 512 * j], mask=m)
                nl.store(result[i_p + 128 * i, i_f + 512 * j], value=tile, mask=m)

    a = rng.standard_normal((129, 513)).astype(np.float32)
    out = np.zeros_like(a)
    copy_ragged(a, out)
    np.testing.assert_array_equal(out, a)


def test_mgrid_flattened_free_index(rng):
    @nki.jit
    def k(x, out):
        i_p, i_f0, i_f1 = nl.mgrid[0:128, 0:8, 0:64]
        t = nl.load(x[i_p, i_f0 * 64 + i_f1])  # a [128, 8, 64] tile
        nl.store(out[i_p, i_f0 * 64 + i_f1], value=nl.exp(t))

    a = rng.uniform(-1, 1, (128, 512)).astype(np.float32)
    out = np.zeros_like(a)
    k(a, out)
    np.testing.assert_allclose(out, np.exp(a), rtol=2e-6)


def test_matmul_tutorial_psum_accumulation(rng):
    @nki.jit
    def matmul(lhsT, rhs):
        K, M = lhsT.shape
        N = rhs.shape[1]
        result = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        for m in nl.affine_range(M // 128):
            for n in nl.affine_range(N // 512):
                res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
                for k in nl.affine_range(K // 128):
                    lhsT_tile = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                    rhs_tile = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                    lhsT_tile[...] = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                    rhs_tile[...] = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                    res_psum += nisa.nc_matmul(lhsT_tile[...], rhs_tile[...])
                res_sb = nl.copy(res_psum, dtype=result.dtype)
                nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res_sb)
        return result

    a = rng.integers(-2, 3, (256, 256)).astype(ml_dtypes.bfloat16)
    b = rng.integers(-2, 3, (256, 1024)).astype(ml_dtypes.bfloat16)
    c = matmul(a, b)
    ref = a.astype(np.float32).T @ b.astype(np.float32)
    np.testing.assert_array_equal(c.astype(np.float32), ref)
    # The result went straight into the tiles: no copy instruction besides nl.copy's.
    assert nki.last_run().figures["engines"]["dve"]["by_opcode"].get("tensor_copy") == 4


@pytest.mark.parametrize("name", sorted(set(ACT_REF) - {"abs"}))
def test_language_activation_functions(name, rng):
    x = rng.uniform(-2, 2, (128, 32)).astype(np.float32)
    if name in POSITIVE_ONLY:
        x = np.abs(x) + 0.1
    fn = getattr(nl, name)

    @nki.jit
    def k(a, out):
        nl.store(out, value=fn(nl.load(a)))

    out = np.zeros_like(x)
    k(x, out)
    np.testing.assert_allclose(out, ref32(ACT_REF[name], x), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(ALU_REF))
def test_language_binary_ops(name, rng):
    x = rng.uniform(0.5, 2, (128, 32)).astype(np.float32)
    y = rng.uniform(0.5, 2, (128, 32)).astype(np.float32)
    y[:, :3] = x[:, :3]
    fn = getattr(nl, name)

    @nki.jit
    def k(a, b, out, out_s):
        ta, tb = nl.load(a), nl.load(b)
        nl.store(out, value=fn(ta, tb))
        nl.store(out_s, value=fn(ta, 1.5))

    out, out_s = np.zeros_like(x), np.zeros_like(x)
    k(x, y, out, out_s)
    tol = 2e-6 if name in ("divide", "power") else 0
    np.testing.assert_allclose(out, ref32(ALU_REF[name], x, y), rtol=tol)
    np.testing.assert_allclose(out_s, ref32(ALU_REF[name], x, np.full_like(x, 1.5)), rtol=tol)


def test_operators_methods_and_broadcasts(rng):
    x = rng.uniform(-2, 2, (128, 64)).astype(np.float32)
    row = rng.uniform(-1, 1, (128, 1)).astype(np.float32)

    @nki.jit
    def k(a, r, out):
        t, c = nl.load(a), nl.load(r)
        y = (t * 2.0 + 1.0) / (abs(t) + 1.0) - c.broadcast_to((128, 64))
        y = -y
        assert y.shape == (128, 64) and t.reshape((128, 8, 8)).shape == (128, 8, 8)
        nl.store(out, value=y.astype(nl.bfloat16).astype(nl.float32))

    out = np.zeros_like(x)
    k(x, row, out)
    f = np.float32
    want = -((x * f(2) + f(1)) / (np.abs(x) + f(1)) - row)
    np.testing.assert_array_equal(out, want.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_reductions_softmax_where_mean(rng):
    x = rng.uniform(-2, 2, (128, 64)).astype(np.float32)

    @nki.jit
    def k(a, s, m, mn, sm, w):
        t = nl.load(a)
        nl.store(s, value=nl.sum(t, axis=1, keepdims=True))
        nl.store(m, value=nl.max(t, axis=[1]))
        nl.store(mn, value=nl.mean(t, axis=1))
        nl.store(sm, value=nl.softmax(t, axis=1))
        nl.store(w, value=nl.where(t > 0, t, 0.0))

    s, m, mn = (np.zeros((128, 1), np.float32) for _ in range(3))
    sm, w = np.zeros_like(x), np.zeros_like(x)
    k(x, s, m, mn, sm, w)
    np.testing.assert_allclose(s[:, 0], x.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m[:, 0], x.max(1))
    np.testing.assert_allclose(mn[:, 0], x.mean(1), rtol=1e-5, atol=1e-6)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(w, np.where(x > 0, x, 0))


def test_isa_calls_return_tiles_with_dtype_and_mask(rng):
    x = rng.uniform(-2, 2, (128, 64)).astype(np.float32)

    @nki.jit
    def k(a, act, ts, tt, red, cp, tr):
        t = nl.load(a)
        nl.store(act, value=nisa.activation(op=nl.exp, data=t, scale=2.0))
        nl.store(ts, value=nisa.tensor_scalar(t, np.multiply, 3.0, op1=np.add, operand1=1.0))
        nl.store(tt, value=nisa.tensor_tensor(t, t, op=nl.add, dtype=nl.bfloat16))
        nl.store(red, value=nisa.tensor_reduce(np.max, t, axis=(1,), keepdims=True))
        i_p, i_f = nl.mgrid[0:128, 0:64]
        nl.store(cp[i_p, i_f], value=nisa.tensor_copy(t[i_p, i_f], mask=(i_f < 32)),
                 mask=(i_f < 32))
        nl.store(tr, value=nisa.nc_transpose(t[0:64, 0:64]))

    act, ts, cp = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    tt = np.zeros((128, 64), ml_dtypes.bfloat16)
    red, tr = np.zeros((128, 1), np.float32), np.zeros((64, 64), np.float32)
    k(x, act, ts, tt, red, cp, tr)
    np.testing.assert_allclose(act, np.exp(2 * x.astype(np.float64)).astype(np.float32),
                               rtol=2e-6)
    np.testing.assert_array_equal(ts, x * np.float32(3) + np.float32(1))
    np.testing.assert_array_equal(tt, (x + x).astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(red[:, 0], x.max(1))
    np.testing.assert_array_equal(cp[:, :32], x[:, :32])
    assert (cp[:, 32:] == 0).all()
    np.testing.assert_array_equal(tr, x[0:64, 0:64].T)


def test_iota_and_affine_select_from_index_expressions(rng):
    x = rng.uniform(-1, 1, (128, 128)).astype(np.float32)

    @nki.jit
    def k(a, io, causal):
        i_p, i_f = nl.mgrid[0:128, 0:128]
        nl.store(io, value=nisa.iota(i_p * 3 + i_f, dtype=nl.float32))
        t = nl.load(a)
        nl.store(causal, value=nisa.affine_select(i_p - i_f >= 0, t, -1.0))

    io, causal = np.zeros_like(x), np.zeros_like(x)
    k(x, io, causal)
    p, f = np.arange(128)[:, None], np.arange(128)[None, :]
    np.testing.assert_array_equal(io, p * 3 + f)
    np.testing.assert_array_equal(causal, np.where(p >= f, x, -1))


def test_matmul_transpose_and_load_transpose2d(rng):
    x = rng.integers(-2, 3, (128, 128)).astype(np.float32)
    y = rng.integers(-2, 3, (128, 256)).astype(np.float32)

    @nki.jit
    def k(a, b, mm, mmt, lt):
        ta, tb = nl.load(a), nl.load(b)
        nl.store(mm, value=nl.copy(nl.matmul(ta, tb)))
        nl.store(mmt, value=nl.copy(nl.matmul(ta, tb, transpose_x=True)))
        nl.store(lt, value=nl.load_transpose2d(a))

    mm, mmt = np.zeros((128, 256), np.float32), np.zeros((128, 256), np.float32)
    lt = np.zeros((128, 128), np.float32)
    nki.jit(k, chip="trn2")(x, y, mm, mmt, lt)
    np.testing.assert_array_equal(mm, x @ y)
    np.testing.assert_array_equal(mmt, x.T @ y)
    np.testing.assert_array_equal(lt, x.T)


def test_block_dimensions_are_tiles_per_block(rng):
    x = rng.standard_normal((2, 3, 128, 64)).astype(np.float32)

    @nki.jit
    def blocked(a, out):
        acc = nl.zeros((2, nl.par_dim(128), 64), nl.float32)
        assert acc.shape == (2, 128, 64)
        for i in range(2):
            for j in range(3):
                acc[i, 0:128, 0:64] += nl.load(a[i, j])
        for i in range(2):
            nl.store(out[i], acc[i])
        with pytest.raises(NotImplementedError, match="block dims"):
            acc[nl.arange(2)[:, None]]

    out = np.zeros((2, 128, 64), np.float32)
    blocked(x, out)
    np.testing.assert_allclose(out, x.sum(1), rtol=1e-6)


def test_an_int_on_a_tiles_last_free_dim_keeps_it(rng):
    """NKI 0.1 tiles have a partition dim and at least one free dim: t[:, i] of a [P, n] tile
    is [P, 1] (NKI's errors page offers tmp[0:64, 0] as a 2-dim tile; flash attention hands
    l_buffer[:, i] to a function that writes l[:, 0]); an int on another free dim drops it."""
    x = rng.standard_normal((128, 32)).astype(np.float32)
    shapes = []

    def keep_max(col, t):  # flash attention's pattern: writes its [P, 1] argument's column 0
        col[:, 0] = nl.max(t, axis=1, keepdims=True)

    @nki.jit
    def k(a):
        out = nl.ndarray((128, 4), nl.float32, buffer=nl.shared_hbm)
        buf = nl.zeros((128, 4), nl.float32)
        t3 = nl.load(a).reshape((128, 4, 8))
        shapes.extend([buf[:, 1].shape, buf[..., -1].shape, t3[:, 2, :].shape,
                       t3[:, 2, 5].shape])
        for i in range(4):
            keep_max(buf[:, i], t3[:, i, :])
        nl.store(out, buf)
        return out

    out, _ = nki.run(k, x)
    assert shapes == [(128, 1), (128, 1), (128, 8), (128, 1)]
    np.testing.assert_array_equal(out, x.reshape(128, 4, 8).max(axis=2))


def test_left_out_names_raise():
    for name in ("all_reduce", "rms_norm"):
        with pytest.raises(NotImplementedError, match=f"nl.{name}"):
            getattr(nl, name)(None)


def test_ragged_rows_masks_on_whole_tiles_and_partition_broadcast(rng):
    """The RMSNorm / LayerNorm tutorials' pattern: rows not a multiple of 128, masked loads
    that keep the full tile shape, masks on whole tiles, a [1, N] row broadcast to every
    partition, bn_stats over masked chunks."""
    rows, cols = 300, 700

    @nki.jit
    def norm(a, g, eps):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i_p, i_w, i_f = nl.mgrid[0:128, 0:1, 0:cols]
        g_row = nl.load(g.reshape((1, cols))[i_w, i_f])
        g_all = g_row.broadcast_to((128, cols))
        for t in nl.affine_range((rows + 127) // 128):
            live = t * 128 + i_p < rows
            x = nl.load(a[t * 128 + i_p, i_f], mask=live)
            assert x.shape == (128, cols)
            i_c, i_s = nl.mgrid[0:512, 0:6]
            stats = nl.ndarray((128, 12), dtype=np.float32)
            for c in range(2):
                stats[i_p, c * 6 + i_s] = nisa.bn_stats(x[i_p, c * 512 + i_c],
                                                       mask=(c * 512 + i_c < cols))
            mv = nisa.bn_aggr(stats[i_p, nl.arange(12)[None, :]])
            rstd = nl.rsqrt(mv[i_p, 1] + eps)
            y = nisa.tensor_scalar(data=x, op0=np.subtract, operand0=mv[i_p, 0],
                                   op1=np.multiply, operand1=rstd)
            y[...] = nl.multiply(y, g_all, mask=live)
            nl.store(out[t * 128 + i_p, i_f], value=y, mask=live)
        return out

    a = rng.standard_normal((rows, cols)).astype(np.float32)
    g = rng.standard_normal(cols).astype(np.float32)
    out = norm(a, g, 1e-5)
    ref = (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5) * g
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_shared_constant_is_written_before_the_run(rng):
    table = rng.standard_normal((128, 16)).astype(np.float32)

    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        c = nl.shared_constant(table, dtype=nl.bfloat16)
        nl.store(out, value=nl.load(x) * nl.load(c))
        return out

    x = rng.standard_normal((128, 16)).astype(np.float32)
    want = x * table.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(k[2](x), want)  # every instance sees it
