"""GpuNodePool: a GKE node pool of whole GPU machines (A3, A2, G2).

- Guest accelerators with GKE's managed driver installation, and the taint
  `nvidia.com/gpu=present:NoSchedule` so only pods that tolerate it land on GPU nodes.
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
from typing import Literal, Sequence

import pulumi
import pulumi_gcp as gcp

from accel.components.gcp._common import (
    CLOUD_PLATFORM_SCOPE,
    GcpArgsError,
    check_name,
    check_zone,
    child_opts,
    compute_labels,
    max_run_duration_args,
    node_pool_capacity_args,
    resolve_capacity,
)
from accel.components.gcp.cluster import GKE_NAME_LIMIT, ClusterRef, as_cluster_ref
from accel.components.gcp.network import ExtraNetworkRef
from accel.components.tags import CAPACITY_NODE_LABEL, ResourceTags
from accel.policies.gke_rules import compact_placement_problem
from accel.policies.plan import Capacity, GpuPool

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
# GKE compact placement holds at most this many nodes.
COMPACT_PLACEMENT_MAX_NODES = 150


@dataclass(frozen=True)
class GpuMachine:
    accelerator: str            # GKE/Compute accelerator type
    gpus: int
    local_ssds: int             # 375 GB local NVMe SSDs: bundled count, or the most that can attach
    bundled_ssd: bool           # True: the machine always comes with exactly `local_ssds`
    fabric: str = "none"        # GPUDirect fabric the machine supports
    boot_disk_type: str = "pd-balanced"


def _g2(gpus: int, ssds: int) -> GpuMachine:
    return GpuMachine("nvidia-l4", gpus, ssds, False)


# Compute Engine accelerator-optimized machine types (GPU machine types docs).
GPU_MACHINES: dict[str, GpuMachine] = {
    "a3-ultragpu-8g": GpuMachine("nvidia-h200-141gb", 8, 32, True, "rdma", "hyperdisk-balanced"),
    "a3-megagpu-8g": GpuMachine("nvidia-h100-mega-80gb", 8, 16, True, "gpudirect-tcpxo", "pd-ssd"),
    "a3-highgpu-8g": GpuMachine("nvidia-h100-80gb", 8, 16, True, "gpudirect-tcpx", "pd-ssd"),
    "a3-highgpu-4g": GpuMachine("nvidia-h100-80gb", 4, 8, True),
    "a3-highgpu-2g": GpuMachine("nvidia-h100-80gb", 2, 4, True),
    "a3-highgpu-1g": GpuMachine("nvidia-h100-80gb", 1, 2, True),
    "a2-ultragpu-8g": GpuMachine("nvidia-a100-80gb", 8, 8, True),
    "a2-ultragpu-4g": GpuMachine("nvidia-a100-80gb", 4, 4, True),
    "a2-ultragpu-2g": GpuMachine("nvidia-a100-80gb", 2, 2, True),
    "a2-ultragpu-1g": GpuMachine("nvidia-a100-80gb", 1, 1, True),
    "a2-megagpu-16g": GpuMachine("nvidia-tesla-a100", 16, 8, False),
    "a2-highgpu-8g": GpuMachine("nvidia-tesla-a100", 8, 8, False),
    "a2-highgpu-4g": GpuMachine("nvidia-tesla-a100", 4, 8, False),
    "a2-highgpu-2g": GpuMachine("nvidia-tesla-a100", 2, 8, False),
    "a2-highgpu-1g": GpuMachine("nvidia-tesla-a100", 1, 8, False),
    "g2-standard-4": _g2(1, 1),
    "g2-standard-8": _g2(1, 1),
    "g2-standard-12": _g2(1, 1),
    "g2-standard-16": _g2(1, 1),
    "g2-standard-24": _g2(2, 2),
    "g2-standard-32": _g2(1, 1),
    "g2-standard-48": _g2(4, 4),
    "g2-standard-96": _g2(8, 8),
}


def fabric_network_count(fabric: str, gpus_per_node: int) -> int:
    """Additional node networks a pool attaches: TCPX 4, TCPXO 8, RDMA one gVNIC + one per GPU NIC."""
    return {"none": 0, "gpudirect-tcpx": 4, "gpudirect-tcpxo": 8, "rdma": gpus_per_node + 1}[fabric]


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


def validate(args: GpuNodePoolArgs) -> GpuMachine:
    component = "GpuNodePool"
    pool = args.pool
    machine = GPU_MACHINES.get(pool.machine_type)
    if machine is None:
        raise GcpArgsError(component, "pool.machine_type", pool.machine_type,
                           f"not a Google Cloud GPU machine type this component knows; allowed: {', '.join(GPU_MACHINES)}")
    if pool.alternate_machine_types:
        raise GcpArgsError(component, "pool.alternate_machine_types", pool.alternate_machine_types,
                           "a GKE node pool has one machine type; alternates are for AWS spot diversification")
    if pool.guest_accelerator is not None and pool.guest_accelerator != machine.accelerator:
        raise GcpArgsError(component, "pool.guest_accelerator", pool.guest_accelerator,
                           f"{pool.machine_type} carries {machine.accelerator}")
    if pool.gpus_per_node != machine.gpus:
        raise GcpArgsError(component, "pool.gpus_per_node", pool.gpus_per_node,
                           f"{pool.machine_type} has {machine.gpus} GPU(s)")
    if pool.efa_interfaces or pool.fabric == "efa":
        raise GcpArgsError(component, "pool.fabric", pool.fabric, "EFA is AWS; not available on Google Cloud")
    if pool.fabric != "none" and pool.fabric != machine.fabric:
        supported = next((m for m, spec in GPU_MACHINES.items() if spec.fabric == pool.fabric), "none")
        raise GcpArgsError(component, "pool.fabric", pool.fabric,
                           f"{pool.machine_type} does not support {pool.fabric}; it needs {supported}")
    wanted_networks = fabric_network_count(pool.fabric, pool.gpus_per_node)
    if len(args.extra_networks) != wanted_networks:
        raise GcpArgsError(component, "extra_networks", f"{len(args.extra_networks)} network(s)",
                           f"fabric {pool.fabric!r} attaches exactly {wanted_networks}; "
                           "pass GcpNetwork.extra_networks built from the same GPU pool")
    if pool.local_ssd_count > machine.local_ssds:
        raise GcpArgsError(component, "pool.local_ssd_count", pool.local_ssd_count,
                           f"{pool.machine_type} takes at most {machine.local_ssds} local SSD(s)")
    if machine.bundled_ssd and pool.local_ssd_count not in (0, machine.local_ssds):
        raise GcpArgsError(component, "pool.local_ssd_count", pool.local_ssd_count,
                           f"{pool.machine_type} comes with exactly {machine.local_ssds} local SSDs (or 0 for that default)")
    if args.min_nodes < 0:
        raise GcpArgsError(component, "min_nodes", args.min_nodes, "cannot be negative")
    max_nodes = args.max_nodes if args.max_nodes is not None else pool.nodes
    if max_nodes < max(args.min_nodes, 1):
        raise GcpArgsError(component, "max_nodes", max_nodes, f"must be at least min_nodes ({args.min_nodes}) and 1")
    if pool.compact_placement and max_nodes > COMPACT_PLACEMENT_MAX_NODES:
        raise GcpArgsError(component, "pool.nodes", max_nodes,
                           f"a COMPACT placement holds at most {COMPACT_PLACEMENT_MAX_NODES} nodes; split the pool")
    if args.disk_size_gb < 10:
        raise GcpArgsError(component, "disk_size_gb", args.disk_size_gb, "at least 10 GB")
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
            raise GcpArgsError(component, "cluster.multi_networking", False,
                               "GPUDirect networks need a cluster with multi-networking and Dataplane V2; "
                               "build it with GkeClusterArgs(multi_networking=True) and pass GkeCluster.ref")
        mode = resolve_capacity(component, args.capacity)
        if args.pool.compact_placement:
            problem = compact_placement_problem(args.pool.machine_type, mode.provisioning)
            if problem:
                raise GcpArgsError(component, "pool.compact_placement", True,
                                   f"{problem}; plan the pool without compact placement or on other capacity")
        max_run_duration_args(component, args.max_run_duration, mode)  # validate before registering
        super().__init__("accel:gcp:GpuNodePool", name, None, opts)

        pool = args.pool
        max_nodes = args.max_nodes if args.max_nodes is not None else pool.nodes
        min_nodes = 0 if mode.scales_from_zero else args.min_nodes
        service_account = args.node_service_account or ref.node_service_account_email
        if ref.auto_upgrade and not ref.upgrades_paused:
            pulumi.log.warn(
                f"{name}: cluster channel {ref.release_channel} keeps node auto-upgrade on; pause upgrades for the "
                "run with GkeClusterArgs.upgrade_pause", resource=self)

        local_ssds = pool.local_ssd_count or (machine.local_ssds if machine.bundled_ssd else 0)
        node_config: dict = {
            "machine_type": pool.machine_type,
            "guest_accelerators": [{
                "type": machine.accelerator,
                "count": machine.gpus,
                "gpu_driver_installation_config": {"gpu_driver_version": args.driver_version},
            }],
            "taints": [dict(GPU_TAINT)],
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
        if pool.compact_placement:
            pool_args["placement_policy"] = {"type": "COMPACT"}
        if mode.provisioning == "queued":
            pool_args["queued_provisioning"] = {"enabled": True}
        if not mode.scales_from_zero:
            # Upgrades replace nodes one at a time without needing spare GPU capacity.
            pool_args["upgrade_settings"] = {"strategy": "SURGE", "max_surge": 0, "max_unavailable": 1}

        self.node_pool = gcp.container.NodePool(f"{name}-pool", **pool_args, opts=child_opts(self))
        self.node_pool_name = self.node_pool.name
        self.gpus_per_node = machine.gpus
        self.accelerator = machine.accelerator
        self.max_nodes = max_nodes
        self.node_selector = {GKE_ACCELERATOR_LABEL: machine.accelerator}
        self.toleration = {"key": GPU_TAINT["key"], "operator": "Equal", "value": GPU_TAINT["value"],
                           "effect": "NoSchedule"}
        self.register_outputs({
            "node_pool_name": self.node_pool_name,
            "node_selector": self.node_selector,
            "gpus_per_node": self.gpus_per_node,
        })
