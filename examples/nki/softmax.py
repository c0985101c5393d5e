"""Row-wise softmax in NKI's current dialect, the same instructions as the C++ example
`softmax` (examples/kernels/softmax.cc): max on VectorE, exp(x - max) with its row sum in one
ScalarE activation, reciprocal and a per-row scale, two buffers so loads overlap compute.

    python3 examples/nki/softmax.py [ROWS COLS] [--chip trn2]
"""

import numpy as np

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


@nki.jit
def softmax(x, y):
    rows, cols = x.shape
    parts = nl.tile_size.pmax
    x_bufs = [nl.ndarray((parts, cols), nl.float32, buffer=nl.sbuf) for _ in range(2)]
    e_bufs = [nl.ndarray((parts, cols), nl.float32, buffer=nl.sbuf) for _ in range(2)]
    stat_bufs = [nl.ndarray((parts, 4), nl.float32, buffer=nl.sbuf) for _ in range(2)]
    for i, r0 in enumerate(range(0, rows, parts)):
        p = min(parts, rows - r0)
        xt, et, st = x_bufs[i % 2][0:p], e_bufs[i % 2][0:p], stat_bufs[i % 2][0:p]
        mx, neg, total, inv = st[:, 0:1], st[:, 1:2], st[:, 2:3], st[:, 3:4]
        nisa.dma_copy(dst=xt, src=x[r0:r0 + p])
        nisa.tensor_reduce(dst=mx, op=nl.max, data=xt, axis=1)
        nisa.tensor_scalar(dst=neg, data=mx, op0=nl.multiply, operand0=-1.0)
        nisa.activation(dst=et, op=nl.exp, data=xt, bias=neg, reduce_op=nl.add, reduce_res=total)
        nisa.reciprocal(dst=inv, data=total)
        nisa.tensor_scalar(dst=et, data=et, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=y[r0:r0 + p], src=et)


if __name__ == "__main__":
    import sys

    rows, cols = (int(v) for v in (sys.argv[1:3] if len(sys.argv) > 2 else (512, 1024)))
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    y = np.zeros_like(x)
    softmax(x, y)
    ref = np.exp(x - x.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    print(f"{nki.last_run()}: max |err| {np.abs(y - ref).max():.3g}")
