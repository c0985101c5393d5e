"""Models on simulated Trainium: a model's forward compiled for a chip and timed op by op.

The compiler (C++, ``src/graph``) builds the model's graph from its Hugging Face
``config.json`` (built-in ones in ``spec/models``; ``list()`` names them), fuses operators
(norm + matmul, residual adds, GLU and activation epilogues, RoPE and q/k norms into flash
attention), lowers each fused operator to a kernel of trnsim's kernel library, picks each
matmul's tiling by timing the legal ones on the simulator, and runs the kernels on the chip's
cores as tensor-parallel ranks. Repeated layers compile and simulate once.

    >>> import trnsim.models as tm
    >>> r = tm.run("llama-3.1-8b", chip="trn2", seq=2048)
    >>> r.latency_us, r.mfu
    >>> print(r.table)

With ``values=True`` (one rank, small models; MoE blocks with the routing their router
computes, see docs/models.md) every kernel also runs functionally and
``r.outputs["lm_head"]`` holds the logits ``[batch * seq, vocab]``; weights are the caller's
(by trnsim name, see ``from_hf_state_dict``) or random from ``seed`` (returned in
``r.weights``).
"""

from __future__ import annotations

import builtins
import json
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from trnsim import _core

__all__ = ["list", "config", "run", "serve", "ModelRun", "from_hf_state_dict"]


def list() -> builtins.list[str]:  # noqa: A001 - the module's verb, as trnsim.spec.list
    """Names of the built-in models (``spec/models/<name>.json``)."""
    return builtins.list(_core.model_list())


def config(model: str) -> dict[str, Any]:
    """The architecture trnsim reads from a model's config.json (a built-in name or a path)."""
    return json.loads(_core.model_config(model))


@dataclass
class ModelRun:
    """One forward pass or training step: figures (``json`` holds them all), the per-op table
    and the trace; with values the outputs, the weights used and, for a training step, each
    weight's gradient and its value after the AdamW step (``outputs["loss"]`` per token)."""

    json: dict[str, Any]
    table: str
    graph: str
    trace: dict[str, Any]
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    gradients: dict[str, np.ndarray] = field(default_factory=dict)
    updated_weights: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def loss(self) -> float:
        """Mean cross-entropy of a training step run with values."""
        return self.json["loss"]

    @property
    def latency_us(self) -> float:
        return self.json["latency_us"]

    @property
    def mfu(self) -> float:
        return self.json["mfu"]

    @property
    def ops(self) -> builtins.list[dict[str, Any]]:
        """Per-op rows: name, kernel, detail, count, time_us, total_us, flops, hbm_bytes, bound."""
        return self.json["ops"]

    @property
    def fits(self) -> bool:
        return self.json["fits"]

    def write_trace(self, path: str) -> None:
        """The forward's kernels as Chrome / Perfetto trace JSON."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.trace, f)


def _arrays(d: Mapping[str, Any] | None) -> dict[str, np.ndarray] | None:
    if d is None:
        return None
    return {k: np.ascontiguousarray(np.asarray(v, dtype=np.float32).reshape(-1)) for k, v in d.items()}


def run(
    model: str,
    chip: str = "trn2",
    *,
    batch: int = 1,
    seq: int = 128,
    tp: int | None = None,
    layers: int | None = None,
    values: bool = False,
    weights: Mapping[str, Any] | None = None,
    input_ids: Any = None,
    fuse: bool = True,
    search: bool = True,
    seed: int = 0,
    set: tuple[str, ...] | builtins.list[str] = (),  # noqa: A002 - as the CLI's --set
    train: bool = False,
    labels: Any = None,
    lr: float = 1e-4,
    weight_decay: float = 0.0,
    stochastic_rounding: bool = True,
    micro_batches: int = 1,
    ep: int = 1,
    quant_weights: str = "bf16",
    quantize: str = "all",
    attention: str = "flash",
    sequence_parallel: bool = False,
) -> ModelRun:
    """Compile and time ``model``'s forward over ``batch`` x ``seq`` tokens on ``chip``, or with
    ``train`` a training step: forward, mean cross-entropy against ``labels``, backward and one
    AdamW step (``lr``, ``weight_decay``; the bf16 weights written from fp32 masters with
    stochastic rounding unless turned off); ``micro_batches`` > 1 accumulates gradients over
    that many forward-backward passes before the optimizer step.

    tp: tensor-parallel ranks (default: every physical core; 1 with ``values``).
    ep: MoE models: expert-parallel ranks inside the tp group (each holds experts / ep).
    quant_weights: weight-only quantization of the decoder layers' linears, per-channel scales
    (NxD Inference's quantization_dtype): "bf16" (none), "int8", "fp8" (the chip's E4M3), or a
    format name; with values, the weights (given or drawn) are quantized as NxD quantizes a
    checkpoint. quantize: "all" or "mlp" (the MLPs and MoE experts only).
    attention: "flash", or "eager" (the scores, their softmax and the product with v as three
    ops with the [S, S] tensors in HBM, as Megatron-LM's CoreAttention and Hugging Face's eager
    attention compute them; no KV cache). sequence_parallel: the norms and residual adds on
    each rank's batch x seq / tp tokens, each all-reduce a reduce-scatter and an all-gather.
    layers: the first N layers only. values: compute outputs too (one rank).
    weights: by trnsim name ([in, out] for linears); input_ids and labels: [batch, seq]
    integers (a label outside the vocabulary, e.g. -100, is ignored by the loss).
    """
    inputs: dict[str, Any] = {}
    for name, ids in (("input_ids", input_ids), ("labels", labels)):
        if ids is None:
            continue
        ids = np.asarray(ids)
        if ids.size != batch * seq:
            raise ValueError(f"{name} has {ids.size} ids; batch x seq is {batch * seq}")
        inputs[name] = ids.astype(np.float32).reshape(-1)
    if labels is not None and not train:
        raise ValueError("labels are for a training step (train=True)")
    d = _core.model_run(
        model,
        chip=chip,
        tp=0 if tp is None else int(tp),
        batch=int(batch),
        seq=int(seq),
        layers=-1 if layers is None else int(layers),
        fuse=fuse,
        search=search,
        values=values,
        seed=int(seed),
        sets=builtins.list(set),
        weights=_arrays(weights),
        inputs=_arrays(inputs or None),
        train=train,
        lr=float(lr),
        weight_decay=float(weight_decay),
        stochastic_rounding=stochastic_rounding,
        micro_batches=int(micro_batches),
        ep=int(ep),
        quant_weights=_quantization(quant_weights, quantize),
        quantize=quantize,
        eager_attention=_eager(attention),
        sequence_parallel=bool(sequence_parallel),
    )
    return ModelRun(
        json=json.loads(d["json"]),
        table=d["table"],
        graph=d["graph"],
        trace=json.loads(d["trace"]),
        outputs=dict(d["outputs"]),
        weights=dict(d["weights"]),
        gradients=dict(d["gradients"]),
        updated_weights=dict(d["updated_weights"]),
    )


def _eager(attention: str) -> bool:
    if attention not in ("flash", "eager"):
        raise ValueError(f"attention {attention!r}: 'flash' or 'eager'")
    return attention == "eager"


def _quantization(quant_weights: str, quantize: str) -> str:
    if quantize not in ("all", "mlp"):
        raise ValueError(f"quantize {quantize!r}: 'all' or 'mlp'")
    return str(quant_weights)


def serve(
    model: str,
    *,
    system: str | None = None,
    chip: str = "trn2",
    tp: int | None = None,
    lnc: int = 1,
    batch: int = 1,
    input_tokens: int = 128,
    output_tokens: int = 128,
    bucket: int | None = None,
    compiled_batch: int | None = None,
    ctx_batch: int | None = None,
    max_seq: int | None = None,
    kv_buckets: str = "pow2",
    concurrency: int | None = None,
    requests: int | None = None,
    rate: float | None = None,
    input_spread: int = 0,
    output_spread: int = 0,
    seed: int = 1,
    draft_model: str | None = None,
    speculation_length: int = 0,
    acceptance: float = 0.7,
    runtime: str | None = None,
    set: tuple[str, ...] | builtins.list[str] = (),  # noqa: A002 - as the CLI's --set
    ep: int = 1,
    cached_prefix: int = 0,
    eagle: bool = False,
    prefill_chunk: int = 0,
    quant_weights: str = "bf16",
    quantize: str = "all",
    kv_cache_dtype: str = "bf16",
) -> dict[str, Any]:
    """Requests served, as `trnsim serve --json`: ttft_ms, tpot_ms, e2e_ms,
    output_tokens_per_s and the compiled graphs' shapes; `["text"]` holds what the command
    prints. One batch by default (the decode samples and the prefill's and last decode step's
    figures); with ``concurrency``, ``rate`` (requests per second) or ``requests``, a request
    load under continuous batching (percentiles and one record per request; lengths
    ``input_tokens +- input_spread`` and ``output_tokens +- output_spread``, drawn from
    ``seed``). compiled_batch: sequences every decode step runs; ctx_batch: prompts per
    prefill; max_seq: the compiled sequence length; kv_buckets: "pow2", "max" or "exact".
    draft_model, speculation_length, acceptance: speculative decoding (one batch only).
    runtime: of the all-reduces (default: the compiled graphs' one, graph::kInGraphRuntime).
    ep: MoE models: expert-parallel ranks inside the tp group. cached_prefix: prefix caching,
    the first tokens of every prompt already in the KV cache (the prefill runs the rest).
    eagle: speculation with the target's EAGLE head as the draft (with speculation_length).
    prefill_chunk: chunked prefill, steps of that many token slots (decode tokens first, then a
    chunk of one prompt). quant_weights, quantize: weight-only quantization, as run_model's.
    kv_cache_dtype: the KV cache's format, vLLM Neuron's kv_cache_dtype: "bf16" (the model's)
    or "fp8" (the chip's E4M3; fp8_e4m3, fp8_e4m3fn, fp8_e5m2 by name): half the cache's bytes
    in memory and in each decode step's reads."""
    if kv_buckets not in ("pow2", "max", "exact"):
        raise ValueError(f"kv_buckets {kv_buckets!r}: 'pow2', 'max' or 'exact'")
    extra = {} if runtime is None else {"runtime": runtime}
    j, text = _core.model_serve(
        model, system=system or "", chip=chip, tp=0 if tp is None else int(tp), lnc=int(lnc),
        batch=int(batch), input_tokens=int(input_tokens), output_tokens=int(output_tokens),
        bucket=0 if bucket is None else int(bucket), sets=builtins.list(set),
        compiled_batch=0 if compiled_batch is None else int(compiled_batch),
        ctx_batch=0 if ctx_batch is None else int(ctx_batch),
        max_seq=0 if max_seq is None else int(max_seq), kv_buckets=kv_buckets,
        concurrency=0 if concurrency is None else int(concurrency),
        requests=0 if requests is None else int(requests),
        rate=0.0 if rate is None else float(rate), input_spread=int(input_spread),
        output_spread=int(output_spread), seed=int(seed), draft_model=draft_model or "",
        speculation_length=int(speculation_length), acceptance=float(acceptance), ep=int(ep),
        cached_prefix=int(cached_prefix), eagle=bool(eagle), prefill_chunk=int(prefill_chunk),
        quant_weights=_quantization(quant_weights, quantize), quantize=quantize,
        kv_cache_dtype=str(kv_cache_dtype), **extra)
    out = json.loads(j)
    out["text"] = text
    return out


_RECOMPUTE = ("none", "selective", "full")


def train(
    model: str,
    *,
    system: str,
    servers: int | None = None,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    lnc: int | None = None,
    zero: int = 1,
    seq: int = 2048,
    global_batch: int = 1024,
    micro_batch: int = 1,
    recompute: str = "none",
    virtual_stages: int = 1,
    runtime: str | None = None,
    set: tuple[str, ...] | builtins.list[str] = (),  # noqa: A002 - as the CLI's --set
    ep: int = 1,
    attention: str = "flash",
    sequence_parallel: bool = False,
) -> dict[str, Any]:
    """One training step under a TP x PP x DP plan on ``servers`` of ``system``, as
    `trnsim train --json`: step_time_s, sequences_per_s, tokens_per_s, mfu, hfu,
    memory_per_chip_bytes, fits, the breakdown and each stage's figures; ``["text"]`` holds
    what the command prints. recompute: "none", "selective" (each layer's attention forward
    again in the backward, as Neuron Distributed's selective checkpointing) or "full"; zero: 0-3;
    virtual_stages: chunks
    per pipeline stage (the interleaved schedule); ep: a MoE model's expert-parallel ranks,
    up to tp inside each TP group (each holds experts / ep experts' worth of columns), or tp
    x e with e dividing dp: the experts over e replicas' TP groups, tokens exchanged by
    all-to-alls (breakdown ep_comm_s). attention: "flash" or "eager" (as run()'s; the
    probabilities are saved for the backward, and dropped by selective recomputation).
    sequence_parallel: Megatron's (NxD's sequence_parallel_enabled)."""
    if recompute not in _RECOMPUTE:
        raise ValueError(f"recompute {recompute!r}: 'none', 'selective' or 'full'")
    extra = {} if runtime is None else {"runtime": runtime}
    j, text = _core.model_train(
        model, system, servers=0 if servers is None else int(servers), tp=int(tp), pp=int(pp),
        dp=int(dp), lnc=0 if lnc is None else int(lnc), zero=int(zero), seq=int(seq),
        global_batch=int(global_batch), micro_batch=int(micro_batch),
        recompute=recompute, sets=builtins.list(set),
        virtual_stages=int(virtual_stages), ep=int(ep), eager_attention=_eager(attention),
        sequence_parallel=bool(sequence_parallel), **extra)
    out = json.loads(j)
    out["text"] = text
    return out


def plan(
    model: str,
    *,
    system: str,
    servers: int | None = None,
    seq: int = 2048,
    global_batch: int = 1024,
    tp: Sequence[int] = (),
    pp: Sequence[int] = (),
    lnc: Sequence[int] = (),
    micro_batch: Sequence[int] = (1, 2, 4),
    zero: Sequence[int] = (0, 1),
    recompute: Sequence[str] = ("none", "selective", "full"),
    virtual_stages: Sequence[int] = (1,),
    ep: Sequence[int] = (),
    top: int = 10,
    jobs: int | None = None,
    runtime: str | None = None,
    set: tuple[str, ...] | builtins.list[str] = (),  # noqa: A002 - as the CLI's --set
    attention: str = "flash",
    sequence_parallel: bool = False,
) -> dict[str, Any]:
    """The plan search, as `trnsim plan --json`: every legal TP x PP x DP plan of ``model`` on
    ``servers`` of ``system`` with each LNC, micro-batch, ZeRO stage and recomputation given
    (empty ``tp`` / ``pp`` / ``lnc``: every legal degree, the system's LNC), pruned by memory,
    the rest timed and ranked: ``enumerated``, ``illegal`` (with ``illegal_reasons``),
    ``pruned_memory``, ``timed``, ``best`` (fastest first, each with `trnsim train`'s keys and
    ``bound``), ``least_memory`` when nothing fits; ``["text"]`` holds what the command
    prints. ``jobs``: threads (default: the host's cores). ``ep``: a MoE model's expert
    parallelism to try (empty: 1, TP and TP x each power of two up to DP). ``attention``:
    "flash" or "eager" for every plan (as train()'s); ``sequence_parallel`` likewise."""
    for r in recompute:
        if r not in _RECOMPUTE:
            raise ValueError(f"recompute {r!r}: 'none', 'selective' or 'full'")
    extra = {} if runtime is None else {"runtime": runtime}
    j, text = _core.model_plan(
        model, system, servers=0 if servers is None else int(servers), seq=int(seq),
        global_batch=int(global_batch), tp=[int(v) for v in tp], pp=[int(v) for v in pp],
        lnc=[int(v) for v in lnc], micro_batch=[int(v) for v in micro_batch],
        zero=[int(v) for v in zero], recompute=builtins.list(recompute), top=int(top),
        jobs=int(jobs) if jobs else (os.cpu_count() or 1), sets=builtins.list(set),
        virtual_stages=[int(v) for v in virtual_stages], ep=[int(v) for v in ep],
        eager_attention=_eager(attention), sequence_parallel=bool(sequence_parallel), **extra)
    out = json.loads(j)
    out["text"] = text
    return out


def from_hf_state_dict(state_dict: Mapping[str, Any], model: str) -> dict[str, np.ndarray]:
    """A Llama / Qwen3 / Qwen3-MoE / Mixtral Hugging Face state dict as trnsim's weights.

    Names lose the ``model.`` prefix; linear weights are transposed from torch's [out, in] to
    the kernels' [in, out]; a tied lm head is the embedding's transpose. Mixtral's
    ``block_sparse_moe`` experts ``w1`` / ``w3`` / ``w2`` are trnsim's ``mlp.experts.<e>``
    ``gate_proj`` / ``up_proj`` / ``down_proj`` (one module per expert, as transformers 4.x
    stores them).
    """
    cfg = config(model)
    if cfg["model_type"] not in ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral"):
        raise NotImplementedError(
            "from_hf_state_dict maps Llama / Qwen3 / Qwen3-MoE / Mixtral names; "
            f"{cfg['model_type']} checkpoints are not mapped yet"
        )
    mixtral = {".block_sparse_moe.": ".mlp.", ".w1.": ".gate_proj.", ".w3.": ".up_proj.",
               ".w2.": ".down_proj."}
    out: dict[str, np.ndarray] = {}
    for name, t in state_dict.items():
        a = np.asarray(t.float().numpy() if hasattr(t, "float") else t, dtype=np.float32)
        key = name[len("model.") :] if name.startswith("model.") else name
        if cfg["model_type"] == "mixtral":
            for old, new in mixtral.items():
                key = key.replace(old, new)
        if key.endswith(".weight") and a.ndim == 2 and not key.startswith("embed_tokens"):
            a = a.T
        out[key] = np.ascontiguousarray(a)
    if "lm_head.weight" not in out and "embed_tokens.weight" in out:
        out["lm_head.weight"] = np.ascontiguousarray(out["embed_tokens.weight"].T)
    return out
