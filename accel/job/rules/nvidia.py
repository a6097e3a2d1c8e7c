"""A group of pods across the nodes of one NVLink domain claims its IMEX channel through an NVIDIA ComputeDomain.

GPUs on different machines of a GB200 NVL72 rack share memory over NVLink only through IMEX: on Kubernetes NVIDIA's
DRA driver runs the IMEX daemons of a ComputeDomain, and only a container that claims the domain's channel
(pod `spec.resourceClaims` naming the ResourceClaimTemplate the ComputeDomain's `spec.channel.resourceClaimTemplate`
names, and the container's `resources.claims` naming that claim) gets the channel device
/dev/nvidia-caps-imex-channels/channel*. Nothing refuses a pod without it: NCCL finds no IMEX channel and leaves
multi-node NVLink (its MNNVL path) for the scale-out network, or the job fails where it relies on it, so a tensor-
parallel group across trays runs at a fraction of its NVLink bandwidth. Sources: NVIDIA/k8s-dra-driver-gpu
demo/specs/imex/nvbandwidth-test-job-1.yaml (3ea7913: each GPU worker of a multi-node MPIJob claims the channel);
kubernetes-sigs/dra-driver-nvidia-gpu site/content/docs/concepts/compute-domains.md (5552175: the kubelet plugin
injects the channel into a container that claims it) and site/content/docs/guides/compute-domain-workloads.md
(5917124).

Which groups must: the one decision the job and the stack make (components/kubernetes/workloads.py
nvlink_group_spans_nodes) over the nodes the group's pods land on (the stack's pools its selector and tolerations
allow) and the group's pods: a JobSet's replicas x parallelism, a Job's parallelism, a LeaderWorkerSet's group size
(leader and workers); a Deployment's pods are groups of one.
"""

from __future__ import annotations

from typing import Any

from accel.components.kubernetes.accelerator_stack import GPU_RESOURCE
from accel.components.kubernetes.workloads import nvlink_group_spans_nodes
from accel.job.pod_templates import PodTemplate, pod_templates
from accel.job.rules.placement import placeable_pools
from accel.job.rules.registry import Breach, Scope, containers, describe, integer, join, of_kind, rule, spec

COMPUTE_DOMAIN = ("resource.nvidia.com", "ComputeDomain")
GROUP_KINDS = ("JobSet", "Job", "LeaderWorkerSet")   # kinds whose pods of one group share a collective


def group_pods(template: PodTemplate) -> int | None:
    """Pods of one group the template belongs to (None when a count is not an integer: schema rules report it)."""
    owner = template.owner.get("kind")
    replicas, per_replica = (integer(c) for c in template.counts or (1, 1))
    if replicas is None or per_replica is None:
        return None
    return replicas * per_replica if owner == "JobSet" else per_replica


def requests_gpus(container: dict[str, Any]) -> bool:
    resources = container.get("resources") or {}
    return any(str((resources.get(kind) or {}).get(GPU_RESOURCE, "0")) not in ("0", "") for kind in ("limits",
                                                                                                  "requests"))


def _channel_templates(scope: Scope) -> set[str]:
    """The channel ResourceClaimTemplates the ComputeDomains among the objects name (by namespace/name)."""
    found = set()
    for obj in of_kind(scope.objects, COMPUTE_DOMAIN[1]):
        if str(obj.get("apiVersion", "")).rpartition("/")[0] != COMPUTE_DOMAIN[0]:
            continue
        name = ((spec(obj).get("channel") or {}).get("resourceClaimTemplate") or {}).get("name")
        if name:
            found.add(f"{(obj.get('metadata') or {}).get('namespace', '')}/{name}")
    return found


def spanning_domain(template: PodTemplate, pods: int, cluster) -> str | None:
    """The pools' description when every pool the pod can land on puts a group of `pods` across one NVLink domain
    of several nodes (the decision of components/kubernetes/workloads.py), else None."""
    pools = placeable_pools(template.spec, cluster)
    if not pools or not all(pool.accelerator and nvlink_group_spans_nodes(
            pool.accelerator, pool.machine_type, pods, pool.nvlink_domain_gpus) for pool in pools):
        return None
    return ", ".join(sorted({f"{pool.name} ({pool.machine_type or pool.accelerator})" for pool in pools}))


@rule("nvidia/compute-domain-claim", "a pod group across the nodes of one NVLink domain claims a ComputeDomain's "
      "IMEX channel",
      source="nvidia-dra-driver-gpu 25.12.0 (the pinned chart, charts.yaml): a ComputeDomain's channel claimed as "
             "NVIDIA/k8s-dra-driver-gpu demo/specs/imex/nvbandwidth-test-job-1.yaml (3ea7913) shows it, and kubernetes-sigs/dra-driver-nvidia-gpu site/content/docs/concepts/compute-domains.md "
             "(5552175): the IMEX channel reaches only a container that claims it; the group's span is "
             "components/kubernetes/workloads.py nvlink_group_spans_nodes",
      fix="write a ComputeDomain (resource.nvidia.com/v1beta1) beside the workload and give every GPU pod of the "
          "group spec.resourceClaims [{name: compute-domain-channel, resourceClaimTemplateName: <its "
          "spec.channel.resourceClaimTemplate.name>}] and each GPU container resources.claims [{name: "
          "compute-domain-channel}], as `accel job` writes them")
def compute_domain_claim(scope: Scope):
    if scope.cluster is None:
        return
    channels = _channel_templates(scope)
    for template in pod_templates(of_kind(scope.manifests, *GROUP_KINDS)):
        pods = group_pods(template)
        gpu_containers = [(where, c) for where, c in containers(template.spec) if requests_gpus(c)]
        if not pods or pods < 2 or not gpu_containers:
            continue
        where_pools = spanning_domain(template, pods, scope.cluster)
        if where_pools is None:
            continue
        namespace = (template.owner.get("metadata") or {}).get("namespace", "")
        claims = {c.get("name") for c in template.spec.get("resourceClaims") or []
                  if f"{namespace}/{c.get('resourceClaimTemplateName')}" in channels}
        group = f"its {pods} pods share one NVLink domain across the nodes of {where_pools}"
        if not claims:
            yield Breach(describe(template.owner), join(template.path, "spec.resourceClaims"),
                         f"{group}, and the pod claims no ComputeDomain channel: its GPUs get no IMEX channel, so "
                         "NCCL cannot use NVLink across nodes")
            continue
        for where, container in gpu_containers:
            named = {c.get("name") for c in (container.get("resources") or {}).get("claims") or []}
            if not named & claims:
                yield Breach(describe(template.owner), join(template.path, "spec", where, "resources.claims"),
                             f"{group}, and container {container.get('name')!r} does not name the pod's ComputeDomain "
                             f"claim ({', '.join(sorted(map(str, claims)))}): the channel is injected only into "
                             "containers that name it")
