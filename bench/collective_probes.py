"""Side-by-side probes of the collective model (issue 16): a 1 GiB fp32 all-reduce on rings
and square tori of 8 to 4,096 chips (trn2 chips and links, `--set` what-ifs of
trn2.48xlarge), each algorithm that applies, against its alpha-beta bound:

    bound = sum over steps of alpha + max(beta_link, beta_dma)
    alpha      = step latency + the step's handshakes (runtime sync.*, as simulated)
    beta_link  = 2 (n-1)/n S / (links out of a chip x link bandwidth)   (both directions used)
    beta_dma   = (red + 1) (n-1)/n S / (a chip's collective DMA rate)   (red: a reduction's cost)

The bound assumes every link of a chip busy and every step one hop; what an algorithm loses
against it (hops per step, links left idle, steps) is what the ratio shows.

    python3 bench/collective_probes.py [--per-rank] [--cli build/release/src/trnsim]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

GIB = 1 << 30
LINK_GBPS = 256.0  # trn2.48xlarge server.link_gbps (one link, one direction)

PROBES = [("ring", [8]), ("ring", [64]), ("ring", [512]), ("ring", [4096]),
          ("torus", [4, 4]), ("torus", [8, 8]), ("torus", [16, 16]), ("torus", [32, 32]),
          ("torus", [64, 64])]
ALGORITHMS = ["ring", "torus-ring", "rdh"]


CLI = [sys.executable, "-m", "trnsim"]


def run(dims: list[int], algo: str, per_rank: bool) -> tuple[dict | None, float]:
    chips = 1
    for d in dims:
        chips *= d
    cmd = CLI + ["collective", "all-reduce", "--system",
           "trn2.48xlarge", "--set", f"server.chips={chips}",
           "--set", f"server.torus_dims=[{','.join(map(str, dims))}]", "--rank-unit", "chip",
           "--ranks", str(chips), "--sizes", "1GiB", "--algorithm", algo, "--json"]
    if per_rank:
        cmd.append("--per-rank")
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        return None, wall
    return json.loads(p.stdout), wall


def bound(sweep: dict, row: dict, dims: list[int]) -> tuple[float, float, float, int]:
    n = sweep["ranks"]
    S = float(row["size_bytes"])
    steps = sum(p["steps"] for p in row["phases"])
    alpha = steps * sweep["step_latency_us"] + row["sync_us"]
    links = 2 * sum(1 for d in dims if d > 1)
    beta_link = 2 * (n - 1) / n * S / (links * LINK_GBPS * 1e9) * 1e6
    red = sweep["reduction_dma_factor"]
    beta_dma = (red + 1) * (n - 1) / n * S / (sweep["rank_dma_gbps"] * 1e9) * 1e6
    return alpha, beta_link, beta_dma, steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-rank", action="store_true", help="also time the unfolded runs")
    ap.add_argument("--cli", help="a trnsim executable (default: python -m trnsim)")
    args = ap.parse_args()
    if args.cli:
        CLI[:] = [args.cli]
    head = (f"{'shape':>8} {'chips':>6} {'algorithm':>11} {'steps':>6} {'alpha us':>9} "
            f"{'b_link us':>9} {'b_dma us':>9} {'bound us':>9} {'sim us':>9} {'sim/bound':>9} "
            f"{'wall s':>7}")
    if args.per_rank:
        head += f" {'per-rank s':>10}"
    print(head)
    for kind, dims in PROBES:
        for algo in ALGORITHMS:
            sweep, wall = run(dims, algo, False)
            if sweep is None:
                continue
            row = sweep["rows"][0]
            alpha, b_link, b_dma, steps = bound(sweep, row, dims)
            b = alpha + max(b_link, b_dma)
            line = (f"{'x'.join(map(str, dims)):>8} {sweep['ranks']:>6} {algo:>11} {steps:>6} "
                    f"{alpha:>9.0f} {b_link:>9.0f} {b_dma:>9.0f} {b:>9.0f} "
                    f"{row['device_us']:>9.0f} {row['device_us'] / b:>9.2f} {wall:>7.2f}")
            if args.per_rank:
                _, wall_pr = run(dims, algo, True)
                line += f" {wall_pr:>10.2f}"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
