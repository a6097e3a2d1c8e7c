"""Whether a pod group's topology spread can be met on the nodes it fits: the schedule check's half of a spread
constraint (accel/job/check.py), after the node selectors, taints and requests have said which nodes take how many of
its pods.

The scheduler's rule (Kubernetes v1.33 concepts/scheduling-eviction/topology-spread-constraints): with
whenUnsatisfiable DoNotSchedule, a pod goes only where the matching pods of its domain, plus itself, exceed the global
minimum (the fewest matching pods on any eligible domain) by at most maxSkew; while fewer eligible domains than
minDomains exist, the global minimum counts as 0. So over domains that hold c_1..c_n pods each (their nodes'
allocatable over the pod's requests), at most sum(min(c_i, m + maxSkew)) pods ever place, m being the least c_i (0
while n < minDomains): a balanced fill reaches it and nothing passes it. A group with more pods leaves the rest
Pending for good: one node of an 8-GPU machine for two replicas kept apart (minDomains 2) places one.

Modelled: kubernetes.io/hostname (each node a domain) and a key every candidate pool labels (each value a domain, as
cloud.google.com/gke-nodepool). The eligible domains are the nodes the pod's selectors and tolerations admit (the
default nodeAffinityPolicy Honor), those its requests do not fit included, each holding none (which keeps the
global minimum at 0); under nodeTaintsPolicy Ignore a tainted node it does not tolerate also counts, as a domain
holding none, which this leaves out. ScheduleAnyway constraints never block; a labelSelector that selects
none of the group's own pods counts none of them, so the spread spreads nothing (said, a warning).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accel.job.declared import NodePool
from accel.job.label_selectors import selects
from accel.job.topology import HOSTNAME


@dataclass(frozen=True)
class SpreadProblem:
    field: str          # the constraint's path in the pod template
    message: str
    blocking: bool      # an error (pods stay Pending) or a warning


def domain_capacities(key: str, fitting: list[tuple[NodePool, int]]) -> list[int] | None:
    """Pods each domain of `key` holds (the pools' nodes times the pods a node takes, 0 for a node the requests do not
    fit), or None where the domains are not known from what the stack declares."""
    if key == HOSTNAME:
        return [per_node for pool, per_node in fitting for _ in range(pool.nodes)]
    if not all(key in pool.labels for pool, _ in fitting):
        return None
    domains: dict[str, int] = {}
    for pool, per_node in fitting:
        domains[pool.labels[key]] = domains.get(pool.labels[key], 0) + per_node * pool.nodes
    return list(domains.values())


def most_placed(capacities: list[int], max_skew: int, min_domains: int) -> int:
    """The most matching pods the spread lets onto domains of these capacities (the module's rule)."""
    floor = 0 if len(capacities) < min_domains or not capacities else min(capacities)
    return sum(min(capacity, floor + max_skew) for capacity in capacities)


def spread_problems(template: dict[str, Any], template_field: str, pods: int,
                    fitting: list[tuple[NodePool, int]]) -> list[SpreadProblem]:
    """What keeps `pods` pods of this template from meeting their spread constraints on the pools the pod's selectors
    admit (`fitting`: each with the pods one of its nodes takes, 0 where its requests do not fit)."""
    spec = template.get("spec") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    problems = []
    for index, constraint in enumerate(spec.get("topologySpreadConstraints") or []):
        path = f"{template_field}.spec.topologySpreadConstraints[{index}]"
        skew, min_domains = constraint.get("maxSkew"), constraint.get("minDomains", 1)
        key = constraint.get("topologyKey")
        if constraint.get("whenUnsatisfiable") != "DoNotSchedule" or not isinstance(skew, int) \
                or not isinstance(min_domains, int) or skew < 1 or not key:
            continue   # never blocks, or malformed (the pod/topology-spread rule says so)
        if not selects(constraint.get("labelSelector"), labels):
            problems.append(SpreadProblem(f"{path}.labelSelector", "selects none of the pods it is set on: the "
                                          "spread counts none of them and spreads nothing", blocking=False))
            continue
        capacities = domain_capacities(key, fitting)
        if capacities is None:
            continue
        placed = most_placed(capacities, skew, min_domains)
        if pods <= placed:
            continue
        unit = "node" if key == HOSTNAME else f"{key} domain"
        if len(capacities) < min_domains:
            why = (f"minDomains {min_domains} over {len(capacities)} {unit}(s): while fewer exist, the global minimum "
                   f"counts as 0, so each takes at most maxSkew {skew} of them")
        else:
            why = (f"maxSkew {skew} over {len(capacities)} {unit}s holding {', '.join(map(str, capacities))} of them "
                   f"by their requests: none may pass the least-filled by more than {skew}")
        problems.append(SpreadProblem(path, f"{pods} pods, but the spread places at most {placed} ({why}); the rest "
                                      "stay Pending", blocking=True))
    return problems
