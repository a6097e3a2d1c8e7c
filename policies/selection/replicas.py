"""The price-free half of sizing a serving fleet: for each replica size an offering can take, the replica (batch,
decode step) or why none serves, the replicas the tokens/s target needs and the fleet that holds them, and the
limits (max_chips, the node limit) that fleet breaks. None of it reads a price, so a search works it out once
per offering and capacity type and every region's price point reuses it (selection.sizing.size_inference
prices it); sizing each region apart recomputed every replica's batch bisection per region (issue #27)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from accel.base.units import plural
from accel.policies import hardware
from accel.policies.catalog.model import Offering
from accel.policies.selection.candidates import SearchContext, gpu_fleet_max_nodes, node_limit_words
from accel.policies.selection.ladders import Size, filled_replicas, packed_nodes, serving_fleet
from accel.policies.selection.pools import MAX_SLICES
from accel.policies.selection.served_sizes import served_replica_sizes


@dataclass(frozen=True)
class ReplicaPlan:
    """One replica size at whatever price: `fleet` is None when no replica of it serves, with `too_slow_step`
    (the decode step at batch 1, when the p99 bound is why) or `reason`. Otherwise the fleet that holds the
    `replicas` the target needs, its figures (`detail`, copied into each candidate; its `replicas` are those the
    fleet runs, more where it is paid in whole units: ladders.filled_replicas), the log overshoot of max_chips and
    the node limit, `over_limits`: why the fleet breaks a limit ('' when it breaks none), and `served`: the tokens/s
    the fleet serves flat out, every replica it runs busy (what sizing prices a million tokens by)."""

    size: Size
    fleet: Size | None = None
    too_slow_step: float | None = None
    reason: str = ""
    replicas: int = 0
    latency_ms: float = 0.0
    utilisation: float = 0.0
    detail: dict | None = None
    overshoot: float = 0.0
    over_limits: str = ""
    served: float = 0.0


def replica_plans(ctx: SearchContext, offering: Offering, spot: bool) -> list[ReplicaPlan]:
    """The offering's replica sizes planned for the workload's target on spot or on demand, smallest first
    (cached in the search context: each price point of the offering reads the same list)."""
    key = ("replica plans", offering.id, spot)
    plans = ctx.price_free.get(key)
    if plans is None:
        plans = ctx.price_free[key] = _plan(ctx, offering, spot)
    return plans


def _plan(ctx: SearchContext, offering: Offering, spot: bool) -> list[ReplicaPlan]:
    spec, resolved = ctx.spec, ctx.resolved
    assert spec.inference is not None
    model = ctx.inference_model(offering)
    cap = ctx.fleet_cap(offering)
    limit = ctx.node_limit(offering)
    headroom = 1.0 + (resolved["inference_spot_serving_headroom"] if spot else 0.0)
    target = spec.inference.tokens_per_second
    plans = []
    for size in served_replica_sizes(ctx, offering):
        replica, reason = model.replica(size.chips, size.stages)
        if replica is None:
            step, _ = model.step_seconds(size.chips, 1, size.stages)
            plans.append(ReplicaPlan(size, too_slow_step=step) if reason == model.too_slow(step)
                         else ReplicaPlan(size, reason=reason))
            continue
        needed = max(model.min_replicas, math.ceil(target * headroom / replica.tokens_per_second))
        fleet = serving_fleet(offering, size, needed, model.min_replicas)
        # A fleet paid in whole placement units (A4X NVLink domains) runs every replica they hold (ladders).
        replicas = filled_replicas(offering, size, needed, fleet, cap)
        latency_ms = replica.step_seconds * resolved["inference_latency_p99_factor"] * 1000
        utilisation = model.utilisation(target, fleet.chips)
        detail: dict[str, float | int | str] = {
            "replica_chips": size.chips, "replicas": replicas, "batch_per_replica": replica.batch,
            "p99_ms_per_token": round(latency_ms, 1), "tokens_per_second_per_replica": round(replica.tokens_per_second, 1),
            "bound": replica.bound, "min_chips_for_memory": ctx.min_memory_chips(offering),
        }
        if size.stages > 1:   # whole nodes over the scale-out network (ladders.pipeline_sizes)
            detail["pipeline_stages"] = size.stages
        served = round(replica.tokens_per_second * replicas, 1)
        if replicas > needed:
            detail.update(target_replicas=needed, tokens_per_second=served)
        detail.update(fleet_rounding(offering, size, needed, fleet, model.min_replicas))
        # A GPU serving fleet is split into pools within the limit: the cluster's limits bound it; a TPU replica
        # is one slice, its own pool.
        pool_nodes = fleet.hosts if size.topology is None else size.hosts
        pool_cap = (limit.value if size.topology is not None else gpu_fleet_max_nodes(limit)) if limit else None
        over_limits = ""
        if fleet.chips > cap:
            over_limits = (f"{size.chips}-chip replicas: {needed} of them need {plural(fleet.chips, 'chip')} > "
                           f"max {cap}")
        elif size.topology is not None and fleet.slices > MAX_SLICES:
            # A TPU replica is a slice, and a fleet declares at most MAX_SLICES of them (a GKE node pool each):
            # beyond that the plan could not be built (pools.tpu_slice_args refuses it).
            over_limits = (f"{size.chips}-chip replicas: {needed} of them need {fleet.slices} slices, more than "
                           f"the {MAX_SLICES} one TPU fleet declares (a node pool each)")
        elif pool_cap is not None and pool_nodes > pool_cap:
            assert limit is not None
            over_limits = (f"{size.chips}-chip replicas: {needed} of them need {pool_nodes} nodes, "
                           f"over the node limit: {node_limit_words(offering, limit)}")
        overshoot = (math.log(max(1.0, fleet.chips / cap))
                     + (math.log(max(1.0, fleet.slices / MAX_SLICES)) if size.topology is not None else 0.0)
                     + (math.log(max(1.0, pool_nodes / pool_cap)) if pool_cap is not None else 0.0))
        plans.append(ReplicaPlan(size, fleet, replicas=needed, latency_ms=latency_ms, utilisation=utilisation,
                                 detail=detail, overshoot=overshoot, over_limits=over_limits, served=served))
    return plans


def fleet_rounding(offering: Offering, size: Size, replicas: int, fleet: Size, spread: int) -> dict[str, int]:
    """What a GPU serving fleet holds past its replicas packed tightly (ladders.serving_fleet), for the rationale:
    `packed_nodes` (the nodes packing would take), `spread_nodes` (the nodes the minimum's replicas sit on, one
    each) and `node_step` (the unit the cloud places) where they grew it; nothing where the fleet is the packing."""
    if size.topology is not None:
        return {}
    packed = packed_nodes(offering, size, replicas)
    if fleet.hosts == packed:
        return {}
    step = hardware.current().node_step(offering.machine_type)
    spread_nodes = min(replicas, spread)
    return {"packed_nodes": packed, **({"spread_nodes": spread_nodes} if spread_nodes > packed else {}),
            **({"node_step": step} if step > 1 else {})}
