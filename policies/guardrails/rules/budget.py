"""Budget: the run's estimated cost stays under the limits the platform team and the workload set.

The estimate is the one `accel choose` made; the stack carries it on its
`accel:cluster:TrainingCluster` component (`hourlyUsd`, `runUsd`, and the plan). A stack
without that component has no cost facts and these rules say nothing about it.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy

from accel.policies.guardrails.rules.common import (
    TRAINING_CLUSTER,
    ClusterFacts,
    config,
    number,
    schema,
    violation,
)

HOURLY = "budget-hourly-limit"
RUN = "budget-run-limit"


def _validate_hourly(args, report_violation) -> None:
    if args.resource_type != TRAINING_CLUSTER:
        return
    limit = number(config(args).get("maxHourlyUsd"))
    if limit is None:
        return
    facts = ClusterFacts(args.props)
    if facts.hourly_usd is None:
        report_violation(violation(
            args, HOURLY,
            f"an hourly limit of ${limit:,.2f} is set but the cluster carries no hourly cost estimate",
            "build the stack from a plan made by `accel choose` so hourlyUsd is set",
        ))
    elif facts.hourly_usd > limit:
        report_violation(violation(
            args, HOURLY,
            f"estimated fleet cost ${facts.hourly_usd:,.2f}/h exceeds the limit ${limit:,.2f}/h",
            "choose fewer or cheaper chips, allow spot capacity, or raise maxHourlyUsd in the policy config",
        ))


def _validate_run(args, report_violation) -> None:
    if args.resource_type != TRAINING_CLUSTER:
        return
    settings = config(args)
    facts = ClusterFacts(args.props)
    limits: list[tuple[float, str]] = []
    configured = number(settings.get("maxRunUsd"))
    if configured is not None:
        limits.append((configured, "maxRunUsd in the policy config"))
    if settings.get("useWorkloadBudget", True) and facts.workload_budget_usd is not None:
        limits.append((facts.workload_budget_usd, "the workload's constraints.budget_usd"))
    if not limits:
        return
    limit, source = min(limits)
    if facts.run_usd is None:
        report_violation(violation(
            args, RUN,
            f"a run budget of ${limit:,.0f} ({source}) is set but the cluster carries no run cost estimate",
            "build the stack from a plan made by `accel choose` so runUsd is set",
        ))
    elif facts.run_usd > limit:
        report_violation(violation(
            args, RUN,
            f"estimated run cost ${facts.run_usd:,.0f} exceeds the budget ${limit:,.0f} ({source})",
            "re-run `accel choose --objective cost`, allow spot, relax the deadline, or raise the budget",
        ))


POLICIES = [
    ResourceValidationPolicy(
        name=HOURLY,
        description="The stack's estimated hourly fleet cost stays under maxHourlyUsd (when set).",
        validate=_validate_hourly,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=schema(
            maxHourlyUsd={"type": "number", "minimum": 0,
                          "description": "Largest allowed fleet cost per hour in USD; unset = no hourly limit"},
        ),
    ),
    ResourceValidationPolicy(
        name=RUN,
        description=("The stack's estimated run cost stays under maxRunUsd and the workload's own "
                     "budget_usd (when either is set)."),
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
