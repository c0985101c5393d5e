"""nisa.dma_compute: dst = srcs[0] + srcs[1] + ... computed by the DMA engines (NKI API
reference: the sources are cast to float32, summed in float32, and the sum cast to dst's dtype
once; only nl.add, every scale 1.0). Lowered on the DMA's own read-add-write (the one
dma_copy(dst_rmw_op=nl.add) uses: NC-v4 in the DMA engines, older generations through the DMA
CC engines at half rate): the first source is copied into an fp32 SBUF tile, each other one
added to it, and the tile copied to dst, so the float32 sum is rounded to dst's dtype once."""

from __future__ import annotations

from trnsim.nki import _ctx, _ops
from trnsim.nki._ctx import NkiError

MAX_SOURCES = 16  # NKI API reference


def dma_compute(dst, srcs, *args, reduce_op=None, scales=None, unique_indices=True, name=None,
                **kwargs):
    """dst = sum of srcs in float32 (see the module docstring). Positional forms: (dst, srcs,
    scales, reduce_op) of the latest API and (dst, srcs, reduce_op, scales) of NKI 0.3."""
    call = "nisa.dma_compute"
    for a in args:  # a list of numbers is scales; anything else the reduce op
        if isinstance(a, (list, tuple)):
            scales = a
        elif a is not None:
            reduce_op = a
    if kwargs.pop("oob_mode", None) is not None or kwargs:
        _ctx.unsupported(f"{call}({', '.join(kwargs) or 'oob_mode'}=...)",
                         "sources and dst at addresses known when tracing")
    if reduce_op is None or _ops.alu(reduce_op) != _ops.AluOp.add:
        _ctx.unsupported(f"{call}(reduce_op={getattr(reduce_op, '__name__', reduce_op)})",
                         "the DMA engines add (nl.add)")
    srcs = list(srcs) if isinstance(srcs, (list, tuple)) else [srcs]
    if not 1 <= len(srcs) <= MAX_SOURCES:
        raise NkiError(f"{call}: {len(srcs)} sources; it takes 1 to {MAX_SOURCES}")
    if scales is not None:
        scales = list(scales)
        if len(scales) != len(srcs) or any(float(s) != 1.0 for s in scales):
            _ctx.unsupported(f"{call}(scales={scales})", "every scale is 1.0 on the hardware")
    d = _ops.view(dst)
    rows = d.shape[0] if len(d.shape) > 1 else 1
    cols = 1
    for x in (d.shape[1:] if len(d.shape) > 1 else d.shape):
        cols *= x
    if rows > 128:
        _ctx.unsupported(f"{call} of {rows} rows", "dst of at most 128 rows (one SBUF tile)")

    def flat(x, what):
        v = _ops.view(x)
        count = 1
        for k in v.shape:
            count *= k
        if count != rows * cols:
            raise NkiError(f"{call}: {what} has {count} elements, dst {rows * cols}")
        return v if tuple(v.shape) == (rows, cols) else v.reshape([rows, cols])

    views = [flat(s, f"srcs[{i}]") for i, s in enumerate(srcs)]
    kb = _ops.kb()
    total = _ops.alloc([rows, cols], "float32", name="dma_compute_sum")._view()
    kb.dma_copy(total, views[0], None, False)
    for v in views[1:]:
        if v.dtype != "fp32":  # the DMA adds like to like: the source cast first
            staged = _ops.alloc([rows, cols], "float32", name="dma_compute_src")._view()
            kb.dma_copy(staged, v, None, False)
            v = staged
        kb.dma_copy(total, v, None, True)
    kb.dma_copy(flat(dst, "dst"), total, None, False)
    return dst
