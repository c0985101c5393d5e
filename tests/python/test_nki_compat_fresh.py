"""NKI call forms a fresh set of public kernels used (November 2026), each against a numpy
reference written here: nl.floor / nl.ceil, NKI 0.4's nl.tile_size names, the nki.dtype
annotation, `tile != None` on an optional argument, kernel[2] meeting its other core as the
logical core's physical cores, and .ap(scalar_offset=) from an SBUF element at any partition
with indirect_dim naming the tensor's dim."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


def hbm(shape, dtype):
    return nl.ndarray(shape, dtype, buffer=nl.shared_hbm)


@pytest.mark.parametrize("chip", ["trn1", "trn3"])
def test_floor_and_ceil(chip, rng):
    x = (rng.standard_normal((128, 64)) * 100).astype(np.float32)
    x[0, :8] = [-2.0, -1.5, -0.5, -0.0, 0.0, 0.5, 1.0, 2.5]
    x[1, :3] = [1e30, -1e30, 8388607.5]

    @nki.jit(chip=chip)
    def kernel(x):
        t = nl.load(x)
        lo, hi = hbm(x.shape, x.dtype), hbm(x.shape, x.dtype)
        nl.store(lo, nl.floor(t))
        nl.store(hi, nl.ceil(t))
        return lo, hi

    lo, hi = kernel(x)
    np.testing.assert_array_equal(lo, np.floor(x))
    np.testing.assert_array_equal(np.abs(hi), np.abs(np.ceil(x)))  # -0 or 0 alike


def test_tile_size_names_of_nki_0_4():
    ts = nl.tile_size
    assert ts.psum_bank_fmax == ts.psum_fmax == 512
    assert ts.psum_bank_fmax_bytes == ts.psum_fmax_bytes == 2048
    assert ts.psum_num_banks == 8
    assert ts.sbuf_fmax_bytes == ts.total_available_sbuf_size
    assert ts.sbuf_fmax == ts.sbuf_fmax_bytes // 4
    assert ts.sbuf_size_bytes == ts.sbuf_fmax_bytes * ts.pmax


def test_dtype_annotation_and_optional_tile_arguments(rng):
    x = rng.standard_normal((128, 32)).astype(np.float32)
    b = rng.standard_normal((128, 32)).astype(np.float32)

    @nki.jit
    def kernel(x, bias=None, out_dtype: nki.dtype = nl.float32):
        t = nl.load(x)
        if bias != None:  # noqa: E711 - the form public kernels use
            t = nl.add(t, nl.load(bias))
        assert not (x == None)  # noqa: E711
        out = hbm(x.shape, out_dtype)
        nl.store(out, t)
        return out

    np.testing.assert_array_equal(kernel(x), x)
    np.testing.assert_array_equal(kernel(x, b), x + b)


def test_a_grid_of_two_that_meets_its_other_core_is_the_logical_core(rng):
    x = rng.standard_normal((256, 64)).astype(np.float32)

    @nki.jit(chip="trn2")
    def kernel(x):
        i = nl.program_id(0)
        shared = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm, name="shared")
        t = nl.load(x[i * 128:(i + 1) * 128])
        nl.store(shared[i * 128:(i + 1) * 128], nl.multiply(t, 2.0))
        nisa.core_barrier(shared, cores=(0, 1))
        return shared

    np.testing.assert_array_equal(kernel[2](x), 2 * x)
    with pytest.raises(nki.NkiError, match="logical core"):
        kernel[3](x)


def test_scalar_offset_from_sbuf_at_any_partition_along_a_tensor_dim(rng):
    data = rng.standard_normal((4, 16, 8)).astype(np.float32)
    where = np.zeros((8, 1), np.int32)
    where[5, 0] = 11

    @nki.jit
    def kernel(data, where):
        w = nl.load(where)
        t = nl.ndarray((4, 1, 8), nl.float32, buffer=nl.sbuf)
        # rows of data's dim 1 picked by w[5] (partition 5): the offset moves along dim 1
        nisa.dma_copy(dst=t, src=data.ap([[128, 4], [8, 1], [1, 8]], scalar_offset=w[5:6, :],
                                         indirect_dim=1))
        out = hbm((4, 1, 8), nl.float32)
        nl.store(out, t)
        return out

    np.testing.assert_array_equal(kernel(data, where), data[:, 11:12, :])


def test_torch_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    x = torch.randn(128, 64).to(torch.bfloat16)
    written = torch.zeros(128, 64)

    @nki.jit
    def kernel(x, written):
        t = nl.load(x)
        nl.store(written, nl.multiply(t, 2.0, dtype=nl.float32))
        same = hbm(x.shape, x.dtype)
        nl.store(same, t)
        return same

    got = kernel(x, written)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16
    assert torch.equal(got, x)
    assert torch.equal(written, 2 * x.float())  # the argument the kernel wrote, in place


def test_more_free_dims_than_a_pattern_holds_are_unrolled(rng):
    # t[:, :, 0:2, 0:2, 0:3, 0:5] of a [16, 2, 3, 3, 4, 6] tile: five free dims that do not
    # merge (the hardware's patterns have four), so the multiply and the copy to a tile of that
    # shape become one instruction per index of the outermost dim, as the compiler unrolls them.
    x = rng.standard_normal((16, 2, 3, 3, 4, 6)).astype(np.float32)

    @nki.jit
    def kernel(x):
        t = nl.load(x)
        y = nl.multiply(t[:, :, 0:2, 0:2, 0:3, 0:5], 2.0)
        z = nl.ndarray((16, 2, 3, 3, 4, 6), nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=z, value=0.0)
        nisa.dma_copy(dst=z[:, :, 0:2, 0:2, 0:3, 0:5], src=y)
        out = hbm(x.shape, nl.float32)
        nl.store(out, z)
        return out

    want = np.zeros_like(x)
    want[:, :, 0:2, 0:2, 0:3, 0:5] = 2 * x[:, :, 0:2, 0:2, 0:3, 0:5]
    np.testing.assert_array_equal(kernel(x), want)
    assert "tensor_scalar                     2" in kernel.last_run.summary


def test_scalar_offsets_from_tiles_in_a_long_unrolled_loop(rng):
    # Each .ap(scalar_offset=tile) reads the tile into a register of its own; the register is
    # freed with the view, so 100 of them fit the engines' 64.
    data = rng.standard_normal((1, 200)).astype(np.float32)
    idx = rng.integers(0, 200, size=(1, 100)).astype(np.int32)

    @nki.jit
    def kernel(data, idx):
        w = nl.load(idx)
        out_t = nl.ndarray((1, 100), nl.float32, buffer=nl.sbuf)
        for k in range(100):
            nisa.dma_copy(dst=out_t[:, k:k + 1],
                          src=data.ap([[200, 1], [1, 1]], scalar_offset=w[:, k:k + 1],
                                      indirect_dim=1))
        out = hbm((1, 100), nl.float32)
        nl.store(out, out_t)
        return out

    np.testing.assert_array_equal(kernel(data, idx), data[:, idx[0]])
