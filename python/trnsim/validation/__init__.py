"""`trnsim validate` targets that run NKI kernels (the C++ targets are in src/validate): they
are added to the command line's list when the Python package runs it (trnsim.cli)."""

from __future__ import annotations

import atexit

import numpy as np

# VALIDATION.md s6: fused Mamba, fp32, batch 1, state 16, seq 512, one NeuronCore-v2,
# device time and VectorE active time from neuron-profile (nki/guides/tutorials/fused_mamba.rst).
MAMBA_PUBLISHED = [  # (kernel, channels, latency us, VectorE active %)
    ("v1", 256, 172.93, 98.71),
    ("v1", 4096, 2340.0, 92.16),
    ("v2", 4096, 1610.0, 99.63),
]
SOURCE = "VALIDATION.md s6 (nki/guides/tutorials/fused_mamba.rst)"


def mamba_records():
    from trnsim import nki
    from trnsim.validation import mamba

    out, latency = [], {}
    for ver, channels, us, active in MAMBA_PUBLISHED:
        x = mamba.inputs(channels, 512)
        shapes = [np.empty(a.shape, a.dtype) for a in x]  # timing only: values unused
        _, run = nki.run(mamba.KERNELS[ver], *shapes, chip="trn1", mode="timing")
        latency[(ver, channels)] = run.latency_us
        engines = run.figures["engines"]
        busiest = max(engines, key=lambda e: engines[e]["busy_ps"])
        dve = engines["dve"]["busy_percent"]
        name = f"mamba_{ver} c{channels}"
        note = (f"trn1, fp32, batch 1, state 16, seq 512, channels {channels}, timing-only; "
                f"busiest engine {busiest}")
        out.append({"case": name, "unit": "us", "measured": us, "simulated": run.latency_us,
                    "source": SOURCE, "note": note})
        out.append({"case": f"{name} VectorE %", "unit": "%", "measured": active,
                    "simulated": dve, "source": SOURCE + ", VectorE active time",
                    "note": "VectorE busy over the kernel's time (published: over the "
                            "profile's selected execution period)"})
    pub = 2340.0 / 1610.0
    sim = latency[("v1", 4096)] / latency[("v2", 4096)]
    out.append({"case": "speedup v1/v2 c4096", "unit": "x", "measured": pub, "simulated": sim,
                "source": SOURCE + " (ratio of latencies)",
                "note": "loop reordering and fusion: reloads removed, delta*u once per tile"})
    return out


_registered = False


def register():
    """Adds the NKI targets to `trnsim validate` (once per process)."""
    global _registered
    if _registered:
        return
    from trnsim import _core

    _core.add_validate_target(
        "mamba-tutorial",
        "fused Mamba v1/v2, fp32, seq 512, channels 256 and 4096, on one NeuronCore-v2 (s6)",
        mamba_records)
    atexit.register(_core.clear_validate_targets)
    _registered = True
