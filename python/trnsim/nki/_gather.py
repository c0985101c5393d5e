"""GpSimd's index instructions for both dialects (current-dialect signatures: destination
first). Each is one instruction of the C++ kernel builder (src/kernel/builder_gather.cc);
docs/nki.md has their semantics."""

from __future__ import annotations

from trnsim.nki._ctx import NkiError
from trnsim.nki._ops import integer, kb, tile, view

_INT32 = (-2**31, 2**31 - 1)


def nc_n_gather(dst, data, indices, call="nisa.nc_n_gather"):
    """dst[p, j] = data[p, indices[p, j]] on GpSimd, data's free dims flattened; indices
    uint32; dst has data's dtype and indices' elements per partition (bit-exact)."""
    for what, t in (("dst", dst), ("data", data), ("indices", indices)):
        tile(t, f"{call}: {what}")
    kb().n_gather(view(dst), view(data), view(indices))
    return dst


def local_gather(dst, src_buffer, index, num_elem_per_idx=1, num_valid_indices=None,
                 call="nisa.local_gather"):
    """Per 16-partition GpSimd core: its slice of `index` (uint16 element offsets) read
    partition first, the first num_valid_indices of them (default all), and each partition p
    of the core gets src_buffer[p, i : i + num_elem_per_idx] for each index i in turn."""
    for what, t in (("dst", dst), ("src_buffer", src_buffer), ("index", index)):
        tile(t, f"{call}: {what}")
    e = integer(num_elem_per_idx, f"{call}: num_elem_per_idx", 1, 32)
    if e not in (1, 2, 4, 8, 16, 32):
        raise NkiError(f"{call}: num_elem_per_idx={e}: 1, 2, 4, 8, 16 or 32")
    k = 0 if num_valid_indices is None else integer(num_valid_indices,
                                                    f"{call}: num_valid_indices", 1, 4096)
    kb().local_gather(view(dst), view(src_buffer), view(index), int(e), int(k))
    return dst


def local_gather_shape(src_buffer, index, num_elem_per_idx=1, num_valid_indices=None):
    """The [P, indices, elems] result of a legacy local_gather."""
    call = "neuronxcc.nki.isa.local_gather"
    k = 16 * _free(index) if num_valid_indices is None else integer(
        num_valid_indices, f"{call}: num_valid_indices", 1, 4096)
    return (index.shape[0], int(k), int(integer(num_elem_per_idx, f"{call}: num_elem_per_idx",
                                                1, 32)))


def _free(t):
    n = 1
    for d in t.shape[1:]:
        n *= int(d)
    return n


def sequence_bounds(dst, segment_ids, call="nisa.sequence_bounds"):
    """dst [1, 2, n]: for each of segment_ids' n elements the start of its run of equal ids,
    then one past its end; id 0 (padding) gets n and -1. fp32 or int32 (GpSimd)."""
    tile(dst, f"{call}: dst")
    tile(segment_ids, f"{call}: segment_ids")
    kb().sequence_bounds(view(dst), view(segment_ids))
    return dst


def nonzero_with_count(dst, src, index_offset=0, padding_val=-1, call="nisa.nonzero_with_count"):
    """In partitions 0, 16, ..., 112 (each GpSimd core's first): dst [P, F + 1] int32 = the
    positions + index_offset of src's nonzero elements, padding_val for the rest, then their
    count. dst's other partitions keep their values."""
    tile(dst, f"{call}: dst")
    tile(src, f"{call}: src")
    off = integer(index_offset, f"{call}: index_offset", *_INT32)
    pad = integer(padding_val, f"{call}: padding_val", *_INT32)
    kb().nonzero_with_count(view(dst), view(src), int(off), int(pad))
    return dst
