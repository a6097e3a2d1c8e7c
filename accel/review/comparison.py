"""Before → after of the chosen hardware and its cost, from the base branch's plan and the PR's."""

from __future__ import annotations

from accel.review.changes import ResourceChange
from accel.review.hardware import accelerator_pool
from accel.review.model import Cost, CostRow, Hardware, HardwareRow, PoolChange
from accel.review.plan_json import PlanReport, PlanView

MAX_RATIONALE = 4
PER_TOKEN_AT_TARGET = "Per million tokens (at the target rate)"
PER_TOKEN_FLAT_OUT = "Per million tokens (flat out)"
PER_TOKEN_UNIT = "usd-per-million-tokens"


def _layout(plan: PlanView) -> str:
    chosen = plan.chosen
    if plan.tpu is not None and plan.tpu.topology:
        slices = plan.tpu.slices
        return f"{slices} slice{'s' if slices != 1 else ''} × {plan.tpu.topology}"
    if plan.gpu is not None and plan.gpu.nodes:
        per_node = f" ({plan.gpu.gpus_per_node} GPUs each)" if plan.gpu.gpus_per_node else ""
        return f"{plan.gpu.nodes} node{'s' if plan.gpu.nodes != 1 else ''}{per_node}"
    if chosen.topology:
        return f"{chosen.slices or 1} × {chosen.topology}"
    return f"{chosen.hosts} hosts" if chosen.hosts else "—"


def _capacity(plan: PlanView) -> str:
    """The capacity type (Plan schema 2: `provisioning`; `spot` only for documents without it), with the capacity
    mode, its legs and an upper-bound price when the plan carries them (docs/capacity.md), so a change of mode
    shows as a changed row."""
    chosen = plan.chosen
    words = chosen.provisioning or ("spot" if chosen.spot else "on-demand")
    capacity = plan.capacity
    if capacity is None:
        return words
    if capacity.mode:
        words += f" ({capacity.mode}" + (f", {capacity.legs} legs" if capacity.legs and capacity.legs > 1 else "") + ")"
    if capacity.reservation:
        words += f" on {capacity.reservation}"
    if capacity.price_bound == "upper":
        words += "; price is an upper bound"
    return words


def _capacity_risk(plan: PlanView) -> str | None:
    return plan.capacity.risk if plan.capacity is not None else None


def _location(plan: PlanView) -> str:
    zone = plan.chosen.zone or (plan.zones[0] if plan.zones else None)
    return f"{plan.chosen.cloud} {plan.chosen.region}" + (f" ({zone})" if zone else "")


def _hardware_fields(report: PlanReport | None) -> dict[str, str | None]:
    if report is None or report.plan is None:
        return {}
    plan = report.plan
    chosen = plan.chosen
    machine = chosen.machine_type or (plan.tpu.machine_type if plan.tpu else None) or \
        (plan.gpu.machine_type if plan.gpu else None)
    return {
        "Accelerator": chosen.accelerator,
        "Chips": str(chosen.chips),
        "Layout": _layout(plan),
        "Machine type": machine,
        "Hosts": str(chosen.hosts) if chosen.hosts else None,
        "Capacity": _capacity(plan),
        "Capacity risk": _capacity_risk(plan),
        "Where": _location(plan),
        "MFU (estimated)": f"{chosen.mfu:.0%}" if chosen.mfu else None,
    }


def hardware(head: PlanReport | None, base: PlanReport | None, changes: list[ResourceChange]) -> Hardware:
    after, before = _hardware_fields(head), _hardware_fields(base)
    labels = list(after) or list(before)
    rows = tuple(HardwareRow(label, before.get(label), after.get(label)) for label in labels
                 if before.get(label) is not None or after.get(label) is not None)
    pools = []
    for change in changes:
        old = accelerator_pool(change.type, change.old_inputs)
        new = accelerator_pool(change.type, change.new_inputs)
        if old is not None or new is not None:
            pools.append(PoolChange(change.name, change.type, change.action, old, new))
    rationale = tuple(head.plan.rationale[:MAX_RATIONALE]) if head is not None and head.plan is not None else ()
    note = None
    if head is not None and head.plan is None:
        note = f"No plan could be made for stack `{head.stack}`: the hardware below comes from the resources only."
    return Hardware(rows=rows, has_base=bool(before), pools=tuple(pools), rationale=rationale, note=note)


def _costs(report: PlanReport | None) -> dict[str, float | None]:
    if report is None:
        return {}
    chosen = report.plan.chosen if report.plan is not None else None
    cost = report.cost
    hourly = cost.hourly_usd if cost is not None and cost.hourly_usd is not None else (
        chosen.hourly_usd if chosen else None)
    run = cost.run_usd if cost is not None and cost.run_usd is not None else (chosen.total_usd if chosen else None)
    return {"Per hour": hourly, "Per run (estimated)": run, "Run length": chosen.hours if chosen else None,
            # A serving plan's price per million generated tokens (policies/plan.py serving_token_prices), so a
            # change of fleet shows what a token costs before and after; absent (no row) for training plans.
            PER_TOKEN_AT_TARGET: chosen.usd_per_million_tokens_at_target if chosen else None,
            PER_TOKEN_FLAT_OUT: chosen.usd_per_million_tokens if chosen else None}


def cost(head: PlanReport | None, base: PlanReport | None) -> Cost:
    if head is None:
        return Cost(note="Not computed: pass `--plan` with the output of `accel plan --json` for this branch.")
    after, before = _costs(head), _costs(base)
    units = {"Run length": "hours", PER_TOKEN_AT_TARGET: PER_TOKEN_UNIT, PER_TOKEN_FLAT_OUT: PER_TOKEN_UNIT}
    rows = tuple(CostRow(label, before.get(label), after.get(label), units.get(label, "usd")) for label in after
                 if after.get(label) is not None or before.get(label) is not None)
    catalog = None
    if head.plan is not None and head.plan.catalog is not None and head.plan.catalog.version:
        catalog = f"{head.plan.catalog.version}" + (f", as of {head.plan.catalog.as_of}"
                                                    if head.plan.catalog.as_of else "")
    note = None if rows else f"Unknown: the plan for stack `{head.stack}` has no cost."
    chosen = head.plan.chosen if head.plan is not None else None
    if rows and chosen is not None and chosen.usd_per_million_tokens_unpriced:
        # A serving fleet on a reservation already paid for states no price per token (never a $0.00): why not.
        note = f"Per million tokens: {chosen.usd_per_million_tokens_unpriced.split(';')[0]}."
    return Cost(rows=rows, has_base=base is not None, catalog=catalog, note=note)
