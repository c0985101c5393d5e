"""Tensor-indexed (indirect) DMA: ``t[idx_tile, ...]`` (both dialects) and
``t.ap(pattern, offset, vector_offset=idx_tile, indirect_dim=0)`` (NKI 0.4+), where
``idx_tile`` is an SBUF [P, 1] int32 / uint32 tile of row numbers of the HBM tensor ``t``.

Such an access holds no memory view of its own (its rows are only known when the DMA runs):
it is an ``Indirect`` that only a DMA may take, as the source of ``nl.load`` / ``dma_copy``
(a gather: partition p gets row idx[p]) or the destination of ``nl.store`` / ``dma_copy``
(a scatter). The kernel builder's dma_gather / dma_scatter take the table as every row of the
tensor with the indexed columns (``t[:, i_f]``), so dependencies count the whole tensor."""

from __future__ import annotations

import numpy as np

from trnsim.nki import _ctx
from trnsim.nki._ctx import NkiError
from trnsim.nki._index import has_expr, resolve_index
from trnsim.nki._tensor import NkiTensor, np_dtype


class Indirect(NkiTensor):
    """Rows of an HBM tensor picked by the values of an SBUF tile (see module docstring)."""

    __slots__ = ("table", "offsets", "ishape", "label")

    def __init__(self, table, offsets, shape, label):
        super().__init__(None)
        self.table = table  # C++ View: every row of the tensor, the indexed columns
        self.offsets = offsets  # NkiTensor: the [P, 1] row numbers
        self.ishape = tuple(int(s) for s in shape)
        self.label = label

    @property
    def shape(self):
        return self.ishape

    @property
    def dtype(self):
        return np_dtype(self.table.dtype)

    def _view(self):
        raise NkiError(f"{self.label} is a tensor-indexed (indirect) access: only a DMA takes it "
                       "(the source of nl.load / nisa.dma_copy, the destination of nl.store / "
                       "nisa.dma_copy)")

    def __getitem__(self, key):
        self._view()

    def __repr__(self):
        return f"Indirect({self.label} {list(self.ishape)})"


def _offsets(idx, where):
    """The [P, 1] SBUF tile of row numbers."""
    from trnsim.nki import _ops

    v = _ops.view(idx)
    if v.space != "sbuf" or len(v.shape) < 2 or any(s != 1 for s in v.shape[1:]):
        raise NkiError(f"{where}: the row numbers are an SBUF [P, 1] int32 or uint32 tile, got "
                       f"{v.describe()}")
    return idx


def _rows_kept(base, table, where):
    if len(table.shape) < 1 or table.shape[0] != base.shape[0]:
        raise NkiError(f"{where}: the indices after the tile index must leave the tensor's rows "
                       "(its first dim) whole")


def from_index(base, key):
    """``base[idx_tile, rest...]``: an indirect access over the rows of HBM tensor ``base``."""
    v = base._view()
    where = f"{v.name}[tile, ...]"
    key = key if isinstance(key, tuple) else (key,)
    lead = 0  # integers before the tile index pick a sub-tensor, whose rows the tile indexes
    while lead < len(key) - 1 and isinstance(key[lead], (int, np.integer)) \
            and not isinstance(key[lead], bool):
        lead += 1
    if lead and isinstance(key[lead], NkiTensor) and v.space == "hbm":
        return from_index(base[key[:lead]], key[lead:])
    if not isinstance(key[0], NkiTensor) or any(isinstance(k, NkiTensor) for k in key[1:]):
        _ctx.unsupported(f"a tile index on a dim other than the first: {where}",
                         "index the rows (dim 0) with the tile")
    if v.space != "hbm":
        _ctx.unsupported(f"a tensor-indexed access of an on-chip tile {where}",
                         "an indirect DMA reads or writes rows of an HBM tensor")
    offsets = _offsets(key[0], where)
    rest = (slice(None),) + key[1:]
    table = resolve_index(v, rest, None) if has_expr(rest) else v[rest]
    _rows_kept(v, table, where)
    p = offsets.shape[0]
    return Indirect(table, offsets, (p,) + tuple(table.shape[1:]), where)


def from_ap(base, pattern, offset, vector_offset, indirect_dim, dtype):
    """``base.ap(pattern, offset, vector_offset=idx, indirect_dim=0)``: row p of the access is
    the tensor's row idx[p]. The first pattern entry gives the rows' count; its step is not
    used, as the index counts the tensor's rows along indirect_dim 0 (public kernels write the
    row length there, nki-library's a2av kernels the row count: both read rows)."""
    from trnsim.nki import _ops
    from trnsim.nki._dtypes import format_name

    where = f"{base.name}.ap(vector_offset=)"
    if indirect_dim not in (0, None):
        _ctx.unsupported(f"{where} with indirect_dim={indirect_dim}", "index dim 0 (the rows)")
    v = base._view()
    if v.space != "hbm":
        _ctx.unsupported(f"{where} of an on-chip tile", "an indirect DMA indexes an HBM tensor")
    if dtype is not None:
        v = v.bitcast(format_name(dtype, "NkiTensor.ap: dtype"))
    pattern = _ops.pattern_of(pattern, "NkiTensor.ap: pattern")
    offset = _ops.integer(offset, "NkiTensor.ap: offset")
    shape = list(v.region_shape)
    rows, row = int(shape[0]), int(np.prod(shape[1:]))  # elements of v's dtype (bitcast too)
    (_, p), free = pattern[0], pattern[1:]
    if not 0 <= offset < row:
        _ctx.unsupported(f"{where} whose offset ({offset}) is outside row 0",
                         "the row numbers count the tensor's rows from row 0")
    table = v.pattern([(row, rows)] + list(free), offset)
    offsets = _offsets(vector_offset, where)
    if offsets.shape[0] != p:
        raise NkiError(f"{where}: the pattern has {p} rows but vector_offset {offsets.shape[0]} "
                       "partitions")
    return Indirect(table, offsets, (p,) + tuple(n for _, n in free), where)

