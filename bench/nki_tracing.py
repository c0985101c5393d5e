"""Tracing overhead of the NKI front end: the fully optimised 4096 x 8192 x 8192 matmul
(examples/nki/matmul.py) traced from Python and simulated timing-only, against the same kernel
built with the C++ kernel API (examples/kernels/matmul_fully_optimized.cc) and simulated the
same way. Both produce the same program; the figure is the ratio of CPU times (target <= 2).

    python3 bench/nki_tracing.py [--chip trn1] [--repetitions 3] [--shape M K N]

Prints the median CPU seconds of each, their ratio, and pass/fail; exits 1 on a miss. Needs
the trnsim package (pip install . or PYTHONPATH with the built extension).
"""

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

import trnsim.nki as nki
from trnsim import _core
from trnsim.kernel import load_chip

ROOT = Path(__file__).resolve().parents[1]


def load_example():
    spec = importlib.util.spec_from_file_location("nki_matmul", ROOT / "examples/nki/matmul.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.matmul_fully_optimized


def cpu(f):
    t0 = time.process_time()
    out = f()
    return time.process_time() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chip", default="trn1")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--shape", type=int, nargs=3, default=[4096, 8192, 8192])
    a = ap.parse_args()
    m, k, n = a.shape
    chip = load_chip(a.chip)
    kernel = load_example()
    # Shapes only: timing-only runs read no data, so the arrays are never touched.
    lhsT = np.empty((k, m), ml_dtypes.bfloat16)
    rhs = np.empty((k, n), ml_dtypes.bfloat16)
    result = np.empty((m, n), ml_dtypes.bfloat16)

    def cpp():
        prog = _core.build_example("matmul_fully_optimized", chip, [m, k, n])
        _, figures, _, _ = _core.run_program(chip, prog, "timing", [], False)
        return prog.num_instructions, figures

    def python():
        _, run = nki.run(kernel, lhsT, rhs, result, chip=a.chip, mode="timing", trace=False)
        return run.instances[0][2], run.execution_ps  # the C++ figures have no launch

    cpp_t, py_t = [], []
    for _ in range(a.repetitions):  # interleaved, so a burst of load hits both alike
        t, (n_cpp, figures) = cpu(cpp)
        cpp_t.append(t)
        t, (n_py, total_py) = cpu(python)
        py_t.append(t)
    import json

    total_cpp = json.loads(figures)["total_ps"]
    if n_cpp != n_py or total_cpp != total_py:
        print(f"programs differ: C++ {n_cpp} instructions {total_cpp} ps, "
              f"Python {n_py} instructions {total_py} ps")
        return 1
    c, p = statistics.median(cpp_t), statistics.median(py_t)
    ratio = p / c
    print(f"fully optimised matmul {m}x{k}x{n} on {a.chip}: {n_cpp} instructions, "
          f"simulated {total_cpp / 1e6:.1f} us")
    print(f"C++ kernel API build + timing run : {c:.3f} s CPU (median of {a.repetitions})")
    print(f"NKI trace + timing run from Python: {p:.3f} s CPU")
    ok = ratio <= 2.0
    print(f"ratio {ratio:.2f} (target <= 2): {'pass' if ok else 'fail'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
