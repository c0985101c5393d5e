"""Wall time of a plan search (issue 20's scale target): at least 1,000 plans of a 70B model on
256 Trn2 chips (16 trn2.48xlarge) in under 60 s on the local cores. The plans: every legal
TP x PP x DP at LNC 1 and 2, micro-batches 1, 2, 4, 8, ZeRO 0 and 1, recomputation none and
full; those that fit are timed, every distinct kernel simulated once (graph/kernel_cache_pool.h).
The same-run reference is the fully optimised 4096 x 8192 x 8192 matmul built and run
timing-only through the C++ kernel API, so that the ratio column tells a slow host from a slow
search.

    python3 bench/plan_search.py [--repetitions 3] [--model llama-2-70b] [--jobs N]

Prints the wall seconds (median), the plan counts, the target, the ratio to the reference and
pass/fail; exits 1 on a miss. Needs the trnsim package.
"""

import argparse
import os
import statistics
import sys
import time

import trnsim.models as tm
from trnsim import _core
from trnsim.kernel import load_chip

TARGET_S, MIN_PLANS = 60.0, 1000


def wall(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="llama-2-70b")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    chip = load_chip("trn1")

    def search():
        return tm.plan(a.model, system="trn2.48xlarge", servers=16, seq=4096, global_batch=1024,
                       lnc=[1, 2], micro_batch=[1, 2, 4, 8], jobs=a.jobs, top=3)

    def reference():
        prog = _core.build_example("matmul_fully_optimized", chip, [4096, 8192, 8192])
        return _core.run_program(chip, prog, "timing", [], False)

    times, ref = [], []
    for _ in range(a.repetitions):
        t, r = wall(search)
        times.append(t)
        ref.append(wall(reference)[0])
    s, rs = statistics.median(times), statistics.median(ref)
    ok = s < TARGET_S and r["enumerated"] >= MIN_PLANS
    best = r["best"][0] if r["best"] else None
    print(f"reference: fully optimised matmul 4096x8192x8192 build + timing run: {rs:.3f} s")
    print(f"plan search, {a.model} on 16 x trn2.48xlarge (256 chips), {a.jobs} threads: "
          f"{s:.1f} s wall (median of {a.repetitions}; target < {TARGET_S:.0f} s for >= "
          f"{MIN_PLANS} plans), {s / rs:.0f} x reference; {r['enumerated']} plans, "
          f"{r['illegal']} illegal, {r['pruned_memory']} do not fit, {r['timed']} timed, "
          f"{r['kernels_simulated']} kernels simulated: {'pass' if ok else 'fail'}")
    if best:
        print(f"  best: LNC {best['lnc']} TP {best['tp']} PP {best['pp']} DP {best['dp']} "
              f"micro-batch {best['micro_batch']} ZeRO-{best['zero']} recompute "
              f"{best['recompute']}: {best['step_time_s']:.2f} s a step, MFU "
              f"{100 * best['mfu']:.1f} %, bound by {best['bound']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
