"""NKI's MX calls on trn3 against a numpy reference written here: nisa.quantize_mx (bf16 to
packed MXFP8 data and E8M0 scales, blocks of 8 partitions x 4 elements, the scale twice the OCP
one, as the NKI docs say) and nisa.nc_matmul_mx (the packed data dequantised by their scales,
the scales of data partition p in partition 32 (p // 32) + (p % 32) // 8); the packed dtypes
(nl.float8_e4m3fn_x4, ...) as tiles, HBM outputs and views of kernel arguments. On trn1 / trn2
both calls raise saying the core lacks them; bad shapes and dtypes are errors naming them.

The reference rounds with ml_dtypes (RNE) and takes each block's scale exponent from frexp:
it shares no code with trnsim's numerics (trnsim.numerics.quantize_mx is the core's own)."""

import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki.legacy import isa as lisa

E4M3, E5M2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
# The packed dtype and the exponent of the largest normal number (OCP MX's emax_elem).
ELEM = {E4M3: (nl.float8_e4m3fn_x4, 8), E5M2: (nl.float8_e5m2_x4, 15)}


def ref_quantize(x, elem):
    """(elements [P, F] of dtype `elem`, scale codes [P / 8, F / 4] uint8) of bf16 x [P, F]:
    per block of 8 partitions x 4 elements, X = 2^(floor(log2 amax) - emax + 1), twice OCP's
    2^(floor(log2 amax) - emax) (the NKI docs: room to round the largest value unsaturated);
    an all-zero block takes the smallest scale, 2^-127."""
    x = x.astype(np.float32)
    p, f = x.shape
    blocks = x.reshape(p // 8, 8, f // 4, 4)
    amax = np.abs(blocks).max(axis=(1, 3))
    _, e = np.frexp(amax)  # amax = m 2^e, m in [0.5, 1): floor(log2 amax) = e - 1
    exp = np.where(amax == 0, -127, np.clip(e - 1 - ELEM[elem][1] + 1, -127, 127))
    q = (blocks / np.exp2(exp)[:, None, :, None]).astype(elem)
    return q.reshape(p, f), (exp + 127).astype(np.uint8)


def dequantized(q, s):
    """[P, F] float64 values of elements q scaled by their blocks' codes s [P / 8, F / 4]."""
    return q.astype(np.float64) * np.exp2(s.astype(np.float64) - 127).repeat(8, 0).repeat(4, 1)


def ref_matmul(a, b):
    """c[m, n] = sum over partition p and element j of a[p, 4m + j] b[p, 4n + j] (the K index
    of a packed element's j-th value is the same in both operands), and the sum of |terms|."""
    p = a.shape[0]
    a3, b3 = a.reshape(p, -1, 4), b.reshape(p, -1, 4)
    return (np.einsum("pmj,pnj->mn", a3, b3),
            np.einsum("pmj,pnj->mn", np.abs(a3), np.abs(b3)))


def check_product(got, a, b):
    want, size = ref_matmul(a, b)
    # fp32 products of the dequantised values are exact; the sum rounds at each of 4P steps.
    assert np.all(np.abs(got - want) <= 2.0 ** -20 * size), np.max(np.abs(got - want))


def scale_rows(p):
    """The partition of each block's scales: 32 (p0 // 32) + (p0 % 32) // 8 for its first
    data partition p0 = 8 b."""
    return np.array([32 * (8 * b // 32) + (8 * b % 32) // 8 for b in range(p // 8)])


def mx_input(rng, p, f):
    """bf16 [P, F] whose 8 x 4 blocks span magnitudes 2^-20 .. 2^20, with some exact zeros
    and one all-zero block."""
    x = rng.standard_normal((p // 8, 8, f // 4, 4)) * np.exp2(
        rng.integers(-20, 21, (p // 8, 1, f // 4, 1)))
    x = x.reshape(p, f)
    x[rng.random((p, f)) < 0.05] = 0
    x[8:16, 4:8] = 0
    return x.astype(ml_dtypes.bfloat16)


@nki.jit(chip="trn3")
def quantize_matmul(a, b, pdt_a, pdt_b, scale_dt):
    """quantize_mx of a [P, 4M] and b [P, 4N], then nc_matmul_mx: c [M, N] and the quantised
    data and scales of both."""
    p, m4 = a.shape
    n4 = b.shape[1]
    outs = []
    tiles = []
    for x, pdt in ((a, pdt_a), (b, pdt_b)):
        t = nl.ndarray(x.shape, nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        q = nl.ndarray((p, x.shape[1] // 4), pdt, buffer=nl.sbuf)
        s = nl.ndarray((p, x.shape[1] // 4), scale_dt, buffer=nl.sbuf)
        nisa.quantize_mx(dst=q, src=t, dst_scale=s)  # NKI's order: dst, src, dst_scale
        tiles.append((q, s))
        q_out = nl.ndarray(q.shape, pdt, buffer=nl.shared_hbm)
        s_out = nl.ndarray(s.shape, nl.uint8, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=q_out, src=q)
        nisa.dma_copy(dst=s_out, src=s.view(nl.uint8))
        outs += [q_out, s_out]
    (qa, sa), (qb, sb) = tiles
    ps = nl.ndarray((m4 // 4, n4 // 4), nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=ps, stationary=qa, moving=qb, stationary_scale=sa, moving_scale=sb)
    c = nl.ndarray(ps.shape, nl.float32, buffer=nl.shared_hbm)
    ct = nl.ndarray(ps.shape, nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=ct, src=ps)
    nisa.dma_copy(dst=c, src=ct)
    return (c, *outs)


@pytest.mark.parametrize("p, m, n", [(32, 16, 8), (128, 64, 128)])
@pytest.mark.parametrize("elem_a, elem_b", [(E4M3, E4M3), (E5M2, E5M2), (E4M3, E5M2)])
@pytest.mark.parametrize("scale_dt", [nl.uint8, nl.float8_e8m0fnu])
def test_quantize_then_matmul_against_numpy(p, m, n, elem_a, elem_b, scale_dt, rng):
    a, b = mx_input(rng, p, 4 * m), mx_input(rng, p, 4 * n)
    c, qa, sa, qb, sb = quantize_matmul(a, b, ELEM[elem_a][0], ELEM[elem_b][0], scale_dt)
    rows = scale_rows(p)
    deq = []
    for x, q, s, elem in ((a, qa, sa, elem_a), (b, qb, sb, elem_b)):
        want_q, want_s = ref_quantize(x, elem)
        # An x4 HBM tensor [P, F] returns as its elements, [P, F, 4]: element j of packed
        # element i is element 4 i + j of the source row.
        assert q.dtype == elem and q.shape == (p, x.shape[1] // 4, 4)
        np.testing.assert_array_equal(q.reshape(p, -1).view(np.uint8), want_q.view(np.uint8))
        np.testing.assert_array_equal(s[rows], want_s)
        deq.append(dequantized(want_q, want_s))
    check_product(c, *deq)
    # And close to the product of the inputs: FP8 keeps 3 (E4M3) or 2 (E5M2) mantissa bits.
    exact, size = ref_matmul(a.astype(np.float64), b.astype(np.float64))
    assert np.all(np.abs(c - exact) <= 0.25 * size)
    assert nki.last_run().latency_us > 0


def test_scale_is_twice_the_ocp_scale():
    """A block whose largest magnitude is 3 (E4M3: emax 8): OCP's scale is 2^(1 - 8), the
    instruction's 2^(1 - 7), so 3 becomes 192 (not 384: room to round up unsaturated)."""
    a = np.full((32, 8), 1.5, ml_dtypes.bfloat16)  # M = 2: an MX matmul's M is even
    a[0, 0] = 3
    _, qa, sa, _, _ = quantize_matmul(a, a, nl.float8_e4m3fn_x4, nl.float8_e4m3fn_x4, nl.uint8)
    assert sa[0, 0] == 127 + 1 - 7
    assert float(qa[0, 0, 0]) == 192 and float(qa[0, 0, 1]) == 96


@nki.jit(chip="trn3")
def packed_scales(a, b, quadrants):
    """Scale operands that are views of one tile: the stationary's scales in its first M
    columns; the moving's in its columns from M, or (quadrants: the NKI MX tutorial's packing)
    at partitions 4..7 of each quadrant, scales[4:, :N], beside the stationary's 0..3."""
    m, n = a.shape[1] // 4, b.shape[1] // 4
    scales = nl.ndarray((128, max(m, n) if quadrants else m + n), nl.uint8, buffer=nl.sbuf)
    st_scale = scales[:, :m]
    mv_scale = scales[4:, :n] if quadrants else scales[:, m:]
    qs = []
    for x, s in ((a, st_scale), (b, mv_scale)):
        t = nl.ndarray(x.shape, nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        q = nl.ndarray((128, x.shape[1] // 4), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        nisa.quantize_mx(dst=q, src=t, dst_scale=s)
        qs.append(q)
    ps = nl.ndarray((m, n), nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(ps, qs[0], qs[1], st_scale, mv_scale)
    c = nl.ndarray((m, n), nl.float32, buffer=nl.shared_hbm)
    nl.store(c, value=ps)
    return c


@pytest.mark.parametrize("quadrants", [False, True], ids=["columns", "quadrants"])
def test_scales_of_two_operands_in_one_tile(rng, quadrants):
    a, b = mx_input(rng, 128, 4 * 16), mx_input(rng, 128, 4 * 32)
    c = packed_scales(a, b, quadrants)
    check_product(c, dequantized(*ref_quantize(a, E4M3)), dequantized(*ref_quantize(b, E4M3)))


@nki.jit(chip="trn3")
def offline_mx(w4, w_scale, x_words, x_scale, dst_dtype):
    """MX data made offline: the stationary MXFP4 from a float4_e2m1fn array viewed as
    float4_e2m1fn_x4, the moving MXFP8 as uint32 words read through .ap(dtype=...) as the NKI
    MX tutorial does; their [P / 8, F] scales spread to the first 4 partitions of each quadrant.
    Then two matmuls into one accumulation group, and one that starts a new group."""
    p = w4.shape[0]
    st_hbm = w4.view(nl.float4_e2m1fn_x4)  # [P, M]
    n = x_words.shape[1]
    mv_hbm = x_words.ap(dtype=nl.float8_e4m3fn_x4, pattern=[[n, p], [1, n]], offset=0)
    st = nl.ndarray(st_hbm.shape, nl.float4_e2m1fn_x4, buffer=nl.sbuf)
    mv = nl.ndarray(mv_hbm.shape, nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    nisa.dma_copy(dst=st, src=st_hbm)
    nisa.dma_copy(dst=mv, src=mv_hbm)
    scales = []
    for s in (w_scale, x_scale):
        t = nl.zeros((p, s.shape[1]), nl.uint8, buffer=nl.sbuf)
        for q in range(p // 32):
            nisa.dma_copy(dst=t[32 * q:32 * q + 4, :], src=s[4 * q:4 * q + 4, :])
        scales.append(t)
    m = st.shape[1]
    twice = nl.ndarray((m, n), dst_dtype, buffer=nl.psum)
    nisa.nc_matmul_mx(twice, st, mv, scales[0], scales[1])
    nisa.nc_matmul_mx(twice, st, mv, scales[0], scales[1])  # accumulate=None: the same group
    once = nl.ndarray((m, n), dst_dtype, buffer=nl.psum)
    nisa.nc_matmul_mx(once, st, mv, scales[0], scales[1], tile_position=(64, 0),
                      tile_size=(64, 128))
    nisa.nc_matmul_mx(once, st, mv, scales[0], scales[1], accumulate=False)
    out = nl.ndarray((2, m, n), nl.float32, buffer=nl.shared_hbm)
    nl.store(out[0], value=twice)
    nl.store(out[1], value=once)
    return out


@pytest.mark.parametrize("dst_dtype", [nl.float32, nl.bfloat16])
def test_offline_mxfp4_and_mxfp8_operands_and_accumulation(dst_dtype, rng):
    p, m, n = 64, 32, 16
    w = rng.choice([-6, -3, -1.5, -0.5, 0, 0.5, 1, 2, 4, 6], (p, 4 * m)).astype(
        ml_dtypes.float4_e2m1fn)
    x = (rng.standard_normal((p, 4 * n)) * 8).astype(E4M3)
    w_scale = rng.integers(120, 135, (p // 8, m)).astype(np.uint8)
    x_scale = rng.integers(120, 135, (p // 8, n)).astype(np.uint8)
    out = offline_mx(w, w_scale, x.view(np.uint32), x_scale, dst_dtype)
    want, size = ref_matmul(dequantized(w, w_scale), dequantized(x, x_scale))
    tol = (2.0 ** -20 if dst_dtype == nl.float32 else 2.0 ** -7) * size
    assert np.all(np.abs(out[0] - 2 * want) <= 2 * tol)
    assert np.all(np.abs(out[1] - want) <= tol)


# --- refused: before NC-v4, the legacy dialect, bad shapes and dtypes ---

@pytest.mark.parametrize("chip, version", [("trn1", 2), ("trn2", 3)])
@pytest.mark.parametrize("call, lacks", [("quantize_mx", "VectorE has no MX quantisation"),
                                         ("nc_matmul_mx", "TensorE has no MX matmul")])
def test_mx_calls_before_nc_v4_say_the_core_lacks_them(chip, version, call, lacks):
    def k(x):
        t = nl.ndarray((32, 16), nl.bfloat16, buffer=nl.sbuf)
        q = nl.ndarray((32, 4), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        s = nl.ndarray((32, 4), nl.uint8, buffer=nl.sbuf)
        if call == "quantize_mx":
            nisa.quantize_mx(dst=q, src=t, dst_scale=s)
        else:
            ps = nl.ndarray((4, 4), nl.float32, buffer=nl.psum)
            nisa.nc_matmul_mx(ps, q, q, s, s)

    with pytest.raises(nki.NkiError, match=f"nisa.{call}: NeuronCore-v4 or newer only "
                                           rf"\(trn3\); {chip} has NeuronCore-v{version}, "
                                           f"whose {lacks}"):
        nki.simulate(k, np.zeros((1, 1), np.float32), chip=chip)


@pytest.mark.parametrize("name", ["nc_matmul_mx", "quantize_mx"])
def test_legacy_dialect_has_no_mx(name):
    with pytest.raises(NotImplementedError, match=f"neuronxcc.nki.isa.{name}.*NKI Beta 1 has "
                                                  f"no MX.*nki.isa.{name}"):
        getattr(lisa, name)()


def _bad(case):
    """A trn3 kernel making the call `case` names with one operand wrong."""

    def k(x):
        bf = nl.ndarray((32, 16), nl.bfloat16, buffer=nl.sbuf)
        q = nl.ndarray((32, 4), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        s = nl.ndarray((32, 4), nl.uint8, buffer=nl.sbuf)
        ps = nl.ndarray((4, 4), nl.float32, buffer=nl.psum)
        case(bf, q, s, ps)

    return lambda: nki.simulate(k, np.zeros((1, 1), np.float32), chip="trn3")


def _tile(shape, dtype):
    return nl.ndarray(shape, dtype, buffer=nl.sbuf)


BAD = [
    ("quantize src fp32",
     lambda bf, q, s, ps: nisa.quantize_mx(q, _tile((32, 16), nl.float32), s),
     nki.NkiError, "nisa.quantize_mx: src is fp32; it must be bfloat16 or float16"),
    ("quantize 16 partitions",
     lambda bf, q, s, ps: nisa.quantize_mx(q[0:16], bf[0:16], s),
     nki.NkiError, r"src is \[16, 16\]; it takes a multiple of 32 partitions"),
    ("quantize free 6",
     lambda bf, q, s, ps: nisa.quantize_mx(q, _tile((32, 6), nl.bfloat16), s),
     nki.NkiError, "and of 4 elements per partition"),
    ("quantize dst shape",
     lambda bf, q, s, ps: nisa.quantize_mx(_tile((32, 16), nl.float8_e4m3fn_x4), bf, s),
     nki.NkiError, r"dst is float8_e4m3fn_x4\[32, 16\]; src \[32, 16\] needs \[32, 4\]"),
    ("quantize dst fp8",
     lambda bf, q, s, ps: nisa.quantize_mx(_tile((32, 16), nl.float8_e4m3fn), bf, s),
     nki.NkiError, "dst is float8_e4m3fn.*must be a tile of float8_e5m2_x4 or "
                   r"float8_e4m3fn_x4 \(packed MX data\)"),
    ("quantize dst fp4",
     lambda bf, q, s, ps: nisa.quantize_mx(_tile((32, 4), nl.float4_e2m1fn_x4), bf, s),
     nki.NkiError, "dst is float4_e2m1fn_x4"),
    ("quantize scale bf16",
     lambda bf, q, s, ps: nisa.quantize_mx(q, bf, _tile((32, 4), nl.bfloat16)),
     nki.NkiError, "dst_scale is bf16; MX scales are uint8 or float8_e8m0fnu"),
    ("quantize scale free size",
     lambda bf, q, s, ps: nisa.quantize_mx(q, bf, _tile((32, 8), nl.uint8)),
     ValueError, "scale.*has 8 elements per partition; quantize_mx needs 4"),
    ("matmul stationary bf16",
     lambda bf, q, s, ps: nisa.nc_matmul_mx(ps, bf, q, s, s),
     nki.NkiError, r"nisa.nc_matmul_mx: stationary is .*bfloat16.*\[32, 16\]; it must be a tile "
                   "of float8_e5m2_x4 or float8_e4m3fn_x4 or float4_e2m1fn_x4"),
    ("matmul scale too few partitions",
     lambda bf, q, s, ps: nisa.nc_matmul_mx(
         ps, _tile((64, 4), nl.float8_e4m3fn_x4), _tile((64, 4), nl.float8_e4m3fn_x4),
         s, _tile((36, 4), nl.uint8)),
     nki.NkiError, r"stationary_scale has 32 partitions; the scales of 64 data partitions need "
                   r"36 \(those of data partition p are in partition 32 \(p // 32\)"),
    ("matmul odd partitions",
     lambda bf, q, s, ps: nisa.nc_matmul_mx(ps, q[0:16], q[0:16], s, s),
     ValueError, "MX operands take partitions in 32s"),
    ("matmul scale free size",
     lambda bf, q, s, ps: nisa.nc_matmul_mx(ps, q, q, s, _tile((32, 2), nl.uint8)),
     ValueError, "moving_scale.*has 2 scales per partition; expected 4"),
    ("matmul column tiling",
     lambda bf, q, s, ps: nisa.nc_matmul_mx(ps, q, q, s, s, tile_size=(32, 64)),
     ValueError, "MX matmul tiles rows only"),
    ("dma x4 to fp32",
     lambda bf, q, s, ps: nisa.dma_copy(dst=_tile((32, 4), nl.float32), src=q),
     nki.NkiError, "nisa.dma_copy: dst is float32 and src float8_e4m3fn_x4; a packed MX tensor "
                   "is copied to and from its own dtype"),
    ("copy x4 to another x4",
     lambda bf, q, s, ps: nisa.tensor_copy(dst=_tile((32, 4), nl.float8_e5m2_x4), src=q),
     nki.NkiError, "nisa.tensor_copy: dst is float8_e5m2_x4 and src float8_e4m3fn_x4"),
    ("x4 arithmetic",
     lambda bf, q, s, ps: q + 1.0,
     NotImplementedError, "packed MX dtype nl.float8_e4m3fn_x4"),
    ("fp4 view of bf16 bytes",
     lambda bf, q, s, ps: bf.view(nl.float4_e2m1fn_x4),
     NotImplementedError, "an fp4 element in a byte of its own"),
    ("x4 view of a ragged row",
     lambda bf, q, s, ps: _tile((32, 6), nl.uint8).view(nl.float8_e4m3fn_x4),
     nki.NkiError, "is not whole float8_e4m3fn_x4 elements"),
]


@pytest.mark.parametrize("case, error, match", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_mx_operands_are_errors_naming_them(case, error, match):
    with pytest.raises(error, match=match):
        _bad(case)()


def test_packed_tiles_index_reshape_and_view_in_packed_elements():
    @nki.jit(chip="trn3")
    def k(x):
        words = x.view(nl.float8_e4m3fn_x4)  # uint32 [32, 8]: four fp8 bytes each
        assert words.shape == (32, 8) and words.dtype == nl.float8_e4m3fn_x4
        assert words.get_pattern() == [[8, 32], [1, 8]] and words.is_contiguous()
        t = nl.ndarray((32, 8), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=words)
        assert t[0:16, 2:6].shape == (16, 4) and t[:, 3].shape == (32,)
        assert t.reshape((32, 2, 4)).shape == (32, 2, 4)
        assert t.ap([[8, 32], [2, 4]], offset=1).get_pattern() == [[8, 32], [2, 4]]
        out = nl.ndarray((32, 4), nl.float8_e4m3fn_x4, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t.ap([[8, 32], [2, 4]], offset=1))
        back = nl.ndarray((32, 8), nl.uint32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=back, src=t.view(nl.uint32))
        return out, back

    x = np.arange(32 * 8, dtype=np.uint32).reshape(32, 8) * 0x01010101
    out, back = k(x)
    np.testing.assert_array_equal(back, x)
    # Packed elements 1, 3, 5, 7 of each row, their four bytes in memory order.
    np.testing.assert_array_equal(out.view(np.uint8).reshape(32, 16),
                                  np.ascontiguousarray(x[:, 1::2]).view(np.uint8).reshape(32, 16))


def test_quantize_mx_writes_its_scales_for_common_subexpressions(rng):
    """A value computed from the scale tile before quantize_mx writes it is computed again
    after (the earlier result would be stale): quantize_mx writes dst and dst_scale."""

    @nki.jit(chip="trn3")
    def k(x):
        t = nl.ndarray(x.shape, nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        q = nl.ndarray((32, 4), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        s = nl.zeros((32, 4), nl.uint8, buffer=nl.sbuf)
        before = nl.ndarray((32, 4), nl.uint8, buffer=nl.shared_hbm)
        nl.store(before, value=s + 1)
        nisa.quantize_mx(dst=q, src=t, dst_scale=s)
        after = nl.ndarray((32, 4), nl.uint8, buffer=nl.shared_hbm)
        nl.store(after, value=s + 1)
        return before, after

    x = mx_input(rng, 32, 16)
    before, after = k(x)
    assert np.all(before == 1)
    np.testing.assert_array_equal(after[:4], ref_quantize(x, E4M3)[1] + 1)
