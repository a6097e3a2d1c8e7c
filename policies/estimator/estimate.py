"""How long a run takes and what it costs on a given fleet: FLOPs, memory fit, MFU, goodput, spot.

Training: time = 6*N*D / (chips * peak * MFU(chips) * goodput * spot productivity).
Serving: each decode step streams the weights and the batch's KV cache from HBM and does
2*N FLOPs per token; the largest batch that meets the p99 per-token latency and fits in HBM
sets the throughput of one replica, and the tokens/s target sets the number of replicas.
Every default comes from policies/catalog/assumptions.yaml and can be overridden per workload;
`assumption_list` reports each one with its source.

The per-size functions are plain float arithmetic: selection calls them thousands of times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from accel.base.units import HOURS_PER_MONTH
from accel.policies import hardware
from accel.policies.estimator import fabric_allreduce, generations, tpu_kv_layout, whole_run_model
from accel.policies.estimator.mfu_model import calibrated_fit, dcn_breakdown, predict
from accel.policies.catalog.model import (
    Accelerator,
    AllreduceLatency,
    IciAllreduce,
    PcieAllreduce,
    Catalog,
    Defaults,
    FilesystemOffer,
    rule_for,
)
from accel.policies.parallelism import ShardedState
from accel.policies.plan import SERVED_PRECISION, Assumption, StoragePlan
from accel.policies.workload import WorkloadSpec

OVERRIDE = "workload override"
# The quality trade-off of fp8 training as the published fp8 runs state it (whole_runs.yaml fp8_evidence).
FP8_QUALITY = ("quality: fp8 matmuls with bf16/fp32 master weights and fine-grained (tensor-, row- or block-wise) "
               "scaling; the published runs report loss parity with bf16 (torchtitan Llama 3 70B 'on-par numerics', "
               "TorchAO MXFP8 'equivalent convergence', Nemotron-H 'on par results with BF16', DeepSeek-V3 relative "
               "loss error under 0.25%), but the recipe is less mature: a divergence is yours to catch")
# Below this share of productive time a spot fleet spends its life restarting: treat it as unusable.
MIN_SPOT_PRODUCTIVITY = 0.25
SECONDS_PER_HOUR = 3600.0
FROZEN_BYTES_PER_PARAMETER = 2.0   # a frozen weight is its bf16 copy only


@dataclass(frozen=True)
class Resolved:
    """The estimator's numbers for one workload: defaults with the workload's overrides applied."""

    values: dict[str, float]
    sources: dict[str, str]
    preemptions_per_host_day: dict[str, float]
    preemption_sources: dict[str, str]
    mfu_override: float | None
    decay_override: float | None
    multislice_override: float | None = None
    serving_engine: str = ""                      # whose per-step costs serving pays (assumptions.yaml inference.engines)
    allreduce: AllreduceLatency | None = None     # published small all-reduce latencies, by engine and degree
    serving_needs_fp8: bool = False               # the workload's inference.precision needs fp8 tensor cores
    # Families whose engine leaves a bf16 checkpoint's routed experts unquantized at that precision, and the source.
    serving_experts_need_checkpoint: tuple[str, ...] = ()
    serving_experts_source: str = ""
    kv_cache_per_tensor_rank: bool = False        # each tensor-parallel GPU holds the whole cache (vLLM's MLA latent)
    precision_bytes: dict[str, float] = field(default_factory=dict)   # bytes per weight by serving precision
    # Where no table applies (fabric_allreduce.py): a TPU's all-reduce over ICI (its hop latency and the rule's
    # source) and a PCIe GPU's (NCCL's costs), as assumptions.yaml states them.
    ici_allreduce: IciAllreduce | None = None
    pcie_allreduce: PcieAllreduce | None = None
    # The KV heads a grouped-query cache splits over the tensor-parallel ranks: a named architecture's, else
    # assumptions.yaml kv_cache_width's (InferenceModel.kv_copies: each rank stores at least one whole head).
    kv_heads: int = field(kw_only=True)
    # Each KV head's width (a named architecture's head_dim, else kv_cache_width's value / heads: 128), the bytes of
    # a K/V value at the workload's precision, and what vLLM TPU stores of the model's K/V width (tpu_kv_layout:
    # padded to 128 lanes; 1 at 64, 128 and its multiples): the InferenceModel charges them on a TPU only.
    kv_head_dim: int = field(kw_only=True)
    kv_bytes_per_value: float = field(kw_only=True)
    tpu_kv_width: float = field(kw_only=True)

    def __getitem__(self, name: str) -> float:
        return self.values[name]

    def assumption(self, name: str, label: str | None = None) -> Assumption:
        return _assumption(name=label or name, value=_round(self.values[name]), source=self.sources[name])


# workload override field -> (resolved name, where the default lives)
_TRAINING_KEYS = {
    "bytes_per_parameter": "bytes_per_parameter",
    "activation_headroom": "activation_headroom",
    "hbm_usable_fraction": "hbm_usable_fraction",
    "goodput": "goodput",
    "checkpoint_interval_minutes": "checkpoint_interval_minutes",
    "restart_minutes": "restart_minutes",
    "default_deadline_days": "default_deadline_days",
    "time_objective_tolerance": "time_objective_tolerance",
}
_INFERENCE_KEYS = {
    "hbm_bandwidth_efficiency": "hbm_bandwidth_efficiency",
    "inference_compute_efficiency": "compute_efficiency",
    "latency_p99_factor": "latency_p99_factor",
    "prompt_tokens_per_output_token": "prompt_tokens_per_output_token",
    "replica_scaling_per_doubling": "replica_scaling_per_doubling",
    "min_replicas": "min_replicas",
    "spot_serving_headroom": "spot_serving_headroom",
}


def resolve(spec: WorkloadSpec, defaults: Defaults, engine: str | None = None) -> Resolved:
    """The estimator's numbers for `spec`; serving is costed for `engine` (default: assumptions.yaml
    inference.default_engine).

    One `put` per number, each with its source (the workload's override, else the catalog's assumption):
    long because there are that many numbers, not because it decides much; the order is the catalog's."""
    overrides = spec.assumptions
    values: dict[str, float] = {}
    sources: dict[str, str] = {}

    def put(name: str, default_value: float, default_source: str, override: float | None) -> None:
        if override is not None:
            values[name], sources[name] = float(override), OVERRIDE
        else:
            values[name], sources[name] = float(default_value), default_source

    training = defaults.training
    for override_key, name in _TRAINING_KEYS.items():
        item = getattr(training, name)
        put(name, item.value, item.source, getattr(overrides, override_key))
    optimizer = training.distributed_optimizer
    put("distributed_optimizer_replicated_bytes", optimizer.replicated_bytes_per_parameter, optimizer.source, None)
    put("distributed_optimizer_sharded_bytes", optimizer.sharded_bytes_per_parameter, optimizer.source, None)
    for name in ("max_fleet_chips", "fp8_speedup", "fp32_slowdown", "provisioning_minutes",
                 "image_pull_minutes", "compile_minutes", "checkpoint_write_gbps_per_host"):
        item = getattr(training, name)
        put(name, item.value, item.source, None)
    inference = defaults.inference
    for override_key, name in _INFERENCE_KEYS.items():
        item = getattr(inference, name)
        put(f"inference_{name}", item.value, item.source,
            getattr(overrides, override_key))
    put("max_replica_chips", inference.max_replica_chips.value, inference.max_replica_chips.source, None)
    pipeline = inference.pipeline_serving
    put("inference_pipeline_activation_tensors", pipeline.activation_tensors.value, pipeline.activation_tensors.source,
        None)
    put("inference_pipeline_hop_latency_us", pipeline.hop_latency_us.value, pipeline.hop_latency_us.source, None)
    put("inference_pipeline_split_over_tensor_ranks", float(pipeline.split_over_tensor_ranks),
        pipeline.activation_tensors.source, None)
    put("inference_prefill_efficiency", inference.prefill_efficiency.value, inference.prefill_efficiency.source, None)
    precision = inference.precisions[serving_precision(spec)]
    put("inference_bytes_per_parameter", precision.bytes_per_parameter, precision.source,
        overrides.inference_bytes_per_parameter)

    engine = engine or inference.default_engine
    overhead = inference.engines[engine].step_overhead_ms
    put("inference_step_overhead_ms", overhead.value, f"{engine}: {overhead.source}", None)
    put("inference_allreduces_per_layer", inference.allreduces_per_layer.value, inference.allreduces_per_layer.source,
        None)
    put("hidden_width_rule", inference.hidden_width_rule.value, inference.hidden_width_rule.source, None)

    parameters = spec.model.parameters
    # A named architecture states its layers and attention (policies/architectures): the KV cache is its own.
    # Imported here: only a workload naming an architecture reads the table (warm `choose` start-up, bench_startup).
    row = None
    if spec.model.architecture:
        from accel.policies import architectures

        row = architectures.lookup(spec.model.architecture)
    # The layers the training estimate counts (model_architecture): model.layers, which a named architecture fills,
    # else estimated from the parameters a token passes through (a mixture of experts' total would give
    # DeepSeek-V3, 671B with 61 layers, 175 layers of KV cache).
    layers = model_architecture(spec, defaults)[0]
    if row is not None:
        counted, layers_source = f"architecture {row.name}", \
            f"architecture {row.name} (policies/architectures/architectures.yaml)"
    elif spec.model.layers is not None:
        counted = layers_source = "model.layers"
    else:
        counted, layers_source = "estimated", f"estimated: {inference.kv_cache_layers_per_cube_root.source}"
    put("model_layers", layers, layers_source, None)
    latent = False
    # Whose heads the cache splits over the tensor-parallel ranks: the architecture's, else the width's assumed ones
    # (also where the workload states its own kv_cache_bytes_per_token: it gives bytes, not heads).
    kv_heads = row.kv_heads if row is not None else inference.kv_cache_width.heads
    if overrides.kv_cache_bytes_per_token is not None:
        put("kv_cache_bytes_per_token", 0, "", overrides.kv_cache_bytes_per_token)
    elif row is not None and row.latent_attention is not None:
        # Multi-latent attention caches one latent per token and layer, not K and V per head: the compressed KV
        # (kv_lora_rank) and the shared rotary key (qk_rope_head_dim), as vLLM does (v0.33.0 vllm/transformers_utils/
        # model_arch_config_convertor.py l.91-98 get_head_size: kv_lora_rank + qk_rope_head_dim; vllm/v1/
        # kv_cache_interface.py l.741-742 MLAAttentionSpec: "MLA stores a single latent vector per state; there is no
        # separate V", no factor 2). Each tensor-parallel rank holds it whole (InferenceModel).
        mla, latent = row.latent_attention, True
        width = mla.kv_lora_rank + mla.qk_rope_head_dim
        kv = row.layers * width * precision.kv_bytes_per_value
        put("kv_cache_bytes_per_token", kv,
            f"architecture {row.name}: multi-latent attention, {row.layers} layers x {width} latent values "
            f"(kv_lora_rank {mla.kv_lora_rank} + qk_rope_head_dim {mla.qk_rope_head_dim}; no separate K and V) x "
            f"{precision.kv_bytes_per_value:g} bytes, per tensor-parallel rank: vLLM v0.33.0 "
            "vllm/transformers_utils/model_arch_config_convertor.py get_head_size l.91-98, vllm/config/model.py "
            "get_num_kv_heads l.1663-1675 (one latent head per GPU; decode context parallelism, which would shard "
            "it, defaults to 1: config/parallel.py l.389)", None)
    elif row is not None and row.head_dim is not None:
        kv = 2 * row.layers * row.kv_heads * row.head_dim * precision.kv_bytes_per_value
        put("kv_cache_bytes_per_token", kv,
            f"architecture {row.name}: {row.layers} layers x {row.kv_heads} KV heads x {row.head_dim} dims x K,V x "
            f"{precision.kv_bytes_per_value:g} bytes", None)
    else:
        # (No architecture, or one stating no KV head width: its layers, the assumed width.)
        kv = 2 * layers * inference.kv_cache_width.value * precision.kv_bytes_per_value
        put("kv_cache_bytes_per_token", kv,
            f"{int(layers)} layers ({counted}) x {int(inference.kv_cache_width.value)} KV width x K,V x "
            f"{precision.kv_bytes_per_value:g} bytes; "
            + (f"{inference.kv_cache_layers_per_cube_root.source}; " if counted == "estimated" else "")
            + f"{inference.kv_cache_width.source}", None)
    # The head width vLLM TPU pads (policies/estimator/tpu_kv_layout.py): the architecture's, else the assumption's.
    kv_head_dim = row.head_dim if row is not None and row.head_dim is not None else \
        int(inference.kv_cache_width.value // inference.kv_cache_width.heads)
    tpu_kv_width = (tpu_kv_layout.latent_width_factor(mla.kv_lora_rank, mla.qk_rope_head_dim) if latent
                    else tpu_kv_layout.width_factor(kv_head_dim))
    section = spec.inference
    if section is not None and section.prompt_tokens and section.output_tokens:
        context, context_source = section.prompt_tokens + section.output_tokens, \
            "inference.prompt_tokens + inference.output_tokens: KV cache reserved per concurrent sequence"
        put("inference_prompt_tokens_per_output_token", section.prompt_tokens / section.output_tokens,
            "inference.prompt_tokens / inference.output_tokens", None)
    else:
        context, context_source = spec.model.sequence_length, \
            "model.sequence_length: KV cache reserved per concurrent sequence"
    put("context_tokens", context, context_source, overrides.context_tokens)
    preemptions = {cloud: item.value for cloud, item in defaults.preemptions_per_host_day.items()}
    preemption_sources = {cloud: item.source for cloud, item in defaults.preemptions_per_host_day.items()}
    if overrides.preemptions_per_day is not None:
        preemptions = {cloud: float(overrides.preemptions_per_day) for cloud in preemptions}
        preemption_sources = {cloud: OVERRIDE for cloud in preemption_sources}
    return Resolved(values, sources, preemptions, preemption_sources, overrides.mfu, overrides.mfu_decay_per_doubling,
                    overrides.multislice_efficiency, engine, inference.allreduce_latency_us, precision.needs_fp8,
                    tuple(precision.experts_need_checkpoint_on), precision.experts_source or "",
                    latent, {name: row.bytes_per_parameter for name, row in inference.precisions.items()},
                    inference.ici_allreduce, inference.pcie_allreduce, kv_heads=kv_heads, kv_head_dim=kv_head_dim,
                    kv_bytes_per_value=precision.kv_bytes_per_value, tpu_kv_width=tpu_kv_width)


def serving_precision(spec: WorkloadSpec) -> str:
    return spec.inference.precision if spec.inference is not None else "bf16"


def served_precision(spec: WorkloadSpec, resolved: Resolved, accelerator: Accelerator) -> str:
    """The precision a serving replica on `accelerator` is sized at: the workload's, or bf16 where that needs fp8
    tensor cores (inference.precisions' needs_fp8) the chip lacks or where the engine would leave a mixture of experts'
    routed experts in bf16 (experts_stay_bf16). The one decision: the InferenceModel sizes by it,
    the plan states it (the SERVED_PRECISION assumption), the job serves it."""
    if resolved.serving_needs_fp8 and not accelerator.peak_fp8_tflops or experts_stay_bf16(spec, resolved, accelerator):
        return "bf16"
    return serving_precision(spec)


def experts_stay_bf16(spec: WorkloadSpec, resolved: Resolved, accelerator: Accelerator) -> bool:
    """Whether the serving engine on `accelerator`'s family would hold a mixture of experts' routed experts in bf16
    at the workload's precision: it quantizes no bf16 checkpoint's experts as it loads there (inference.precisions'
    experts_need_checkpoint_on: vLLM TPU at fp8) and the weights it loads (model.checkpoint, else the named
    architecture's published checkpoint in that precision) are not already in it. The same rule as a chip without
    fp8 tensor cores: the replica is sized at what the engine holds, bf16. An unnamed model is served by a dense
    stand-in (accel/job/stand_in.py): no experts to leave in bf16."""
    if accelerator.family not in resolved.serving_experts_need_checkpoint or spec.model.experts is None:
        return False
    from accel.policies.architectures import serving_checkpoints  # only a mixture of experts served on that family

    checkpoints = serving_checkpoints.table()
    if spec.model.checkpoint is not None:
        return not checkpoints.says_fp8(spec.model.checkpoint)
    if spec.model.architecture is None:
        return False
    return checkpoints.fp8_repo(spec.model.architecture) is None


def model_architecture(spec: WorkloadSpec, defaults: Defaults | None = None) -> tuple[float, float, str]:
    """(layers, hidden width, where they come from): the workload's model.layers / model.hidden, else estimated
    from the parameters a token passes through (the active ones of a mixture-of-experts model) by the rules of
    assumptions.yaml (kv_cache_layers_per_cube_root, hidden_width_rule)."""
    inference = (defaults or _bundled_defaults()).inference
    active = spec.model.active
    if spec.model.layers is not None:
        layers, layers_source = float(spec.model.layers), "model.layers"
    else:
        layers = max(1.0, round(inference.kv_cache_layers_per_cube_root.value * active ** (1 / 3)))
        layers_source = f"{layers:g} layers estimated ({inference.kv_cache_layers_per_cube_root.source})"
    hidden, stated = model_hidden(spec, layers, inference.hidden_width_rule.value)
    hidden_source = stated or f"hidden {hidden:,.0f} estimated ({inference.hidden_width_rule.source})"
    return layers, hidden, f"{layers_source}; {hidden_source}"


def model_hidden(spec: WorkloadSpec, layers: float, hidden_width_rule: float) -> tuple[float, str | None]:
    """(hidden width, "model.hidden" when the workload states it, else None): model.hidden (a named architecture's
    row fills it in, policies/workload.py), else estimated from the parameters a token passes through (the active
    ones of a mixture of experts) and `layers`. The one derivation training (model_architecture) and serving
    (InferenceModel's all-reduce message) share: serving's took the total, so a 46.7B/12.9B-active Mixtral's
    all-reduce carried an 11,028-wide activation instead of its 4,096."""
    if spec.model.hidden is not None:
        return float(spec.model.hidden), "model.hidden"
    return hidden_width(spec.model.active, layers, hidden_width_rule), None


def _bundled_defaults() -> Defaults:
    from accel.policies.catalog import load_catalog
    return load_catalog().defaults


def training_flops(spec: WorkloadSpec, defaults: Defaults | None = None) -> float:
    """(4 + 2f)*N*D + 12*L*h*s*D: forward (2ND) and activation gradients (2ND) through every weight a token
    passes through (N: the active parameters of a mixture-of-experts model), weight gradients (2ND) only for
    the trained share f (6ND for a full fine-tune or pretrain; ~4ND for LoRA), and attention's score and value
    matmuls, forward and backward (PaLM, Chowdhery et al. 2022, appendix B), which have no weights."""
    assert spec.training is not None and spec.training.tokens is not None
    layers, hidden, _ = model_architecture(spec, defaults)
    per_token = ((4.0 + 2.0 * spec.training.trainable_fraction) * spec.model.active
                 + 12.0 * layers * hidden * spec.model.sequence_length)
    return per_token * spec.training.tokens


def trained_parameters(spec: WorkloadSpec) -> float:
    fraction = spec.training.trainable_fraction if spec.training is not None else 1.0
    return spec.model.parameters * fraction


def global_batch(spec: WorkloadSpec, defaults: Defaults) -> tuple[float, str]:
    """(tokens per optimizer step, where it comes from): the workload's, else published practice by model size."""
    assert spec.training is not None
    if spec.training.global_batch_tokens is not None:
        return spec.training.global_batch_tokens, "training.global_batch_tokens"
    rule = rule_for(defaults.training.global_batch_tokens_by_size, spec.model.parameters)
    return rule.value, rule.source


def batch_sequences(spec: WorkloadSpec, tokens: float) -> int:
    """The whole sequences a global batch of `tokens` holds (at least one)."""
    return max(1, math.floor(tokens / spec.model.sequence_length))


def _batch_chips(spec: WorkloadSpec, defaults: Defaults, tokens: float) -> tuple[int, int, int]:
    """(chips the batch keeps busy, sequences per step, chips per sequence) for a global batch of `tokens`."""
    sequences = batch_sequences(spec, tokens)
    per_sequence = int(rule_for(defaults.training.chips_per_sequence_by_size, spec.model.parameters).value)
    return sequences * per_sequence, sequences, per_sequence


def batch_chip_limit(spec: WorkloadSpec, resolved: Resolved, defaults: Defaults) -> tuple[int, str]:
    """(most chips the global batch keeps busy, why): sequences per step x chips that can share a sequence.
    The why names the batch, where it comes from (the workload, or the default for the model's size and that
    default's source), how to set it, and what the largest published batch in the defaults would allow."""
    tokens, source = global_batch(spec, defaults)
    chips, sequences, per_sequence = _batch_chips(spec, defaults, tokens)
    share = "one chip per sequence" if per_sequence == 1 else f"at most {per_sequence} chips share a sequence"
    given = spec.training is not None and spec.training.global_batch_tokens is not None
    origin = ("set by training.global_batch_tokens" if given else
              f"the default for {spec.model.parameters / 1e9:,.3g}B parameters: {source}; set "
              "training.global_batch_tokens to change it")
    why = (f"a global batch of {tokens / 1e6:,.3g}M tokens ({origin}) is {sequences:,} sequences of "
           f"{spec.model.sequence_length:,} tokens and, for {spec.model.parameters / 1e9:,.3g}B parameters, {share}: "
           f"more than {chips:,} chips would idle")
    largest = max(defaults.training.global_batch_tokens_by_size, key=lambda rule: rule.value)
    if largest.value > tokens:
        more, _, _ = _batch_chips(spec, defaults, largest.value)
        why += (f"; with training.global_batch_tokens: {largest.value / 1e6:,.3g}M ({largest.source}) up to "
                f"{more:,} chips could work")
    return chips, why


def checkpoint_bytes(spec: WorkloadSpec, defaults: Defaults) -> float:
    """Bytes of one checkpoint: weights and optimizer state of the trained parameters."""
    return trained_parameters(spec) * defaults.storage.checkpoint_bytes_per_parameter.value


def _training_state(spec: WorkloadSpec, resolved: Resolved) -> tuple[float, float, float]:
    """(trained parameters, frozen parameters, bytes of their weights, gradients and optimizer state). Frozen weights
    (LoRA) keep only their bf16 copy: no gradients, master weights or optimizer state."""
    trained = trained_parameters(spec)
    frozen = spec.model.parameters - trained
    return trained, frozen, trained * resolved["bytes_per_parameter"] + frozen * FROZEN_BYTES_PER_PARAMETER


def usable_hbm_bytes(accelerator: Accelerator, resolved: Resolved) -> float:
    """The HBM of one chip the sizing may fill (hbm_usable_fraction of it)."""
    return accelerator.hbm_bytes * resolved["hbm_usable_fraction"]


def training_memory_bytes(spec: WorkloadSpec, resolved: Resolved) -> float:
    """Weights, gradients and optimizer state (sharded over the fleet) plus activation headroom (_training_state)."""
    return _training_state(spec, resolved)[2] * (1.0 + resolved["activation_headroom"])


def distributed_optimizer_state(spec: WorkloadSpec, resolved: Resolved, accelerator: Accelerator) -> ShardedState:
    """The training state as Megatron's distributed optimizer holds it (assumptions.yaml training.
    distributed_optimizer, Megatron-LM's dist_optimizer.md), in GPUs' worth of usable HBM: every data-parallel
    replica holds the trained parameters' bf16 weights and fp32 gradients, the frozen weights' bf16 copy and the
    activation allowance whole (the estimate's own: activation_headroom on the state training_memory_bytes counts,
    not shrunk with the optimizer's sharding); the fp32 master weights and Adam moments are split over the replicas.
    Rounded to 4 decimals: the figures the Plan records (details) and the search lays fleets out by are the same."""
    usable = usable_hbm_bytes(accelerator, resolved)
    trained, frozen, state = _training_state(spec, resolved)
    whole = (trained * resolved["distributed_optimizer_replicated_bytes"] + frozen * FROZEN_BYTES_PER_PARAMETER
             + state * resolved["activation_headroom"])
    return ShardedState(round(whole / usable, 4),
                        round(trained * resolved["distributed_optimizer_sharded_bytes"] / usable, 4))


def min_chips_for_memory(spec: WorkloadSpec, resolved: Resolved, accelerator: Accelerator) -> int:
    """Fewest chips whose usable HBM holds the training state (training) or one copy of the weights (serving)."""
    usable = usable_hbm_bytes(accelerator, resolved)
    if spec.kind == "inference":
        needed = spec.model.parameters * resolved["inference_bytes_per_parameter"]
    else:
        needed = training_memory_bytes(spec, resolved)
    return max(1, math.ceil(needed / usable))


def slice_holds_training_state(spec: WorkloadSpec, resolved: Resolved, accelerator: Accelerator,
                               chips_per_slice: int) -> bool:
    """Whether one TPU slice holds the training state. A slice shards the state over its chips; a
    multislice runs data-parallel across slices (over the data-centre network), so every slice holds
    the whole state on its own: the slices' HBM does not add up."""
    return chips_per_slice >= min_chips_for_memory(spec, resolved, accelerator)


def deadline_hours(spec: WorkloadSpec, resolved: Resolved) -> tuple[float, bool]:
    """(hours, given): the workload's deadline, or the default longest run when it sets none."""
    if spec.constraints.deadline_days is not None:
        return spec.constraints.deadline_days * 24.0, True
    return resolved["default_deadline_days"] * 24.0, False


def precision_factor(spec: WorkloadSpec, resolved: Resolved, accelerator: Accelerator) -> tuple[float, str]:
    precision = spec.training.precision if spec.training is not None else "bf16"
    if precision == "fp8":
        if accelerator.peak_fp8_tflops:
            return resolved["fp8_speedup"], resolved.sources["fp8_speedup"]
        return 1.0, f"{accelerator.id} has no fp8 tensor cores: runs at the bf16 rate"
    if precision == "fp32":
        return resolved["fp32_slowdown"], resolved.sources["fp32_slowdown"]
    return 1.0, "bf16/fp16 peak"


class Factor(NamedTuple):
    """One factor of the whole-run estimate, with where it comes from."""

    value: float
    source: str
    detail: str = ""
    summary: str = ""        # one phrase for the rationale (the expert-parallel layout)


def whole_run_goodput(spec: WorkloadSpec, resolved: Resolved, catalog: Catalog, accelerator: Accelerator) -> Factor:
    """The share of its steps' speed a whole run keeps: the workload's `goodput` override, else the model fitted
    on published whole runs, by model size and hardware generation (a generation with few published runs
    borrows its nearest calibrated one's: policies/estimator/generations.py)."""
    if resolved.sources["goodput"] == OVERRIDE:
        return Factor(resolved["goodput"], OVERRIDE)
    fitted = whole_run_model.calibrated_model(catalog).goodput
    generation = generations.generation(accelerator.id)
    return Factor(fitted.goodput(generation, spec.model.active), fitted.source(generation))


def whole_run_spread(spec: WorkloadSpec, resolved: Resolved, catalog: Catalog) -> whole_run_model.Spread | None:
    """How wrong the whole-run estimate may be (the leave-one-out residuals of the rows like this workload:
    dense or mixture of experts); None when the workload fixes its own goodput or MFU."""
    if resolved.sources["goodput"] == OVERRIDE or resolved.mfu_override is not None:
        return None
    return whole_run_model.calibrated_model(catalog).spread_for(spec.model.is_moe)


def whole_run_blind_spread(spec: WorkloadSpec, resolved: Resolved, catalog: Catalog
                           ) -> whole_run_model.Spread | None:
    """The same for published runs outside the table, estimated blind (policies/catalog/blind_runs.yaml, never
    fitted) of the workload's kind; None when the workload fixes its own goodput or MFU, or too few such runs."""
    if whole_run_spread(spec, resolved, catalog) is None:
        return None
    return whole_run_model.calibrated_model(catalog).blind_for(spec.model.is_moe)


def moe_efficiency(spec: WorkloadSpec, catalog: Catalog, accelerator: Accelerator, step_mfu,
                   machine_type: str | None = None) -> Factor | None:
    """A mixture-of-experts model's whole-run factor beyond a dense model of its active size: the fitted MoE
    factor times the efficiency left by the expert-parallel all-to-all on this accelerator's fabric (on
    `machine_type`, whose own NVLink domain counts where the hardware table states one; None for a dense
    model). `step_mfu(chips)` times the compute the all-to-all is set against."""
    if not spec.model.is_moe:
        return None
    fitted = whole_run_model.calibrated_model(catalog)
    source = (f"MoE factor x{fitted.moe_factor:.3g}, fitted on {fitted.moe_rows} published mixture-of-experts whole "
              "runs (policies/catalog/whole_runs.yaml) against dense runs of their active size")
    model = spec.model
    if model.experts is None or model.experts_per_token is None:
        missing = ("experts not given: the expert-parallel all-to-all is not costed (set model.experts and "
                   "model.experts_per_token)")
        return Factor(fitted.moe_factor, source, missing, missing)
    from accel.policies.estimator import moe  # only a mixture of experts with its experts given lays them out

    layers, hidden, architecture = model_architecture(spec, catalog.defaults)
    expert_parallel = moe.default_expert_parallel(model.experts, accelerator.id, machine_type=machine_type)
    chips = max(expert_parallel, 8)
    compute = (whole_run_model.flops_per_token(model.active, layers, hidden, model.sequence_length)
               / (accelerator.peak_bf16_tflops * 1e12 * step_mfu(chips)))
    layout = moe.layout(moe.MoeShape(model.experts, model.experts_per_token, int(layers), hidden), accelerator.id,
                        compute, fitted.overlap, expert_parallel, machine_type=machine_type)
    found = moe.fabric(accelerator.id, machine_type)
    domain = ("TPU slice (ICI)" if found is not None and found.domain_chips == 0 else
              f"{found.domain_chips}-chip NVLink domain" if found is not None else "node")
    own = found.machine_domain(machine_type) if found is not None else None
    summary = layout.describe(accelerator.id, domain)
    detail = (f"{summary} ({layout.seconds_per_token * 1e6:.3g} us of all-to-all "
              f"per token against {compute * 1e6:.3g} us of compute at the step MFU of {chips} chips, "
              f"{fitted.overlap:.0%} hidden; {architecture}; every layer taken as a MoE layer); the expert weights, "
              "their gradients and optimizer state are sharded across the expert-parallel group and, with every "
              "other parameter's, across data-parallel groups too (ZeRO-3/FSDP): memory follows the "
              f"{model.parameters / 1e9:,.4g}B total")
    where = f"[collective_fabrics.{accelerator.id}]"
    if own is not None:
        where += f", machines.{own.machine_type} (its own {own.domain_chips}-GPU NVLink domain)"
    return Factor(fitted.moe_factor * layout.efficiency,
                  f"{source}; all-to-all: policies/estimator/moe.py, fabric: policies/hardware/facts.toml {where}",
                  detail, summary)


class TrainingModel:
    """Time of one training run on one accelerator type, as a function of fleet size."""

    def __init__(self, spec: WorkloadSpec, resolved: Resolved, catalog: Catalog,
                 accelerator: Accelerator, cloud: str, spot: bool,
                 mfu_cache: dict[tuple[int, int], float] | None = None, machine_type: str | None = None) -> None:
        """`mfu_cache`: the step MFUs already predicted for this workload on this accelerator, shared by the
        models of its clouds and capacity types (the MFU depends on neither). `machine_type`: the machine the
        fleet runs on, whose own NVLink domain the all-to-all of a mixture of experts crosses where the hardware
        table states one (a2-megagpu-16g); None: the chip's."""
        self.flops = training_flops(spec, catalog.defaults)
        factor, _ = precision_factor(spec, resolved, accelerator)
        self.peak = accelerator.peak_bf16_tflops * 1e12 * factor
        self.fixed_mfu = resolved.mfu_override
        self.catalog, self.accelerator = catalog, accelerator
        self.fit = calibrated_fit(catalog)
        # The step MFU follows the matmuls a token passes through: a mixture-of-experts model's active ones.
        self.parameters = spec.model.active
        self.decay_override = resolved.decay_override
        self.multislice_override = resolved.multislice_override
        self.batch_tokens, _ = global_batch(spec, catalog.defaults)   # sets the DCN cost of a multislice step
        self._mfu_cache: dict[tuple[int, int], float] = {} if mfu_cache is None else mfu_cache
        self.whole_run = whole_run_goodput(spec, resolved, catalog, accelerator)
        self.moe = moe_efficiency(spec, catalog, accelerator, self.mfu, machine_type)
        # What a whole run keeps of its steps' speed: the whole-run overhead and, for a mixture of experts, the
        # exposed all-to-all and the MoE factor (policies/estimator/whole_runs.py); never more than all of it.
        self.goodput = min(self.whole_run.value * (self.moe.value if self.moe is not None else 1.0),
                           whole_run_model.calibrated_model(catalog).goodput.max_goodput)
        rate = resolved.preemptions_per_host_day.get(cloud, 0.0) if spot else 0.0
        self.preemptions_per_host_hour = rate / 24.0
        self.loss_hours = (resolved["restart_minutes"] + resolved["checkpoint_interval_minutes"] / 2.0) / 60.0
        self.startup_fixed_hours = (resolved["provisioning_minutes"] + resolved["image_pull_minutes"]
                                    + resolved["compile_minutes"]) / 60.0
        self.checkpoint_bytes = checkpoint_bytes(spec, catalog.defaults)
        # A parameter-efficient fine-tune also loads the frozen base weights at start.
        self.base_weight_bytes = (spec.model.parameters - trained_parameters(spec)) * FROZEN_BYTES_PER_PARAMETER
        self.write_bytes_per_host_hour = resolved["checkpoint_write_gbps_per_host"] * 1e9 * SECONDS_PER_HOUR
        self.checkpoints_per_hour = 60.0 / resolved["checkpoint_interval_minutes"]

    def mfu(self, chips: int, slices: int = 1) -> float:
        if self.fixed_mfu is not None:
            return self.fixed_mfu
        key = (chips, slices)
        value = self._mfu_cache.get(key)
        if value is None:
            value = self._mfu_cache[key] = predict(self.fit, self.catalog, self.accelerator, self.parameters, chips,
                                                   slices, self.decay_override,
                                                   self.multislice_override, self.batch_tokens)
        return value

    def productivity(self, hosts: int) -> float:
        """Share of wall-clock not lost to spot preemptions: a synchronous job restarts when any host goes."""
        return 1.0 - hosts * self.preemptions_per_host_hour * self.loss_hours

    def checkpoint_hours(self, hosts: int) -> float:
        """Wall-clock to write (or restore) one checkpoint, every host writing its shard in parallel."""
        return self.checkpoint_bytes / (hosts * self.write_bytes_per_host_hour)

    def startup_hours(self, hosts: int) -> float:
        """Provisioning, image pull, compilation and restoring the checkpoint (or the base weights)."""
        restore = (self.checkpoint_bytes + self.base_weight_bytes) / (hosts * self.write_bytes_per_host_hour)
        return self.startup_fixed_hours + restore

    def compute_hours(self, chips: int, hosts: int, slices: int = 1) -> float:
        """Training steps, checkpoint stalls and spot losses: everything but the start-up."""
        productive = self.productivity(hosts)
        if productive < MIN_SPOT_PRODUCTIVITY:
            return math.inf
        rate = chips * self.peak * self.mfu(chips, slices) * self.goodput * productive
        if rate <= 0.0:  # an efficiency override so small its product underflows: no work gets done
            return math.inf
        steps = self.flops / rate / SECONDS_PER_HOUR
        stall_share = self.checkpoints_per_hour * self.checkpoint_hours(hosts)
        return steps * (1.0 + stall_share)

    def hours(self, chips: int, hosts: int, slices: int = 1) -> float:
        return self.startup_hours(hosts) + self.compute_hours(chips, hosts, slices)


class Replica(NamedTuple):
    """One serving replica: chips, batch (every sequence in flight: on a pipeline, `stages` micro-batches of
    batch / stages), decode step (the time between two tokens of one sequence) and throughput."""

    chips: int
    batch: int
    step_seconds: float
    tokens_per_second: float
    bound: str  # what the step spends most on: "memory-bandwidth" | "compute" | "prefill compute" | ...
    stages: int = 1


def hidden_width(parameters: float, layers: float, hidden_width_rule: float) -> float:
    """The model's hidden width estimated from its size and layers (assumptions.yaml hidden_width_rule)."""
    return math.sqrt(parameters / (hidden_width_rule * layers))


def allreduce_message_bytes(hidden: float, batch: int) -> float:
    """What one tensor-parallel all-reduce of a decode step carries: batch x hidden x 2 bytes (bf16 activations)."""
    return batch * hidden * 2.0


class InferenceModel:
    """Decode throughput and latency of replicas of one accelerator type."""

    def __init__(self, spec: WorkloadSpec, resolved: Resolved, accelerator: Accelerator,
                 kv_reads_per_value: float = 1.0, layers: int | None = None, machine_type: str | None = None) -> None:
        """`kv_reads_per_value`: how often a decode step reads each stored K/V value. 1 for servers whose
        attention kernel reads a grouped-query KV head once for all the query heads that share it (vLLM,
        JetStream, TensorRT-LLM with XQA); query heads / KV heads for a kernel that reads it once per query head
        (TensorRT-LLM's masked multi-head attention without XQA). `layers`: the model's layer count when known
        (else estimated from its size); it sets the number of tensor-parallel all-reduces per step. `machine_type`:
        the machine the replica runs on, whose own scale-out bandwidth the hardware table may state (a3-highgpu-8g:
        100 Gb/s per GPU, not the H100's 400)."""
        assert spec.inference is not None
        self.kv_reads_per_value = kv_reads_per_value
        parameters = spec.model.parameters
        self.layers = float(layers) if layers is not None else resolved["model_layers"]
        self.hidden = model_hidden(spec, self.layers, resolved["hidden_width_rule"])[0]
        self.allreduces_per_step = resolved["inference_allreduces_per_layer"] * self.layers
        self.step_overhead = resolved["inference_step_overhead_ms"] / 1000.0
        self.engine = resolved.serving_engine
        table = resolved.allreduce
        # The measured latency where it applies (NVLink GPUs); else a latency and a bandwidth over the replica's
        # fabric (fabric_allreduce.py: PCIe, a TPU slice's ICI); elsewhere none.
        self.allreduce_table = table if table is not None and accelerator.mfu_class in table.mfu_classes else None
        self.resolved = resolved
        self.accelerator = accelerator
        self.fabric_paths: dict[int, tuple[fabric_allreduce.AllreducePath, ...]] = {}
        # A decode step computes through the active parameters (a mixture of experts: the routed and shared experts
        # and attention) but streams every expert's weights that the batch touches: all of them, at any real batch.
        self.flops_per_token = 2.0 * spec.model.active
        self.prompt_per_output = resolved["inference_prompt_tokens_per_output_token"]
        # Compute per generated token, its share of the prompt's prefill included (what the fleet computes).
        self.step_flops_per_sequence = self.flops_per_token * (1.0 + self.prompt_per_output)
        # vLLM TPU's tensor-parallel ranks are JAX devices, two per TPU7x chip (facts.toml jax_devices_per_chip;
        # tpu-inference 0.32.0 worker/tpu_worker.py l.411-412).
        chip = hardware.current().chips.get(accelerator.id)
        self.on_tpu = chip is not None and chip.family == "tpu"
        self.ranks_per_chip = chip.jax_devices_per_chip if self.on_tpu else 1
        # fp8 needs fp8 tensor cores; elsewhere the weights and KV cache are served at bf16.
        served = served_precision(spec, resolved, accelerator)
        self.fp8 = served == "fp8" and bool(accelerator.peak_fp8_tflops)   # computes at the fp8 peak
        widen = 2.0 if served != serving_precision(spec) else 1.0
        self.weight_bytes = parameters * resolved["inference_bytes_per_parameter"] * widen
        # vLLM quantizes an fp8 replica's bf16 checkpoint layer by layer as it loads (accel/job/runtime.yaml
        # vllm_precision.fp8_online_load): the weights it holds are the served ones, as for any other precision.
        # What each K/V value takes as served, and on a TPU the head width vLLM TPU stores, padded to 128 lanes
        # (tpu_kv_layout.py; its heads' packing: kv_copies).
        self.kv_bytes_per_value = resolved.kv_bytes_per_value * widen
        self.kv_bytes_per_token = (resolved["kv_cache_bytes_per_token"] * widen
                                   * (resolved.tpu_kv_width if self.on_tpu else 1.0))
        context = resolved["context_tokens"]
        self.kv_bytes_per_sequence = self.kv_bytes_per_token * context
        # vLLM serves multi-latent attention as one latent KV head per GPU (v0.33.0 vllm/config/model.py l.1673-1675
        # get_num_kv_heads: "When using MLA during decode it becomes MQA", 1, not divided by tensor parallelism; the
        # decode context parallelism that would shard it is off by default, config/parallel.py l.389), so every
        # tensor-parallel rank of a stage stores and reads the whole latent of its layers. vLLM TPU too: its
        # MLA cache is sharded over the batch (data, attention-DP) and KV-context axes only, never the tensor-parallel
        # 'model' axis (tpu-inference 0.32.0 tpu_inference/runner/kv_cache.py l.171-175, ShardingAxisName BATCH and
        # KV_CONTEXT in layers/common/sharding.py), so each chip of a tensor-parallel TPU replica holds it whole.
        self.kv_per_tensor_rank = resolved.kv_cache_per_tensor_rank   # per JAX device on TPU: twice per TPU7x chip
        # A decode step reads each sequence's KV cache as it stands: on average the prompt plus half the output.
        output_share = 1.0 / (1.0 + self.prompt_per_output)
        self.mean_context = context * (1.0 - output_share / 2.0)
        self.usable_hbm = usable_hbm_bytes(accelerator, resolved)
        self.bandwidth = accelerator.hbm_gbps * 1e9 * resolved["inference_hbm_bandwidth_efficiency"]
        peak = (accelerator.peak_fp8_tflops if self.fp8 else accelerator.peak_bf16_tflops) * 1e12
        self.peak = peak   # what the replica computes at: an fp8 replica's utilisation is a share of the fp8 peak
        self.compute = peak * resolved["inference_compute_efficiency"]
        self.prefill_compute = peak * resolved["inference_prefill_efficiency"]
        self.p99_bound_ms = spec.inference.p99_latency_ms
        self.p99_factor = resolved["inference_latency_p99_factor"]
        self.step_limit = self.p99_bound_ms / 1000.0 / self.p99_factor
        self.scaling_log = math.log(resolved["inference_replica_scaling_per_doubling"])
        self.min_replicas = int(resolved["inference_min_replicas"])
        # A replica of pipeline stages (whole nodes over the scale-out network, assumptions.yaml pipeline_serving):
        # what a stage hands the next per token, the hand-off's latency, and each GPU's share of the node's NICs.
        self.hop_bytes_per_token = resolved["inference_pipeline_activation_tensors"] * self.hidden * 2.0
        self.hop_latency = resolved["inference_pipeline_hop_latency_us"] * 1e-6
        self.hop_split = bool(resolved["inference_pipeline_split_over_tensor_ranks"])   # each rank sends 1/TP
        fabric = hardware.current().collective_fabric(accelerator.id, machine_type)
        self.scale_out_bytes_per_s = fabric.scale_out_gbps * 1e9 / 8 if fabric is not None else None

    def tensor_ranks(self, chips: int, stages: int = 1) -> int:
        """The tensor-parallel ranks of each stage of a replica of `chips` over `stages` stages: a GPU each, on TPU a
        JAX device, two per TPU7x chip."""
        return max(1, chips * self.ranks_per_chip // max(1, stages))

    def kv_copies(self, chips: int, stages: int = 1) -> float:
        """How many copies of the model's KV heads a replica of `chips` over `stages` stages stores per cached token:
        - multi-latent attention: its tensor-parallel ranks (tensor_ranks; each rank holds the whole latent);
        - grouped-query attention: 1 while the ranks split the KV heads (Resolved.kv_heads), past them ranks /
          heads, since each rank stores at least one whole KV head. vLLM v0.33.0: vllm/config/model.py
          l.1679-1683 get_num_kv_heads, max(1, total_num_kv_heads // tensor_parallel_size), "We will replicate the
          KV heads in the case where the number of KV heads is smaller than the tensor parallel size so each GPU has
          at least one KV head"; the model's attention layer the same (model_executor/models/llama.py l.152-156),
          whose cache spec takes it (model_executor/layers/attention/attention.py l.677). vLLM TPU pads the cache's
          KV heads to the 'model' axis' devices (tpu-inference 0.32.0 runner/kv_cache_manager.py l.563-567 and
          l.683-685, utils.py l.334-340 get_padded_num_heads: fewer heads than devices become as many as the
          devices). So TP 16 of an 8-KV-head model stores 2 copies, a TPU7x 2x2x1 (8 devices) of a 4-KV-head one 2.
          On a TPU each device's heads then fill whole 32-bit words of K and V (tpu_kv_layout.heads_stored: its
          kernels' cache shape): one 128-wide head a device at fp8, or one 64-wide at bf16, takes two heads' room.
          Counted as ranks x ceil(heads / ranks) whole heads over the heads: the engines' count wherever they run
          (they refuse ranks and heads neither dividing the other: accel/job/runtime.yaml
          model_run.vllm_heads_source, vllm_tpu.heads_source), never fewer heads than the model's elsewhere."""
        ranks = self.tensor_ranks(chips, stages)
        if self.kv_per_tensor_rank:
            return ranks
        heads = self.resolved.kv_heads
        per_rank = -(-heads // ranks)
        if self.on_tpu:
            per_rank = tpu_kv_layout.heads_stored(per_rank, self.resolved.kv_head_dim, self.kv_bytes_per_value)
        return ranks * per_rank / heads

    def kv_reads_per_copy(self, chips: int) -> float:
        """How often a decode step over a `chips`-chip stage reads each stored K/V value. Each rank reads the heads
        it stores at its own bandwidth, so a replicated cache is read once per copy (kv_copies): past the KV heads a
        rank reads one head, as it would at TP = heads, and the replica's step reads copies x the cache over
        copies x the bandwidth. A kernel reading a KV head once per query head (kv_reads_per_value: query heads /
        KV heads) reads the model's heads that often in all whoever stores them, each rank for its own share of the
        query heads: spread over the copies, at least once each. A multi-latent cache's every copy is read whole
        by its rank."""
        copies = self.kv_copies(chips)
        if self.kv_per_tensor_rank or copies <= 1:
            return self.kv_reads_per_value
        return max(1.0, self.kv_reads_per_value / copies)

    def sequence_kv_bytes(self, chips: int, stages: int = 1) -> float:
        """What one sequence's KV cache takes over a replica of `chips` over `stages` stages, all copies counted."""
        return self.kv_bytes_per_sequence * self.kv_copies(chips, stages)

    def hold_chips(self) -> int:
        """Chips whose usable memory holds the weights and one sequence's KV cache: the least a replica takes (one
        copy of the cache: the lower bound a replica search starts from)."""
        return math.ceil((self.weight_bytes + self.kv_bytes_per_sequence) / self.usable_hbm)

    def utilisation(self, tokens_per_second: float, chips: int) -> float:
        """The share of `chips`' peak (at the precision the replica computes in) that `tokens_per_second`
        generated tokens use, prefill included; kept in (0, 1]. Against the bf16 peak an fp8 fleet read up to twice
        what it uses (a prefill-bound fp8 70B on B200: 78%, of a peak it does not compute at)."""
        return min(1.0, max(1e-6, self.step_flops_per_sequence * tokens_per_second / (chips * self.peak)))

    def efficiency(self, chips: int) -> float:
        """Share of a replica's bandwidth and FLOPs left after tensor-parallel communication."""
        return math.exp(self.scaling_log * math.log2(chips / 8)) if chips > 8 else 1.0

    def allreduce_paths(self, chips: int) -> tuple[fabric_allreduce.AllreducePath, ...]:
        """The ways one all-reduce over `chips` may go where no table applies (fabric_allreduce_paths), worked out
        once per size: a replica search asks thousands of times."""
        if self.allreduce_table is not None:
            return ()
        if chips not in self.fabric_paths:
            self.fabric_paths[chips] = fabric_allreduce_paths(self.resolved, self.accelerator, chips)
        return self.fabric_paths[chips]

    def allreduce_path(self, chips: int, message_bytes: float) -> fabric_allreduce.AllreducePath | None:
        """What one all-reduce of `message_bytes` over `chips` pays where no table applies (None where one does)."""
        return fabric_allreduce.fastest(self.allreduce_paths(chips), message_bytes)

    def allreduce_seconds(self, chips: int, batch: int) -> float:
        """Latency of a decode step's tensor-parallel all-reduces: 2 per layer, each of batch x hidden x 2
        bytes, at the published latency for the engine's all-reduce kernel where one applies, else a latency and a
        bandwidth over the replica's PCIe or ICI (fabric_allreduce.py); 0 on one chip."""
        if chips <= 1:
            return 0.0
        message = allreduce_message_bytes(self.hidden, batch)
        if self.allreduce_table is not None:
            return self.allreduces_per_step * self.allreduce_table.microseconds(self.engine, chips, message) * 1e-6
        path = self.allreduce_path(chips, message)
        return self.allreduces_per_step * path.seconds(message) if path is not None else 0.0

    def pipeline_hops_seconds(self, stages: int, batch: int, tensor: int = 1) -> float:
        """What one pass of a micro-batch of `batch` sequences spends between the stages of a `stages`-stage
        replica of `tensor` GPUs per stage: stages - 1 hand-offs of its tokens' activations (each sequence's decode
        token plus its share of prompt tokens prefilled in the same step; each tensor-parallel rank sends its 1/TP
        slice of them to its peer over its own share of the scale-out network, assumptions.yaml pipeline_serving
        split_over_tensor_ranks, else the whole), plus the sampled tokens' return to the leader's engine (latency
        only). 0 on one stage; a chip the hardware table gives no scale-out figure has no pipeline."""
        if stages <= 1:
            return 0.0
        if self.scale_out_bytes_per_s is None:
            raise ValueError("a pipeline replica needs the chip's scale-out bandwidth ([collective_fabrics])")
        share = 1.0 / max(1, tensor) if self.hop_split else 1.0
        hand_off = (batch * (1.0 + self.prompt_per_output) * self.hop_bytes_per_token * share
                    / self.scale_out_bytes_per_s)
        return (stages - 1) * (self.hop_latency + hand_off) + self.hop_latency

    def step_seconds(self, chips: int, batch: int, stages: int = 1) -> tuple[float, str]:
        """Time between two tokens of one sequence at `batch`, kernel by kernel (a roofline per kernel, not one
        for the whole step, because the kernels run one after another):
        - the weight matmuls: reading the weights once (memory-bandwidth) or 2N FLOPs per sequence (compute),
          whichever is slower;
        - decode attention: reading every sequence's KV cache as it stands (memory-bandwidth; it does no
          useful reuse, so it adds to the matmuls rather than hiding under them);
        - the prefill of the prompts that join meanwhile (compute-bound, 2N FLOPs per prompt token);
        - on a tensor-parallel replica, the latency of two small all-reduces per layer;
        - the serving engine's host work between steps (scheduling, sampling, input preparation).
        On a replica of `stages` pipeline stages (whole nodes, tensor parallel within each), `batch` is one
        micro-batch: it passes every stage in turn, each reading its share of the weights and KV cache at its own
        GPUs' bandwidth (so the whole model at one stage's), with the hand-offs between stages on top
        (pipeline_hops_seconds)."""
        if stages > 1:
            chips //= stages
        scale = chips * self.efficiency(chips)
        weights = self.weight_bytes / (scale * self.bandwidth)
        matmul_compute = batch * self.flops_per_token / (scale * self.compute)
        attention = (batch * self.kv_bytes_per_token * self.kv_copies(chips) * self.mean_context
                     * self.kv_reads_per_copy(chips) / (scale * self.bandwidth))
        prefill = batch * self.flops_per_token * self.prompt_per_output / (scale * self.prefill_compute)
        matmuls_memory_bound = weights >= matmul_compute
        # What the step spends most of its time on, for the rationale.
        allreduce = self.allreduce_seconds(chips, batch)
        hops = self.pipeline_hops_seconds(stages, batch, chips)
        terms = {"memory-bandwidth": (weights if matmuls_memory_bound else 0.0) + attention,
                 "compute": 0.0 if matmuls_memory_bound else matmul_compute,
                 "prefill compute": prefill,
                 "tensor-parallel all-reduce latency": allreduce,
                 "serving-engine host overhead": self.step_overhead}
        if stages > 1:
            terms["pipeline hand-offs over the scale-out network"] = hops
        step = max(weights, matmul_compute) + attention + prefill + allreduce + self.step_overhead + hops
        bound = max(terms, key=lambda name: terms[name])
        return step, bound

    def memory_batch(self, chips: int, stages: int = 1) -> int:
        """The sequences (per micro-batch, on `stages` stages) whose KV cache fits in `chips`' usable memory beside
        the weights: the most a replica can batch, whatever its scheduler allows."""
        free = chips * self.usable_hbm - self.weight_bytes
        return max(0, math.floor(free / self.sequence_kv_bytes(chips, stages)) // stages)

    def replica(self, chips: int, stages: int = 1) -> tuple[Replica | None, str]:
        """The best replica of `chips` chips (over `stages` pipeline stages), or None and why it cannot serve. A
        pipeline keeps `stages` micro-batches in flight (assumptions.yaml pipeline_serving), so its KV cache holds
        stages x the micro-batch and it yields that many tokens per pass."""
        if chips * self.usable_hbm <= self.weight_bytes:
            return None, "weights do not fit"
        by_memory = self.memory_batch(chips, stages)
        if by_memory < 1:
            return None, ("no room for a single sequence's KV cache" if stages == 1 else
                          f"no room for the KV cache of one sequence in each of its {stages} micro-batches")
        step_one, _ = self.step_seconds(chips, 1, stages)
        if step_one > self.step_limit:
            return None, self.too_slow(step_one)
        # The step grows linearly with the batch: the largest batch within the latency bound, by bisection.
        lo, hi = 1, by_memory
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.step_seconds(chips, mid, stages)[0] <= self.step_limit:
                lo = mid
            else:
                hi = mid - 1
        step, bound = self.step_seconds(chips, lo, stages)
        if stages == 1:
            return Replica(chips, lo, step, lo / step, bound), ""
        return Replica(chips, lo * stages, step, lo * stages / step, bound, stages), ""

    def too_slow(self, step_seconds: float, replica: str = "it") -> str:
        """Why a decode step of `step_seconds` at batch 1 misses the bound: the step, and the p99 latency
        (step x latency_p99_factor) it gives `replica`, which is what the bound is compared with."""
        return (f"one decode step takes {step_seconds * 1000:.0f} ms even at batch 1; x{self.p99_factor:g} "
                f"latency_p99_factor makes {replica} {step_seconds * self.p99_factor * 1000:.0f} ms per token at p99, "
                f"over the {self.p99_bound_ms:g} ms bound")



def filesystem_plan(spec: WorkloadSpec, cloud: str, hosts: int, fleet_hourly_usd: float,
                    defaults: Defaults) -> tuple[StoragePlan, str]:
    """Buckets always for training; a parallel filesystem only for large multi-host training where it is cheap
    next to the fleet. Serving gets no checkpoint storage. Returns the plan and the reason."""
    if spec.kind == "inference":
        return (StoragePlan.model_construct(dataset_bucket=False, checkpoint_bucket=False),
                "serving: weights come from a bucket; no checkpoint storage")
    storage = defaults.storage
    offer: FilesystemOffer | None = storage.filesystems.get(cloud)  # type: ignore[call-overload]
    min_hosts = storage.filesystem_min_hosts.value
    if offer is None or hosts < min_hosts:
        why = (f"{hosts} host{'s' if hosts != 1 else ''} (< {min_hosts:g}): dataset and checkpoint buckets are enough"
               if offer is not None else f"dataset and checkpoint buckets (no managed parallel filesystem on {cloud})")
        return StoragePlan.model_construct(), why
    checkpoint_gib = spec.model.parameters * storage.checkpoint_bytes_per_parameter.value / 2**30
    # A size the filesystem accepts as is, so the plan's cost and the built resource agree.
    capacity = offer.capacity_gib(checkpoint_gib * storage.checkpoints_kept.value)
    # Priced at the throughput tier the component builds: the tier, not the capacity alone, sets the price.
    hourly = capacity * offer.price_per_gib_month.usd / HOURS_PER_MONTH
    share = hourly / fleet_hourly_usd if fleet_hourly_usd > 0 else math.inf
    if share > storage.filesystem_max_cost_fraction.value:
        share_words = (f"{share:.1%} of the fleet's cost" if math.isfinite(share) else
                       "the run's only added cost (the fleet's marginal cost is $0: a reservation already paid for)")
        return StoragePlan.model_construct(), (f"{offer.kind} ({capacity} GiB, {offer.tier}, ${hourly:,.2f}/h) would be "
                               f"{share_words}: buckets are enough")
    return (StoragePlan.model_construct(filesystem=offer.kind, filesystem_capacity_gib=capacity),
            f"{offer.kind} {capacity} GiB ({offer.tier}, ${hourly:,.2f}/h, {share:.1%} of the fleet) for checkpoints "
            f"and restores across {hosts} hosts")


def _allreduce_assumption(resolved: Resolved, accelerator: Accelerator, spec: WorkloadSpec,
                          detail: dict[str, float | int | str]) -> Assumption:
    """The tensor-parallel all-reduce latency the chosen replica pays per step, how it was worked out and its
    sources: the engine's kernel as measured where the table applies (NVLink GPUs), else a latency and a bandwidth
    over the replica's fabric (fabric_allreduce.py: NCCL's ring on PCIe, a TPU slice's ICI); none where neither."""
    name = "tensor-parallel all-reduce latency"
    table, pcie, ici = resolved.allreduce, resolved.pcie_allreduce, resolved.ici_allreduce
    measured = table if table is not None and accelerator.mfu_class in table.mfu_classes else None
    fabric = hardware.current().collective_fabric(accelerator.id)
    if measured is not None:
        rule_source = measured.source
    elif pcie is not None and accelerator.mfu_class in pcie.mfu_classes:
        rule_source = pcie.source
    elif ici is not None and fabric is not None:
        rule_source = (f"{ici.rule_source}; hop latency {ici.hop_latency_us.value:g} us: {ici.hop_latency_us.source}; "
                       f"ICI per chip: {fabric.source}")
    else:
        return _assumption(name=name, value="not charged",
                          source=f"no published small all-reduce latency for {accelerator.id} "
                                 f"(measured on {', '.join(table.mfu_classes) if table else 'none'}) and no fabric "
                                 "figure for it")
    chips, batch = int(detail.get("replica_chips", 1)), int(detail.get("batch_per_replica", 1))
    if chips <= 1:
        return _assumption(name=name, value="none (one-chip replica)", source=rule_source)
    layers, per_layer = resolved["model_layers"], resolved["inference_allreduces_per_layer"]
    hidden, stated = model_hidden(spec, layers, resolved["hidden_width_rule"])
    hidden_source = f"hidden {hidden:,.0f} from {stated}" if stated else resolved.sources["hidden_width_rule"]
    message = allreduce_message_bytes(hidden, batch)
    if measured is not None:
        engine = resolved.serving_engine
        latency_us, how = measured.microseconds(engine, chips, message), f"{engine} kernel"
    else:
        path = fabric_allreduce.fastest(fabric_allreduce_paths(resolved, accelerator, chips), message)
        assert path is not None   # more than one chip on a fabric the table states
        latency_us, how = path.seconds(message) * 1e6, path.how
    return _assumption(name=name,
                      value=f"{latency_us:.3g} us each, {per_layer * layers:g} per step ({per_layer:g} per layer x "
                            f"{layers:g} layers; {message / 1024:,.0f} KiB over {chips} chips, {how})",
                      source=f"{resolved.sources['inference_allreduces_per_layer']}; {hidden_source}; {rule_source}")


def fabric_allreduce_paths(resolved: Resolved, accelerator: Accelerator,
                           chips: int) -> tuple[fabric_allreduce.AllreducePath, ...]:
    """The ways one all-reduce over `chips` may go where no measured table applies (fabric_allreduce.py; the
    fastest for a message is taken): NCCL's ring over PCIe, one per protocol, on a PCIe GPU (assumptions.yaml
    pcie_allreduce), the slice's ICI on a TPU (ici_allreduce); none on one chip or a chip without either."""
    pcie = resolved.pcie_allreduce
    if pcie is not None and accelerator.mfu_class in pcie.mfu_classes:
        return fabric_allreduce.pcie_ring(chips, pcie.link_gbytes_per_s * 1e9, pcie.protocols)
    ici = resolved.ici_allreduce
    path = (fabric_allreduce.ici_path(accelerator.id, chips, ici.hop_latency_us.value * 1e-6) if ici is not None
            else None)
    return (path,) if path is not None else ()


def _pipeline_assumptions(catalog: Catalog, accelerator: Accelerator, detail: dict[str, float | int | str],
                          machine_type: str | None = None) -> list[Assumption]:
    """A replica of pipeline stages over whole nodes: the engine's layout and the hand-offs it was costed with
    (none for a replica inside one node or NVLink domain)."""
    stages = int(detail.get("pipeline_stages", 1) or 1)
    if stages <= 1:
        return []
    pipeline = catalog.defaults.inference.pipeline_serving
    gpus = int(detail["replica_chips"]) // stages
    fabric = hardware.current().collective_fabric(accelerator.id, machine_type)
    assert fabric is not None   # a pipeline replica is offered only on a chip with a scale-out figure
    return [_assumption(name="pipeline-parallel replica",
                        value=f"{stages} stages (one per node) x {gpus} GPUs tensor parallel; {stages} micro-batches "
                              "in flight",
                        source=f"{pipeline.rule_source}; {pipeline.batches_in_flight_source}"),
            _assumption(name="pipeline hand-off",
                        value=f"{pipeline.hop_latency_us.value:g} us + {pipeline.activation_tensors.value:g} x hidden x "
                              f"2 bytes per token"
                              + (f", split over the stage's {gpus} tensor-parallel ranks,"
                                 if pipeline.split_over_tensor_ranks else "")
                              + f" at {fabric.scale_out_gbps:g} Gb/s per GPU; {stages - 1} hand-off(s) "
                              "and the sampled tokens' return per pass",
                        source=f"{pipeline.hop_latency_us.source}; {pipeline.activation_tensors.source}; "
                               f"scale-out bandwidth: {fabric.source}")]


def _round(value: float) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return float(f"{value:.4g}")


# The estimate's assumptions and storage plan are worked out here from the validated workload, catalog and
# hardware table: they are built without validation (model_construct), which would first build each model's
# validator (with the first, pydantic's plugin loader and importlib.metadata: ~10 ms of a choose). A plan read
# from a file is validated in full (Plan.model_validate).
def _assumption(name: str, value: float | str, source: str) -> Assumption:
    """An Assumption, its value typed as validation types it (a number as a float)."""
    return Assumption.model_construct(name=name, value=value if isinstance(value, str) else float(value), source=source)


@dataclass
class Evaluation:
    """What the estimator says about one sized configuration (before it becomes an Option)."""

    hours: float
    hourly_usd: float
    total_usd: float
    mfu: float
    goodput: float
    detail: dict[str, float | int | str] = field(default_factory=dict)


def _sequence_assumption(detail: dict[str, float | int | str]) -> list[Assumption]:
    """The activation-memory regime, listed where the sequence's activations outgrow the headroom (a long
    sequence: the context-parallel degree they need, policies/estimator/activations.py)."""
    if "sequence_activations" not in detail:
        return []
    from accel.policies.estimator import activations

    exchange = detail.get("context_exchange")
    return [_assumption(name="activation memory", value=str(detail["sequence_activations"]),
                        source=f"{activations.REGIME} ({activations.SOURCE}); "
                               + str(detail.get("context_layout", "context parallelism as Megatron-Core "
                                                "context_parallel_size lays it out")) + (f"; {exchange}" if exchange else ""))]


def _chips_per_sequence(spec: WorkloadSpec, catalog: Catalog, detail: dict[str, float | int | str]) -> Assumption:
    """The chips that share one sequence of the batch: the size rule's at the usual lengths; a long sequence's
    tensor x context-parallel group where its layout sets one (details.chips_per_sequence,
    policies/estimator/activations.py), the rule's words then said as what holds at the usual lengths."""
    rule = rule_for(catalog.defaults.training.chips_per_sequence_by_size, spec.model.parameters)
    chips = detail.get("chips_per_sequence")
    if chips is None:
        return _assumption(name="chips_per_sequence", value=rule.value, source=rule.source)
    return _assumption(name="chips_per_sequence", value=chips,
                       source=f"at model.sequence_length {spec.model.sequence_length:,} one sequence's activations "
                              "need the layout's tensor x context-parallel group, whose GPUs share it "
                              f"(policies/estimator/activations.py); at the usual lengths {rule.value:g}: {rule.source}")


def _distributed_optimizer_assumption(resolved: Resolved, detail: dict[str, float | int | str]) -> list[Assumption]:
    """The bytes a GPU training layout is sized by, where the estimate records them (a PyTorch run: Megatron's
    distributed optimizer, details.replicated_state_gpus and sharded_state_gpus)."""
    if "sharded_state_gpus" not in detail:
        return []
    replicated = resolved["distributed_optimizer_replicated_bytes"]
    sharded = resolved["distributed_optimizer_sharded_bytes"]
    return [_assumption(name="distributed optimizer", value=f"{replicated:g} + {sharded:g} / DP bytes per parameter",
                        source=f"{resolved.sources['distributed_optimizer_sharded_bytes']}; the job runs Megatron-LM "
                               "with --use-distributed-optimizer, so a replica (TP x PP, plan.parallelism) is the "
                               "smallest whose GPUs hold the weights, gradients and activation headroom plus the "
                               "optimizer state over the data-parallel degree; the fleet's floor stays "
                               "bytes_per_parameter")]


def assumption_list(spec: WorkloadSpec, resolved: Resolved, catalog: Catalog, accelerator: Accelerator,
                    cloud: str, spot: bool, chips: int, slices: int, price_source: str,
                    detail: dict[str, float | int | str] | None = None,
                    moe: Factor | None = None, machine_type: str | None = None) -> list[Assumption]:
    """Every number the estimate used, with where it came from: one Assumption per number, in the order a
    plan prints them (long for that reason alone). `moe`: the mixture-of-experts factor the estimate's hours
    used (its TrainingModel's); without it, that model's is worked out here, never a second way."""
    detail = detail or {}
    items = [_assumption(name=f"{accelerator.id} peak dense bf16", value=f"{accelerator.peak_bf16_tflops:g} TFLOP/s",
                        source=accelerator.source),
             _assumption(name=f"{accelerator.id} memory", value=f"{accelerator.hbm_gb:g} GB, {accelerator.hbm_gbps:g} GB/s",
                        source=accelerator.source),
             _assumption(name="price", value=str(detail.get("price", "")), source=price_source),
             resolved.assumption("hbm_usable_fraction")]
    if spec.kind == "inference":
        chosen = serving_precision(spec)
        precision = catalog.defaults.inference.precisions[chosen]
        served = served_precision(spec, resolved, accelerator)
        note = ("" if served == chosen else
                f"; {accelerator.id} has no fp8 tensor cores: served at bf16" if not accelerator.peak_fp8_tflops else
                f"; {accelerator.id}: its engine leaves the routed experts of a checkpoint not already in {chosen} "
                f"in bf16 ({resolved.serving_experts_source}): served at bf16")
        items += [_assumption(name=SERVED_PRECISION, value=served,
                             source=f"inference.precision {chosen}: {precision.quality}{note}"),
                  resolved.assumption("inference_bytes_per_parameter", "inference bytes_per_parameter"),
                  resolved.assumption("inference_prefill_efficiency", "prefill_efficiency"),
                  resolved.assumption("kv_cache_bytes_per_token"),
                  resolved.assumption("context_tokens"),
                  resolved.assumption("inference_hbm_bandwidth_efficiency", "hbm_bandwidth_efficiency"),
                  resolved.assumption("inference_compute_efficiency", "compute_efficiency"),
                  resolved.assumption("inference_latency_p99_factor", "latency_p99_factor"),
                  resolved.assumption("inference_prompt_tokens_per_output_token", "prompt_tokens_per_output_token"),
                  resolved.assumption("inference_replica_scaling_per_doubling", "replica_scaling_per_doubling"),
                  resolved.assumption("inference_step_overhead_ms", "step_overhead_ms"),
                  _allreduce_assumption(resolved, accelerator, spec, detail),
                  *_pipeline_assumptions(catalog, accelerator, detail, machine_type),
                  resolved.assumption("inference_min_replicas", "min_replicas")]
        if spot:
            items.append(resolved.assumption("inference_spot_serving_headroom", "spot_serving_headroom"))
        return items
    fitted = calibrated_fit(catalog)
    calibrated = f"MFU model fitted on {fitted.rows} published runs (policies/catalog/published_runs.yaml; " \
                 f"{catalog.defaults.mfu_classes[accelerator.mfu_class].source})"
    if resolved.mfu_override is not None:
        mfu_source = OVERRIDE
        mfu_value = f"{resolved.mfu_override:g} (fixed)"
    else:
        decay = resolved.decay_override or fitted.decay_per_doubling()
        mfu = predict(fitted, catalog, accelerator, spec.model.active, chips, slices, resolved.decay_override,
                      resolved.multislice_override, global_batch(spec, catalog.defaults)[0])
        mfu_source = calibrated if resolved.decay_override is None else f"decay: {OVERRIDE}; model: {calibrated}"
        active = "active " if spec.model.is_moe else ""
        mfu_value = (f"step MFU {mfu:.3g} for {spec.model.active / 1e9:,.3g}B {active}parameters on {chips:,} chips "
                     f"(x{decay:.3g} per doubling of chips)")
    fraction = spec.training.trainable_fraction if spec.training is not None else 1.0
    counted = "active parameters" if spec.model.is_moe else "parameters"
    flops_rule = (f"(6 * {counted} + 12 * layers * hidden * sequence_length) * tokens" if fraction == 1 else
                  f"((4 + 2 x {fraction:g} trained) * {counted} + 12 * layers * hidden * sequence_length) * tokens: "
                  "a parameter-efficient fine-tune skips the frozen weights' gradients and optimizer state")
    _, _, architecture = model_architecture(spec, catalog.defaults)
    whole_run = whole_run_goodput(spec, resolved, catalog, accelerator)
    items += [_assumption(name="training FLOPs", value=_round(training_flops(spec, catalog.defaults)),
                         source=f"{flops_rule}; attention as PaLM (Chowdhery et al. 2022, appendix B); {architecture}"),
              resolved.assumption("bytes_per_parameter"),
              resolved.assumption("activation_headroom"),
              *_distributed_optimizer_assumption(resolved, detail),
              *_sequence_assumption(detail),
              _assumption(name="mfu", value=mfu_value, source=mfu_source),
              _assumption(name="goodput", value=_round(whole_run.value),
                         source=f"whole-run overhead (restarts, evaluations, data stalls, stragglers, ramp-up): "
                                f"{whole_run.source}")]
    uncertainty = whole_run_spread(spec, resolved, catalog)
    if uncertainty is not None:
        blind = whole_run_blind_spread(spec, resolved, catalog)
        beside = (f"; {blind.low:.2f}x to {blind.high:.2f}x on runs outside the table, estimated blind "
                  f"({blind.rows} runs)" if blind is not None else "")
        items.append(_assumption(name="whole-run spread", value=f"{uncertainty.low:.2f}x to {uncertainty.high:.2f}x "
                                 f"the estimated time and cost{beside}", source=f"{uncertainty.text()}; "
                                 "benchmarks/bench_estimate.py"
                                 + (f"; {blind.blind_source()}" if blind is not None else "")))
    if spec.model.is_moe:
        # The factor the hours used: its all-to-all is set against the step MFU with the workload's overrides.
        factor = moe if moe is not None else TrainingModel(spec, resolved, catalog, accelerator, cloud, spot).moe
        assert factor is not None
        items.append(_assumption(name="mixture of experts", value=f"x{factor.value:.4g}: {factor.summary}",
                                source=f"{factor.detail}; {factor.source}"))
    tokens, batch_source = global_batch(spec, catalog.defaults)
    items += [_assumption(name="global_batch_tokens", value=_round(tokens), source=batch_source),
              _chips_per_sequence(spec, catalog, detail),
              resolved.assumption("provisioning_minutes"),
              resolved.assumption("image_pull_minutes"),
              resolved.assumption("compile_minutes"),
              resolved.assumption("checkpoint_write_gbps_per_host"),
              resolved.assumption("checkpoint_interval_minutes")]
    factor, factor_source = precision_factor(spec, resolved, accelerator)
    if factor != 1.0 and spec.training is not None and spec.training.precision == "fp8":
        factor_source = f"{factor_source}; {FP8_QUALITY}"
    if factor != 1.0 or (spec.training is not None and spec.training.precision not in ("bf16", "fp16")):
        items.append(_assumption(name=f"{spec.training.precision} speed vs bf16" if spec.training else "precision",
                                value=factor, source=factor_source))
    if slices > 1 and resolved.mfu_override is None:
        across = resolved.multislice_override
        step = None if across is not None else dcn_breakdown(
            catalog, accelerator, spec.model.parameters, chips, slices,
            predict(fitted, catalog, accelerator, spec.model.active, chips, slices, resolved.decay_override,
                    math.exp(fitted.multislice)),
            global_batch(spec, catalog.defaults)[0])
        dcn = 1.0 if step is None else step.efficiency
        items.append(_assumption(name="multislice_efficiency",
                                value=_round(across if across is not None else math.exp(fitted.multislice) * dcn),
                                source=OVERRIDE if across is not None else (
                                    f"fitted multislice factor x{math.exp(fitted.multislice):.3g} ({calibrated}) x "
                                    f"DCN all-reduce efficiency {dcn:.3g} over {slices} slices" + (
                                        f" ({step.dcn_seconds:.3g} s of gradient all-reduce per "
                                        f"{step.compute_seconds:.3g} s step, {step.exposed_seconds:.3g} s exposed; "
                                        "policies/estimator/dcn.py)" if step is not None else ""))))
    if spot:
        items += [_assumption(name="preemptions_per_host_day", value=_round(resolved.preemptions_per_host_day.get(cloud, 0.0)),
                             source=resolved.preemption_sources.get(cloud, "")),
                  resolved.assumption("restart_minutes")]
    if spec.constraints.deadline_days is None:
        items.append(resolved.assumption("default_deadline_days"))
    return items
