"""LayerNorm over each row in NKI's current dialect (the NKI LayerNorm tutorial's bn_stats
version), the same instructions as the C++ example `layernorm` (examples/kernels/layernorm.cc):
bn_stats per 512-element chunk, bn_aggr to mean and variance, rstd = (var + eps)^-0.5, then
(x - mean) * rstd * gamma + beta, gamma and beta broadcast to every partition by the DMA.

    python3 examples/nki/layernorm.py [ROWS COLS]
"""

import numpy as np

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


@nki.jit
def layernorm(x, gamma, beta, y, eps=1e-5):
    rows, cols = x.shape
    parts, chunk = nl.tile_size.pmax, nl.tile_size.bn_stats_fmax
    gamma_t = nl.ndarray((parts, cols), nl.float32, buffer=nl.sbuf)
    beta_t = nl.ndarray((parts, cols), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=gamma_t, src=gamma.reshape((1, cols)).broadcast_to((parts, cols)))
    nisa.dma_copy(dst=beta_t, src=beta.reshape((1, cols)).broadcast_to((parts, cols)))
    chunks = (cols + chunk - 1) // chunk
    x_bufs = [nl.ndarray((parts, cols), nl.float32, buffer=nl.sbuf) for _ in range(2)]
    y_bufs = [nl.ndarray((parts, cols), nl.float32, buffer=nl.sbuf) for _ in range(2)]
    st_bufs = [nl.ndarray((parts, chunks, 6), nl.float32, buffer=nl.sbuf) for _ in range(2)]
    mv_bufs = [nl.ndarray((parts, 3), nl.float32, buffer=nl.sbuf) for _ in range(2)]
    for i, r0 in enumerate(range(0, rows, parts)):
        p = min(parts, rows - r0)
        xt, yt = x_bufs[i % 2][0:p], y_bufs[i % 2][0:p]
        stats, mv = st_bufs[i % 2][0:p], mv_bufs[i % 2][0:p]  # mv: mean, variance, rstd
        nisa.dma_copy(dst=xt, src=x[r0:r0 + p])
        for c in range(chunks):
            nisa.bn_stats(dst=stats[:, c], data=xt[:, c * chunk:min(cols, (c + 1) * chunk)])
        nisa.bn_aggr(dst=mv[:, 0:2], data=stats)
        nisa.tensor_scalar(dst=mv[:, 2:3], data=mv[:, 1:2], op0=nl.add, operand0=eps,
                           op1=nl.power, operand1=-0.5)
        nisa.tensor_scalar(dst=yt, data=xt, op0=nl.subtract, operand0=mv[:, 0:1],
                           op1=nl.multiply, operand1=mv[:, 2:3])
        nisa.tensor_tensor(dst=yt, data1=yt, data2=gamma_t[0:p], op=nl.multiply)
        nisa.tensor_tensor(dst=yt, data1=yt, data2=beta_t[0:p], op=nl.add)
        nisa.dma_copy(dst=y[r0:r0 + p], src=yt)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 1024)).astype(np.float32)
    g, b = rng.standard_normal(1024).astype(np.float32), rng.standard_normal(1024).astype(np.float32)
    y = np.zeros_like(x)
    layernorm(x, g, b, y)
    ref = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * g + b
    print(f"{nki.last_run()}: max |err| {np.abs(y - ref).max():.3g}")
