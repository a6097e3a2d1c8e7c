"""Serving replicas on separate nodes: the job's half of the service's minimum (assumptions.yaml
inference.min_replicas, "to survive a node failure or a rolling update"), whose sizing half puts the replicas it
asks for on at least as many nodes (policies/selection/ladders.py serving_fleet).

A Deployment whose pods each take a share of a node is spread over the nodes' hostnames by a pod topology spread
constraint (Kubernetes v1.33 concepts/scheduling-eviction/topology-spread-constraints): maxSkew 1, so no node holds
two replicas while another matching node holds none; minDomains, so while fewer nodes than the minimum exist (a pool
still scaling up) the global minimum counts as 0 and a second replica waits for a second node instead of joining
the first (minDomains needs whenUnsatisfiable DoNotSchedule, validation.go validateMinDomains); matchLabelKeys
pod-template-hash, so a rolling update's new pods are spread among themselves, not against the old ones they
replace. A pod that takes a whole node (a LeaderWorkerSet's, a Deployment's of whole-node replicas) is alone on its
node already: nothing to add.
"""

from __future__ import annotations

from typing import Any

from accel.job import plan_view
from accel.job.topology import HOSTNAME
from accel.policies.plan import Plan

# The label the Deployment controller puts on each ReplicaSet's pods (apps/v1 DefaultDeploymentUniqueLabelKey).
TEMPLATE_HASH = "pod-template-hash"
MIN_REPLICAS = "min_replicas"   # the estimate's assumption (policies/estimator/estimate.py)


def min_replicas(plan: Plan) -> int:
    """The replicas the service keeps at least: the estimate's resolved assumption (the catalog's, or the workload's
    assumptions.min_replicas over it); 1 (no spread asked) for a plan stating none."""
    stated = plan_view.stated_assumption(plan, MIN_REPLICAS)
    return int(float(stated)) if stated is not None else 1


def spread(pod: dict[str, Any], selector: dict[str, str], plan: Plan, replicas: int, chips_per_pod: int) -> list[str]:
    """Add the hostname spread to a serving Deployment's pod template when its pods share nodes and the minimum
    asks for more than one; returns the derivation notes (a plan whose fleet has fewer nodes than the minimum, one
    pinned before its sizing spread them, is said, not spread: its pods could never all start)."""
    hw = plan_view.hardware(plan)
    domains = min(replicas, min_replicas(plan))
    if hw.family != "gpu" or chips_per_pod >= hw.chips_per_node or domains < 2:
        return []
    if hw.nodes < domains:
        return [f"serving: the plan puts {replicas} replicas on {hw.nodes} node(s), fewer than the {domains} the "
                f"service's minimum keeps apart (one node lost is the whole service); re-run `accel choose "
                f"--write-stack` to size the fleet on {domains} nodes"]
    pod["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "minDomains": domains, "topologyKey": HOSTNAME, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": dict(selector)}, "matchLabelKeys": [TEMPLATE_HASH]}]
    return [f"serving: replicas spread over nodes (topologySpreadConstraints on {HOSTNAME}, maxSkew 1, minDomains "
            f"{domains}): the {domains} replicas the service keeps at least (assumptions.yaml inference.min_replicas) never share a "
            f"node, so one node lost leaves the others serving"]
