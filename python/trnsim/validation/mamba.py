"""The fused Mamba selective scan in NKI's legacy dialect, in the three versions of the NKI
fused-Mamba tutorial (VALIDATION.md s6): the same instructions in the same loop orders, for
`trnsim validate` and for anyone comparing versions.

Shapes: delta, u [batch, channels, seq]; A [channels, state]; B, C [batch, state, seq]; the
result [batch, channels, seq] is sum over states of C * scan(exp(delta * A), delta * u * B).
Channels map to partitions (tiles of 128); `seq` is the free dim.
"""

from __future__ import annotations

import numpy as np

from trnsim.nki import legacy as nki
from trnsim.nki.legacy import isa as nisa
from trnsim.nki.legacy import language as nl

P = 128  # partitions per channel tile (nl.tile_size.pmax)


@nki.jit
def mamba_v1(delta, u, A, B, C):
    """Loop order batch, state, channel tile: delta and u are loaded again for every state;
    the per-channel-tile accumulators live across the state loop."""
    batch, channels, seq = delta.shape
    states = A.shape[1]
    tiles = channels // P
    out = nl.ndarray((batch, channels, seq), dtype=delta.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(batch):
        acc = nl.zeros((tiles, nl.par_dim(P), seq), dtype=delta.dtype)
        for s in nl.affine_range(states):
            for t in nl.affine_range(tiles):
                rows = slice(t * P, (t + 1) * P)
                delta_t = nl.load(delta[b, rows, 0:seq])
                a_col = nl.load(A[rows, s])
                decay = nisa.activation(op=nl.exp, data=delta_t, scale=a_col)
                u_t = nl.load(u[b, rows, 0:seq])
                b_row = nl.load(B[b, s:s + 1, 0:seq])
                du = nisa.tensor_tensor(delta_t, u_t, op=nl.multiply)
                dub = nisa.tensor_tensor(du, b_row.broadcast_to((P, seq)), op=nl.multiply)
                h = nisa.tensor_tensor_scan(decay, dub, initial=0, op0=np.multiply, op1=np.add)
                c_row = nl.load(C[b, s:s + 1, 0:seq])
                y = nisa.tensor_tensor(h, c_row.broadcast_to((P, seq)), op=nl.multiply)
                acc[t, 0:P, 0:seq] += y
        for t in nl.affine_range(tiles):
            nl.store(out[b, t * P:(t + 1) * P, 0:seq], acc[t, 0:P, 0:seq])
    return out


@nki.jit
def mamba_v2(delta, u, A, B, C):
    """Loop order batch, channel tile, state: delta and u are loaded once per channel tile and
    one accumulator serves each tile (the tutorial's loop reordering and fusion). delta * u
    stays inside the state loop, as the tutorial writes it: the compiler computes it once."""
    batch, channels, seq = delta.shape
    states = A.shape[1]
    out = nl.ndarray((batch, channels, seq), dtype=delta.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(batch):
        for t in nl.affine_range(channels // P):
            rows = slice(t * P, (t + 1) * P)
            acc = nl.zeros((nl.par_dim(P), seq), dtype=delta.dtype)
            delta_t = nl.load(delta[b, rows, 0:seq])
            u_t = nl.load(u[b, rows, 0:seq])
            for s in nl.affine_range(states):
                a_col = nl.load(A[rows, s])
                decay = nisa.activation(op=nl.exp, data=delta_t, scale=a_col)
                b_row = nl.load(B[b, s:s + 1, 0:seq])
                du = nisa.tensor_tensor(delta_t, u_t, op=nl.multiply)
                dub = nisa.tensor_tensor(du, b_row.broadcast_to((P, seq)), op=nl.multiply)
                h = nisa.tensor_tensor_scan(decay, dub, initial=0, op0=np.multiply, op1=np.add)
                c_row = nl.load(C[b, s:s + 1, 0:seq])
                y = nisa.tensor_tensor(h, c_row.broadcast_to((P, seq)), op=nl.multiply)
                acc[0:P, 0:seq] += y
            nl.store(out[b, rows, 0:seq], acc[0:P, 0:seq])
    return out


@nki.jit
def mamba_v3(delta, u, A, B, C, seq_tile=512):
    """v2 with the sequence cut into `seq_tile` pieces, the scan carried from piece to piece
    (the tutorial's seq_len tiling)."""
    batch, channels, seq = delta.shape
    states = A.shape[1]
    out = nl.ndarray((batch, channels, seq), dtype=delta.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(batch):
        for t in nl.affine_range(channels // P):
            rows = slice(t * P, (t + 1) * P)
            acc = nl.zeros((nl.par_dim(P), seq), dtype=delta.dtype)
            delta_t = nl.load(delta[b, rows, 0:seq])
            u_t = nl.load(u[b, rows, 0:seq])
            for s in nl.affine_range(states):
                a_col = nl.load(A[rows, s])
                carry = nl.zeros((P, 1), dtype=delta.dtype)
                for k in nl.static_range(seq // seq_tile):
                    cols = slice(k * seq_tile, (k + 1) * seq_tile)
                    decay = nisa.activation(op=nl.exp, data=delta_t[0:P, cols], scale=a_col)
                    b_row = nl.load(B[b, s:s + 1, cols])
                    du = nisa.tensor_tensor(delta_t[0:P, cols], u_t[0:P, cols], op=nl.multiply)
                    dub = nisa.tensor_tensor(du, b_row.broadcast_to((P, seq_tile)),
                                             op=nl.multiply)
                    h = nisa.tensor_tensor_scan(decay, dub, initial=carry, op0=np.multiply,
                                                op1=np.add)
                    carry[...] = h[0:P, seq_tile - 1]
                    c_row = nl.load(C[b, s:s + 1, cols])
                    y = nisa.tensor_tensor(h, c_row.broadcast_to((P, seq_tile)), op=nl.multiply)
                    acc[0:P, cols] += y
            nl.store(out[b, rows, 0:seq], acc[0:P, 0:seq])
    return out


KERNELS = {"v1": mamba_v1, "v2": mamba_v2, "v3": mamba_v3}


def inputs(channels, seq, batch=1, states=16, seed=0):
    """fp32 inputs in the ranges a Mamba layer sees (delta > 0, A < 0: a decaying state)."""
    rng = np.random.default_rng(seed)
    f = np.float32
    delta = rng.uniform(0.001, 0.1, (batch, channels, seq)).astype(f)
    u = rng.standard_normal((batch, channels, seq)).astype(f)
    A = -rng.uniform(0.5, 4.0, (channels, states)).astype(f)
    B = rng.standard_normal((batch, states, seq)).astype(f)
    C = rng.standard_normal((batch, states, seq)).astype(f)
    return delta, u, A, B, C


def reference(delta, u, A, B, C):
    """The layer in numpy (float64): the sum over states of C * h, h[i] = dA[i] h[i-1] + dBu[i]."""
    d = delta.astype(np.float64)
    dA = np.exp(d[:, :, None, :] * A[None, :, :, None])
    dBu = (d * u)[:, :, None, :] * B[:, None, :, :]
    h = np.zeros(dA.shape[:-1])
    out = np.zeros(d.shape)
    for i in range(d.shape[-1]):
        h = dA[..., i] * h + dBu[..., i]
        out[..., i] = (h * C[:, None, :, i]).sum(axis=2)
    return out
