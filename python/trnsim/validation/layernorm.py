"""LayerNorm of a [rows, cols] fp32 tensor in NKI's legacy dialect, in the two versions of the
NKI LayerNorm tutorial (nki/tutorials/layernorm.rst): the same instructions in the same order,
for `trnsim validate` and for comparing versions.

v1 uses language ops only: mean and mean of squares by reductions, then shift, scale, gamma
and beta as elementwise ops. v2 gets mean and variance from bn_stats / bn_aggr and does the
shift and scale in one tensor_scalar. gamma and beta are loaded once and broadcast to every
partition (a partition broadcast, docs/nki.md "Lowering").
"""

from __future__ import annotations

import math

import numpy as np

from trnsim.nki import legacy as nki
from trnsim.nki.legacy import isa as nisa
from trnsim.nki.legacy import language as nl

P = 128


def _params(gamma, beta, cols):
    """gamma and beta as [1, cols] rows, broadcast to [P, cols]."""
    g = nl.load(gamma.reshape((1, cols))[0:1, 0:cols])
    b = nl.load(beta.reshape((1, cols))[0:1, 0:cols])
    return g.broadcast_to((P, cols)), b.broadcast_to((P, cols))


@nki.jit
def layernorm_v1(x, eps, gamma, beta, out):
    rows, cols = x.shape
    g_all, b_all = _params(gamma, beta, cols)
    ip, jf = nl.arange(P)[:, None], nl.arange(cols)[None, :]
    for t in nl.affine_range(math.ceil(rows / P)):
        live = t * P + ip < rows
        xt = nl.load(x[t * P + ip, jf], mask=live)
        mu = nl.mean(xt, axis=1)
        var = nl.mean(nl.square(xt), axis=1) - mu * mu
        y = (xt - mu) * nl.rsqrt(var + eps)
        y = y * g_all + b_all
        nl.store(out[t * P + ip, jf], value=y, mask=live)


@nki.jit
def layernorm_v2(x, eps, gamma, beta, out):
    rows, cols = x.shape
    g_all, b_all = _params(gamma, beta, cols)
    ip, jf = nl.arange(P)[:, None], nl.arange(cols)[None, :]
    chunk = nl.tile_size.bn_stats_fmax
    chunks = math.ceil(cols / chunk)
    jc, js = nl.arange(chunk)[None, :], nl.arange(6)[None, :]
    for t in nl.affine_range(math.ceil(rows / P)):
        live = t * P + ip < rows
        xt = nl.load(x[t * P + ip, jf], mask=live)
        stats = nl.ndarray((P, 6 * chunks), dtype=np.float32)
        for c in nl.affine_range(chunks):
            stats[ip, c * 6 + js] = nisa.bn_stats(xt[ip, c * chunk + jc],
                                                  mask=(c * chunk + jc < cols), dtype=np.float32)
        mv = nisa.bn_aggr(stats[ip, nl.arange(6 * chunks)[None, :]])
        rstd = nl.rsqrt(mv[ip, 1] + eps)
        y = nisa.tensor_scalar(data=xt, op0=np.subtract, operand0=mv[ip, 0], op1=np.multiply,
                               operand1=rstd)
        y = y * g_all + b_all
        nl.store(out[t * P + ip, jf], value=y, mask=live)


KERNELS = {"v1": layernorm_v1, "v2": layernorm_v2}


def reference(x, eps, gamma, beta):
    x = x.astype(np.float64)
    mu = x.mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=1, keepdims=True) + eps) * gamma + beta
