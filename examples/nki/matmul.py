"""The NKI matrix-multiplication tutorial's fully optimised kernel (kernel 4), written for NKI's
current dialect and run on trnsim: result[M, N] (bf16) = lhsT[K, M].T @ rhs[K, N].

M, N and K are blocked (16, 2 and 8 tiles per block: blocks of 2048 x 1024 x 1024); per N block
the result rows of every M tile stay in SBUF, each K block's PSUM tile is added into them, and
each M tile is stored with one DMA. The same kernel, instruction for instruction, is the C++
example `matmul_fully_optimized` (examples/kernels/matmul_fully_optimized.cc), so both give the
same values and the same simulated time.

    python3 examples/nki/matmul.py [M K N] [--chip trn2]
"""

import numpy as np

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


@nki.jit
def matmul_fully_optimized(lhsT, rhs, result, tiles_m=16, tiles_n=2, tiles_k=8):
    # Loads alternate between the Sync and Scalar queues, as the C++ kernel's DMA policy.
    nki.set_dma_policy(load_triggers=("sync", "scalar"))
    K, M = lhsT.shape
    N = rhs.shape[1]
    tk, tm = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax
    tn = nl.tile_size.gemm_moving_fmax
    block_m, block_n, block_k = tm * tiles_m, tn * tiles_n, tk * tiles_k
    assert M % block_m == 0 and N % block_n == 0 and K % block_k == 0

    rhs_bufs = [nl.ndarray((tk, tiles_k, block_n), nl.bfloat16, buffer=nl.sbuf) for _ in range(2)]
    lhsT_bufs = [nl.ndarray((tk, tiles_k, block_m), nl.bfloat16, buffer=nl.sbuf) for _ in range(2)]
    psum_bufs = [nl.ndarray((tm, tn), nl.float32, buffer=nl.psum) for _ in range(4)]
    rhs_load = lhsT_load = tile = 0
    for nb in nl.affine_range(N // block_n):
        n0 = nb * block_n
        res_tiles = []
        for mt in nl.affine_range(M // tm):
            res_tiles.append(nl.ndarray((tm, tiles_n, tn), nl.bfloat16, buffer=nl.sbuf))
            nisa.memset(dst=res_tiles[-1], value=0.0)
        for kb in nl.sequential_range(K // block_k):
            rhs_tiles = rhs_bufs[rhs_load % 2]
            rhs_load += 1
            for kt in nl.affine_range(tiles_k):
                k0 = (kb * tiles_k + kt) * tk
                nisa.dma_copy(dst=rhs_tiles[:, kt, :], src=rhs[k0:k0 + tk, n0:n0 + block_n])
            for mb in nl.affine_range(M // block_m):
                m0 = mb * block_m
                lhsT_tiles = lhsT_bufs[lhsT_load % 2]
                lhsT_load += 1
                for kt in nl.affine_range(tiles_k):
                    k0 = (kb * tiles_k + kt) * tk
                    nisa.dma_copy(dst=lhsT_tiles[:, kt, :], src=lhsT[k0:k0 + tk, m0:m0 + block_m])
                for nt in nl.affine_range(tiles_n):
                    for mt in nl.affine_range(tiles_m):
                        res_psum = psum_bufs[tile % 4]
                        tile += 1
                        for kt in nl.affine_range(tiles_k):
                            nisa.nc_matmul(res_psum, lhsT_tiles[:, kt, mt * tm:(mt + 1) * tm],
                                           rhs_tiles[:, kt, nt * tn:(nt + 1) * tn])
                        acc = res_tiles[mb * tiles_m + mt][:, nt, :]
                        nisa.tensor_tensor(dst=acc, data1=acc, data2=res_psum, op=nl.add)
        for mt in nl.affine_range(M // tm):
            nisa.dma_copy(dst=result[mt * tm:(mt + 1) * tm, n0:n0 + block_n],
                          src=res_tiles[mt].reshape((tm, block_n)))
        # Drop the last loop's references so this block's tiles are freed before the next
        # block allocates (as the C++ kernel's scopes do), and memory is reused the same way.
        del res_tiles, acc


def main():
    import argparse

    import ml_dtypes

    ap = argparse.ArgumentParser()
    ap.add_argument("shape", nargs="*", type=int, default=[2048, 1024, 1024])
    ap.add_argument("--chip", default=None)
    a = ap.parse_args()
    m, k, n = a.shape
    rng = np.random.default_rng(0)
    lhsT = rng.uniform(-1, 1, (k, m)).astype(ml_dtypes.bfloat16)
    rhs = rng.uniform(-1, 1, (k, n)).astype(ml_dtypes.bfloat16)
    result = np.zeros((m, n), ml_dtypes.bfloat16)
    tiles_m = min(16, m // 128)
    matmul_fully_optimized = nki.simulate(globals()["matmul_fully_optimized"], chip=a.chip)
    matmul_fully_optimized(lhsT, rhs, result, tiles_m=tiles_m)
    run = nki.last_run()
    ref = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    err = np.abs(result.astype(np.float32) - ref).max()
    print(f"{run.chip}: {m}x{k}x{n} in {run.latency_us:.1f} us (simulated), max |err| {err:.3g}")


if __name__ == "__main__":
    main()
