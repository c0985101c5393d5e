"""Two small NKI kernels whose device time on Trn2 is public (a university course's
assignment, Trainium2 edition: the starter kernels, profiled with neuron-profile on a
trn2.3xlarge, compiled with ``--disable-dge``), written for trnsim in their structure for
`trnsim validate`:

- ``vector_add_stream``: c = a + b over 256,000 fp32 viewed as [128, 2000], in tiles of
  ``free_dim`` columns: per tile two loads, one VectorE add, one store. 1000 columns gives two
  tiles (6 DMAs), 2000 one tile (3 DMAs).
- ``transpose``: a [1024, 1024] fp32 matrix in 8 x 8 tiles of [128, 128]: each loaded, turned
  by TensorE into PSUM, copied to SBUF and stored at the transposed place.

Both are short next to a NEFF launch's start-up and tear-down, which their device time
includes: they are where that overhead is seen on Trn2.
"""

from __future__ import annotations

import numpy as np

from trnsim import nki
from trnsim.nki import isa as nisa
from trnsim.nki import language as nl

P = 128


def vector_add_stream(free_dim):
    @nki.jit
    def kernel(a, b):
        n = a.shape[0]
        cols = n // P
        c = nl.ndarray((n,), a.dtype, buffer=nl.shared_hbm)
        a2, b2, c2 = a.reshape((P, cols)), b.reshape((P, cols)), c.reshape((P, cols))
        for t in nl.affine_range(cols // free_dim):
            ta = nl.ndarray((P, free_dim), a.dtype, buffer=nl.sbuf)
            tb = nl.ndarray((P, free_dim), a.dtype, buffer=nl.sbuf)
            cs = slice(t * free_dim, (t + 1) * free_dim)
            nisa.dma_copy(dst=ta, src=a2[:, cs])
            nisa.dma_copy(dst=tb, src=b2[:, cs])
            nisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=nl.add)
            nisa.dma_copy(dst=c2[:, cs], src=ta)
        return c

    return kernel


@nki.jit
def transpose(x):
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // P):
        for j in nl.affine_range(cols // P):
            t = nl.ndarray((P, P), x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[i * P:(i + 1) * P, j * P:(j + 1) * P])
            tp = nl.ndarray((P, P), x.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=tp, data=t)
            ts = nl.ndarray((P, P), x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=ts, src=tp)
            nisa.dma_copy(dst=out[j * P:(j + 1) * P, i * P:(i + 1) * P], src=ts)
    return out


def reference_add(a, b):
    return a + b


def reference_transpose(x):
    return np.ascontiguousarray(x.T)
