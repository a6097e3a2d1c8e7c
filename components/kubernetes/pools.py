"""Accelerator pools for the Kubernetes layer: from a Plan's node pools, or from an existing cluster's inventory.

The node labels here are the ones the platforms put on nodes themselves (GKE TPU/GPU labels,
the kubelet's instance-type label, EKS's capacity-type label), so Kueue flavors match nodes
without anyone labelling them by hand.
"""

from __future__ import annotations

import os
from typing import Literal

import pulumi
from pydantic import Field, model_validator

from components.kubernetes.accelerator_stack import (
    GKE_TPU_ACCELERATOR_LABEL,
    GPU_RESOURCE,
    TPU_RESOURCE,
    AcceleratorPool,
    Toleration,
)
from policies import shapes
from policies.plan import GpuPool, Plan, TpuPool
from policies.workload import AcceleratorId, StrictModel

GKE_TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
GKE_GPU_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
GKE_SPOT_LABEL = "cloud.google.com/gke-spot"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
EKS_CAPACITY_TYPE_LABEL = "eks.amazonaws.com/capacityType"

# GKE taints TPU and GPU nodes with these keys; tolerating an absent taint is harmless.
TPU_TOLERATION = Toleration(key=TPU_RESOURCE)
GPU_TOLERATION = Toleration(key=GPU_RESOURCE)
GKE_SPOT_TOLERATION = Toleration(key=GKE_SPOT_LABEL, operator="Equal", value="true")


def gke_tpu_pool(tpu: TpuPool, *, spot: bool = False) -> AcceleratorPool:
    """All slices of a TPU plan: quota = chips per slice x slices."""
    labels = {GKE_TPU_ACCELERATOR_LABEL: tpu.gke_accelerator, GKE_TPU_TOPOLOGY_LABEL: tpu.topology}
    tolerations = [TPU_TOLERATION]
    if spot:
        labels[GKE_SPOT_LABEL] = "true"
        tolerations.append(GKE_SPOT_TOLERATION)
    return AcceleratorPool(
        name=f"tpu-{tpu.generation}-{tpu.topology}",
        resource=TPU_RESOURCE,
        chips=tpu.chips_per_slice * tpu.slices,
        node_labels=labels,
        tolerations=tuple(tolerations),
        accelerator=f"tpu-{tpu.generation}",
    )


def gke_gpu_pool(gpu: GpuPool, *, accelerator: str, spot: bool = False) -> AcceleratorPool:
    labels = {INSTANCE_TYPE_LABEL: gpu.machine_type}
    if gpu.guest_accelerator:
        labels[GKE_GPU_ACCELERATOR_LABEL] = gpu.guest_accelerator
    tolerations = [GPU_TOLERATION]
    if spot:
        labels[GKE_SPOT_LABEL] = "true"
        tolerations.append(GKE_SPOT_TOLERATION)
    return AcceleratorPool(name=accelerator, resource=GPU_RESOURCE, chips=gpu.gpus_per_node * gpu.nodes,
                           node_labels=labels, tolerations=tuple(tolerations), accelerator=accelerator)


def eks_gpu_pool(gpu: GpuPool, *, accelerator: str, spot: bool = False,
                 extra_labels: dict[str, str] | None = None) -> AcceleratorPool:
    """An EKS GPU node group. With spot alternates the instance type varies, so it is not a label."""
    labels: dict[str, str] = {}
    if not gpu.alternate_machine_types:
        labels[INSTANCE_TYPE_LABEL] = gpu.machine_type
    labels[EKS_CAPACITY_TYPE_LABEL] = "SPOT" if spot else "ON_DEMAND"
    labels.update(extra_labels or {})
    return AcceleratorPool(name=accelerator, resource=GPU_RESOURCE, chips=gpu.gpus_per_node * gpu.nodes,
                           node_labels=labels, tolerations=(GPU_TOLERATION,), accelerator=accelerator)


def plan_pools(plan: Plan) -> list[AcceleratorPool]:
    """The pools a Plan provisions on GKE or EKS."""
    spot = plan.capacity.spot
    if plan.family == "tpu":
        assert plan.tpu is not None  # Plan's own validator guarantees it
        return [gke_tpu_pool(plan.tpu, spot=spot)]
    assert plan.gpu is not None
    if plan.cloud == "gcp":
        return [gke_gpu_pool(plan.gpu, accelerator=plan.chosen.accelerator, spot=spot)]
    if plan.cloud == "aws":
        return [eks_gpu_pool(plan.gpu, accelerator=plan.chosen.accelerator, spot=spot)]
    raise ValueError(f"plan.cloud: {plan.cloud!r} has no managed node pools; declare the cluster's "
                     "inventory instead (accel:cluster.inventory)")


def device_plugin_needed(plan: Plan) -> bool:
    """EKS GPU nodes (NVIDIA AMIs) have drivers but no device plugin; GKE manages both itself."""
    return plan.family == "gpu" and plan.cloud == "aws"


class InventoryEntry(StrictModel):
    """Accelerators an existing cluster already has, and what the owner charges for them internally."""

    accelerator: AcceleratorId
    chips: int = Field(gt=0, description="Chips of this accelerator the workload may use")
    usd_per_chip_hour: float = Field(ge=0, description="Internal price per chip-hour, for $/h and $/run")
    name: str | None = Field(None, description="Flavor name; defaults to the accelerator id")
    node_labels: dict[str, str] = Field(default_factory=dict,
                                        description="Labels that select these nodes; empty = any node with the chips")
    tolerations: list[Toleration] = Field(default_factory=list,
                                          description="Extra taints to tolerate; the chip taint is always tolerated")
    topology: str | None = Field(None, description="TPU slice topology (GKE TPU inventory only)")

    @model_validator(mode="after")
    def _topology_only_for_tpus(self) -> "InventoryEntry":
        if self.topology is not None:
            if not self.accelerator.startswith("tpu-"):
                raise ValueError(f"topology is for TPU inventory; {self.accelerator} has none")
            shapes.check_topology(self.accelerator, self.topology)
        return self


class ExistingCluster(StrictModel):
    """Bring-your-own cluster (on-prem, AKS, any CNCF cluster): how to reach it and what it has."""

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    kubeconfig: str | None = Field(None, description="Path to a kubeconfig; None = KUBECONFIG or ~/.kube/config")
    context: str | None = Field(None, description="kubeconfig context; None = its current context")
    gpu_setup: Literal["managed", "device-plugin", "gpu-operator"] = Field(
        "device-plugin",
        description="managed: the platform runs the device plugin (AKS GPU pools); device-plugin: nodes "
                    "have drivers; gpu-operator: nodes lack drivers")
    install_kueue: bool = True
    install_jobset: bool = True
    inventory: list[InventoryEntry] = Field(min_length=1)

    @property
    def hourly_usd(self) -> float:
        return sum(entry.chips * entry.usd_per_chip_hour for entry in self.inventory)

    @property
    def has_gpus(self) -> bool:
        return any(not entry.accelerator.startswith("tpu-") for entry in self.inventory)


def inventory_pools(cluster: ExistingCluster) -> list[AcceleratorPool]:
    pools = []
    for entry in cluster.inventory:
        is_tpu = entry.accelerator.startswith("tpu-")
        labels = dict(entry.node_labels)
        if is_tpu:
            labels.setdefault(GKE_TPU_ACCELERATOR_LABEL, shapes.generation(entry.accelerator).gke_accelerator)
            if entry.topology:
                labels.setdefault(GKE_TPU_TOPOLOGY_LABEL, entry.topology)
        chip_toleration = TPU_TOLERATION if is_tpu else GPU_TOLERATION
        tolerations = [chip_toleration] + [t for t in entry.tolerations if t != chip_toleration]
        pools.append(AcceleratorPool(
            name=entry.name or entry.accelerator,
            resource=TPU_RESOURCE if is_tpu else GPU_RESOURCE,
            chips=entry.chips,
            node_labels=labels,
            tolerations=tuple(tolerations),
            accelerator=entry.accelerator,
        ))
    return pools


def existing_cluster_provider(cluster: ExistingCluster, name: str,
                              opts: pulumi.ResourceOptions | None = None):
    """A Kubernetes provider for the cluster's kubeconfig and context."""
    import pulumi_kubernetes as k8s

    kubeconfig = os.path.expanduser(cluster.kubeconfig) if cluster.kubeconfig else None
    return k8s.Provider(name, kubeconfig=kubeconfig, context=cluster.context, opts=opts)
