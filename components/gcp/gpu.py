"""GpuNodePool: a GKE node pool of whole GPU machines (A3, A2, G2).

- Guest accelerators with GKE's managed driver installation, and the GPU taint (GKE's
  `present` value, NoSchedule) so only pods that tolerate it land on GPU nodes.
- Machine facts (GPUs, guest accelerator, local SSDs, fabric networks, boot disk type) and the
  compact placement limit come from the hardware facts table (accel.policies.hardware).
- Spot, reservation, flex-start or queued capacity (same rules as TPU pools); autoscaling
  from zero up to the plan's node count.
- COMPACT placement in one zone when the plan asks; the machine's local SSDs as ephemeral
  storage (dataset cache, checkpoint staging).
- GPUDirect on A3: one additional node network per GPU NIC (TCPX 4, TCPXO 8, A3 Ultra a
  gVNIC network plus one RDMA subnet per GPU), gVNIC on. The cluster must have been built
  with multi-networking (GkeClusterArgs.multi_networking).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

import pulumi
import pulumi_gcp as gcp

from accel.base.errors import invalid_arg
from accel.components.gcp._common import (
    CLOUD_PLATFORM_SCOPE,
    check_name,
    check_zone,
    child_opts,
    inherit_dependencies,
    compute_labels,
    max_run_duration_args,
    node_pool_capacity_args,
    resolve_capacity,
)
from accel.components.gcp.cluster import GKE_NAME_LIMIT, ClusterRef, as_cluster_ref
from accel.components.gcp.network import ExtraNetworkRef
from accel.policies.cloud.flex_start import gke_provisioning, placed_by_topology, queued_provisioning
from accel.components.tags import CAPACITY_NODE_LABEL, ResourceTags
from accel.policies import hardware
from accel.policies.cloud.gke_rules import compact_placement_problem
from accel.components.gcp.workload_policy import placement_args, workload_policy
from accel.policies.hardware import GcpGpuMachine
from accel.policies.plan import Capacity, GpuPool, Plan
from accel.policies.selection.pools import gpu_pool, pool_capacity



def gpu_taint() -> dict[str, str]:
    """GKE's GPU node taint (key from the hardware facts table; GKE's own value `present`)."""
    names = hardware.current().kubernetes
    return {"key": names.gpu_taint_key, "value": names.gke_gpu_taint_value, "effect": "NO_SCHEDULE"}


@dataclass(frozen=True)
class GpuNodePoolArgs:
    pool: GpuPool
    capacity: Capacity
    cluster: ClusterRef | pulumi.Input[str]      # GkeCluster.ref, or a cluster name plus `location`
    zone: str
    tags: ResourceTags
    location: str | None = None
    project: str | None = None
    extra_networks: Sequence[ExtraNetworkRef] = ()   # GcpNetwork.extra_networks, for GPUDirect fabrics
    node_service_account: pulumi.Input[str] | None = None
    driver_version: Literal["DEFAULT", "LATEST"] = "LATEST"
    min_nodes: int = 0
    max_nodes: int | None = None                 # default: the plan's node count
    disk_size_gb: int = 200
    disk_type: str | None = None                 # default: what the machine series supports
    max_run_duration: str | None = None          # e.g. "43200s": GKE deletes nodes this long after start

    @classmethod
    def from_gpus(cls, accelerator: str, gpus: int, *, cluster: ClusterRef | pulumi.Input[str], zone: str,
                  tags: ResourceTags, machine_type: str | None = None, provisioning: str = "on-demand",
                  reservation: str | None = None, **rest: Any) -> "GpuNodePoolArgs":
        """By hand: `gpus` GPUs of `accelerator` (e.g. h100-80gb, l4) in whole nodes; the machine type (unless
        given), GPUs per node, guest accelerator and local SSDs follow from the hardware table. No GPUDirect
        fabric: for one, plan the stack (`accel choose`) and build the pool with `for_plan`."""
        return cls(pool=gpu_pool(accelerator, gpus, cloud="gcp", machine_type=machine_type),
                   capacity=pool_capacity(provisioning, reservation, component="GpuNodePool"),
                   cluster=cluster, zone=zone, tags=tags, **rest)

    @classmethod
    def for_plan(cls, plan: Plan, *, tags: ResourceTags, cluster: ClusterRef, network: Any,
                 **overrides: Any) -> "GpuNodePoolArgs":
        """The GPU Plan's pool on a GkeCluster, on the GcpNetwork's fabric VPCs, in the plan's zone."""
        if plan.gpu is None:
            raise invalid_arg("GpuNodePool", "plan.family", plan.family, "a GPU node pool needs a GPU plan (plan.gpu)")
        values = {"pool": plan.gpu, "capacity": plan.capacity, "cluster": cluster, "zone": plan.zones[0],
                  "tags": tags, "extra_networks": network.extra_networks, **overrides}
        if "min_nodes" not in overrides and _topology_needs_nodes(values["pool"], values["capacity"]):
            # Kueue's topology-aware scheduling assigns domains from the nodes that exist and reaches the
            # autoscaler only through a ProvisioningRequest admission check (Kueue v0.14.1, the topology-aware
            # scheduling concept page, "ClusterAutoscaler support"; cloud-correctness finding 2). GKE
            # documents queued-provisioning.gke.io as its ProvisioningRequest class, which needs flex-start
            # capacity; for on-demand, spot and reserved pools under a Topology the nodes are created with the pool.
            values["min_nodes"] = values["pool"].nodes
        return cls(**values)

    def __post_init__(self) -> None:
        validate(self)  # the arguments check themselves on construction (one convention, every cloud)


def _topology_needs_nodes(pool: GpuPool, capacity: Capacity) -> bool:
    """A pool on a scale-out fabric is placed by a Kueue Topology (components/kubernetes/pools.py); unless its
    nodes come through ProvisioningRequests (queued provisioning, which a flex-start pool under a Topology is built
    with: policies/cloud/flex_start.py), its nodes must exist. A serving pool too: its flavor names the Topology as a
    training pool's does (GB200 serving across trays on A4X: stacks/Pulumi.llama-405b-serving-a4x.yaml), so Kueue
    would never admit its LeaderWorkerSet on nodes to come."""
    return placed_by_topology(pool.fabric) and not queued_provisioning(pool, capacity)


def validate(args: GpuNodePoolArgs) -> GcpGpuMachine:
    component = "GpuNodePool"
    pool = args.pool
    facts = hardware.current()
    machines = facts.gcp_gpu_machines
    machine = machines.get(pool.machine_type)
    if machine is None:
        raise invalid_arg(component, "pool.machine_type", pool.machine_type,
                           f"not a Google Cloud GPU machine type this component knows; allowed: {', '.join(machines)}")
    if pool.alternate_machine_types:
        raise invalid_arg(component, "pool.alternate_machine_types", pool.alternate_machine_types,
                           "a GKE node pool has one machine type; alternates are for AWS spot diversification")
    if pool.guest_accelerator is not None and pool.guest_accelerator != machine.accelerator:
        raise invalid_arg(component, "pool.guest_accelerator", pool.guest_accelerator,
                           f"{pool.machine_type} carries {machine.accelerator}")
    if pool.gpus_per_node != machine.gpus:
        raise invalid_arg(component, "pool.gpus_per_node", pool.gpus_per_node,
                           f"{pool.machine_type} has {machine.gpus} GPU(s)")
    if pool.efa_interfaces or pool.fabric == "efa":
        raise invalid_arg(component, "pool.fabric", pool.fabric, "EFA is AWS; not available on Google Cloud")
    if pool.fabric != "none" and pool.fabric != machine.fabric:
        supported = next((m for m, spec in machines.items() if spec.fabric == pool.fabric), "none")
        raise invalid_arg(component, "pool.fabric", pool.fabric,
                           f"{pool.machine_type} does not support {pool.fabric}; it needs {supported}")
    wanted_networks = facts.fabric_network_count(pool.fabric, pool.gpus_per_node)
    if len(args.extra_networks) != wanted_networks:
        raise invalid_arg(component, "extra_networks", f"{len(args.extra_networks)} network(s)",
                           f"fabric {pool.fabric!r} attaches exactly {wanted_networks}; "
                           "pass GcpNetwork.extra_networks built from the same GPU pool")
    if pool.local_ssd_count > machine.local_ssds:
        raise invalid_arg(component, "pool.local_ssd_count", pool.local_ssd_count,
                           f"{pool.machine_type} takes at most {machine.local_ssds} local SSD(s)")
    if machine.bundled_ssd and pool.local_ssd_count not in (0, machine.local_ssds):
        raise invalid_arg(component, "pool.local_ssd_count", pool.local_ssd_count,
                           f"{pool.machine_type} comes with exactly {machine.local_ssds} local SSDs (or 0 for that default)")
    if args.min_nodes < 0:
        raise invalid_arg(component, "min_nodes", args.min_nodes, "cannot be negative")
    max_nodes = args.max_nodes if args.max_nodes is not None else pool.nodes
    if max_nodes < max(args.min_nodes, 1):
        raise invalid_arg(component, "max_nodes", max_nodes, f"must be at least min_nodes ({args.min_nodes}) and 1")
    if pool.pools > 1:
        raise invalid_arg(component, "pool.nodes_per_pool", pool.nodes_per_pool,
                          f"the fleet is {pool.pools} node pools; build one GpuNodePool per GpuPool.split() "
                          "(TrainingCluster does)")
    compact_max = facts.limit("gke_compact_placement_max_nodes")
    if pool.compact_placement and max_nodes > compact_max:
        raise invalid_arg(component, "pool.nodes", max_nodes,
                           f"a COMPACT placement holds at most {compact_max} nodes; split the fleet "
                           "(Plan gpu.nodes_per_pool, docs/scale.md)")
    pool_max = facts.limit("gke_node_pool_max_nodes")
    if max_nodes > pool_max:
        raise invalid_arg(component, "pool.nodes", max_nodes,
                          f"a GKE node pool holds at most {pool_max} nodes per zone; split the fleet "
                          "(Plan gpu.nodes_per_pool, docs/scale.md)")
    if args.disk_size_gb < 10:
        raise invalid_arg(component, "disk_size_gb", args.disk_size_gb, "at least 10 GB")
    unit = facts.placement_units.get(pool.machine_type)
    if machine.accelerator_topology and unit is not None and unit.nodes and max_nodes % unit.nodes:
        raise invalid_arg(component, "pool.nodes", max_nodes,
                          f"{pool.machine_type} is placed in whole NVLink domains of {unit.nodes} nodes "
                          f"(workload policy {machine.accelerator_topology}; {unit.source}); use a multiple of {unit.nodes}")
    if pool.compact_placement and not machine.accelerator_topology:
        provisioning = resolve_capacity(component, args.capacity).provisioning
        built_as = gke_provisioning(provisioning, pool.fabric)
        problem = compact_placement_problem(pool.machine_type, built_as)
        if problem and built_as != provisioning:
            problem += ("; a flex-start pool on a scale-out fabric is placed by a Kueue Topology, so it is built with "
                        "queued provisioning (policies/cloud/flex_start.py)")
        if problem:
            raise invalid_arg(component, "pool.compact_placement", True,
                              f"{problem}; plan the pool without compact placement or on other capacity")
    return machine


class GpuNodePool(pulumi.ComponentResource):
    """One GKE node pool of GPU machines, tainted, autoscaled from zero, optionally on a GPUDirect fabric."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None):
        component = "GpuNodePool"
        check_name(component, name, longest_suffix="-pool", limit=GKE_NAME_LIMIT)
        machine = validate(args)
        ref = as_cluster_ref(component, args.cluster, args.location)
        check_zone(component, "zone", args.zone, within=ref.location)
        if args.extra_networks and not ref.multi_networking:
            raise invalid_arg(component, "cluster.multi_networking", False,
                               "GPUDirect networks need a cluster with multi-networking and Dataplane V2; "
                               "build it with GkeClusterArgs(multi_networking=True) and pass GkeCluster.ref")
        mode = resolve_capacity(component, args.capacity)
        max_run_duration_args(component, args.max_run_duration, mode)  # validate before registering
        super().__init__("accel:gcp:GpuNodePool", name, None, opts)
        inherit_dependencies(self, opts)

        pool = args.pool
        max_nodes = args.max_nodes if args.max_nodes is not None else pool.nodes
        min_nodes = 0 if mode.scales_from_zero else args.min_nodes
        service_account = args.node_service_account or ref.node_service_account_email
        # A GkeCluster judged its own pools' upgrade risk once (ClusterRef.upgrades_judged); a cluster named by hand
        # leaves it to each pool.
        if ref.auto_upgrade and not ref.upgrades_paused and not ref.upgrades_judged:
            pulumi.log.warn(
                f"{name}: cluster channel {ref.release_channel} keeps node auto-upgrade on; pause upgrades for the "
                "run with GkeClusterArgs.upgrade_pause", resource=self)

        taint = gpu_taint()
        local_ssds = pool.local_ssd_count or (machine.local_ssds if machine.bundled_ssd else 0)
        node_config: dict = {
            "machine_type": pool.machine_type,
            "guest_accelerators": [{
                "type": machine.accelerator,
                "count": machine.gpus,
                "gpu_driver_installation_config": {"gpu_driver_version": args.driver_version},
            }],
            "taints": [taint],
            **node_pool_capacity_args(mode),
            **max_run_duration_args("GpuNodePool", args.max_run_duration, mode),
            "image_type": "COS_CONTAINERD",
            "disk_type": args.disk_type or machine.boot_disk_type,
            "disk_size_gb": args.disk_size_gb,
            "gvnic": {"enabled": True},
            "oauth_scopes": [CLOUD_PLATFORM_SCOPE],
            "workload_metadata_config": {"mode": "GKE_METADATA"},
            "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True},
            "labels": {**args.tags.kubernetes_labels(), "accel.dev/pool": name,
                       CAPACITY_NODE_LABEL: mode.provisioning},
            "resource_labels": compute_labels(args.tags, mode, pool=name),
        }
        if local_ssds:
            node_config["ephemeral_storage_local_ssd_config"] = {"local_ssd_count": local_ssds}
        if service_account is not None:
            node_config["service_account"] = service_account

        network_config: dict = {"enable_private_nodes": True}
        if args.extra_networks:
            network_config["additional_node_network_configs"] = [
                {"network": ref_.network, "subnetwork": ref_.subnetwork} for ref_ in args.extra_networks
            ]

        pool_args: dict = dict(
            cluster=ref.name,
            location=ref.location,
            node_locations=[args.zone],
            initial_node_count=min_nodes,
            autoscaling={
                "total_min_node_count": min_nodes,
                "total_max_node_count": max_nodes,
                # Spot and DWS capacity: take machines wherever they are free.
                "location_policy": "ANY" if (mode.spot or mode.scales_from_zero) else "BALANCED",
            },
            management={"auto_repair": not mode.scales_from_zero, "auto_upgrade": ref.auto_upgrade},
            network_config=network_config,
            node_config=node_config,
        )
        if args.project:
            pool_args["project"] = args.project
        # A4X: every NVL72 rack of the pool is placed by a workload policy of the machine's topology (1x72).
        self.workload_policy = (workload_policy(f"{name}-placement", zone=args.zone,
                                                accelerator_topology=machine.accelerator_topology,
                                                project=args.project, opts=child_opts(self))
                                if machine.accelerator_topology else None)
        if self.workload_policy is not None:
            pool_args["placement_policy"] = placement_args(component, f"{name}-placement",
                                                           machine.accelerator_topology)
        elif pool.compact_placement:
            pool_args["placement_policy"] = {"type": "COMPACT"}
        if queued_provisioning(pool, args.capacity):
            pool_args["queued_provisioning"] = {"enabled": True}
        if not mode.scales_from_zero:
            # Upgrades replace nodes one at a time without needing spare GPU capacity.
            pool_args["upgrade_settings"] = {"strategy": "SURGE", "max_surge": 0, "max_unavailable": 1}

        self.node_pool = gcp.container.NodePool(f"{name}-pool", **pool_args, opts=child_opts(
            self, depends_on=[self.workload_policy] if self.workload_policy is not None else []))
        self.node_pool_name = self.node_pool.name
        self.gpus_per_node = machine.gpus
        self.accelerator = machine.accelerator
        self.max_nodes = max_nodes
        self.node_selector = {hardware.current().kubernetes.gke_accelerator_label: machine.accelerator}
        self.toleration = {"key": taint["key"], "operator": "Equal", "value": taint["value"],
                           "effect": "NoSchedule"}
        self.register_outputs({
            "node_pool_name": self.node_pool_name,
            "node_selector": self.node_selector,
            "gpus_per_node": self.gpus_per_node,
        })
