"""TPU slices: GKE node pools (TpuSlice) or bare TPU VMs (TpuVmSlice).

TpuSlice declares one GKE node pool per slice; multislice is N identical pools that JobSet
schedules together. A multi-host pool is one COMPACT placement with the slice's
`tpu_topology` in one zone, and its node count is fixed by the topology (chips / chips per
VM): GKE builds the whole slice or none of it. GKE itself sets the node labels
`cloud.google.com/gke-tpu-accelerator` and `cloud.google.com/gke-tpu-topology` and the
`google.com/tpu` taint; this component adds the stack's labels.

TpuVmSlice declares TPU VMs without GKE: one `tpu.V2Vm` per slice (on-demand, spot or
reserved), or one `tpu.V2QueuedResource` holding every slice when the plan queues for
capacity, so all slices arrive together.

Arguments are checked against GKE's rules (topology valid for the generation, machine type
and node count that topology implies, one zone, spot never with flex-start or queued
provisioning, no flex-start or queued provisioning for TPU v4, flex-start nodes bounded to
seven days) before anything is registered. Queued pools also set `flex_start`: GKE's queued
provisioning runs on flex-start VMs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp
from pydantic import ValidationError

from accel.base.errors import ComponentArgsError, invalid_arg
from accel.base.model import describe_validation_error, revalidated
from accel.components.gcp._common import (
    CLOUD_PLATFORM_SCOPE,
    CapacityMode,
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
from accel.components.gcp.workload_policy import placement_args, workload_policy
from accel.policies.cloud.flex_start import queued_provisioning
from accel.components.tags import CAPACITY_NODE_LABEL, ResourceTags
from accel.policies import hardware
from accel.policies.hardware import shapes
from accel.policies.selection.pools import MAX_SLICES, pool_capacity, tpu_pool
from accel.policies.plan import Capacity, Plan, TpuPool


def check_tpu_pool(component: str, pool: TpuPool) -> shapes.TpuGeneration:
    """The pool must be exactly what policies/hardware/shapes derives from its generation and topology."""
    try:
        gen = shapes.generation(pool.generation)
        shapes.check_topology(gen.name, pool.topology)
    except shapes.ShapeError as error:
        raise invalid_arg(component, "pool.topology", pool.topology, str(error)) from None
    expected = {
        "machine_type": shapes.machine_type(gen.name, pool.topology),
        "chips_per_slice": shapes.topology_chips(pool.topology),
        "chips_per_host": shapes.chips_per_host(gen.name, pool.topology),
        "hosts_per_slice": shapes.hosts_per_slice(gen.name, pool.topology),
        "gke_accelerator": gen.gke_accelerator,
    }
    for field, want in expected.items():
        got = getattr(pool, field)
        if got != want:
            raise invalid_arg(component, f"pool.{field}", got,
                               f"TPU {gen.name} topology {pool.topology} needs {field} {want!r}")
    if not 1 <= pool.slices <= MAX_SLICES:
        raise invalid_arg(component, "pool.slices", pool.slices, f"allowed: 1..{MAX_SLICES}")
    # Every other rule of a TpuPool (the runtime version's pattern, the types and bounds of its fields),
    # for a pool built without validation (make_plan's, policies/selection/pools.planned_tpu_pool).
    try:
        revalidated(pool)
    except ValidationError as error:
        raise ComponentArgsError(describe_validation_error(error, component, TpuPool, ("pool",))) from None
    return gen


@dataclass(frozen=True)
class TpuSliceArgs:
    pool: TpuPool
    capacity: Capacity
    cluster: ClusterRef | pulumi.Input[str]   # GkeCluster.ref, or a cluster name plus `location`
    zone: str                                 # COMPACT placement: the one zone every slice lives in
    tags: ResourceTags
    location: str | None = None               # the cluster's location when `cluster` is a name
    project: str | None = None
    node_service_account: pulumi.Input[str] | None = None   # default: the cluster's node account
    disk_size_gb: int | None = None
    max_run_duration: str | None = None       # e.g. "43200s": GKE deletes nodes this long after start

    @classmethod
    def from_shape(cls, generation: str, topology: str, slices: int = 1, *, cluster: ClusterRef | pulumi.Input[str],
                   zone: str, tags: ResourceTags, provisioning: str = "on-demand", reservation: str | None = None,
                   **rest: Any) -> "TpuSliceArgs":
        """By hand: `slices` slices of a generation (v4, v5p, v5e, v6e) in a topology (e.g. 2x2x4); the
        machine type, hosts, chips per host and GKE labels follow from the hardware table."""
        return cls(pool=tpu_pool(generation, topology, slices),
                   capacity=pool_capacity(provisioning, reservation, component="TpuSlice"), cluster=cluster, zone=zone, tags=tags, **rest)

    @classmethod
    def for_plan(cls, plan: Plan, *, tags: ResourceTags, cluster: ClusterRef, **overrides: Any) -> "TpuSliceArgs":
        """The TPU Plan's slices on a GkeCluster, COMPACT in the plan's zone."""
        if plan.tpu is None:
            raise invalid_arg("TpuSlice", "plan.family", plan.family, "TPU slices need a TPU plan (plan.tpu)")
        return cls(**{"pool": plan.tpu, "capacity": plan.capacity, "cluster": cluster, "zone": plan.zones[0],
                      "tags": tags, **overrides})

    def __post_init__(self) -> None:
        self.capacity_mode()  # the arguments check themselves on construction (one convention, every cloud)

    def capacity_mode(self) -> CapacityMode:
        """Check everything that does not need the component's name or the cluster; the capacity mode."""
        component = "TpuSlice"
        gen = check_tpu_pool(component, self.pool)
        mode = resolve_capacity(component, self.capacity)
        if mode.scales_from_zero and not gen.flex_start:
            # GKE flex-start, which queued provisioning also runs on: the table says which generations have it.
            flexible = [f"TPU {g.name}" for g in hardware.current().tpu_generations.values() if g.flex_start]
            raise invalid_arg(component, "capacity.provisioning", mode.provisioning,
                              f"GKE flex-start (also behind queued provisioning) does not support TPU {gen.name}; "
                              f"use on-demand, spot or a reservation, or {', '.join(flexible)}")
        if self.disk_size_gb is not None and self.disk_size_gb < 10:
            raise invalid_arg(component, "disk_size_gb", self.disk_size_gb, "at least 10 GB")
        max_run_duration_args(component, self.max_run_duration, mode)
        return mode


class TpuSlice(pulumi.ComponentResource):
    """N identical TPU slices on GKE: one node pool per slice."""

    def __init__(self, name: str, args: TpuSliceArgs, opts: pulumi.ResourceOptions | None = None):
        component = "TpuSlice"
        pool = args.pool
        check_name(component, name, longest_suffix=f"-s{pool.slices - 1}", limit=GKE_NAME_LIMIT)
        mode = args.capacity_mode()
        ref = as_cluster_ref(component, args.cluster, args.location)
        check_zone(component, "zone", args.zone, within=ref.location)
        super().__init__("accel:gcp:TpuSlice", name, None, opts)
        inherit_dependencies(self, opts)

        # A GkeCluster judged its own pools' upgrade risk once (ClusterRef.upgrades_judged); a cluster named by hand
        # leaves it to each pool.
        if ref.auto_upgrade and not ref.upgrades_paused and not ref.upgrades_judged:
            pulumi.log.warn(
                f"{name}: cluster channel {ref.release_channel} keeps node auto-upgrade on; pause upgrades for the "
                "run with GkeClusterArgs.upgrade_pause so GKE does not recreate the slice while it runs",
                resource=self,
            )

        service_account = args.node_service_account or ref.node_service_account_email
        # TPU7x: a multi-host slice is placed by a workload policy of its topology, one shared by every slice
        # (xpk reuses one per topology); the single-host shapes need none (xpk: vms_per_slice > 1).
        gen = shapes.generation(pool.generation)
        self.workload_policy = (workload_policy(f"{name}-placement", zone=args.zone, accelerator_topology=pool.topology,
                                                project=args.project, opts=child_opts(self))
                                if gen.placement == "workload-policy" and pool.hosts_per_slice > 1 else None)
        self.node_pools = [
            self._slice_pool(name, i, args, ref, mode, service_account) for i in range(pool.slices)
        ]
        self.node_pool_names = [p.name for p in self.node_pools]
        self.slices = pool.slices
        self.hosts_per_slice = pool.hosts_per_slice
        self.total_hosts = pool.hosts_per_slice * pool.slices
        self.chips_per_host = pool.chips_per_host
        names = hardware.current().kubernetes
        self.node_selector = {names.gke_tpu_accelerator_label: pool.gke_accelerator,
                              names.gke_tpu_topology_label: pool.topology}
        self.register_outputs({
            "node_pool_names": self.node_pool_names,
            "node_selector": self.node_selector,
            "hosts_per_slice": self.hosts_per_slice,
            "chips_per_host": self.chips_per_host,
        })

    def _slice_pool(self, name: str, index: int, args: TpuSliceArgs, ref: ClusterRef,
                    mode: CapacityMode, service_account) -> gcp.container.NodePool:
        pool = args.pool
        node_config: dict = {
            "machine_type": pool.machine_type,
            **node_pool_capacity_args(mode),
            **max_run_duration_args("TpuSlice", args.max_run_duration, mode),
            "image_type": "COS_CONTAINERD",
            "oauth_scopes": [CLOUD_PLATFORM_SCOPE],
            "workload_metadata_config": {"mode": "GKE_METADATA"},
            "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True},
            "labels": {**args.tags.kubernetes_labels(), "accel.dev/slice": str(index),
                       CAPACITY_NODE_LABEL: mode.provisioning},
            "resource_labels": compute_labels(args.tags, mode, **{"tpu-slice": str(index),
                                                                   "tpu-topology": pool.topology}),
        }
        if service_account is not None:
            node_config["service_account"] = service_account
        if args.disk_size_gb is not None:
            node_config["disk_size_gb"] = args.disk_size_gb

        pool_args: dict = dict(
            cluster=ref.name,
            location=ref.location,
            node_locations=[args.zone],
            node_config=node_config,
            network_config={"enable_private_nodes": True},
            # Repair replaces a broken host (the whole slice restarts either way); upgrades wait
            # for the maintenance exclusion, or are off on a cluster without a channel.
            management={"auto_repair": not mode.scales_from_zero, "auto_upgrade": ref.auto_upgrade},
        )
        if args.project:
            pool_args["project"] = args.project
        if self.workload_policy is not None:
            pool_args["placement_policy"] = placement_args("TpuSlice", f"{name}-placement", pool.topology, pool.topology)
        elif pool.hosts_per_slice > 1:
            pool_args["placement_policy"] = {"type": "COMPACT", "tpu_topology": pool.topology}
        if mode.scales_from_zero:
            # Dynamic Workload Scheduler: the pool is empty until a workload asks, then all-or-nothing.
            pool_args["initial_node_count"] = 0
            # Per-zone min/max (the pool has one zone): Cluster Toolkit's gke-node-pool does the same "to
            # workaround a Terraform provider bug when using TPU Flex Start" with the total_* fields.
            pool_args["autoscaling"] = {"min_node_count": 0,
                                        "max_node_count": pool.hosts_per_slice,
                                        "location_policy": "ANY"}
            if queued_provisioning(pool, args.capacity):   # a `queued` plan (a slice is never placed by a Topology)
                pool_args["queued_provisioning"] = {"enabled": True}
        else:
            pool_args["node_count"] = pool.hosts_per_slice
        return gcp.container.NodePool(f"{name}-s{index}", **pool_args, opts=child_opts(
            self, depends_on=[self.workload_policy] if self.workload_policy is not None else []))


@dataclass(frozen=True)
class TpuVmSliceArgs:
    pool: TpuPool
    capacity: Capacity
    zone: str
    network: pulumi.Input[str]
    subnetwork: pulumi.Input[str]
    tags: ResourceTags
    project: str | None = None                 # required for queued provisioning (the parent path)
    service_account_email: pulumi.Input[str] | None = None
    runtime_version: str | None = None         # default: the plan's runtime for the generation

    def __post_init__(self) -> None:
        self.capacity_mode()  # the arguments check themselves on construction (one convention, every cloud)

    def capacity_mode(self) -> CapacityMode:
        """Check everything that does not need the component's name; the capacity mode."""
        component, pool = "TpuVmSlice", self.pool
        gen = check_tpu_pool(component, pool)
        if not gen.tpu_vm_api:
            raise invalid_arg(component, "pool.generation", gen.name,
                              f"TPU {gen.name} has no Cloud TPU VM accelerator type in the hardware table; "
                              "build it as GKE node pools (TpuSlice)")
        expected_type = shapes.tpu_vm_type(gen.name, pool.chips_per_slice)
        if pool.tpu_vm_type != expected_type:
            raise invalid_arg(component, "pool.tpu_vm_type", pool.tpu_vm_type,
                              f"a {pool.chips_per_slice}-chip {gen.name} slice is {expected_type!r} "
                              f"({gen.type_prefix}-N counts {'TensorCores' if gen.cores_per_chip > 1 else 'chips'})")
        check_zone(component, "zone", self.zone)
        mode = resolve_capacity(component, self.capacity)
        if mode.provisioning == "flex-start":
            raise invalid_arg(component, "capacity.provisioning", "flex-start",
                              "TPU VMs cannot request flex-start here; use the GKE TpuSlice, or 'queued'")
        if mode.provisioning == "queued" and not self.project:
            raise invalid_arg(component, "project", self.project,
                              "a queued resource names its parent projects/<project>/locations/<zone>; set project")
        return mode


class TpuVmSlice(pulumi.ComponentResource):
    """TPU VMs without GKE: V2Vm per slice, or one queued resource for every slice."""

    def __init__(self, name: str, args: TpuVmSliceArgs, opts: pulumi.ResourceOptions | None = None):
        component = "TpuVmSlice"
        pool = args.pool
        check_name(component, name, longest_suffix=f"-s{pool.slices - 1}")
        gen = check_tpu_pool(component, pool)
        mode = args.capacity_mode()
        runtime = args.runtime_version or pool.runtime_version
        super().__init__("accel:gcp:TpuVmSlice", name, None, opts)
        inherit_dependencies(self, opts)

        network_config = {
            "network": args.network,
            "subnetwork": args.subnetwork,
            "enable_external_ips": False,
            "can_ip_forward": False,
        }
        project = {"project": args.project} if args.project else {}
        self.queued_resource = None
        self.vms: list[gcp.tpu.V2Vm] = []
        if mode.provisioning == "queued":
            # The provider's queued resource carries no labels, spot flag or service account.
            self.queued_resource = gcp.tpu.V2QueuedResource(
                name,
                zone=args.zone,
                tpu={"node_specs": [{
                    "parent": f"projects/{args.project}/locations/{args.zone}",
                    "node_id": f"{name}-s{i}",
                    "node": {
                        "accelerator_type": pool.tpu_vm_type,
                        "runtime_version": runtime,
                        "network_config": network_config,
                        "description": f"slice {i} of {pool.slices}: {pool.topology} {gen.name}",
                    },
                } for i in range(pool.slices)]},
                **project,
                opts=child_opts(self),
            )
            self.node_ids = [f"{name}-s{i}" for i in range(pool.slices)]
        else:
            scheduling: dict = {}
            if mode.spot:
                scheduling["spot"] = True
            if mode.provisioning == "reservation":
                scheduling["reserved"] = True
            for i in range(pool.slices):
                vm_args: dict = dict(
                    zone=args.zone,
                    accelerator_type=pool.tpu_vm_type,
                    runtime_version=runtime,
                    network_config=network_config,
                    labels=compute_labels(args.tags, mode, **{"tpu-slice": str(i), "tpu-topology": pool.topology}),
                    description=f"slice {i} of {pool.slices}: {pool.topology} {gen.name}",
                    **project,
                )
                if scheduling:
                    vm_args["scheduling_config"] = scheduling
                if args.service_account_email is not None:
                    vm_args["service_account"] = {"email": args.service_account_email,
                                                  "scopes": [CLOUD_PLATFORM_SCOPE]}
                self.vms.append(gcp.tpu.V2Vm(f"{name}-s{i}", **vm_args, opts=child_opts(self)))
            self.node_ids = [vm.name for vm in self.vms]
        self.accelerator_type = pool.tpu_vm_type
        self.runtime_version = runtime
        self.register_outputs({"node_ids": self.node_ids, "accelerator_type": self.accelerator_type})
