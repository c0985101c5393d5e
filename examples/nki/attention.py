"""One head of flash-style self-attention in NKI's current dialect, the same instructions as
the C++ example `attention` (examples/kernels/attention.cc): per block of 128 queries an online
softmax over key blocks of 512, scores on TensorE, the causal mask on GpSimd (affine_select),
p = exp(s - m) with its row sum on ScalarE, p transposed on TensorE in 128-key pieces and
multiplied with v, o rescaled by exp(m_old - m_new); out = o / l.

Inputs: qT[d, S], kT[d, S] (transposed, as TensorE takes them), v[S, d] in bf16; out[S, d] fp32.

    python3 examples/nki/attention.py [SEQ D] [--causal]
"""

import math

import numpy as np

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl

NEG_BIG = -3.0e38  # stands for -inf: exp() of a masked score is exactly 0


@nki.jit
def attention(qT, kT, v, out, causal=False):
    d, seq = qT.shape
    kq = ksub = 128
    bk = 512 if seq % 512 == 0 else ksub
    scale = 1.0 / math.sqrt(d)
    bf16, f32 = nl.bfloat16, nl.float32
    kT_sb = nl.ndarray((d, seq), bf16, buffer=nl.sbuf)
    nisa.dma_copy(dst=kT_sb, src=kT)
    v_sb = nl.ndarray((ksub, seq // ksub, d), bf16, buffer=nl.sbuf)
    for j in range(seq // ksub):
        nisa.dma_copy(dst=v_sb[:, j], src=v[j * ksub:(j + 1) * ksub])

    def bufs(shape, dtype, buffer=nl.sbuf):
        return [nl.ndarray(shape, dtype, buffer=buffer) for _ in range(2)]

    q_bufs = bufs((d, kq), bf16)
    s_psum = bufs((kq, bk), f32, nl.psum)
    s_bufs = bufs((kq, bk), f32)
    p_bufs = bufs((kq, bk), bf16)
    pT_psum = bufs((ksub, kq), f32, nl.psum)
    pT_bufs = bufs((ksub, kq), bf16)
    o_psum = bufs((kq, d), f32, nl.psum)
    o_bufs = bufs((kq, d), f32)
    col_bufs = bufs((kq, 8), f32)  # m, -m', m', block max, rowsum, a, l, 1/l
    step = sub = 0
    for qb in range(seq // kq):
        q0 = qb * kq
        q_sb, o_acc, cols = q_bufs[qb % 2], o_bufs[qb % 2], col_bufs[qb % 2]
        m, neg_m, m_new, bmax, rowsum, alpha, l_sum, inv_l = (cols[:, c:c + 1] for c in range(8))
        nisa.dma_copy(dst=q_sb, src=qT[:, q0:q0 + kq])
        nisa.memset(dst=m, value=NEG_BIG)
        nisa.memset(dst=l_sum, value=0.0)
        nisa.memset(dst=o_acc, value=0.0)
        for k0 in range(0, seq, bk):
            if causal and k0 > q0 + kq - 1:
                break  # every key of the block is after every query
            sp, s, p = s_psum[step % 2], s_bufs[step % 2], p_bufs[step % 2]
            pv = o_psum[step % 2]
            step += 1
            nisa.nc_matmul(sp, q_sb, kT_sb[:, k0:k0 + bk])
            nisa.activation(dst=s, op=nl.copy, data=sp, scale=scale)
            if causal and k0 + bk - 1 > q0:  # keep key k0 + i for query q0 + row if i <= row
                nisa.affine_select(dst=s, pattern=[[1, bk]], offset=k0 - q0,
                                   channel_multiplier=-1, on_true_tile=s,
                                   on_false_value=NEG_BIG, cmp_op=nl.less_equal)
            nisa.tensor_reduce(dst=bmax, op=nl.max, data=s, axis=1)
            nisa.tensor_tensor(dst=m_new, data1=m, data2=bmax, op=nl.maximum)
            nisa.tensor_scalar(dst=neg_m, data=m_new, op0=nl.multiply, operand0=-1.0)
            nisa.activation(dst=p, op=nl.exp, data=s, bias=neg_m, reduce_op=nl.add,
                            reduce_res=rowsum)
            nisa.activation(dst=alpha, op=nl.exp, data=m, bias=neg_m)
            nisa.scalar_tensor_tensor(dst=l_sum, data=l_sum, op0=nl.multiply, operand0=alpha,
                                      op1=nl.add, operand1=rowsum)
            nisa.tensor_copy(dst=m, src=m_new)
            for j in range(bk // ksub):
                tb = sub % 2
                sub += 1
                nisa.nc_transpose(dst=pT_psum[tb], data=p[:, j * ksub:(j + 1) * ksub])
                nisa.tensor_copy(dst=pT_bufs[tb], src=pT_psum[tb])
                nisa.nc_matmul(pv, pT_bufs[tb], v_sb[:, k0 // ksub + j], accumulate=j != 0)
            nisa.scalar_tensor_tensor(dst=o_acc, data=o_acc, op0=nl.multiply, operand0=alpha,
                                      op1=nl.add, operand1=pv)
        nisa.reciprocal(dst=inv_l, data=l_sum)
        nisa.tensor_scalar(dst=o_acc, data=o_acc, op0=nl.multiply, operand0=inv_l)
        nisa.dma_copy(dst=out[q0:q0 + kq], src=o_acc)


def reference(qT, kT, v, causal):
    q, k, vv = (a.astype(np.float32) for a in (qT.T, kT.T, v))
    s = q @ k.T / math.sqrt(q.shape[1])
    if causal:
        s = np.where(np.tril(np.ones_like(s)) > 0, s, -np.inf)
    p = np.exp(s - s.max(1, keepdims=True))
    return (p / p.sum(1, keepdims=True)) @ vv


if __name__ == "__main__":
    import sys

    import ml_dtypes

    causal = "--causal" in sys.argv
    args = [int(a) for a in sys.argv[1:] if not a.startswith("--")] or [512, 64]
    seq, d = args
    rng = np.random.default_rng(0)
    qT, kT = (rng.standard_normal((d, seq)).astype(ml_dtypes.bfloat16) for _ in range(2))
    v = rng.standard_normal((seq, d)).astype(ml_dtypes.bfloat16)
    out = np.zeros((seq, d), np.float32)
    attention(qT, kT, v, out, causal=causal)
    err = np.abs(out - reference(qT, kT, v, causal)).max()
    print(f"{nki.last_run()}: max |err| {err:.3g}")
