"""A serving replica across the nodes of an NVLink domain is placed inside one domain.

A LeaderWorkerSet group (one serving replica: its leader and workers) on nodes whose NVLink domain joins machines
(GB200: A4X, p6e-gb200) talks over NVLink only while its pods share a domain: two domains are joined by the
scale-out network alone. Kueue places a group inside one domain of a Topology level when every pod template of the
group requires that level (`kueue.x-k8s.io/podset-required-topology`) and names the same PodSet group
(`kueue.x-k8s.io/podset-group-name`: "a unit of flavor assignment and topology domain fitting"; without it the
leader and the workers are two PodSets, each fitted alone). Which levels hold at most one NVLink domain:
accel/job/topology.py within_one_nvlink_domain (the NVLink clique GPU Feature Discovery labels, nvidia.com/gpu.clique;
A4X's 18-node sub-block). Nothing refuses a group without the requirement: Kueue admits it across domains, and
its tensor- or pipeline-parallel traffic leaves NVLink.

The rule applies where the group can be held: the Topology of a flavor over the group's nodes has such a level,
and the level's documented size (if any) holds the group's pods.
"""

from __future__ import annotations

from typing import Any

from accel.components.kubernetes.accelerator_stack import GPU_RESOURCE
from accel.job.pod_templates import PodTemplate, pod_templates
from accel.job.rules.nvidia import group_pods, requests_gpus, spanning_domain
from accel.job.rules.placement import placeable_pools
from accel.job.rules.registry import Breach, Scope, containers, describe, join, of_kind, rule
from accel.job.topology import PODSET_GROUP, REQUIRED, level_nodes, within_one_nvlink_domain
from accel.policies import hardware


def _domain_levels(template: PodTemplate, pods: int, cluster) -> list[str]:
    """The levels, of the Topologies of the flavors over the template's nodes, that hold `pods` pods inside one
    NVLink domain on every pool the pods can land on."""
    pools = placeable_pools(template.spec, cluster)
    found: list[str] = []
    for flavor in cluster.flavors.values():
        over = [pool for pool in pools if all(pool.labels.get(k) == v for k, v in flavor.node_labels.items())]
        for level in cluster.topologies.get(flavor.topology_name or "", []) if over else []:
            if level not in found and all(
                    within_one_nvlink_domain(level, pool.machine_type)
                    and (level_nodes(level, pool.machine_type or "", _clique_nodes(pool)) or pods) >= pods
                    for pool in over):
                found.append(level)
    return found


def _clique_nodes(pool) -> int | None:
    """An inventory pool's nodes per NVLink clique (HardwareFacts.inventory_clique_nodes); None for a cloud pool."""
    per_node = pool.allocatable.get(GPU_RESOURCE)
    if pool.machine_type is not None or not pool.accelerator or not per_node:
        return None
    return hardware.current().inventory_clique_nodes(pool.accelerator, int(per_node), pool.nvlink_domain_gpus)


def _annotations(template: PodTemplate) -> dict[str, Any]:
    return template.metadata.get("annotations") or {}


@rule("nvidia/nvlink-group-in-one-domain", "a serving replica across the nodes of an NVLink domain is required in "
      "one domain of a level that holds at most one, as one Kueue PodSet group",
      source="kueue v0.14.1 apis/kueue/v1beta1/topology_types.go (podset-required-topology: every pod of the PodSet "
             "in one domain of the level; podset-group-name: PodSets of one group fitted into one domain), "
             "pkg/util/tas/tas.go:29-31 (a domain is the values of its level and every coarser one); the levels "
             "that hold one NVLink domain: policies/hardware/facts.toml [placement_units] (nvidia.com/gpu.clique, "
             "NVIDIA/k8s-device-plugin v0.20.0 internal/lm/imex.go:29-43; A4X's sub-block)",
      fix="give the leader and the worker templates kueue.x-k8s.io/podset-required-topology: <the level> and the "
          "same kueue.x-k8s.io/podset-group-name, as `accel job` writes them")
def nvlink_group_in_one_domain(scope: Scope):
    if scope.cluster is None:
        return
    templates = list(pod_templates(of_kind(scope.manifests, "LeaderWorkerSet")))
    for template in templates:
        pods = group_pods(template)
        if not pods or pods < 2 or not any(requests_gpus(c) for _, c in containers(template.spec)):
            continue
        where_pools = spanning_domain(template, pods, scope.cluster)
        levels = _domain_levels(template, pods, scope.cluster) if where_pools else []
        if not levels:
            continue
        annotations = _annotations(template)
        field = join(template.path, "metadata.annotations")
        group = f"its {pods} pods (one replica) share an NVLink domain across the nodes of {where_pools}"
        if annotations.get(REQUIRED) not in levels:
            yield Breach(describe(template.owner), field,
                         f"{group}, and it does not require one {' or '.join(levels)} ({REQUIRED}: "
                         f"{annotations.get(REQUIRED, 'unset')}): Kueue may place it across two NVLink domains, "
                         "where NVLink does not reach")
            continue
        siblings = [t for t in templates if t.owner is template.owner]
        names = {_annotations(t).get(PODSET_GROUP) for t in siblings}
        if len(siblings) > 1 and (None in names or len(names) > 1):
            yield Breach(describe(template.owner), field,
                         f"{group}, and its leader and worker templates do not name one {PODSET_GROUP} "
                         f"({', '.join(sorted(map(str, names)))}): Kueue fits each PodSet into a domain of its own")
