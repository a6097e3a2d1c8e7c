"""What would serve a service nothing serves: the lines `accel choose` adds to its refusal.

A service is refused when every offering is ruled out, and for a large model on one cloud the two usual causes
meet: the machines sold on demand cannot hold the weights in one replica (a serving replica stays within one
NVLink domain, policies/selection/ladders.py replica_sizes: a node of 8 GPUs on A3 High, A3 Mega, A2), and the
machines that can are not sold on demand (A3 Ultra, A4, A4X: reservations, flex-start or spot only,
gcp-consumption-options). Each offering's own reason is in the refusal's `rejected`; these lines say what the
whole refusal comes to and what to change, from the search itself: a lower serving precision is searched again
and its answer named, not guessed.
"""

from __future__ import annotations

from typing import Callable

from accel.base.units import money
from accel.policies.selection.candidates import SearchContext, SearchResult
from accel.policies.selection.choice import Choice, NoFeasibleOption
from accel.policies.selection.explain import describe
from accel.policies.workload import WorkloadSpec

# Lower precisions a service may be searched again at, in the order tried (InferenceSpec.precision: fp8 on chips
# with fp8 tensor cores, int8 weight-only anywhere; both halve the bytes of bf16 weights and KV cache).
LOWER_PRECISIONS = {"bf16": ("fp8", "int8"), "fp16": ("fp8", "int8")}


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
        lines.append(
            f"why: the weights fit no replica of {', '.join(too_small)} (a serving replica stays within one NVLink "
            "domain; replicas split across nodes are not modelled), and the capacity the others are sold through "
            f"rules them out ({', '.join(r['offering'] for r in held)}; each one's reason is in `accel choose "
            f"--json`'s rejected), e.g. {first['offering']}: {first['reasons'][0]}")
    if too_small:
        for precision in LOWER_PRECISIONS.get(spec.inference.precision, ()):
            lower = spec.model_copy(update={"inference": spec.inference.model_copy(update={"precision": precision})})
            try:
                chosen = search_again(lower).chosen
            except NoFeasibleOption:
                continue
            lines.append(f"what would serve: inference.precision: {precision} (half the bytes of "
                         f"{spec.inference.precision} weights and KV cache): {describe(chosen)}, "
                         f"{money(chosen.hourly_usd)}/h, {money(chosen.total_usd)} over {chosen.hours:g} h")
            break
    return lines
