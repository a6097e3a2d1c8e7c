"""Capacity rules the clouds enforce at create time, for programs that bypass the components' checks.

The components refuse these combinations before registering anything; these guardrails catch a
program that declares the node pool itself. The rule text and its source live in
policies/cloud/gke_rules.yaml and policies/cloud/capacity_blocks.yaml (one place for the planner, the
components and the guardrails).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from accel.policies.cloud import mode_limits
from accel.policies.cloud.gke_rules import compact_placement_problem
from accel.policies.guardrails.rules.common import UNKNOWN, get, is_true, items, number, violation

GKE_CAPACITY = "gke-capacity-rules"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
CAPACITY_BLOCK_SCHEDULED = "capacity-block-scheduled"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ASG_SCHEDULE = "aws:autoscaling/schedule:Schedule"
CAPACITY_MODE_LIMITS = "capacity-mode-limits"


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


def _acts_on(schedule, group) -> bool:
    """The scheduled action scales `group`'s Auto Scaling group: its name comes from the group's outputs (or, once
    known, equals an ASG EKS reports for it), so the action depends on the group."""
    named_from = (schedule.property_dependencies or {}).get("autoscalingGroupName") or []
    if group in named_from or group in (schedule.dependencies or []):
        return True
    asg_names = {get(asg, "name") for resource in items(get(group.props, "resources"))
                 for asg in items(get(resource, "autoscalingGroups"))}
    name = get(schedule.props, "autoscalingGroupName")
    return isinstance(name, str) and name in asg_names


def _validate_capacity_block_scheduled(args, report) -> None:
    schedules = [r for r in args.resources if r.resource_type == ASG_SCHEDULE]
    fix = ("create the node group at desired size 0 and add two aws.autoscaling.Schedule actions on its Auto Scaling "
           "group: scale out to the block's size at the block's start, and to 0 more than 30 minutes before its end "
           "(GpuNodeGroup does this from the accel:reservations window; docs/aws.md)")
    for group in args.resources:
        if group.resource_type != EKS_NODE_GROUP or get(group.props, "capacityType") != "CAPACITY_BLOCK":
            continue
        desired = number(get(group.props, "scalingConfig", "desiredSize"))
        if desired is not None and desired > 0:
            report(violation(group, CAPACITY_BLOCK_SCHEDULED,
                             f"it starts at desired size {desired:g} on a capacity block, whose instances launch only "
                             "while the block is active; EKS creates and upgrades capacity-block node groups at size 0 "
                             "(docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html)", fix), group.urn)
        own = [s for s in schedules if _acts_on(s, group)]
        sizes = [number(get(s.props, "desiredCapacity")) for s in own]
        missing = [what for what, present in (("scheduled scale-out at the block's start", any(n and n > 0 for n in sizes)),
                                              ("scheduled scale-in to 0 before its end", any(n == 0 for n in sizes)))
                   if not present]
        if missing:
            report(violation(group, CAPACITY_BLOCK_SCHEDULED,
                             f"its Auto Scaling group has no {' and no '.join(missing)}: nothing brings the nodes up "
                             "when the block starts, or EC2 terminates them 30 minutes before it ends without a drain "
                             "(EC2 Auto Scaling, 'Use Capacity Blocks for machine learning workloads')", fix),
                   group.urn)


def _seconds(value) -> float | None:
    """'604800s' -> 604800.0 (a protobuf duration as the GKE API takes it)."""
    if isinstance(value, str) and value.endswith("s"):
        try:
            return float(value[:-1])
        except ValueError:
            return None
    return None


def _validate_capacity_mode_limits(args, report) -> None:
    """A pool or node group past its capacity mode's limits (policies/cloud/capacity_modes.yaml)."""
    props = args.props
    if args.resource_type == GKE_NODE_POOL:
        provisioning = _gke_provisioning(props)
        machine = get(props, "nodeConfig", "machineType")
        if provisioning is not None:
            mode = "gcp-queued" if provisioning == "queued" else "gcp-flex-start"
            longest = mode_limits.limit(mode, "max_duration_hours")
            run = _seconds(get(props, "nodeConfig", "maxRunDuration"))
            if longest is not None and run is not None and run > longest * 3600:
                report(violation(args, CAPACITY_MODE_LIMITS,
                                 f"{provisioning} capacity runs at most {longest / 24:g} days per request "
                                 f"({mode_limits.source(mode)}); maxRunDuration is {run:g}s",
                                 f"set max_run_duration to at most {longest * 3600:.0f}s and chain longer runs"))
            return
        if not isinstance(machine, str) or machine is UNKNOWN or is_true(get(props, "nodeConfig", "spot")):
            return
        reserved = get(props, "nodeConfig", "reservationAffinity", "consumeReservationType") == "SPECIFIC_RESERVATION"
        why = mode_limits.excluded("gcp", machine, "gcp-on-demand")
        if why and not reserved:
            report(violation(args, CAPACITY_MODE_LIMITS,
                             f"{machine} on demand with no reservation: {why}",
                             "consume a reservation (SPECIFIC_RESERVATION affinity), or use flex-start or spot "
                             "where the machine type has them"))
    elif args.resource_type == EKS_NODE_GROUP and get(props, "capacityType") == "CAPACITY_BLOCK":
        most = mode_limits.limit("aws-capacity-block", "max_hosts_per_request")
        size = number(get(props, "scalingConfig", "maxSize"))
        if most is not None and size is not None and size > most:
            report(violation(args, CAPACITY_MODE_LIMITS,
                             f"one node group on one capacity block scales to {size:g} instances; a Capacity Block "
                             f"holds at most {most} ({mode_limits.source('aws-capacity-block')})",
                             "split the fleet into node groups of at most one block each"))


POLICIES = [
    ResourceValidationPolicy(
        name=CAPACITY_MODE_LIMITS,
        description="Pools and node groups stay within their capacity mode's limits (docs/capacity.md).",
        validate=_validate_capacity_mode_limits,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name=GKE_CAPACITY,
        description="GKE node pools combine COMPACT placement only with capacity modes GKE accepts.",
        validate=_validate_gke_capacity,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name=CAPACITY_BLOCK_SCHEDULED,
        description="EKS capacity-block node groups start at size 0 and are scaled by scheduled actions around the block.",
        validate=_validate_capacity_block_scheduled,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
