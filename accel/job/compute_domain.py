"""The NVIDIA ComputeDomain a job spanning nodes of one NVLink domain claims (GB200 NVL72: A4X, p6e-gb200).

GPUs on different machines of an NVL72 rack share memory over NVLink only through IMEX channels; on
Kubernetes NVIDIA's DRA driver runs the IMEX daemons of a ComputeDomain and writes the ResourceClaimTemplate
its spec names, and each pod of the job claims a channel from it (pod `spec.resourceClaims`, container
`resources.claims`). Sources: the ComputeDomain CRD of the driver v25.12.0 (../shared/crds/nvidia-dra:
`spec.numNodes` and `spec.channel.resourceClaimTemplate.name` required, `spec` immutable, numNodes 0
recommended with the default IMEXDaemonsWithDNSNames); Cluster Toolkit examples/gke-a4x/nccl-jobset-example.yaml
and the EKS user guide "Use P6e-GB200 UltraServers with Amazon EKS" (the same claim on EKS).

`spec` is immutable, so the ComputeDomain belongs to the job (named after it), not to the cluster: a job of
another size is a new domain.
"""

from __future__ import annotations

from typing import Any

from accel.components.kubernetes.workloads import nvlink_group_spans_nodes  # the one decision (cluster, job, check)
from accel.policies.plan import Plan

from accel.job.topology import REQUIRED, SLICE_REQUIRED

COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"
COMPUTE_DOMAIN_KIND = "ComputeDomain"
CHANNEL_CLAIM = "compute-domain-channel"


def compute_domain(job: str, namespace: str) -> dict[str, Any]:
    """The job's ComputeDomain; its channel ResourceClaimTemplate is written by the driver's controller."""
    return {"apiVersion": COMPUTE_DOMAIN_API, "kind": COMPUTE_DOMAIN_KIND,
            "metadata": {"name": f"{job}-cd", "namespace": namespace},
            "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": channel_template(job)}}}}


def channel_template(job: str) -> str:
    return f"{job}-cd-channel"


def claim_channel(pod: dict[str, Any], job: str) -> None:
    """Make every container of the pod template claim the job's IMEX channel (in place)."""
    spec = pod["spec"]
    spec["resourceClaims"] = [*spec.get("resourceClaims", []),
                              {"name": CHANNEL_CLAIM, "resourceClaimTemplateName": channel_template(job)}]
    for container in spec["containers"]:
        resources = container.setdefault("resources", {})
        resources["claims"] = [*resources.get("claims", []), {"name": CHANNEL_CLAIM}]


def derivation(job: str, plan: Plan, pod: dict[str, Any], group_nodes: int) -> str:
    # One ComputeDomain may hold nodes of several NVLink domains: the driver runs one IMEX domain per NVLink
    # partition (its status lists each node's cliqueID), so only nodes of one rack share GPU memory over NVLink,
    # which is why a tensor-parallel group that spans nodes is kept inside one (accel/job/topology.py).
    assert plan.gpu is not None
    # Said only of a pod template that asks Kueue for it (accel/job/topology.py); the fabric check asks for none.
    tensor = plan.parallelism.tensor_nodes if plan.parallelism is not None else None
    annotations = pod.get("metadata", {}).get("annotations") or {}
    placed = tensor and (SLICE_REQUIRED in annotations or REQUIRED in annotations)
    groups = (f"; each {tensor}-node tensor-parallel group is placed inside one NVLink domain" if placed else "")
    nodes = (f"job's {plan.gpu.nodes}" if group_nodes == plan.gpu.nodes else
             f"{group_nodes} nodes of each replica (of the {plan.gpu.nodes}")
    close = ")" if group_nodes != plan.gpu.nodes else ""
    return (f"ComputeDomain {job}-cd ({COMPUTE_DOMAIN_API}): the {nodes} {plan.gpu.machine_type} "
            f"nodes{close} share NVLink through IMEX within each NVLink domain (clique) they sit in{groups}; every pod "
            f"claims channel template {channel_template(job)} (NVIDIA DRA driver, charts.yaml nvidia-dra-driver-gpu)")


def attach(pods: list[dict[str, Any]], job: str, plan: Plan, namespace: str, group_nodes: int,
           stated_domain_gpus: int | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """(objects, notes) for a workload whose group of pods (on `group_nodes` nodes: a training job's, a serving
    replica's) shares an NVLink domain across nodes: every pod template of the group (a JobSet's one, a
    LeaderWorkerSet's leader and worker) claims the channel, and the workload writes the ComputeDomain beside it,
    with the note that says why; ([], []) for any other group. The claim is the one NVIDIA's driver documents for
    a multi-node workload: each GPU pod `spec.resourceClaims` naming the domain's channel template, each container
    `resources.claims` naming that claim (NVIDIA/k8s-dra-driver-gpu demo/specs/imex/nvbandwidth-test-job-1.yaml at
    3ea7913, every worker of the MPIJob; kubernetes-sigs/dra-driver-nvidia-gpu site/content/docs/guides/
    compute-domain-workloads.md at 591712478). One domain per workload, all its groups in it: the driver keeps
    each NVLink partition its own IMEX domain, and the replicas of one service are one tenant."""
    if plan.gpu is None or not nvlink_group_spans_nodes(plan.gpu.accelerator, plan.gpu.machine_type, group_nodes,
                                                        stated_domain_gpus):
        return [], []
    for pod in {id(pod): pod for pod in pods}.values():   # a group of one template names it once
        claim_channel(pod, job)
    return [compute_domain(job, namespace)], [derivation(job, plan, pods[0], group_nodes)]
