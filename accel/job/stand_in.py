"""The model a serving job loads for a workload naming none (no model.architecture, no model.checkpoint): a Llama 3.1
instruct model (policies/architectures/serving_checkpoints.yaml stand_ins), the nearest published size that fits the
replica the plan sized for the workload's own parameter count: its weights and one sequence's KV cache at the
workload's context length (the estimate's own serving model of the stand-in's architecture row,
policies/estimator/estimate.py InferenceModel: its KV formula, served precision and usable HBM), the size its band
names (max_parameters), or where that does not fit, the largest that does below it. At inference.precision fp8 it is
that size's published fp8 checkpoint, which vLLM reads pre-quantized (policies/architectures/serving_checkpoints.py)."""

from __future__ import annotations

from dataclasses import dataclass

from accel.base.errors import UsageError
from accel.policies.architectures import serving_checkpoints
from accel.policies.plan import Plan

from accel.job import plan_view


@dataclass(frozen=True)
class StandInChoice:
    model: str            # the repo vLLM serves
    parameters: float     # the stand-in's own parameter count
    note: str | None      # said in the job where the stand-in is not the next size up

    @property
    def said_size(self) -> float | None:
        """The stand-in's parameters where the job says it is not the size the workload names, else None."""
        return self.parameters if self.note else None


def _bytes_per_parameter(plan: Plan) -> tuple[str, float]:
    from accel.policies.catalog import load_catalog

    _, precision = plan_view.serving_precision(plan)
    return precision, load_catalog().defaults.inference.precisions[precision].bytes_per_parameter


def by_size(parameters: float) -> serving_checkpoints.StandIn:
    """The stand-in a workload of `parameters` names by size alone: the first whose band (max_parameters) holds it,
    the largest past every band; before the replica is asked."""
    rows = serving_checkpoints.table().stand_ins
    return next((row for row in rows if parameters <= row.max_parameters), rows[-1])


@dataclass(frozen=True)
class _Fit:
    row: serving_checkpoints.StandIn
    weight_bytes: float     # at the precision the plan serves
    kv_bytes: float         # one sequence's KV cache at the workload's context length, over the replica
    context: int

    def need(self) -> float:
        return self.weight_bytes + self.kv_bytes


def _fit(plan: Plan, row: serving_checkpoints.StandIn, gpus: int, stages: int) -> _Fit:
    """What stand-in `row` takes on a replica of `gpus` GPUs over `stages` pipeline stages, by the estimate's own
    serving model: the workload served by the row's architecture (its layers and KV heads, each tensor-parallel rank
    storing at least one whole head: InferenceModel.kv_copies; the workload's context length, precision and
    assumptions, less a kv_cache_bytes_per_token of its own model's)."""
    from accel.policies.catalog import load_catalog
    from accel.policies.estimator.estimate import InferenceModel, resolve
    from accel.policies.workload import ModelSpec

    workload = plan.workload
    model = ModelSpec.model_validate({"architecture": row.architecture,
                                      "sequence_length": workload.model.sequence_length})
    assumptions = workload.assumptions.model_copy(update={"kv_cache_bytes_per_token": None})
    spec = workload.model_copy(update={"model": model, "assumptions": assumptions})
    catalog = load_catalog()
    resolved = resolve(spec, catalog.defaults)
    served = InferenceModel(spec, resolved, catalog.accelerator(plan.chosen.accelerator),
                            machine_type=plan.chosen.machine_type)
    return _Fit(row, served.weight_bytes, served.sequence_kv_bytes(gpus, stages), int(resolved["context_tokens"]))


def choose(plan: Plan, gpus: int, chip: str, stages: int = 1) -> StandInChoice:
    """The stand-in vLLM serves over a replica of `gpus` GPUs (`chip` names them) in `stages` pipeline stages.
    UsageError when none fits."""
    rows = serving_checkpoints.table().stand_ins
    target = plan.workload.model.parameters
    precision, per_weight = _bytes_per_parameter(plan)
    usable = plan_view.usable_hbm_per_gpu(plan)
    fitted = [_fit(plan, row, gpus, stages) for row in rows]
    fits = [f.row for f in fitted if f.need() <= gpus * usable]
    wanted = by_size(target)
    above = [row for row in fits if row.parameters >= wanted.parameters]
    pick = above[0] if above else (fits[-1] if fits else None)
    gb = lambda size: f"{size / 1e9:,.0f} GB"   # noqa: E731
    weights = lambda row: gb(row.parameters * per_weight)   # noqa: E731
    room = f"{gpus} x {usable / 1e9:,.1f} GB usable of {chip}"
    if pick is None:
        smallest = fitted[0]
        raise UsageError(
            f"model: no published stand-in fits the replica planned for {target / 1e9:.3g}B parameters ({room}): the "
            f"smallest, {rows[0].model} ({rows[0].parameters / 1e9:.3g}B), holds {weights(rows[0])} of {precision} "
            f"weights and {smallest.kv_bytes / 1e9:,.1f} GB of KV cache for one sequence of {smallest.context:,} "
            "tokens; set model.checkpoint (or model.architecture) to the model you serve, or pass --command with "
            "your own vllm serve")
    model = pick.fp8 if precision == "fp8" else pick.model
    if pick is wanted:
        return StandInChoice(model, pick.parameters, None)
    missed = next(f for f in fitted if f.row is wanted)
    return StandInChoice(model, pick.parameters, (
        f"stand-in: {pick.model} ({pick.parameters / 1e9:.3g}B) against the planned {target / 1e9:.3g}B: the "
        f"nearest published size whose {precision} weights and one sequence's KV cache fit the replica planned "
        f"({room}); {wanted.model} ({wanted.parameters / 1e9:.3g}B) would need {weights(wanted)}"
        + (f" and {missed.kv_bytes / 1e9:,.1f} GB of KV cache for one sequence of {missed.context:,} tokens"
           if missed.weight_bytes <= gpus * usable else "")
        + ". Throughput and latency measured on it are not your model's: set model.checkpoint to serve your own"))
