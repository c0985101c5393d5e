"""Host time of a model's timing-only forward (issue 19's speed targets): Llama-3.1-8B over
8,192 tokens on one Trn2 chip in under 10 s, Llama-3.1-70B in under 30 s, compiled (fusion,
tiling search, kernel cache) and simulated from scratch each repetition; and of a training step
(forward, backward, AdamW) of Llama-3.1-8B over the same tokens, held to the forward's 10 s. The same-run
reference is the fully optimised 4096 x 8192 x 8192 matmul built and run timing-only through
the C++ kernel API (the figure bench_timing_speed measures), so that the ratio column tells a
slow host from a slow compiler.

    python3 bench/model_speed.py [--repetitions 3] [--seq 8192] [--chip trn2]

Prints CPU seconds (median of the repetitions, interleaved with the reference's), the target,
the ratio to the reference and pass/fail; exits 1 on a miss. Needs the trnsim package.
"""

import argparse
import statistics
import sys
import time

import trnsim.models as tm
from trnsim import _core
from trnsim.kernel import load_chip

# (model, training step, target CPU seconds)
TARGETS = [("llama-3.1-8b", False, 10.0), ("llama-3.1-70b", False, 30.0), ("llama-3.1-8b", True, 10.0)]


def cpu(f):
    t0 = time.process_time()
    out = f()
    return time.process_time() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chip", default="trn2")
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--repetitions", type=int, default=3)
    a = ap.parse_args()
    chip = load_chip("trn1")

    def reference():
        prog = _core.build_example("matmul_fully_optimized", chip, [4096, 8192, 8192])
        return _core.run_program(chip, prog, "timing", [], False)

    times = {c: [] for c in TARGETS}
    ref = []
    results = {}
    for _ in range(a.repetitions):
        for c in TARGETS:
            t, results[c] = cpu(lambda c=c: tm.run(c[0], a.chip, seq=a.seq, train=c[1]))
            times[c].append(t)
        t, _ = cpu(reference)
        ref.append(t)
    r = statistics.median(ref)
    print(f"reference: fully optimised matmul 4096x8192x8192 build + timing run: {r:.3f} s CPU")
    failed = False
    for c in TARGETS:
        m, train, target = c
        s = statistics.median(times[c])
        j = results[c].json
        ok = s < target
        failed |= not ok
        print(f"{m} {'training step' if train else 'forward'}, {a.seq} tokens on {a.chip} (tp {j['tp']}): {s:.2f} s CPU "
              f"(median of {a.repetitions}; target < {target:.0f} s), {s / r:.1f} x reference, "
              f"{j['kernels']} kernels, {j['kernels_simulated']} distinct, "
              f"{j['simulations']} simulator runs: {'pass' if ok else 'fail'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
