"""Host instructions per simulated instruction of the timing-only runs (bench/timing_speed.cc's
BM_TimingOnly kernels), counted by callgrind: exact and independent of the host's load, so two
builds can be compared on a shared, noisy machine where timings swing by 1.5x. The same count
for the event-loop reference (BM_Reference_EventLoop: host instructions per event) gives the
ratio column, the machine-independent form of the figure.

    python3 bench/host_instructions.py [--build build/release-bench] [--filter REGEX]

Needs valgrind (Debian: apt-get install valgrind) and the benchmark built (scripts/bench.sh
builds it). Each kernel is built once and run once under callgrind (a few minutes for the
largest); only `core::run_timing` is counted, and within it the preparation pass
(`core::TimingProgram`). These are instruction counts, not time: a change that trades
instructions for cache misses shows here as a gain it may not be (bench/README.md).
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def callgrind(binary, bench_filter, toggle, out_dir):
    """Runs one benchmark (one iteration) under callgrind; returns (its JSON record, counted
    host instructions, the inclusive count of each function named in the profile)."""
    out = Path(out_dir) / "callgrind.out"
    cmd = [
        "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
        f"--toggle-collect={toggle}", str(binary), f"--benchmark_filter={bench_filter}",
        "--benchmark_min_time=0", "--benchmark_format=json",
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {run.returncode}\n{run.stderr[-2000:]}")
    records = [b for b in json.loads(run.stdout)["benchmarks"] if b.get("run_type") == "iteration"]
    if len(records) != 1:
        sys.exit(f"{bench_filter}: expected one benchmark, got {len(records)}")
    if records[0].get("error_occurred"):
        sys.exit(f"{bench_filter}: {records[0].get('error_message')}")
    collected = re.search(r"Collected\s*:\s*(\d+)", run.stderr)
    if not collected:
        sys.exit(f"{bench_filter}: no 'Collected' line in valgrind's output")
    annotate = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(out)],
                              capture_output=True, text=True, check=False).stdout
    return records[0], int(collected.group(1)), annotate


def inclusive(annotate, function):
    """The inclusive instruction count of the first profile line naming `function` (0: none)."""
    for line in annotate.splitlines():
        if function in line:
            m = re.match(r"\s*([\d,]+)", line)
            if m:
                return int(m.group(1).replace(",", ""))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build/release-bench", help="the benchmarks' build folder")
    ap.add_argument("--filter", default=".", help="regex on the kernel labels")
    args = ap.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        sys.exit("valgrind and callgrind_annotate are needed (Debian: apt-get install valgrind)")
    binary = (ROOT / args.build / "bench" / "bench_timing_speed").resolve()
    if not binary.exists():
        sys.exit(f"{binary}: not built (bash scripts/bench.sh builds it)")

    listed = subprocess.run([str(binary), "--benchmark_list_tests"], capture_output=True,
                            text=True, check=True).stdout.split()
    labels = [n.split("/", 1)[1] for n in listed if n.startswith("BM_TimingOnly/")]
    labels = [label for label in labels if re.search(args.filter, label)]
    if not labels:
        sys.exit(f"no BM_TimingOnly kernel matches {args.filter!r}")

    with tempfile.TemporaryDirectory() as tmp:
        ref, ref_count, _ = callgrind(binary, "^BM_Reference_EventLoop$",
                                      "*BM_Reference_EventLoop*", tmp)
        per_event = ref_count / (ref["iterations"] * ref["events"])
        print(f"reference event loop: {per_event:.1f} host instructions per event")
        print(f"{'kernel':28s} {'instructions':>12s} {'host/instr':>10s} {'of which prep':>13s} "
              f"{'events/instr':>12s} {'ref events/instr':>16s}")
        for label in labels:
            rec, count, annotate = callgrind(binary, f"^BM_TimingOnly/{re.escape(label)}$",
                                             "trnsim::core::run_timing*", tmp)
            runs = rec["iterations"]
            n = rec["instructions"] * runs
            prep = inclusive(annotate, "trnsim::core::TimingProgram::TimingProgram(")
            print(f"{label:28s} {rec['instructions']:12.0f} {count / n:10.0f} {prep / n:13.0f} "
                  f"{rec['events_per_instruction']:12.2f} {count / n / per_event:16.1f}")


if __name__ == "__main__":
    main()
