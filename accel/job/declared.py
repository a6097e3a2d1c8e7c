"""The cluster a stack's program declares, read from the mock-engine capture: node pools (labels,
taints, machine types, counts) and the Kueue objects. Not from the Plan: this is what `pulumi up`
would create, so a job checked against it is checked against the real thing.

Labels and taints the platform adds itself are added here, as the platform would:
- GKE: node.kubernetes.io/instance-type, cloud.google.com/gke-nodepool, gke-spot on spot pools,
  gke-accelerator for guest GPUs, gke-tpu-accelerator/gke-tpu-topology on TPU pools, and the
  nvidia.com/gpu / google.com/tpu NoSchedule taints on accelerator pools (GKE "About GPUs in GKE",
  "Plan TPUs in GKE").
- EKS: node.kubernetes.io/instance-type (one type, or the launch template's when the group names none,
  as capacity-block groups do: the kubelet labels every node with its type) and
  eks.amazonaws.com/capacityType.
Existing clusters declare no nodes; their stack's inventory (accel:cluster) is the node source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache

from accel.components.kubernetes.accelerator_stack import EFA_RESOURCE, GPU_RESOURCE, TPU_RESOURCE
from accel.components.kubernetes.pools import (
    EKS_CAPACITY_TYPE_LABEL,
    GKE_GPU_ACCELERATOR_LABEL,
    GKE_SPOT_LABEL,
    GKE_TPU_TOPOLOGY_LABEL,
    INSTANCE_TYPE_LABEL,
    ExistingCluster,
    inventory_pools,
)
from accel.components.kubernetes.accelerator_stack import GKE_TPU_ACCELERATOR_LABEL
from accel.mock_engine import Capture, CapturedResource
from accel.policies import hardware
from accel.policies.hardware import shapes

from accel.job.architectures import ARCH_LABEL, node_arch, normalized
from accel.job.facts import allocatable, machine_shape
from accel.job.quantities import parse_quantity

GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ASG_SCHEDULE = "aws:autoscaling/schedule:Schedule"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
KUEUE = "kubernetes:kueue.x-k8s.io/v1beta1:"
GKE_NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
EFA_INTERFACE_TYPES = ("efa", "efa-only")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str | None
    effect: str


@dataclass
class NodePool:
    name: str
    machine_type: str | None
    nodes: int
    labels: dict[str, str]
    taints: list[Taint]
    allocatable: dict[str, Fraction]  # per node; cpu/memory absent when the machine is unknown
    tpu_topology: str | None = None
    min_nodes: int | None = None   # nodes that exist without a scale-up (None: all of them, `nodes`)
    arch: str | None = None        # kubernetes.io/arch of its nodes (amd64 | arm64), None when unknown
    accelerator: str | None = None          # the chip of its nodes (hardware table id), None for a system pool
    nvlink_domain_gpus: int | None = None   # the NVLink domain an inventory states (None: the hardware table's)

    @property
    def standing_nodes(self) -> int:
        return self.nodes if self.min_nodes is None else self.min_nodes

    @property
    def is_tpu_slice(self) -> bool:
        return self.tpu_topology is not None


@dataclass
class Flavor:
    name: str
    node_labels: dict[str, str]
    tolerations: list[dict]
    topology_name: str | None = None       # spec.topologyName: the Kueue Topology it schedules over


@dataclass
class ClusterQueue:
    name: str
    namespaces: dict[str, str]             # namespaceSelector.matchLabels
    covered: list[str]
    quotas: dict[str, dict[str, Fraction]]  # flavor -> resource -> nominal quota
    admission_checks: dict[str, list[str] | None] = field(default_factory=dict)  # check -> onFlavors (None: all)

    def admission_checks_for(self, flavor: str) -> list[str]:
        return [name for name, flavors in self.admission_checks.items() if flavors is None or flavor in flavors]


@dataclass
class DeclaredCluster:
    pools: list[NodePool] = field(default_factory=list)
    flavors: dict[str, Flavor] = field(default_factory=dict)
    topologies: dict[str, list[str]] = field(default_factory=dict)  # Kueue Topology -> levels, broadest first
    cluster_queues: dict[str, ClusterQueue] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], str] = field(default_factory=dict)  # (namespace, name) -> ClusterQueue
    priority_classes: set[str] = field(default_factory=set)
    service_accounts: set[tuple[str, str]] = field(default_factory=set)
    namespaces: set[str] = field(default_factory=set)
    gke_networks: set[str] = field(default_factory=set)
    gcsfuse: bool = False
    notes: list[str] = field(default_factory=list)
    releases: dict[str, dict] = field(default_factory=dict)      # Helm release name -> its inputs
    preinstalled: set[str] = field(default_factory=set)          # controllers the cluster itself runs
    admission_checks: dict[str, str] = field(default_factory=dict)  # AdmissionCheck -> controllerName
    objects: list[dict] = field(default_factory=list)            # the stack's Kubernetes objects, as written


@cache
def _chips_per_machine() -> dict[str, int]:
    """Chips per node of every catalog machine type (the catalog's offerings hold them), and of every TPU machine
    type of the hardware table (a single-host slice runs on one the catalog does not list: ct6e-standard-8t)."""
    from accel.policies import hardware
    from accel.policies.catalog import load_catalog

    tpu_hosts = {name: machine.chips for name, machine in hardware.current().tpu_machines.items()}
    return {**tpu_hosts, **{o.machine_type: o.chips_per_host for o in load_catalog().offerings}}


def _tpu_generation(machine_type: str):
    for generation in shapes.GENERATIONS.values():
        if machine_type == generation.multi_host_machine_type or \
                machine_type in generation.single_host_machine_types.values():
            return generation
    return None


def _node_allocatable(machine_type: str | None) -> dict[str, Fraction]:
    shape = machine_shape(machine_type) if machine_type else None
    if shape is None:
        return {}
    cpu, memory = allocatable(shape)
    return {"cpu": Fraction(cpu, 1000), "memory": Fraction(memory)}


def _metadata_name(resource: CapturedResource) -> str:
    return (resource.inputs.get("metadata") or {}).get("name") or resource.name


def _gke_pool(resource: CapturedResource) -> NodePool:
    inputs = resource.inputs
    config = inputs.get("nodeConfig") or {}
    machine = config.get("machineType")
    labels = {str(k): str(v) for k, v in (config.get("labels") or {}).items()}
    labels[INSTANCE_TYPE_LABEL] = machine or ""
    labels[GKE_NODEPOOL_LABEL] = inputs.get("name") or resource.name
    if config.get("spot") or config.get("preemptible"):
        labels[GKE_SPOT_LABEL] = "true"
    taints = [Taint(t["key"], t.get("value"), EFFECTS.get(t.get("effect"), t.get("effect")))
              for t in config.get("taints") or []]
    alloc = _node_allocatable(machine)
    topology = None
    guests = config.get("guestAccelerators") or []
    generation = _tpu_generation(machine or "")
    if guests:
        labels[GKE_GPU_ACCELERATOR_LABEL] = guests[0].get("type", "")
        alloc[GPU_RESOURCE] = Fraction(sum(int(g.get("count", 0)) for g in guests))
        taints.append(Taint(GPU_RESOURCE, "present", "NoSchedule"))
    elif generation is not None:
        topology = (inputs.get("placementPolicy") or {}).get("tpuTopology")
        labels[GKE_TPU_ACCELERATOR_LABEL] = generation.gke_accelerator
        # A single-host slice pool has no placement policy; GKE labels its nodes with the topology its machine
        # type is (ct6e-standard-8t: 2x4), as the pods of GKE's single-host TPU examples select on.
        single_host = {machine_type: shape for shape, machine_type in generation.single_host_machine_types.items()}
        label = topology or single_host.get(machine or "")
        if label:
            labels[GKE_TPU_TOPOLOGY_LABEL] = label
        alloc[TPU_RESOURCE] = Fraction(_chips_per_machine().get(machine, 4))
        taints.append(Taint(TPU_RESOURCE, "present", "NoSchedule"))
    autoscaling = inputs.get("autoscaling") or {}
    zones = len(inputs.get("nodeLocations") or []) or 1
    nodes = (inputs.get("nodeCount") or autoscaling.get("totalMaxNodeCount")
             or (autoscaling.get("maxNodeCount") or 0) * zones or inputs.get("initialNodeCount") or 0)
    # Nodes the pool has before any scale-up: a fixed count, else the initial or minimum count.
    standing = inputs.get("nodeCount")
    if standing is None and autoscaling:
        standing = max(int(inputs.get("initialNodeCount") or 0) * zones,
                       int(autoscaling.get("totalMinNodeCount") or 0),
                       int(autoscaling.get("minNodeCount") or 0) * zones)
    return NodePool(resource.name, machine, int(nodes), labels, _unique(taints), alloc, topology,
                    None if standing is None else int(standing), node_arch(machine, None), _chip(machine))


def _chip(machine_type: str | None) -> str | None:
    """The chip a machine type of the hardware table carries (None for a system machine type)."""
    chip = hardware.current().chip_of_machine(machine_type) if machine_type else None
    return chip.id if chip is not None else None


def _unique(taints: list[Taint]) -> list[Taint]:
    seen: dict[tuple[str, str], Taint] = {}
    for taint in taints:
        seen.setdefault((taint.key, taint.effect), taint)
    return list(seen.values())


def _eks_pool(resource: CapturedResource, capture: Capture) -> NodePool:
    inputs = resource.inputs
    # The node group's launch template is its sibling (same parent component).
    siblings = [r for r in capture.of_type(LAUNCH_TEMPLATE) if r.parent == resource.parent]
    types = inputs.get("instanceTypes") or []
    if not types:  # a capacity-block group names no type: its launch template does
        types = [t.inputs["instanceType"] for t in siblings if t.inputs.get("instanceType")][:1]
    machine = types[0] if types else None
    labels = {str(k): str(v) for k, v in (inputs.get("labels") or {}).items()}
    if len(types) == 1:
        labels[INSTANCE_TYPE_LABEL] = types[0]
    labels[EKS_CAPACITY_TYPE_LABEL] = inputs.get("capacityType") or "ON_DEMAND"
    taints = [Taint(t["key"], t.get("value"), EFFECTS.get(t.get("effect"), t.get("effect")))
              for t in inputs.get("taints") or []]
    alloc = _node_allocatable(machine)
    chips = _chips_per_machine().get(machine or "")
    if chips:  # a catalog machine: an accelerator node (system node types are not in the catalog)
        alloc[GPU_RESOURCE] = Fraction(chips)
    efa = sum(1 for t in siblings for nic in t.inputs.get("networkInterfaces") or []
              if nic.get("interfaceType") in EFA_INTERFACE_TYPES)
    if efa:
        alloc[EFA_RESOURCE] = Fraction(efa)
    scaling = inputs.get("scalingConfig") or {}
    nodes = scaling.get("maxSize") or 0
    # Nodes the group holds: its desired size, or what its scheduled scale-out (a capacity block's start) sets.
    scheduled = [int(s.inputs.get("desiredCapacity") or 0) for s in capture.of_type(ASG_SCHEDULE)
                 if s.parent == resource.parent]
    standing = max([int(scaling.get("desiredSize") or 0), *scheduled])
    return NodePool(resource.name, machine, int(nodes), labels, taints, alloc, min_nodes=standing,
                    arch=node_arch(machine, None), accelerator=_chip(machine))


def _inventory(existing: ExistingCluster) -> list[NodePool]:
    pools = []
    for entry, pool in zip(existing.inventory, inventory_pools(existing)):
        per_node = entry.gpus_per_node or hardware.current().inventory_chips_per_node(entry.accelerator)
        taints = [Taint(t.key, t.value, t.effect) for t in entry.tolerations]
        # The nodes' architecture: what the inventory says of its own nodes (a label it selects, a taint it tolerates),
        # else its chip's (GB200 nodes are Grace, Arm). The chip's is read off the cloud machine types that carry it,
        # and an on-prem chip can sit in either kind of host (H100 PCIe cards in an Arm server).
        said = [pool.node_labels.get(ARCH_LABEL)] + [t.value for t in entry.tolerations if t.key == ARCH_LABEL]
        arch = next((normalized(a) for a in said if normalized(a)), None) or node_arch(None, entry.accelerator)
        pools.append(NodePool(f"inventory:{pool.name}", None, entry.chips // per_node, dict(pool.node_labels),
                              taints, {pool.resource: Fraction(per_node)}, entry.topology, arch=arch,
                              accelerator=entry.accelerator, nvlink_domain_gpus=entry.nvlink_domain_gpus))
    return pools


def declared_cluster(capture: Capture, existing: ExistingCluster | None = None) -> DeclaredCluster:
    cluster = DeclaredCluster()
    for resource in capture.resources:
        kind, inputs = resource.type, resource.inputs
        metadata = inputs.get("metadata") or {}
        if kind == GKE_NODE_POOL:
            cluster.pools.append(_gke_pool(resource))
        elif kind == EKS_NODE_GROUP:
            cluster.pools.append(_eks_pool(resource, capture))
        elif kind == GKE_CLUSTER:
            addons = inputs.get("addonsConfig") or {}
            cluster.gcsfuse = bool((addons.get("gcsFuseCsiDriverConfig") or {}).get("enabled"))
            # GKE serves networking.gke.io Network / GKENetworkParamSet only with multi-networking on
            # Dataplane V2 (GKE "Set up multi-network support for Pods", requirements).
            if inputs.get("enableMultiNetworking") and inputs.get("datapathProvider") == "ADVANCED_DATAPATH":
                cluster.preinstalled.add("gke-multi-networking")
        elif kind == KUEUE + "ResourceFlavor":
            spec = inputs.get("spec") or {}
            cluster.flavors[_metadata_name(resource)] = Flavor(
                _metadata_name(resource), dict(spec.get("nodeLabels") or {}), list(spec.get("tolerations") or []),
                spec.get("topologyName"))
        elif kind == KUEUE + "Topology":
            levels = (inputs.get("spec") or {}).get("levels") or []
            cluster.topologies[_metadata_name(resource)] = [str(level.get("nodeLabel")) for level in levels]
        elif kind == KUEUE + "ClusterQueue":
            spec = inputs.get("spec") or {}
            quotas: dict[str, dict[str, Fraction]] = {}
            covered: list[str] = []
            for group in spec.get("resourceGroups") or []:
                covered += group.get("coveredResources") or []
                for flavor in group.get("flavors") or []:
                    quotas[flavor["name"]] = {r["name"]: parse_quantity(r["nominalQuota"])
                                              for r in flavor.get("resources") or []}
            selector = (spec.get("namespaceSelector") or {}).get("matchLabels") or {}
            checks: dict[str, list[str] | None] = {str(c): None for c in spec.get("admissionChecks") or []}
            for entry in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []:
                checks[str(entry.get("name"))] = list(entry.get("onFlavors") or []) or None
            cluster.cluster_queues[_metadata_name(resource)] = ClusterQueue(
                _metadata_name(resource), dict(selector), covered, quotas, checks)
        elif kind == KUEUE + "AdmissionCheck":
            cluster.admission_checks[_metadata_name(resource)] = str((inputs.get("spec") or {}).get("controllerName"))
        elif kind == HELM_RELEASE:
            cluster.releases[str(inputs.get("name") or resource.name)] = dict(inputs)
        elif kind == KUEUE + "LocalQueue":
            cluster.local_queues[(metadata.get("namespace"), _metadata_name(resource))] = \
                (inputs.get("spec") or {}).get("clusterQueue")
        elif kind == "kubernetes:scheduling.k8s.io/v1:PriorityClass":
            cluster.priority_classes.add(_metadata_name(resource))
        elif kind == "kubernetes:core/v1:ServiceAccount":
            cluster.service_accounts.add((metadata.get("namespace"), _metadata_name(resource)))
        elif kind == "kubernetes:core/v1:Namespace":
            cluster.namespaces.add(_metadata_name(resource))
        elif kind == "kubernetes:networking.gke.io/v1:Network":
            cluster.gke_networks.add(_metadata_name(resource))
        if kind.startswith("kubernetes:") and "kind" in inputs and "apiVersion" in inputs:
            cluster.objects.append(dict(inputs))
    if existing is not None:
        cluster.preinstalled |= {name for name, flag in (("kueue", existing.install_kueue),
                                                         ("jobset", existing.install_jobset)) if not flag}
        cluster.pools += _inventory(existing)
        cluster.notes.append(f"nodes of {existing.name}: the stack's declared inventory (accel:cluster); "
                             "their CPU and memory are not declared, so only chips are checked")
    return cluster
