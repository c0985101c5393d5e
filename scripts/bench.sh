#!/usr/bin/env bash
# Builds the benchmarks of the simulator (Release, build/release-bench) and runs them, each
# figure repeated 5 times with the repetitions of all figures interleaved at random, then prints
# one table: figure, median (timing-only rates: the best repetition too), target, the same-run
# reference, the ratio to it, pass/fail.
# What each figure means: bench/README.md. Assumes scripts/install.sh has run.
#
#   bash scripts/bench.sh                       # everything
#   bash scripts/bench.sh --benchmark_filter=X  # extra arguments go to every bench program
#
# Environment: TRNSIM_BENCH_BUILD_DIR (default build/release-bench), TRNSIM_BENCH_REPETITIONS
# (default 5), TRNSIM_BENCH_JOBS (build jobs, default nproc), TRNSIM_BENCH_OUT (a folder to keep
# the JSON reports in). Exits 1 when a figure misses its
# target (machines are noisy: compare the ratio column across machines, not the medians). Then
# bench/nki_tracing.py, bench/model_speed.py and bench/plan_search.py, when the trnsim Python package is importable.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TRNSIM_BENCH_BUILD_DIR:-build/release-bench}
reps=${TRNSIM_BENCH_REPETITIONS:-5}
jobs=${TRNSIM_BENCH_JOBS:-$(nproc 2>/dev/null || echo 2)}
benches=(timing_speed functional_matmul)

echo "== host: $(nproc) CPUs, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
echo "== build ($build)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRNSIM_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target "${benches[@]/#/bench_}"

# The JSON reports stay in TRNSIM_BENCH_OUT when it is set.
if [[ -n "${TRNSIM_BENCH_OUT:-}" ]]; then
  out=$TRNSIM_BENCH_OUT
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
for b in "${benches[@]}"; do
  echo "== bench_$b"
  # One BLAS thread: the simulator runs on one host core and so does its reference.
  OPENBLAS_NUM_THREADS=1 "$build/bench/bench_$b" --benchmark_repetitions="$reps" \
    --benchmark_display_aggregates_only=true --benchmark_enable_random_interleaving=true \
    --benchmark_out="$out/$b.json" --benchmark_out_format=json "$@"
done

status=0
python3 - "$out" "${benches[@]}" <<'PY' || status=$?
import json, sys

out, names = sys.argv[1], sys.argv[2:]
med = {}   # run name -> median aggregate
best = {}  # run name -> the fastest repetition (highest items/s, or FLOP/s)
for n in names:
    for b in json.load(open(f"{out}/{n}.json"))["benchmarks"]:
        # Drop the suffixes Google Benchmark adds (/real_time, /iterations:1) and the
        # argument names (M:512 -> 512).
        parts = [p.split(":")[-1] for p in b["run_name"].split("/")
                 if p != "real_time" and not p.startswith("iterations:")]
        key = "/".join(parts)
        if b.get("aggregate_name") == "median":
            med[key] = b
        elif b.get("run_type") == "iteration":
            rate = b.get("items_per_second", b.get("FLOP/s"))
            if rate is not None and (key not in best or rate > best[key]["rate"]):
                best[key] = dict(b, rate=rate)

def seconds(b, clock="real_time"):  # the median's wall (or CPU) time per iteration
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
    return b[clock] * scale

rows, failed = [], False
def row(figure, value, target, ref, ratio, ok):
    global failed
    failed |= ok is False
    rows.append((figure, value, target, ref, ratio, "-" if ok is None else ("pass" if ok else "FAIL")))

# Timing-only rates: the median of the repetitions, and the best one with the best reference
# repetition. Other guests slow a shared host's core down by up to ~40 % at times; the best
# repetition is the closest to one core's own speed, and it decides pass / fail (the ratio to
# the same-run reference tells a slow host from a slow simulator).
loop, loop_best = med.get("BM_Reference_EventLoop"), best.get("BM_Reference_EventLoop")
for name, b in sorted(med.items()):
    if not name.startswith("BM_TimingOnly/"):
        continue
    kernel = name.split('/', 1)[1]
    for label, run, ref in (("median", b, loop), ("best", best.get(name), loop_best)):
        if run is None:
            continue
        rate = run["items_per_second"]
        row(f"timing-only {kernel} (instr/s, {label})", f"{rate / 1e6:.2f} M", ">= 5 M",
            f"{ref['items_per_second'] / 1e6:.1f} M ev/s" if ref else "?",
            f"{rate / ref['items_per_second']:.3f} instr/ev" if ref else "?",
            rate >= 5e6 if label == "best" else None)
for part, label in (("build", "build"), ("run", "run"), ("build_and_run", "build + run")):
    b = med.get(f"BM_FullyOptimized/{part}")
    if b is None:
        continue
    s = seconds(b)
    target = "< 2 s" if part == "build_and_run" else ""
    row(f"fully optimised 4096x8192x8192 {label} (wall)",
        f"{s:.3f} s (cpu {seconds(b, 'cpu_time'):.3f})", target,
        f"{seconds(loop, 'cpu_time'):.3f} s loop (cpu)" if loop else "?",
        f"{seconds(b, 'cpu_time') / seconds(loop, 'cpu_time'):.2f} loops (cpu)" if loop else "?",
        (s < 2.0) if part == "build_and_run" else None)
# The same for the functional figure: median against median, best against best (deciding).
for name, b in sorted(med.items()):
    if not name.startswith("BM_FunctionalMatmulBf16/"):
        continue
    shape = name.split("/", 1)[1]
    for label, run, ref in (("median", b, med.get("BM_Sgemm/" + shape)),
                            ("best", best.get(name), best.get("BM_Sgemm/" + shape))):
        if run is None:
            continue
        f = run["FLOP/s"]
        ratio = f / ref["FLOP/s"] if ref else None
        row(f"functional bf16 matmul {'x'.join(shape.split('/')[:3])} (FLOP/s, {label})",
            f"{f / 1e9:.2f} G", ">= 25 % sgemm",
            f"{ref['FLOP/s'] / 1e9:.1f} G sgemm" if ref else "?",
            f"{100 * ratio:.1f} %" if ratio else "?",
            (ratio >= 0.25 if ratio else False) if label == "best" else None)
tile, stile = med.get("BM_MatmulKernelTile"), med.get("BM_SgemmTile")
if tile and stile:
    row("PE-array arithmetic, one 128x128x512 tile (FLOP/s)", f"{tile['FLOP/s'] / 1e9:.2f} G", "",
        f"{stile['FLOP/s'] / 1e9:.1f} G sgemm", f"{100 * tile['FLOP/s'] / stile['FLOP/s']:.1f} %",
        None)

head = ("figure", "value", "target", "same-run reference", "ratio", "")
widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
print("\n== medians of the repetitions (timing-only rates: the best repetition too)")
for r in [head] + rows:
    print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
for name, b in sorted(med.items()):
    if name.startswith("BM_FunctionalMatmulBf16Phases/"):
        shares = sorted(((k[4:], v) for k, v in b.items() if k.startswith("pct_")),
                        key=lambda kv: -kv[1])
        print(f"\nhost time of a functional matmul run by opcode "
              f"({'x'.join(name.split('/')[1:4])}): "
              + ", ".join(f"{k} {v:.1f} %" for k, v in shares))
sys.exit(1 if failed else 0)
PY

# The NKI front end's tracing overhead against the C++ kernel API (bench/nki_tracing.py): it
# needs the Python package (pip install . , or PYTHONPATH with the built extension).
if python3 -c "import trnsim._core" 2>/dev/null; then
  echo "== bench/nki_tracing.py"
  python3 bench/nki_tracing.py --repetitions "$reps" || status=$?
  echo "== bench/model_speed.py"
  python3 bench/model_speed.py --repetitions 3 || status=$?
  echo "== bench/plan_search.py"
  python3 bench/plan_search.py --repetitions 3 || status=$?
else
  echo "== bench/nki_tracing.py skipped: the trnsim Python package is not importable"
fi
exit $status
