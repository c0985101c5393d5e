"""A profile drawn with matplotlib (``trnsim profile TARGET --plot FILE``, docs/profile.md).

``plot(profile, path)`` writes one figure of three panels: where each engine's time went (busy,
the waits, idle), each engine's share of the critical path, and the roofline with the kernel's
point on it; a profile of several cores draws its slowest core's (the one that sets the chip's
time). ``trnsim.profile.plot`` is this function. matplotlib is optional: it is imported
when a plot is drawn, with the Agg backend (no display needed).
"""

from __future__ import annotations

import io
import os

from trnsim._files import write_bytes_atomically

# (key in figures["engines"][name], legend label, colour), in the order the bars stack.
_TIME_PARTS = (
    ("busy_ns", "busy", "#2ca02c"),
    ("wait_semaphore_ns", "wait semaphore", "#ff7f0e"),
    ("wait_dma_ns", "wait DMA", "#1f77b4"),
    ("wait_port_ns", "wait port", "#9467bd"),
    ("wait_own_ns", "wait own", "#8c564b"),
    ("wait_barrier_ns", "wait barrier", "#e377c2"),
    ("idle_ns", "idle", "#c7c7c7"),
)
_FORMATS = {".png": "png", ".svg": "svg"}
# No creation date or software version in the file: the same profile gives the same bytes.
_METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}


def _pyplot():
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("trnsim profile plots need matplotlib: pip install matplotlib "
                          f"(see requirements-dev.txt) ({e})") from e
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _format(path) -> str:
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in _FORMATS:
        raise ValueError(f"profile plot: {os.fspath(path)}: expected a name ending in .png or "
                         f".svg, got {suffix or 'no suffix'!r}")
    return _FORMATS[suffix]


def _figures(profile) -> dict:
    figures = getattr(profile, "figures", profile)
    if isinstance(figures, dict) and isinstance(figures.get("chip"), dict) and "cores" in figures:
        # Several cores: the slowest core's profile, whose end is the chip's.
        chip = figures["chip"]
        core = dict(figures["cores"][chip["slowest_core"]])
        core["chip"] = (f"{chip['name']} core {chip['slowest_core']} (the slowest of "
                        f"{chip['cores']})")
        if "manifest" in figures:
            core["manifest"] = figures["manifest"]
        figures = core
    if not isinstance(figures, dict) or not {"engines", "critical_path", "roofline"} <= set(
            figures):
        raise TypeError("profile plot: expected a trnsim.profile.Profile (or its figures dict), "
                        f"got {type(profile).__name__}")
    return figures


def _engine_times(ax, figures):
    engines = figures["engines"]
    names = list(engines)
    left = [0.0] * len(names)
    for key, label, colour in _TIME_PARTS:
        ms = [engines[n].get(key, 0.0) / 1e6 for n in names]
        if key == "wait_barrier_ns" and not any(ms):
            continue  # one core: no barriers; keep the legend to what is there
        ax.barh(names, ms, left=left, label=label, color=colour)
        left = [a + b for a, b in zip(left, ms)]
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    ax.set_title("where each engine's time went")
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=4,
              frameon=False)


def _critical_path(ax, figures):
    cp = figures["critical_path"]
    share = cp.get("per_engine_share") or {}
    names = list(share)
    pct = [100.0 * share[n] for n in names]
    bars = ax.barh(names, pct, color="#d62728")
    for bar, p in zip(bars, pct):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {p:.1f} %",
                va="center", fontsize="small")
    ax.invert_yaxis()
    ax.set_xlim(0, 115)
    ax.set_xlabel("share of the critical path (%)")
    ax.set_title(f"critical path: {cp.get('length', 0):,} nodes, "
                 f"{cp.get('time_ns', 0.0) / 1e6:.3f} ms")


def _roofline(ax, figures):
    r = figures["roofline"]
    peak = r["peak_tflops"]
    bw = r["hbm_peak_gbps"]  # GB/s: intensity (FLOP/B) x GB/s / 1000 = TFLOPS
    ridge = r.get("ridge_flops_per_byte") or (peak * 1000 / bw if bw else 1.0)
    intensity = r.get("intensity_flops_per_byte") or 0.0
    achieved = r.get("achieved_tflops") or 0.0
    lo = min(ridge, intensity if intensity > 0 else ridge) / 100
    hi = max(ridge, intensity) * 100
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.loglog(xs, [min(peak, x * bw / 1000) for x in xs], color="black", label="attainable")
    ax.axhline(peak, color="#2ca02c", ls="--", lw=0.8, label=f"compute roof {peak:.2f} TFLOPS")
    ax.plot(xs, [x * bw / 1000 for x in xs], color="#1f77b4", ls="--", lw=0.8,
            label=f"HBM roof {bw:.0f} GB/s")
    ax.axvline(ridge, color="grey", ls=":", lw=0.8, label=f"ridge {ridge:.1f} FLOP/B")
    if intensity > 0 and achieved > 0:
        ax.plot([intensity], [achieved], "o", color="#d62728", ms=8,
                label=f"kernel: {achieved:.2f} TFLOPS at {intensity:.1f} FLOP/B")
    ax.set_ylim(peak / 1e3, peak * 3)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP / HBM byte)")
    ax.set_ylabel("TFLOPS")
    ax.set_title(f"roofline: {r.get('roof', '?')} roof, bound {r.get('name', '?')} "
                 f"({r.get('verdict', '?')})")
    ax.legend(fontsize="small", loc="lower right", framealpha=0.8)


def plot(profile, path) -> None:
    """Draws ``profile`` (a :class:`trnsim.profile.Profile` or its ``figures``) to ``path``:
    ``.png`` or ``.svg`` by the name's suffix (ValueError for another)."""
    fmt = _format(path)
    figures = _figures(profile)
    plt = _pyplot()
    with plt.rc_context({"svg.hashsalt": "trnsim"}):  # stable ids in the SVG
        buf = _draw(plt, figures, fmt)
    write_bytes_atomically(os.fspath(path), buf.getvalue())


def _draw(plt, figures, fmt):
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.5), layout="constrained")
    try:
        _engine_times(axes[0], figures)
        _critical_path(axes[1], figures)
        _roofline(axes[2], figures)
        target = (figures.get("manifest") or {}).get("target")
        head = f"{target} on {figures.get('chip', '?')}" if target else figures.get("chip", "?")
        fig.suptitle(f"{head}: {figures['total_ns'] / 1e6:.3f} ms, bound "
                     f"{figures['bound']['verdict']}, MFU {100 * figures['mfu']:.2f} %, "
                     f"HFU {100 * figures['hfu']:.2f} %")
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, metadata=_METADATA[fmt])
    finally:
        plt.close(fig)
    return buf


def check_target(path) -> None:
    """What ``--plot PATH`` checks before the run: the suffix (ValueError) and that matplotlib
    imports (ImportError naming ``pip install matplotlib``)."""
    _format(path)
    _pyplot()


__all__ = ["plot", "check_target"]
