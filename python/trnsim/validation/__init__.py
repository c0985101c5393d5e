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
# The case that set trn1's launch overhead (spec/chips/trn1.toml core.launch.overhead_ns).
LAUNCH_FITTED_ON = ("v1", 256)
# The same tutorial's seq_len table, channels 4096 (ms): (kernel, seq_len, latency).
MAMBA_SEQ_PUBLISHED = [("v2", 1024, 4.4), ("v2", 2048, 8.9), ("v2", 4096, 17.6),
                       ("v2", 8192, 52.2), ("v3", 1024, 3.3), ("v3", 2048, 6.6),
                       ("v3", 4096, 13.3), ("v3", 8192, 27.8)]


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
        dve = engines["dve"]["active_percent"]
        name = f"mamba_{ver} c{channels}"
        note = (f"trn1, fp32, batch 1, state 16, seq 512, channels {channels}, timing-only; "
                f"busiest engine {busiest}")
        rec = {"case": name, "unit": "us", "measured": us, "simulated": run.latency_us,
               "source": SOURCE, "note": note}
        if (ver, channels) == LAUNCH_FITTED_ON:
            rec["fitted"] = "core.launch.overhead_ns (trn1)"
        out.append(rec)
        out.append({"case": f"{name} VectorE %", "unit": "%", "measured": active,
                    "simulated": dve, "source": SOURCE + ", VectorE active time",
                    "note": "VectorE active (its instructions from issue to completion, as a "
                            "profile's timeline draws them) over the execution, launch "
                            "start-up and tear-down left out, as the tutorial's selection "
                            "leaves them out"})
    # The tutorial's seq_len table (channels 4096; not in VALIDATION.md): v2 spills on
    # hardware from seq 1024 on, v3 (seq tiling) stays VectorE-bound.
    for ver, seq, ms in MAMBA_SEQ_PUBLISHED:
        x = mamba.inputs(4096, seq)
        shapes = [np.empty(a.shape, a.dtype) for a in x]
        _, run = nki.run(mamba.KERNELS[ver], *shapes, chip="trn1", mode="timing")
        spill = run.figures.get("spill", {})
        out.append({"case": f"mamba_{ver} c4096 s{seq}", "unit": "ms", "measured": ms,
                    "simulated": run.latency_us / 1e3,
                    "source": "nki/guides/tutorials/fused_mamba.rst, seq_len table",
                    "note": f"trn1, fp32, channels 4096, seq {seq}; VectorE busy "
                            f"{run.figures['engines']['dve']['busy_percent']:.0f}%, "
                            f"{spill.get('bytes_spilled', 0) / 1e6:.0f} MB spilled"})
    pub = 2340.0 / 1610.0
    sim = latency[("v1", 4096)] / latency[("v2", 4096)]
    out.append({"case": "speedup v1/v2 c4096", "unit": "x", "measured": pub, "simulated": sim,
                "source": SOURCE + " (ratio of latencies)",
                "note": "loop reordering and fusion: reloads removed, delta*u once per tile"})
    return out


# The NKI LayerNorm tutorial (nki/tutorials/layernorm.rst): p50 latency on trn1 of its two
# kernels, fp32. The text says "(300, 1000)" but the published latencies are those of the
# tutorial script's default shape, 4096 x 8192 (2.3 ms for a 1.2 MB input would be 1 GB/s).
LAYERNORM_PUBLISHED = [("v1", 2311.0), ("v2", 1969.0)]
LAYERNORM_SOURCE = "nki/tutorials/layernorm.rst (not in VALIDATION.md)"
# The case that set trn1's HBM write cap (spec/chips/trn1.toml core.dma.core_write_bandwidth_gbps).
LAYERNORM_FITTED_ON = "v2"


def layernorm_records():
    from trnsim import nki
    from trnsim.validation import layernorm

    rows, cols = 4096, 8192
    x = np.empty((rows, cols), np.float32)
    g = np.empty(cols, np.float32)
    out, latency = [], {}
    for ver, us in LAYERNORM_PUBLISHED:
        _, run = nki.run(layernorm.KERNELS[ver], x, 1e-5, g, g, np.empty_like(x), chip="trn1",
                         mode="timing")
        latency[ver] = run.latency_us
        spill = run.figures.get("spill", {})
        rec = {"case": f"layernorm_{ver} 4096x8192", "unit": "us", "measured": us,
               "simulated": run.latency_us, "source": LAYERNORM_SOURCE,
               "note": f"trn1, fp32, timing-only; VectorE busy "
                       f"{run.figures['engines']['dve']['busy_percent']:.0f}%, "
                       f"{spill.get('bytes_spilled', 0)} bytes spilled"}
        if ver == LAYERNORM_FITTED_ON:
            rec["fitted"] = "core.dma.core_write_bandwidth_gbps (trn1)"
        out.append(rec)
    out.append({"case": "speedup v1/v2", "unit": "x", "measured": 2311.0 / 1969.0,
                "simulated": latency["v1"] / latency["v2"],
                "source": LAYERNORM_SOURCE + " (ratio of latencies)",
                "note": "bn_stats/bn_aggr and one tensor_scalar instead of language ops"})
    return out


# Trn2 device times from public neuron-profile summaries of two small kernels of a university
# course's Trainium2 assignment (trn2.3xlarge, compiler 2.21, runtime 2.27, --disable-dge),
# two independent runs each (us): (case, runs, engine that carries the work).
TRN2_SOURCE = ("neuron-profile summaries in public course repositories (asst4-trainium2, "
               "part1 profile files; not in VALIDATION.md)")
TRN2_PUBLISHED = [("vector_add_stream fd2000", (28.358, 28.905)),
                  ("vector_add_stream fd1000", (27.858, 26.417)),
                  ("transpose 1024x1024", (46.853, 46.471))]
# The cases that set trn2's launch overhead and per-descriptor DMA time, jointly
# (spec/chips/trn2.toml core.launch.overhead_ns, core.dma.descriptor_overhead_ns).
TRN2_FITTED = {"vector_add_stream fd2000": "core.launch.overhead_ns (trn2)",
               "transpose 1024x1024": "core.dma.descriptor_overhead_ns (trn2)"}
# --disable-dge, as the course compiled them: descriptors built ahead, no DGE time per DMA.
_NO_DGE = ["core.dma.hwdge_per_core=0"]


def trn2_kernel_records():
    from trnsim import nki
    from trnsim.validation import streaming

    a = np.empty(256000, np.float32)
    x = np.empty((1024, 1024), np.float32)
    runs = {"vector_add_stream fd2000": (streaming.vector_add_stream(2000), (a, a)),
            "vector_add_stream fd1000": (streaming.vector_add_stream(1000), (a, a)),
            "transpose 1024x1024": (streaming.transpose, (x,))}
    out = []
    for case, measured in TRN2_PUBLISHED:
        kernel, args = runs[case]
        _, run = nki.run(kernel, *args, chip="trn2", mode="timing", set=_NO_DGE)
        engines = run.figures["engines"]
        busiest = max(engines, key=lambda e: engines[e]["busy_ps"])
        rec = {"case": case, "unit": "us", "measured": sum(measured) / len(measured),
               "simulated": run.latency_us, "source": TRN2_SOURCE,
               "note": f"trn2, fp32, --disable-dge, timing-only; the mean of two runs "
                       f"({measured[0]} and {measured[1]} us); execution "
                       f"{run.execution_ps / 1e6:.1f} us + launch {run.launch_ps / 1e6:.1f} us; "
                       f"busiest engine {busiest}"}
        if case in TRN2_FITTED:
            rec["fitted"] = TRN2_FITTED[case]
        out.append(rec)
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
        "fused Mamba v1/v2/v3, fp32, channels 256 and 4096, seq 512 to 8192, on one "
        "NeuronCore-v2 (s6 and the tutorial's seq_len table)",
        mamba_records)
    _core.add_validate_target(
        "layernorm-tutorial",
        "NKI LayerNorm v1/v2, fp32 4096 x 8192, on one NeuronCore-v2 (checks: not in "
        "VALIDATION.md)", layernorm_records)
    _core.add_validate_target(
        "trn2-kernels",
        "vector add (256,000 fp32, one and two tiles) and a 1024 x 1024 fp32 transpose on one "
        "NeuronCore-v3, device times from public profiles (checks: not in VALIDATION.md)",
        trn2_kernel_records)
    atexit.register(_core.clear_validate_targets)
    _registered = True
