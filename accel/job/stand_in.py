"""The model a serving job loads for a workload naming none (no model.architecture, no model.checkpoint): a Llama 3.1
instruct model (policies/architectures/serving_checkpoints.yaml stand_ins), the nearest published size whose weights
fit the replica the plan sized for the workload's own parameter count: the size its band names (max_parameters), or
where that does not fit, the largest that does below it. At inference.precision fp8 it is that size's published fp8 checkpoint, which vLLM reads
pre-quantized (policies/estimator/serving_load.py)."""

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


def _bytes_per_parameter(plan: Plan) -> tuple[str, float]:
    from accel.policies.catalog import load_catalog

    _, precision = plan_view.serving_precision(plan)
    return precision, load_catalog().defaults.inference.precisions[precision].bytes_per_parameter


def by_size(parameters: float) -> serving_checkpoints.StandIn:
    """The stand-in a workload of `parameters` names by size alone: the first whose band (max_parameters) holds it,
    the largest past every band; before the replica is asked."""
    rows = serving_checkpoints.table().stand_ins
    return next((row for row in rows if parameters <= row.max_parameters), rows[-1])


def choose(plan: Plan, gpus: int, chip: str) -> StandInChoice:
    """The stand-in vLLM serves over a replica of `gpus` GPUs (`chip` names them). UsageError when none fits."""
    rows = serving_checkpoints.table().stand_ins
    target = plan.workload.model.parameters
    precision, per_weight = _bytes_per_parameter(plan)
    usable = plan_view.usable_hbm_per_gpu(plan)
    fits = [row for row in rows if row.parameters * per_weight / gpus <= usable]
    wanted = by_size(target)
    above = [row for row in fits if row.parameters >= wanted.parameters]
    pick = above[0] if above else (fits[-1] if fits else None)
    weights = lambda row: f"{row.parameters * per_weight / 1e9:,.0f} GB"   # noqa: E731
    room = f"{gpus} x {usable / 1e9:,.1f} GB usable of {chip}"
    if pick is None:
        raise UsageError(
            f"model: no published stand-in fits the replica planned for {target / 1e9:.3g}B parameters ({room}): the "
            f"smallest, {rows[0].model} ({rows[0].parameters / 1e9:.3g}B), holds {weights(rows[0])} of {precision} "
            "weights; set model.checkpoint (or model.architecture) to the model you serve, or pass --command with "
            "your own vllm serve")
    model = pick.fp8 if precision == "fp8" else pick.model
    if pick is wanted:
        return StandInChoice(model, pick.parameters, None)
    return StandInChoice(model, pick.parameters, (
        f"stand-in: {pick.model} ({pick.parameters / 1e9:.3g}B) against the planned {target / 1e9:.3g}B: the "
        f"nearest published size whose {precision} weights fit the replica planned ({room}); "
        f"{wanted.model} ({wanted.parameters / 1e9:.3g}B) would need {weights(wanted)}. Throughput and latency "
        "measured on it are not your model's: set model.checkpoint to serve your own"))
