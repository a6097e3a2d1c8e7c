"""Capacity rules the clouds enforce at create time, for programs that bypass the components' checks.

The components refuse these combinations before registering anything; this guardrail catches a
program that declares the node pool itself. The rule text and its source live in
policies/gke_rules.yaml (one place for the planner, the components and this guardrail).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy

from accel.policies.gke_rules import compact_placement_problem
from accel.policies.guardrails.rules.common import UNKNOWN, get, is_true, violation

GKE_CAPACITY = "gke-capacity-rules"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"


def _gke_provisioning(props) -> str | None:
    """The pool's Dynamic Workload Scheduler mode (queued, flex-start), None for on-demand/spot/reserved."""
    if is_true(get(props, "queuedProvisioning", "enabled")):
        return "queued"
    if is_true(get(props, "nodeConfig", "flexStart")):
        return "flex-start"
    return None


def _validate_gke_capacity(args, report) -> None:
    if args.resource_type != GKE_NODE_POOL:
        return
    props = args.props
    if get(props, "placementPolicy", "type") != "COMPACT":
        return
    machine = get(props, "nodeConfig", "machineType")
    provisioning = _gke_provisioning(props)
    if provisioning is None or not isinstance(machine, str) or machine is UNKNOWN:
        return
    tpu = bool(get(props, "placementPolicy", "tpuTopology")) or machine.startswith("ct")
    problem = compact_placement_problem(machine, provisioning, tpu=tpu)
    if problem:
        report(violation(args, GKE_CAPACITY, problem,
                         "remove placement_policy (plan the pool without compact placement) or use other capacity"))


POLICIES = [
    ResourceValidationPolicy(
        name=GKE_CAPACITY,
        description="GKE node pools combine COMPACT placement only with capacity modes GKE accepts.",
        validate=_validate_gke_capacity,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
