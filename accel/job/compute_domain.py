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

from accel.components.kubernetes.workloads import needs_compute_domain  # noqa: F401 (the job's rule is the cluster's)
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


def derivation(job: str, plan: Plan, pod: dict[str, Any]) -> str:
    # One ComputeDomain may hold nodes of several NVLink domains: the driver runs one IMEX domain per NVLink
    # partition (its status lists each node's cliqueID), so only nodes of one rack share GPU memory over NVLink,
    # which is why a tensor-parallel group that spans nodes is kept inside one (accel/job/topology.py).
    assert plan.gpu is not None
    # Said only of a pod template that asks Kueue for it (accel/job/topology.py); the fabric check asks for none.
    tensor = plan.parallelism.tensor_nodes if plan.parallelism is not None else None
    annotations = pod.get("metadata", {}).get("annotations") or {}
    placed = tensor and (SLICE_REQUIRED in annotations or REQUIRED in annotations)
    groups = (f"; each {tensor}-node tensor-parallel group is placed inside one NVLink domain" if placed else "")
    return (f"ComputeDomain {job}-cd ({COMPUTE_DOMAIN_API}): the job's {plan.gpu.nodes} {plan.gpu.machine_type} "
            f"nodes share NVLink through IMEX within each NVLink domain (clique) they sit in{groups}; every pod "
            f"claims channel template {channel_template(job)} (NVIDIA DRA driver, charts.yaml nvidia-dra-driver-gpu)")


def attach(pod: dict[str, Any], job: str, plan: Plan, namespace: str) -> tuple[list[dict[str, Any]], list[str]]:
    """(objects, notes) for a job whose plan needs a ComputeDomain: its pods claim the channel and the job writes
    the ComputeDomain beside it, with the note that says why; ([], []) for any other plan."""
    if not needs_compute_domain(plan):
        return [], []
    claim_channel(pod, job)
    return [compute_domain(job, namespace)], [derivation(job, plan, pod)]
