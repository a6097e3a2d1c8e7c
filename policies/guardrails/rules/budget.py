"""Budget: what the program declares, priced against the catalog, stays under the limits.

Both rules are stack policies: they price every resource the preview declares with
accel.policies.cloud.pricing (node pools and node groups: nodes x machine type, TPU slices included;
parallel filesystems: capacity x throughput tier), the same functions `accel plan` and
`accel review` use, so a hand-edited pin that builds 40 TPU pools is priced as 40 pools whatever
the Plan says. The Plan on the stack's `accel:cluster:TrainingCluster` supplies only what the
resources cannot: the run length (`estimate.hours`) and the workload's own `budget_usd`.

A resource the catalog cannot price (a machine type it does not list, a count known only after
apply, NAT) is named in the message, never guessed. An accelerator pool the catalog knows but
cannot price yet (node count unknown during preview) makes the limit unconfirmable, which fails
the rule rather than passing a fleet of unknown size. Accelerators of an existing cluster (a plan
on cloud "kubernetes") are declared by no resource: their cost is the Plan's, as in `accel plan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pulumi_policy import EnforcementLevel, PolicyResource, StackValidationPolicy

from accel.policies.guardrails.rules.common import (
    ClusterFacts,
    cluster_facts,
    config,
    describe,
    number,
    plain,
    schema,
)

HOURLY = "budget-hourly-limit"
RUN = "budget-run-limit"
EXISTING_CLUSTER_CLOUD = "kubernetes"
_LISTED = 5  # unpriced resources named in a message; the rest are counted

if TYPE_CHECKING:
    from accel.policies.cloud.pricing import BuiltCost, PricedResource


class DeclaredCost:
    """The stack's cost per hour from its declared resources, plus what the Plan adds or leaves open."""

    def __init__(self, resources: Sequence[PolicyResource]):
        # Imported here: the catalog and pricing models are pydantic, which the pack only needs once
        # a budget limit is set (tests/test_guardrails_pack.py keeps the pack's start-up free of it).
        from accel.policies.catalog import load_catalog
        from accel.policies.cloud.pricing import price_resources

        self.built: BuiltCost = price_resources(
            ((r.resource_type, r.name, plain(r.props), r.parent.urn if r.parent is not None else None)
             for r in resources),
            load_catalog())
        found = cluster_facts(resources)
        self.cluster: PolicyResource | None = found[0] if found else None
        self.facts: ClusterFacts | None = found[1] if found else None
        plan = self.facts.plan if self.facts else {}
        self.existing_cluster_usd = 0.0
        if plan.get("cloud") == EXISTING_CLUSTER_CLOUD and not self.built.accelerator_pools:
            self.existing_cluster_usd = number((plan.get("chosen") or {}).get("hourly_usd")) or 0.0
        self.hours = number((plan.get("estimate") or {}).get("hours"))

    @property
    def hourly_usd(self) -> float:
        return self.built.hourly_usd + self.existing_cluster_usd

    @property
    def unconfirmed_pools(self) -> list[PricedResource]:
        """Accelerator pools of a machine type the catalog sells whose cost is not known yet."""
        return [p for p in self.built.accelerator_pools if not p.priced]

    def subject(self) -> str:
        return describe(self.cluster) if self.cluster is not None else "the stack"

    def basis(self) -> str:
        """Where the figure comes from, for the message."""
        pools = self.built.accelerator_pools
        parts = [f"{len(pools)} accelerator pool(s), {self.built.nodes:,} node(s), {self.built.chips:,} chip(s) "
                 f"declared, priced against catalog {self.built.catalog_version}"]
        if self.existing_cluster_usd:
            parts.append(f"plus the existing cluster's accelerators at the Plan's ${self.existing_cluster_usd:,.2f}/h")
        unpriced = self.built.unpriced
        if unpriced:
            named = "; ".join(f"{i.name} ({i.reason})" for i in unpriced[:_LISTED])
            more = f"; and {len(unpriced) - _LISTED} more" if len(unpriced) > _LISTED else ""
            parts.append(f"unpriced, not counted: {named}{more}")
        return "; ".join(parts)


def _message(cost: DeclaredCost, rule: str, what: str, fix: str) -> str:
    return f"{cost.subject()} violates {rule}: {what} ({cost.basis()}). Fix: {fix}."


def _report(cost: DeclaredCost, report_violation, message: str) -> None:
    if cost.cluster is not None:
        report_violation(message, cost.cluster.urn)
    else:
        report_violation(message)


def _unconfirmed(cost: DeclaredCost, rule: str, limit_text: str, report_violation) -> bool:
    pools = cost.unconfirmed_pools
    if not pools:
        return False
    names = ", ".join(p.name for p in pools[:_LISTED])
    _report(cost, report_violation, _message(
        cost, rule, f"{limit_text} is set but {len(pools)} accelerator pool(s) cannot be priced ({names})",
        "declare the pools' node counts as plain values, or run the check where they are known (`accel plan`)"))
    return True


def _validate_hourly(args, report_violation) -> None:
    limit = number(config(args).get("maxHourlyUsd"))
    if limit is None:
        return
    cost = DeclaredCost(args.resources)
    if _unconfirmed(cost, HOURLY, f"an hourly limit of ${limit:,.2f}", report_violation):
        return
    if cost.hourly_usd > limit:
        _report(cost, report_violation, _message(
            cost, HOURLY, f"the declared fleet costs ${cost.hourly_usd:,.2f}/h, over the limit ${limit:,.2f}/h",
            "choose fewer or cheaper chips, allow spot capacity, or raise maxHourlyUsd in the policy config"))


def _run_limit(settings: Any, facts: ClusterFacts | None) -> tuple[float, str] | None:
    limits: list[tuple[float, str]] = []
    configured = number(settings.get("maxRunUsd"))
    if configured is not None:
        limits.append((configured, "maxRunUsd in the policy config"))
    if settings.get("useWorkloadBudget", True) and facts is not None and facts.workload_budget_usd is not None:
        limits.append((facts.workload_budget_usd, "the workload's constraints.budget_usd"))
    return min(limits) if limits else None


def _validate_run(args, report_violation) -> None:
    cluster = cluster_facts(args.resources)
    found = _run_limit(config(args), cluster[1] if cluster else None)
    if found is None:
        return
    limit, source = found
    cost = DeclaredCost(args.resources)
    if cost.hours is None:
        if cost.hourly_usd > 0:
            _report(cost, report_violation, _message(
                cost, RUN, f"a run budget of ${limit:,.0f} ({source}) is set but no Plan gives the run's length",
                "build the stack from a plan made by `accel choose` (the TrainingCluster carries estimate.hours)"))
        return
    if _unconfirmed(cost, RUN, f"a run budget of ${limit:,.0f} ({source})", report_violation):
        return
    run_usd = cost.hourly_usd * cost.hours
    if run_usd > limit:
        _report(cost, report_violation, _message(
            cost, RUN, f"the declared fleet costs ${run_usd:,.0f} over the Plan's {cost.hours:,.1f} h run, "
            f"over the budget ${limit:,.0f} ({source})",
            "re-run `accel choose --objective cost`, allow spot, relax the deadline, or raise the budget"))


POLICIES = [
    StackValidationPolicy(
        name=HOURLY,
        description=("The declared resources, priced against the catalog, cost at most maxHourlyUsd per hour "
                     "(when set)."),
        validate=_validate_hourly,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=schema(
            maxHourlyUsd={"type": "number", "minimum": 0,
                          "description": "Largest allowed fleet cost per hour in USD; unset = no hourly limit"},
        ),
    ),
    StackValidationPolicy(
        name=RUN,
        description=("The declared resources, priced against the catalog, over the Plan's run length cost at most "
                     "maxRunUsd and the workload's own budget_usd (when either is set)."),
        validate=_validate_run,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=schema(
            maxRunUsd={"type": "number", "minimum": 0,
                       "description": "Largest allowed estimated cost of the whole run in USD; unset = none"},
            useWorkloadBudget={"type": "boolean", "default": True,
                               "description": "Also enforce the workload spec's constraints.budget_usd"},
        ),
    ),
]
