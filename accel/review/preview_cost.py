"""$/h and $/run before -> after, from a preview's own steps: no `--plan` needed.

Each changed resource's old and new inputs are priced by accel.policies.cloud.pricing, the function
`accel plan` prices its declared resources with, so a preview that creates everything costs what
`accel plan` says. The run length comes from the `accel:cluster:TrainingCluster` component's own
state in the preview (its `plan.estimate.hours`), or from `--plan` / `--base-plan` when given.
Unknown machine types are listed as unpriced, never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from accel.policies.catalog import load_catalog
from accel.policies.catalog.model import Catalog
from accel.policies.cloud.pricing import PricedResource, price_resource, template_instance_types
from accel.review.changes import ResourceChange
from accel.review.compute_cost import price_compute
from accel.review.model import Cost, CostRow, ResourceCost
from accel.review.plan_json import PlanReport

TRAINING_CLUSTER = "accel:cluster:TrainingCluster"
AWS_PROVIDER = "pulumi:providers:aws"


def _plan_of(inputs: Mapping[str, Any] | None) -> Mapping[str, Any]:
    plan = (inputs or {}).get("plan")
    return plan if isinstance(plan, Mapping) else {}


def _hours(inputs: Mapping[str, Any] | None) -> float | None:
    hours = _plan_of(inputs).get("estimate", {})
    value = hours.get("hours") if isinstance(hours, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _region(changes: Sequence[ResourceChange], old: bool) -> str | None:
    """The AWS provider's region, else the cluster plan's region: what node groups do not say themselves."""
    for wanted in (AWS_PROVIDER, TRAINING_CLUSTER):
        for change in changes:
            inputs = change.old_inputs if old else change.new_inputs
            if change.type != wanted or inputs is None:
                continue
            region = inputs.get("region") if wanted == AWS_PROVIDER else \
                (_plan_of(inputs).get("chosen") or {}).get("region")
            if isinstance(region, str) and region:
                return region
    return None


def _price(change: ResourceChange, inputs: dict[str, Any] | None, region: str | None,
           catalog: Catalog, templates: Mapping[str, str]) -> PricedResource | None:
    if inputs is None:
        return None
    priced = price_resource(change.type, change.name, inputs, catalog, region,
                            templates.get(change.parent) if change.parent else None)
    return priced if priced is not None else price_compute(change.type, change.name, inputs, catalog, region)


def _side_hours(changes: Sequence[ResourceChange], plan: PlanReport | None, old: bool) -> float | None:
    if plan is not None and plan.plan is not None and plan.plan.chosen.hours:
        return plan.plan.chosen.hours
    for change in changes:
        if change.type == TRAINING_CLUSTER:
            found = _hours(change.old_inputs if old else change.new_inputs)
            if found is not None:
                return found
    return None


def preview_cost(changes: Sequence[ResourceChange], head: PlanReport | None = None, base: PlanReport | None = None,
                 catalog: Catalog | None = None) -> Cost:
    """The cost section from the changed resources of a preview."""
    catalog = catalog or load_catalog()
    old_region, new_region = _region(changes, old=True), _region(changes, old=False)
    old_templates = template_instance_types((c.type, c.old_inputs, c.parent) for c in changes if c.old_inputs)
    new_templates = template_instance_types((c.type, c.new_inputs, c.parent) for c in changes if c.new_inputs)
    resources: list[ResourceCost] = []
    unpriced: set[str] = set()
    for change in changes:
        if change.action in ("same", "read", "refresh"):
            continue
        before = _price(change, None if change.action == "create" else change.old_inputs, old_region, catalog,
                        old_templates)
        after = _price(change, None if change.action == "delete" else change.new_inputs, new_region, catalog,
                       new_templates)
        for item in (before, after):
            if item is not None and not item.priced and item.kind != "nat":
                unpriced.add(f"{item.machine_type or item.type} ({item.reason})")
        if before is None and after is None or change.type.startswith("aws:ec2/natGateway") \
                or change.type.startswith("gcp:compute/routerNat"):
            continue
        resources.append(ResourceCost(change.name, change.type, change.action,
                                      before.hourly_usd if before else 0.0, after.hourly_usd if after else 0.0,
                                      (after or before).kind, before.priced if before else True,
                                      after.priced if after else True))
    before_hourly = sum(r.before or 0.0 for r in resources)
    after_hourly = sum(r.after or 0.0 for r in resources)
    before_hours, after_hours = _side_hours(changes, base, old=True), _side_hours(changes, head, old=False)
    rows = [CostRow("Per hour", before_hourly, after_hourly)]
    if before_hours is not None or after_hours is not None:
        rows.append(CostRow("Per run (estimated)", None if before_hours is None else before_hourly * before_hours,
                            None if after_hours is None else after_hourly * after_hours))
    if head is not None or base is not None:
        rows.append(CostRow("Run length", before_hours, after_hours, "hours"))
    note = None
    if unpriced:
        note = (f"⚠️ {len(unpriced)} changed resource{'s' if len(unpriced) != 1 else ''} could not be priced (listed "
                "above): every figure here is a lower bound.")
    elif not resources:
        note = "No accelerator pool or storage resource changes: the preview does not move the cost."
    return Cost(rows=tuple(rows), has_base=True, catalog=f"{catalog.version}, as of {catalog.as_of.isoformat()}",
                note=note, resources=tuple(resources), unpriced=tuple(sorted(unpriced)), source="preview")
