"""Accelerator pools for the Kubernetes layer: from a Plan's node pools, or from an existing cluster's inventory.

The node labels here are the ones the platforms put on nodes themselves (GKE TPU/GPU labels,
the kubelet's instance-type label, EKS's capacity-type label, GKE's flex-start label), so Kueue
flavors match nodes without anyone labelling them by hand. EKS sets
`eks.amazonaws.com/capacityType` to the node group's capacity type: ON_DEMAND, SPOT or
CAPACITY_BLOCK.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

import pulumi
from pydantic import Field, model_validator

from accel.components.kubernetes.accelerator_stack import (
    EFA_RESOURCE,
    GKE_TPU_ACCELERATOR_LABEL,
    GPU_RESOURCE,
    TPU_RESOURCE,
    AcceleratorPool,
    Toleration,
)
from accel.components.kubernetes.node_installers import ARCH_LABEL
from accel.policies.cloud.flex_start import placed_by_topology, queued_provisioning
from accel.components.tags import CAPACITY_NODE_LABEL
from accel.policies import hardware
from accel.policies.hardware import shapes
from accel.policies.plan import Capacity, GpuPool, Plan, TpuPool
from accel.base.model import StrictModel

if TYPE_CHECKING:
    from accel.components.provider_settings import ProviderSettings
from accel.policies.workload import AcceleratorId

GKE_TPU_TOPOLOGY_LABEL = hardware.current().kubernetes.gke_tpu_topology_label
GKE_GPU_ACCELERATOR_LABEL = hardware.current().kubernetes.gke_accelerator_label
GKE_SPOT_LABEL = "cloud.google.com/gke-spot"
# Flex-start nodes (also those of queued provisioning) carry this label; the cluster autoscaler
# may also taint them with it. Queued-provisioning nodes are tainted cloud.google.com/gke-queued.
GKE_FLEX_START_LABEL = "cloud.google.com/gke-flex-start"
GKE_QUEUED_TAINT = "cloud.google.com/gke-queued"
GKE_QUEUED_PROVISIONING_CLASS = "queued-provisioning.gke.io"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
EKS_CAPACITY_TYPE_LABEL = "eks.amazonaws.com/capacityType"
# Capacity.provisioning -> the node group's capacity type, which EKS copies into the node label.
EKS_CAPACITY_TYPES = {"spot": "SPOT", "capacity-block": "CAPACITY_BLOCK"}

# GKE taints TPU and GPU nodes with these keys; tolerating an absent taint is harmless.
TPU_TOLERATION = Toleration(key=TPU_RESOURCE)
GPU_TOLERATION = Toleration(key=GPU_RESOURCE)
GKE_SPOT_TOLERATION = Toleration(key=GKE_SPOT_LABEL, operator="Equal", value="true")
GKE_FLEX_START_TOLERATION = Toleration(key=GKE_FLEX_START_LABEL)
GKE_QUEUED_TOLERATION = Toleration(key=GKE_QUEUED_TAINT)
ON_DEMAND = Capacity()


def _gke_capacity(labels: dict[str, str], tolerations: list[Toleration], capacity: Capacity,
                  pool: GpuPool | TpuPool) -> str | None:
    """Add the labels and tolerations of GKE's capacity modes; returns the ProvisioningRequest class of a pool
    built with queued provisioning (policies/cloud/flex_start.py: `queued`, and flex-start under a Topology)."""
    provisioning = capacity.provisioning
    if capacity.spot:
        labels[GKE_SPOT_LABEL] = "true"
        tolerations.append(GKE_SPOT_TOLERATION)
    if provisioning in ("flex-start", "queued"):
        # Whether GKE labels queued-provisioning nodes gke-flex-start=true is not documented (Cluster
        # Toolkit sets its own label on queued pools "for workloads using nodeSelectors"): select on the
        # label the node pool sets itself (GpuNodePool/TpuSlice node_config.labels).
        labels[CAPACITY_NODE_LABEL] = provisioning
        tolerations.append(GKE_FLEX_START_TOLERATION)
    if queued_provisioning(pool, capacity):
        tolerations.append(GKE_QUEUED_TOLERATION)
        return GKE_QUEUED_PROVISIONING_CLASS
    return None


def gke_tpu_pool(tpu: TpuPool, *, capacity: Capacity = ON_DEMAND) -> AcceleratorPool:
    """All slices of a TPU plan: quota = chips per slice x slices."""
    labels = {GKE_TPU_ACCELERATOR_LABEL: tpu.gke_accelerator, GKE_TPU_TOPOLOGY_LABEL: tpu.topology}
    tolerations = [TPU_TOLERATION]
    provisioning_class = _gke_capacity(labels, tolerations, capacity, tpu)
    return AcceleratorPool(
        name=f"tpu-{tpu.generation}-{tpu.topology}",
        resource=TPU_RESOURCE,
        chips=tpu.chips_per_slice * tpu.slices,
        node_labels=labels,
        tolerations=tuple(tolerations),
        accelerator=tpu.accelerator,
        provisioning_request_class=provisioning_class,
    )


def gke_gpu_pool(gpu: GpuPool, *, capacity: Capacity = ON_DEMAND) -> AcceleratorPool:
    """A GKE GPU node pool, selected by machine type and (when set) GKE's GPU accelerator label."""
    accelerator = gpu.accelerator
    labels = {INSTANCE_TYPE_LABEL: gpu.machine_type}
    if gpu.guest_accelerator:
        labels[GKE_GPU_ACCELERATOR_LABEL] = gpu.guest_accelerator
    tolerations = [GPU_TOLERATION, *_arch_tolerations(gpu)]
    provisioning_class = _gke_capacity(labels, tolerations, capacity, gpu)
    return AcceleratorPool(name=accelerator, resource=GPU_RESOURCE, chips=gpu.gpus_per_node * gpu.nodes,
                           node_labels=labels, tolerations=tuple(tolerations), accelerator=accelerator,
                           provisioning_request_class=provisioning_class,
                           topology_levels=_topology_levels(gpu, hardware.current().kubernetes.gke_topology_levels))


def gpu_node_arch(gpu: GpuPool) -> Literal["amd64", "arm64"]:
    """The GPU nodes' kubernetes.io/arch: arm64 for the Arm (Grace) machine types of the hardware table (A4X,
    p6e-gb200), else amd64. Picks the fabric's node installers (node_installers.yaml)."""
    return "arm64" if hardware.current().kubernetes_arch(gpu.machine_type) == "arm64" else "amd64"


def _arch_tolerations(gpu: GpuPool) -> list[Toleration]:
    """Arm GPU machines (A4X, p6e-gb200): GKE taints Arm nodes kubernetes.io/arch=arm64:NoSchedule (GKE "Arm
    workloads"; Cluster Toolkit's A4X jobs tolerate it), so the pool's pods tolerate it; on EKS it is harmless."""
    if not hardware.current().is_arm(gpu.machine_type):
        return []
    return [Toleration(key=ARCH_LABEL, operator="Equal", value="arm64", effect="NoSchedule")]


def _topology_levels(gpu: GpuPool, levels: tuple[str, ...]) -> tuple[str, ...]:
    """The cloud's placement levels for a GPU fleet on a scale-out fabric (multi-node training, where a
    tensor- or pipeline-parallel group must stay close), or its NVLink clique's where the machine is placed by it
    (p6e-gb200: HardwareFacts.pool_topology_levels); none for a pool without a fabric (docs/scale.md)."""
    return hardware.current().pool_topology_levels(gpu.machine_type, levels) if placed_by_topology(gpu.fabric) else ()


def eks_gpu_pool(gpu: GpuPool, *, capacity: Capacity = ON_DEMAND,
                 extra_labels: dict[str, str] | None = None) -> AcceleratorPool:
    """An EKS GPU node group. With spot alternates the instance type varies, so it is not a label.

    The capacity type picks the capacity-type label. EFA interfaces become quota, since EFA pods
    request vpc.amazonaws.com/efa.
    """
    accelerator = gpu.accelerator
    labels: dict[str, str] = {}
    if not gpu.alternate_machine_types:
        labels[INSTANCE_TYPE_LABEL] = gpu.machine_type
    capacity_type = EKS_CAPACITY_TYPES.get(capacity.provisioning, "ON_DEMAND")
    labels[EKS_CAPACITY_TYPE_LABEL] = capacity_type
    labels.update(extra_labels or {})
    extra_resources = {EFA_RESOURCE: gpu.efa_interfaces * gpu.nodes} if gpu.efa_interfaces else {}
    return AcceleratorPool(name=accelerator, resource=GPU_RESOURCE, chips=gpu.gpus_per_node * gpu.nodes,
                           node_labels=labels, tolerations=(GPU_TOLERATION, *_arch_tolerations(gpu)),
                           accelerator=accelerator, extra_resources=extra_resources,
                           topology_levels=_topology_levels(gpu, hardware.current().kubernetes.eks_topology_levels))


def plan_pools(plan: Plan) -> list[AcceleratorPool]:
    """The pools a Plan provisions on GKE or EKS."""
    capacity: Capacity = plan.capacity
    if plan.family == "tpu":
        assert plan.tpu is not None  # Plan's own validator guarantees it
        return [gke_tpu_pool(plan.tpu, capacity=capacity)]
    assert plan.gpu is not None
    if plan.cloud == "gcp":
        return [gke_gpu_pool(plan.gpu, capacity=capacity)]
    if plan.cloud == "aws":
        return [eks_gpu_pool(plan.gpu, capacity=capacity)]
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
    gpus_per_node: int | None = Field(None, gt=0, description="Chips per node; unset = a multi-host TPU VM's chips, "
                                      "a GB200 compute tray's 4 GPUs, else 8 GPUs (HardwareFacts.inventory_chips_per_node)")
    # GB200 NVL4 (SC24, 2024-11): one board of 4 Blackwell GPUs and 2 Grace CPUs whose NVLink is "only for onboard
    # communication" ("essentially two GB200 Superchips ... without the off-board NVLink": NVIDIA's briefing as
    # reported at gixtools.net/2024/11/nvidia-hpc-ai-chip-is-actually-six-chips); NVL72: facts.toml [collective_fabrics.gb200].
    nvlink_domain_gpus: int | None = Field(
        None, gt=0, description="GPUs one NVLink domain of these nodes joins: 72 for GB200 NVL72 racks (18 trays of 4 "
        "sharing NVLink across nodes: a job across nodes claims an NVIDIA ComputeDomain), 4 for GB200 NVL4 boards "
        "(NVLink within the board, the node); unset = the chip's domain in the hardware table (policies/hardware/"
        "facts.toml [collective_fabrics]): gb200 is NVL72 there because every cloud machine type of it (A4X, "
        "p6e-gb200) is an NVL72 tray")
    # NVIDIA GPU Feature Discovery labels a GB200 node with its NVLink partition (k8s-device-plugin v0.20.0
    # internal/lm/imex.go:29-43); a cluster that runs it (the GPU Operator's gfd, or GFD alone) says so here.
    nvlink_clique_label: bool = Field(
        False, description="the nodes carry NVIDIA GPU Feature Discovery's nvidia.com/gpu.clique (their NVLink "
        "partition: GPU Operator with gfd enabled, or GFD alone): the pool's Kueue Topology is that label, then the "
        "node, so a group of pods (a model or serving replica) is kept inside one NVLink domain, and a tensor-parallel "
        "group may span the trays of one clique as on A4X (nvlink_domain_gpus / gpus_per_node); only for GPUs whose "
        "NVLink domain joins nodes (GB200 NVL72). Nodes without the label are left out of topology-aware scheduling")

    @model_validator(mode="after")
    def _topology_only_for_tpus(self) -> "InventoryEntry":
        if self.topology is not None:
            if not _is_tpu(self.accelerator):
                raise ValueError(f"topology is for TPU inventory; {self.accelerator} has none")
            shapes.check_topology(self.accelerator, self.topology)
        return self

    @model_validator(mode="after")
    def _nvlink_domain_of_whole_nodes(self) -> "InventoryEntry":
        """A domain lies within one node (GB200 NVL4: the node's 4) or joins whole nodes (NVL72: 18 of 4)."""
        domain = self.nvlink_domain_gpus
        if domain is None:
            return self
        if _is_tpu(self.accelerator):
            raise ValueError(f"nvlink_domain_gpus is for GPU inventory; {self.accelerator} is a TPU, whose chips "
                             "share its slice's ICI (say topology instead)")
        per_node = self.gpus_per_node or hardware.current().inventory_chips_per_node(self.accelerator)
        if domain > per_node and domain % per_node:
            raise ValueError(f"nvlink_domain_gpus: {domain} is not a whole number of nodes of {per_node} GPUs "
                             f"(gpus_per_node): give at most {per_node} (a domain within the node, e.g. 4 for GB200 "
                             f"NVL4) or a multiple of {per_node} (a domain across nodes, e.g. 72 for GB200 NVL72)")
        return self


    @model_validator(mode="after")
    def _clique_only_where_nvlink_joins_nodes(self) -> "InventoryEntry":
        if self.nvlink_clique_label and (_is_tpu(self.accelerator) or not hardware.current().nvlink_domain_spans_nodes(
                self.accelerator, None, self.nvlink_domain_gpus)):
            raise ValueError(f"nvlink_clique_label: {self.accelerator} nodes share no NVLink domain across nodes "
                             "(nvlink_domain_gpus, or the hardware table's domain of the chip), so GPU Feature Discovery "
                             "labels no clique to place them by; set it only for GPUs like GB200 NVL72")
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
        return any(not _is_tpu(entry.accelerator) for entry in self.inventory)

    def stated_nvlink_domain(self, accelerator: str) -> int | None:
        """The NVLink domain the inventory entry a plan on `accelerator` runs on states (the first of that chip, as
        its queue's pool is); None: the hardware table's."""
        entry = next((entry for entry in self.inventory if entry.accelerator == accelerator), None)
        return entry.nvlink_domain_gpus if entry is not None else None

    def labelled_clique_nodes(self, accelerator: str) -> int | None:
        """Nodes of one NVLink clique of the inventory entry a plan on `accelerator` runs on, where its nodes carry
        GPU Feature Discovery's clique label (nvlink_clique_label; HardwareFacts.inventory_clique_nodes, what the
        search laid the plan out by: Plan gpu.nvlink_clique_nodes); None without the label."""
        entry = next((entry for entry in self.inventory if entry.accelerator == accelerator), None)
        if entry is None or not entry.nvlink_clique_label:
            return None
        per_node = entry.gpus_per_node or hardware.current().inventory_chips_per_node(entry.accelerator)
        return hardware.current().inventory_clique_nodes(entry.accelerator, per_node, entry.nvlink_domain_gpus)


def _is_tpu(accelerator: str) -> bool:
    return hardware.current().chips[accelerator].family == "tpu"


def inventory_pools(cluster: ExistingCluster) -> list[AcceleratorPool]:
    return [inventory_pool(entry) for entry in cluster.inventory]


def inventory_pool(entry: InventoryEntry) -> AcceleratorPool:
    """Chips a cluster already has: the chip's resource and taint, plus the entry's labels and tolerations."""
    is_tpu = _is_tpu(entry.accelerator)
    labels = dict(entry.node_labels)
    if is_tpu:
        labels.setdefault(GKE_TPU_ACCELERATOR_LABEL, shapes.generation(entry.accelerator).gke_accelerator)
        if entry.topology:
            labels.setdefault(GKE_TPU_TOPOLOGY_LABEL, entry.topology)
    chip_toleration = TPU_TOLERATION if is_tpu else GPU_TOLERATION
    tolerations = [chip_toleration] + [t for t in entry.tolerations if t != chip_toleration]
    return AcceleratorPool(
        name=entry.name or entry.accelerator,
        resource=TPU_RESOURCE if is_tpu else GPU_RESOURCE,
        chips=entry.chips,
        node_labels=labels,
        tolerations=tuple(tolerations),
        accelerator=entry.accelerator,
        topology_levels=hardware.current().kubernetes.nvlink_topology_levels if entry.nvlink_clique_label else (),
    )


def existing_cluster_provider(cluster: ExistingCluster, name: str,
                              opts: pulumi.ResourceOptions | None = None, settings: ProviderSettings | None = None):
    """A Kubernetes provider for the cluster's kubeconfig and context, and what `settings` adds (the stack's
    kubernetes:* keys accel:cluster does not say: an explicit provider reads no stack config by itself)."""
    import pulumi_kubernetes as k8s

    return k8s.Provider(name, **existing_cluster_provider_settings(cluster, settings).provider_args(), opts=opts)


def existing_cluster_provider_settings(cluster: ExistingCluster,
                                       settings: ProviderSettings | None = None) -> ProviderSettings:
    """The provider's arguments as plain data: accel:cluster's kubeconfig and context, then `settings`; a kubeconfig
    path's `~` expanded before any secret wraps it (a `secure:` path is still a path)."""
    from accel.components.provider_settings import ProviderSettings

    settings = settings or ProviderSettings()
    arguments: dict = {"kubeconfig": cluster.kubeconfig, "context": cluster.context, **settings.args}
    if isinstance(arguments["kubeconfig"], str):   # a path, or the file's contents (no leading ~ to expand)
        arguments["kubeconfig"] = os.path.expanduser(arguments["kubeconfig"])
    return ProviderSettings(args=arguments, secret=settings.secret)
