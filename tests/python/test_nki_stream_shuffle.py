"""nc_stream_shuffle (VectorE cross-partition moves inside 32-partition quadrants, every
generation), in both dialects, against a numpy reference written here from the NKI API
reference: dst partition 32 q + i takes src partition 32 q + mask[i] of the same quadrant
(partitions counted from each tile's first), 255 leaves it unchanged; the nki-library's
stream_shuffle_broadcast pattern (a zero mask per destination quadrant); errors."""

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import legacy
from trnsim.nki.legacy import isa as lisa

CHIPS = ["trn1", "trn2", "trn3"]
KEEP = 255


def shuffled(src, dst, mask):
    """The reference: numpy rows moved as the hardware moves partitions."""
    out = dst.copy()
    for j in range(dst.shape[0]):
        m = mask[j % 32]
        if m != KEEP:
            out[j] = src[j // 32 * 32 + m]
    return out


@pytest.mark.parametrize("chip", CHIPS)
def test_shuffle_every_quadrant_with_kept_partitions(chip, rng):
    x = rng.standard_normal((128, 96)).astype(np.float32)
    y = rng.standard_normal((128, 96)).astype(np.float32)
    mask = [int(v) for v in rng.permutation(32)]
    mask[3] = mask[17] = KEEP

    @nki.jit(chip=chip)
    def kernel(x, y):
        s, d = nl.load(x), nl.load(y)
        nisa.nc_stream_shuffle(dst=d, src=s, shuffle_mask=mask)
        out = nl.ndarray((128, 96), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, d)
        return out

    np.testing.assert_array_equal(kernel(x, y), shuffled(x, y, mask))


@pytest.mark.parametrize("chip", CHIPS)
def test_shuffle_in_place_is_bit_exact_for_bf16(chip, rng):
    # Every bf16 bit pattern, NaNs included, moves unchanged.
    bits = np.arange(64 * 1024, dtype=np.uint32).reshape(64, 1024).astype(np.uint16)
    mask = [31 - i for i in range(32)]

    @nki.jit(chip=chip)
    def kernel(x):
        t = nl.load(x)
        nisa.nc_stream_shuffle(dst=t, src=t, shuffle_mask=mask)
        out = nl.ndarray((64, 1024), nl.uint16, buffer=nl.shared_hbm)
        nl.store(out, t)
        return out

    np.testing.assert_array_equal(kernel(bits), shuffled(bits, bits, mask))


@pytest.mark.parametrize("chip", CHIPS)
def test_broadcast_of_one_partition_quadrant_by_quadrant(chip, rng):
    # nki-library stream_shuffle_broadcast: partition 0 of src onto every partition of dst.
    row = rng.standard_normal((1, 40)).astype(np.float32)

    @nki.jit(chip=chip)
    def kernel(row):
        s = nl.load(row)
        d = nl.ndarray((128, 40), nl.float32)
        for q in range(4):
            nisa.nc_stream_shuffle(dst=d[q * 32:(q + 1) * 32, :], src=s[0:1, :],
                                   shuffle_mask=[0] * 32)
        out = nl.ndarray((128, 40), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, d)
        return out

    np.testing.assert_array_equal(kernel(row), np.repeat(row, 128, axis=0))


@pytest.mark.parametrize("chip", CHIPS)
def test_legacy_dialect_takes_src_first(chip, rng):
    x = rng.standard_normal((64, 32)).astype(np.float32)
    mask = [(i + 5) % 32 for i in range(32)]

    @legacy.jit(chip=chip)
    def kernel(x, out):
        s = nl.load(x)
        d = nl.ndarray((64, 32), dtype=nl.float32)
        lisa.nc_stream_shuffle(s, d, mask)
        nl.store(out, d)

    out = np.zeros_like(x)
    kernel(x, out)
    np.testing.assert_array_equal(out, shuffled(x, np.zeros_like(x), mask))


@nki.jit(chip="trn2")
def shuffle_of(x, mask, dst_start, dst_rows, src_rows):
    s = nl.load(x)
    d = nl.ndarray((128, 16), nl.float32)
    nisa.nc_stream_shuffle(dst=d[dst_start:dst_start + dst_rows, :], src=s[0:src_rows, :],
                           shuffle_mask=mask)
    return s


@pytest.mark.parametrize("mask, dst_start, dst_rows, src_rows, message", [
    ([0] * 31, 0, 32, 32, "32"),                    # a quadrant's worth of entries
    ([40] + [0] * 31, 0, 32, 32, "shuffle_mask\\[0\\]"),  # not a partition of the quadrant
    ("0" * 32, 0, 32, 32, "list of 32"),
    (list(range(32)), 16, 32, 32, "starts? at partition 16"),  # quadrant alignment
    (list(range(32)), 32, 64, 64, "starts? at partition 32"),
    (list(range(32)), 0, 64, 32, "src has 32"),     # quadrant 1 reads beyond src
])
def test_bad_masks_and_placements_are_errors(rng, mask, dst_start, dst_rows, src_rows, message):
    x = rng.standard_normal((128, 16)).astype(np.float32)
    with pytest.raises(ValueError, match=message):
        shuffle_of(x, mask, dst_start, dst_rows, src_rows)


@pytest.mark.parametrize("chip", CHIPS)
def test_copy_to_an_unaligned_partition_through_a_quadrant_buffer(chip, rng):
    # The nki-library's cross-partition copy: a tensor_copy cannot start dst at partition 45, so
    # the rows go through a 32-partition buffer and a shuffle that keeps the other partitions.
    x = rng.standard_normal((128, 24)).astype(np.float32)
    y = rng.standard_normal((128, 24)).astype(np.float32)
    n, src0, dst0 = 10, 64, 45
    off = dst0 % 32
    mask = [KEEP] * 32
    for i in range(n):
        mask[off + i] = i

    @nki.jit(chip=chip)
    def kernel(x, y):
        s, d = nl.load(x), nl.load(y)
        tmp_src = nl.ndarray((32, 24), nl.float32)
        tmp_dst = nl.ndarray((32, 24), nl.float32)
        nisa.tensor_copy(dst=tmp_src[0:n, :], src=s[src0:src0 + n, :])
        nisa.tensor_copy(dst=tmp_dst, src=d[32:64, :])
        nisa.nc_stream_shuffle(dst=tmp_dst, src=tmp_src, shuffle_mask=mask)
        nisa.tensor_copy(dst=d[32:64, :], src=tmp_dst)
        out = nl.ndarray((128, 24), nl.float32, buffer=nl.shared_hbm)
        nl.store(out, d)
        return out

    want = y.copy()
    want[dst0:dst0 + n] = x[src0:src0 + n]
    np.testing.assert_array_equal(kernel(x, y), want)
