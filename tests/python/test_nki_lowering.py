"""Language-level NKI ops lowered as NKI's compiler lowers them (docs/nki.md, "Lowering"):
the instructions each becomes, on which engine, and what they cost."""

import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as cur
import trnsim.nki.isa as cur_isa
import trnsim.nki.language as cur_nl
from trnsim.nki import legacy as nki
from trnsim.nki.legacy import isa as nisa
from trnsim.nki.legacy import language as nl


def opcodes(run):
    """{engine: {opcode: count}} of the run's first instance."""
    return {e: dict(f["by_opcode"]) for e, f in run.figures["engines"].items()}


def broadcast_multiply(n_bcast, cols, dtype):
    """n_bcast partition broadcasts of rows of `b`, each multiplied into `a`."""

    @nki.jit
    def k(a, b):
        out = nl.ndarray((n_bcast, 128, cols), dtype=a.dtype, buffer=nl.shared_hbm)
        x = nl.load(a)
        for i in nl.affine_range(n_bcast):
            row = nl.load(b[i:i + 1, 0:cols])
            y = nisa.tensor_tensor(x, row.broadcast_to((128, cols)), op=nl.multiply)
            nl.store(out[i], value=y)
        return out

    return k


@pytest.mark.parametrize("chip", ["trn1", "trn2", "trn3"])
def test_fp32_partition_broadcast_stays_in_psum_with_one_ones_row(rng, chip):
    """TensorE writes the broadcast to PSUM and VectorE reads it there: no copy to SBUF, and
    one memset of the ones row for the whole kernel."""
    a = rng.standard_normal((128, 512)).astype(np.float32)
    b = rng.standard_normal((4, 512)).astype(np.float32)
    k = broadcast_multiply(4, 512, np.float32)
    out, run = nki.run(k, a, b, chip=chip)
    np.testing.assert_array_equal(out, a[None] * b[:, None, :])
    ops = opcodes(run)
    assert ops["dve"].get("memset", 0) + ops.get("pool", {}).get("memset", 0) == 1
    assert "tensor_copy" not in ops["dve"]
    assert ops["pe"]["multiply_moving"] == 4
    assert ops["dve"]["tensor_tensor"] == 4


def test_psum_operand_makes_fp32_tensor_tensor_one_pass(rng):
    """HARDWARE.md s8.1: a 2-input VectorE op costs 2N, N with one input in PSUM. The same
    multiply with the row broadcast from SBUF (a bf16 row, copied) against from PSUM."""
    cols = 512
    a = rng.standard_normal((128, cols)).astype(np.float32)
    b = rng.standard_normal((1, cols)).astype(np.float32)
    _, run32 = nki.run(broadcast_multiply(1, cols, np.float32), a, b, chip="trn1")
    dve = run32.figures["engines"]["dve"]
    # trn1 VectorE: 1.12 GHz; one tensor_tensor of N = 512 from PSUM: 512 cycles = 457 ns.
    assert dve["busy_ps"] < 2 * 512 / 1.12e-3 * 0.75
    assert dve["busy_ps"] >= 512 / 1.12e-3


def test_bf16_broadcast_is_copied_to_sbuf_in_its_dtype(rng):
    a = rng.standard_normal((128, 256)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((2, 256)).astype(ml_dtypes.bfloat16)
    out, run = nki.run(broadcast_multiply(2, 256, ml_dtypes.bfloat16), a, b, chip="trn2")
    assert out.dtype == ml_dtypes.bfloat16
    ref = (a.astype(np.float32)[None] * b.astype(np.float32)[:, None, :]).astype(
        ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out, ref)
    assert opcodes(run)["dve"]["tensor_copy"] == 2  # one PSUM bank per broadcast


def test_wide_broadcast_goes_through_sbuf_bank_by_bank(rng):
    """More than 4K fp32 elements per partition: VectorE cannot stream it from PSUM (AG2)."""
    cols = 4608
    a = rng.standard_normal((128, cols)).astype(np.float32)
    b = rng.standard_normal((1, cols)).astype(np.float32)
    out, run = nki.run(broadcast_multiply(1, cols, np.float32), a, b, chip="trn2")
    np.testing.assert_array_equal(out, a[None] * b[:, None, :])
    ops = opcodes(run)
    assert ops["pe"]["multiply_moving"] == 9 and ops["dve"]["tensor_copy"] == 9


def test_broadcast_feeds_engines_that_read_only_sbuf(rng):
    """TensorE operands, GpSimd and DMA get an SBUF copy of a PSUM-resident broadcast; a
    write to the broadcast tile makes the next copy fresh."""

    @nki.jit
    def k(w, b):
        out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
        out2 = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
        out3 = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
        row = nl.load(b)
        bc = row.broadcast_to((128, 128))
        wt = nl.load(w)
        ps = nisa.nc_matmul(wt, bc)  # moving operand: SBUF copy
        nl.store(out, value=ps)
        g = nisa.tensor_tensor(bc, bc, op=nl.add, engine=nki.isa.gpsimd_engine)
        nl.store(out2, value=g)
        bc[...] = nisa.tensor_scalar(bc, op0=nl.multiply, operand0=3.0)
        nl.store(out3, value=bc)  # DMA from SBUF: the copy after the write
        return out, out2, out3

    w = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((1, 128)).astype(np.float32)
    out, out2, out3 = k(w, b)
    bc = np.broadcast_to(b, (128, 128))
    np.testing.assert_allclose(out, w.T @ bc, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out2, bc + bc)
    np.testing.assert_array_equal(out3, bc * np.float32(3.0))


def test_a_per_partition_column_operand_is_a_tensor_scalar(rng):
    """x - c and c - x with c [P, 1]: one VectorE tensor_scalar each (N cycles), not a
    tensor_tensor against a broadcast column (2N)."""

    @nki.jit
    def k(a, c):
        o1 = nl.ndarray((128, 256), dtype=np.float32, buffer=nl.shared_hbm)
        o2 = nl.ndarray((128, 256), dtype=np.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        col = nl.load(c)
        nl.store(o1, value=x - col)
        nl.store(o2, value=col / x)
        return o1, o2

    a = rng.uniform(0.5, 2.0, (128, 256)).astype(np.float32)
    c = rng.standard_normal((128, 1)).astype(np.float32)
    (o1, o2), run = nki.run(k, a, c, chip="trn1")
    np.testing.assert_array_equal(o1, a - c)
    np.testing.assert_allclose(o2, c / a, rtol=1e-6)
    ops = opcodes(run)
    assert ops["dve"].get("tensor_scalar") == 2 and "tensor_tensor" not in ops["dve"]


def test_a_broadcast_used_again_is_read_from_an_sbuf_copy(rng):
    """PSUM holds a broadcast only until its first use: a row reused over a loop is copied to
    SBUF at its second use, so long-lived broadcasts (LayerNorm's gamma and beta, even 8
    banks wide) do not fill PSUM."""

    def kernel(cols, iters):
        @nki.jit
        def k(a, g, b):
            out = nl.ndarray((iters, 128, cols), dtype=np.float32, buffer=nl.shared_hbm)
            g_all = nl.load(g).broadcast_to((128, cols))
            b_all = nl.load(b).broadcast_to((128, cols))
            for i in nl.affine_range(iters):
                x = nl.load(a)
                nl.store(out[i], value=x * g_all + b_all)
            return out

        return k

    for cols, psum_reads in ((512, True), (4096, False)):
        a = rng.standard_normal((128, cols)).astype(np.float32)
        g, b = rng.standard_normal((2, 1, cols)).astype(np.float32)
        out, run = nki.run(kernel(cols, 3), a, g, b, chip="trn1")
        np.testing.assert_allclose(out, np.broadcast_to(a * g + b, (3, 128, cols)), rtol=1e-6)
        copies = opcodes(run)["dve"].get("tensor_copy", 0)
        banks = cols // 512
        # one copy each at the second use, or one per bank when wider than a bank
        assert copies == (2 if psum_reads else 2 * banks), (cols, copies)


def _fill_rows(t):
    """Numbers assigned to sub-tiles at many start partitions: single elements row by row, as
    nl.gather_flattened's example builds its indices, and wider ranges."""
    for i in range(40):
        for j in range(2):
            t[i, j] = 5 * j + i
    t[1:40, 4:6] = 9  # 39 partitions from partition 1
    t[64:100, 6:7] = 8  # 36 from 64, 32 from 96: engines may start there
    t[96:128, 7:9] = 7


@pytest.mark.parametrize("chip", ["trn1", "trn2", "trn3"])
def test_a_number_assigned_where_no_engine_access_may_start_goes_by_dma(chip):
    """An engine access of 1..32 partitions starts at 0, 32, 64 or 96 only, of 33..64 at 0 or
    64, of more at 0 (docs/isa.md). t[i, j] = x elsewhere is a memset of a tile at partition 0
    and a DMA (bound by no such rule) into place; where an engine may start, one memset.
    Both dialects."""
    @nki.jit(chip=chip)
    def old():
        out = nl.ndarray((128, 10), nl.uint32, buffer=nl.shared_hbm)
        t = nl.zeros((128, 10), dtype=nl.uint32)
        _fill_rows(t)
        nl.store(out, t)
        return out

    @cur.jit(chip=chip)
    def new():
        out = cur_nl.ndarray((128, 10), cur_nl.uint32, buffer=cur_nl.shared_hbm)
        t = cur_nl.ndarray((128, 10), cur_nl.uint32, buffer=cur_nl.sbuf)
        cur_isa.memset(t, 0)
        _fill_rows(t)
        cur_isa.dma_copy(dst=out, src=t)
        return out

    ref = np.zeros((128, 10), np.uint32)
    for i in range(40):
        ref[i, :2] = [i, 5 + i]
    ref[1:40, 4:6], ref[64:100, 6], ref[96:128, 7:9] = 9, 8, 7
    for kernel in (old, new):
        out, run = nki.run(kernel, chip=chip)
        np.testing.assert_array_equal(out, ref)
        ops = opcodes(run)
        # rows 0 and 32 (2 x 2 elements) and the ranges from 64 and 96 start where engines
        # may: 1 + 4 + 2 memsets in place; the other 76 elements and the rows from 1 go
        # through a tile at partition 0 and a DMA each, and one DMA stores the result
        assert ops["dve"]["memset"] + ops["pool"].get("memset", 0) == 1 + 4 + 2 + 77
        assert sum(o.get("dma_copy", 0) for o in ops.values()) == 77 + 1
