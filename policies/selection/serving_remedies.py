"""What would serve a service nothing serves: the lines `accel choose` adds to its refusal.

A service is refused when every offering is ruled out, and for a large model on one cloud the two usual causes
meet: the machines sold on demand cannot hold the weights in one replica, or hold them only in replicas of whole
nodes over the scale-out network that decode too slowly for the bound (policies/selection/ladders.py replica_sizes:
a node of 8 GPUs on A2; pipeline stages of A3 High and A3 Mega nodes), and the
machines that can are not sold on demand (A3 Ultra, A4, A4X: reservations, flex-start or spot only,
gcp-consumption-options). Each offering's own reason is in the refusal's `rejected`; these lines say what the
whole refusal comes to and what to change, from the search itself: a lower serving precision is searched again
and its answer named, not guessed.
"""

from __future__ import annotations

from typing import Callable, Mapping

from accel.base.units import money
from accel.policies.catalog.model import Offering, ServingPrecision
from accel.policies.selection.candidates import SearchContext, SearchResult
from accel.policies.selection.choice import Choice, NoFeasibleOption
from accel.policies.selection.explain import describe
from accel.policies.selection.served_sizes import served_replica_sizes
from accel.policies.workload import WorkloadSpec, int8_checkpoint_missing


def serving_remedies(ctx: SearchContext, found: SearchResult, search_again: Callable[[WorkloadSpec], Choice]
                     ) -> list[str]:
    """The refusal's lines for a service no offering serves: why the offerings that would hold the weights are not
    offered, and what would serve (a lower precision, searched again with `search_again`); [] when not a service
    or neither applies."""
    spec = ctx.spec
    if spec.kind != "inference" or spec.inference is None:
        return []
    lines: list[str] = []
    too_small = found.eliminations.get("memory", [])
    held = [r for r in found.rejected if r["offering"] in found.eliminations.get("capacity", [])]
    if too_small and held:
        first = held[0]
        # Offerings whose replicas over several nodes hold the weights but decode too slowly (pipeline stages over
        # the scale-out network, policies/selection/ladders.py pipeline_sizes).
        slow = [o for o in found.eliminations.get("latency", []) if _spans_nodes(ctx, ctx.catalog.offering(o))]
        across = (f"; {', '.join(slow)} hold them in replicas of whole nodes over the scale-out network, which miss "
                  "the p99 bound" if slow else "")
        lines.append(
            f"why: the weights fit no replica of {', '.join(too_small)} (a serving replica stays within one NVLink "
            "domain, or spans whole nodes as pipeline stages only on a machine with a scale-out fabric)"
            f"{across}, and the capacity the others are sold through "
            f"rules them out ({', '.join(r['offering'] for r in held)}; each one's reason is in `accel choose "
            f"--json`'s rejected), e.g. {first['offering']}: {first['reasons'][0]}")
    if too_small:
        precisions = ctx.catalog.defaults.inference.precisions
        current = spec.inference.precision
        for precision in lower_precisions(precisions, current):
            lower = spec.model_copy(update={"inference": spec.inference.model_copy(update={"precision": precision})})
            try:
                chosen = search_again(lower).chosen
            except NoFeasibleOption:
                continue
            lines.append(f"what would serve: inference.precision: {precision} "
                         f"({saving(precisions[current], precisions[precision], current)})"
                         f"{_checkpoint_needed(spec, precision)}: {describe(chosen)}, {money(chosen.hourly_usd)}/h, "
                         f"{money(chosen.total_usd)} over {chosen.hours:g} h")
            break
    return lines


def _checkpoint_needed(spec: WorkloadSpec, precision: str) -> str:
    """What int8 asks of the workload besides the precision: vLLM (GPU and TPU) quantizes no bf16 checkpoint to int8
    weights as it loads, so the serving job (and `accel plan`, which checks it) refuses int8 without a model.checkpoint
    already in 8-bit weights (docs/job.md, the int8 rows of both precision tables)."""
    if int8_checkpoint_missing(precision, spec.model.checkpoint) is None:   # the rule choose and the jobs refuse by
        return ""
    return (", from a checkpoint already quantized to 8-bit weights named in model.checkpoint (the serving job "
            "refuses int8 without one)")


def _spans_nodes(ctx: SearchContext, offering: Offering) -> bool:
    """Whether the offering's replicas that hold the model are pipeline stages over several nodes."""
    return any(size.stages > 1 for size in served_replica_sizes(ctx, offering))


def lower_precisions(precisions: Mapping[str, ServingPrecision], current: str) -> list[str]:
    """The serving precisions with fewer bytes a weight than `current`, in the table's order (assumptions.yaml
    inference.precisions: fp8, then int8 weight-only), the order a refused service is searched again at."""
    return [name for name, row in precisions.items() if row.bytes_per_parameter < precisions[current].bytes_per_parameter]


def saving(was: ServingPrecision, now: ServingPrecision, name: str) -> str:
    """What a lower precision saves against `name`, from the table: fp8 halves the bytes of the weights and of the
    KV cache, int8 weight-only those of the weights alone (its KV cache keeps bf16's 2 bytes a value)."""
    def share(new: float, old: float) -> str:
        return "half" if new * 2 == old else f"{new / old:.0%} of"

    weights = share(now.bytes_per_parameter, was.bytes_per_parameter)
    if now.kv_bytes_per_value == was.kv_bytes_per_value:
        return f"{weights} the bytes of {name} weights; the KV cache stays at {was.kv_bytes_per_value:g} bytes a value"
    cache = share(now.kv_bytes_per_value, was.kv_bytes_per_value)
    if cache == weights:
        return f"{weights} the bytes of {name} weights and KV cache"
    return f"{weights} the bytes of {name} weights, {cache} those of its KV cache"
