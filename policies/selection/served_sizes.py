"""The serving replica sizes a search and a pin weigh: the offering's sizes (ladders.replica_sizes) the engine runs.

vLLM (GPUs) and vLLM TPU refuse a tensor-parallel degree a named model's heads do not split over (or, past its KV
heads, replicate evenly onto: policies/architectures/serving_heads.py), and the serving job refuses such a plan
(accel/job/model_run.py, vllm_tpu.py). So a size whose degree (InferenceModel.tensor_ranks: a GPU each, on TPU a
JAX device, two per TPU7x chip; per stage of a pipeline) the rule refuses is never sized: Qwen3 14B's 40 query heads
on a node of 16 GPUs serve on 8 of them, not 16. A workload naming no architecture keeps every size (its heads are
unknown).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from accel.policies.architectures.serving_heads import tensor_parallel_problem
from accel.policies.catalog.model import Offering
from accel.policies.selection.candidates import SearchContext
from accel.policies.selection.ladders import Size, replica_sizes

if TYPE_CHECKING:
    from accel.policies.architectures.rows import Architecture


def _named_row(ctx: SearchContext) -> Architecture | None:
    """The row of the workload's model.architecture, None where none is named (or the table lacks it)."""
    name = ctx.spec.model.architecture
    if not name:
        return None
    from accel.policies.architectures import lookup   # the rows load only for a workload naming an architecture

    return lookup(name)


def engine_refusal(ctx: SearchContext, offering: Offering, chips: int, stages: int = 1) -> str | None:
    """Why the serving engine refuses a replica of `chips` chips over `stages` stages for the workload's named
    architecture, or None (also where none is named)."""
    row = _named_row(ctx)
    if row is None:
        return None
    problem = tensor_parallel_problem(row, ctx.inference_model(offering).tensor_ranks(chips, stages))
    return f"model.architecture {row.name}: {problem}, which vLLM refuses" if problem else None


def _heads_rule(ctx: SearchContext, offering: Offering) -> Callable[[Size], bool] | None:
    """The predicate replica_sizes keeps a size by; None where no architecture is named."""
    row = _named_row(ctx)
    if row is None:
        return None
    model = ctx.inference_model(offering)
    return lambda size: tensor_parallel_problem(row, model.tensor_ranks(size.chips, size.stages)) is None


def _offered_sizes(ctx: SearchContext, offering: Offering, accepts: Callable[[Size], bool] | None = None
                   ) -> list[Size]:
    """ladders.replica_sizes for the workload's model on `offering` (within max_replica_chips, from the chips that
    hold the weights and a sequence, at most a stage per layer), kept by `accepts` (None: every size)."""
    model = ctx.inference_model(offering)
    return replica_sizes(offering, int(ctx.resolved["max_replica_chips"]), model.hold_chips(), int(model.layers),
                         accepts)


def served_replica_sizes(ctx: SearchContext, offering: Offering) -> list[Size]:
    """The replica sizes of `offering` the workload's model is sized at: those ladders.replica_sizes offers that the
    serving engine runs for its named architecture."""
    return _offered_sizes(ctx, offering, _heads_rule(ctx, offering))


def left_out_words(ctx: SearchContext, offering: Offering) -> str:
    """'; 16-chip replicas left out: model.architecture ...' naming the sizes the heads rule dropped (said where an
    offering serves nothing: the size that would have is one the engine refuses), or '' where it dropped none."""
    if _named_row(ctx) is None:
        return ""
    kept = served_replica_sizes(ctx, offering)
    dropped = [s for s in _offered_sizes(ctx, offering) if s not in kept]
    return "".join(f"; {s.chips}-chip replicas left out: {engine_refusal(ctx, offering, s.chips, s.stages)}"
                   for s in dropped[:2])
