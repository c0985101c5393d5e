"""The cost of NKI's dynamic loops against the figures of the "NKI Dynamic Loops" guide (trn1,
NKI 0.6.0): a loop whose body loads a [128, 2048] fp32 tile from HBM, applies
nisa.activation and nisa.tensor_scalar and stores it, 64 tiles, took about 7.5 us per tile as
an unrolled (range) loop, 17.9 us per iteration as a dynamic loop (fori_loop; a drain and a
barrier of all engines end every iteration), and 10.2 us per tile with four tiles per
iteration. trnsim runs the same three kernels (hardware loops: src/kernel/builder_loop.cc)
and prints its figure beside the guide's.

    python3 bench/nki_dynamic_loop.py [--tiles 64]
"""

from __future__ import annotations

import argparse

import numpy as np

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl

GUIDE_US = {"unrolled": 7.5, "dynamic": 17.9, "dynamic, 4 per iteration": 10.2}


def make(loop, per, tiles):
    rows = 128 * per

    @nki.jit(chip="trn1")
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for j in loop(tiles // per):
            for k in nl.static_range(per):
                if loop is nl.dynamic_range:
                    src = x.ap([[2048, 128], [1, 2048]], offset=k * 128 * 2048,
                               scalar_offset=j * rows)
                    dst = out.ap([[2048, 128], [1, 2048]], offset=k * 128 * 2048,
                                 scalar_offset=j * rows)
                else:
                    src = x[(j * per + k) * 128:(j * per + k + 1) * 128, :]
                    dst = out[(j * per + k) * 128:(j * per + k + 1) * 128, :]
                t = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=src)
                a = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.sbuf)
                nisa.activation(dst=a, op=nl.exp, data=t)
                b = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_scalar(dst=b, data=a, op0=nl.multiply, operand0=2.0)
                nisa.dma_copy(dst=dst, src=b)
        return out

    return kernel


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiles", type=int, default=64)
    args = ap.parse_args()
    x = np.random.default_rng(0).standard_normal((128 * args.tiles, 2048)).astype(np.float32)
    want = 2 * np.exp(x)
    print(f"{'loop':28} {'trnsim us':>10} {'guide us':>9} {'ratio':>6}")
    for name, loop, per in (("unrolled", nl.static_range, 1), ("dynamic", nl.dynamic_range, 1),
                            ("dynamic, 4 per iteration", nl.dynamic_range, 4)):
        k = make(loop, per, args.tiles)
        np.testing.assert_allclose(k(x), want, rtol=1e-5)
        # Per tile; for the one-tile dynamic loop that is the guide's per-iteration figure.
        us = k.last_run.execution_ps / 1e6 / args.tiles
        print(f"{name:28} {us:10.2f} {GUIDE_US[name]:9.1f} {us / GUIDE_US[name]:6.2f}")


if __name__ == "__main__":
    main()
