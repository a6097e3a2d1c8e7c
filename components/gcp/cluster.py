"""GkeCluster: a private GKE Standard cluster ready for TPU slices and GPU node pools.

- Regional (location = region) or zonal (location = zone); nodes only in the plan's zones.
- Private nodes (no public IPs), VPC-native with the network's secondary ranges, Workload
  Identity, a release channel, shielded nodes, Dataplane V2, the GCS FUSE CSI driver (and the
  Filestore or Managed Lustre CSI driver when the plan has that filesystem).
- A dedicated node service account with the minimal node role plus image pulls, instead of
  the Compute Engine default account with Editor.
- The default node pool is removed; a small system pool runs kube-system, Kueue, JobSet.
- Multi-networking (Dataplane V2 + enable_multi_networking) when GPU pools need GPUDirect.
- While training, node upgrades pause through a maintenance exclusion: GKE does not let a
  node pool turn auto-upgrade off on a release-channel cluster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, Sequence

import pulumi
import pulumi_gcp as gcp
import yaml

from accel.base.cidrs import documentation_range_problem
from accel.base.errors import invalid_arg
from accel.components.gcp._common import (
    SYSTEM_POOL_EXTRA_NODES,
    CLOUD_PLATFORM_SCOPE,
    check_cidr,
    check_location,
    check_name,
    check_zone,
    child_opts,
    inherit_dependencies,
    compute_labels,
    is_zone,
    service_account_id,
)
from accel.components.tags import ResourceTags
from accel.policies import hardware
from accel.policies.cloud.gke_rules import load_gke_rules, run_outlasts_first_upgrade, upgrade_pause_problem
from accel.policies.plan import Filesystem, Plan

COMPONENT = "GkeCluster"
ReleaseChannel = Literal["RAPID", "REGULAR", "STABLE", "EXTENDED", "UNSPECIFIED"]
RELEASE_CHANNELS = ("RAPID", "REGULAR", "STABLE", "EXTENDED", "UNSPECIFIED")
# Node service account roles: GKE's minimal node role, plus pulling images from Artifact Registry.
NODE_ROLES = ("roles/container.defaultNodeServiceAccount", "roles/artifactregistry.reader")
GKE_NAME_LIMIT = 40


@dataclass(frozen=True)
class ClusterRef:
    """What a node pool needs to know about its cluster. `GkeCluster.ref` builds one."""

    name: pulumi.Input[str]
    location: str
    release_channel: str = "REGULAR"
    multi_networking: bool = False
    node_service_account_email: pulumi.Input[str] | None = None
    upgrades_paused: bool = False
    # GkeCluster judged once whether node auto-upgrades can reach the run (and warned where they can), so its pools
    # say nothing of it; a cluster named by hand leaves each pool to warn.
    upgrades_judged: bool = False

    @property
    def auto_upgrade(self) -> bool:
        """GKE requires auto-upgrade on every node pool of a release-channel cluster."""
        return self.release_channel != "UNSPECIFIED"


def as_cluster_ref(component: str, cluster, location: str | None) -> ClusterRef:
    """Accept a ClusterRef, or a cluster name plus its location (assumed REGULAR channel, single network)."""
    if isinstance(cluster, ClusterRef):
        if location is not None and location != cluster.location:
            raise invalid_arg(component, "location", location,
                               f"differs from the cluster's location {cluster.location!r}; leave it unset")
        return cluster
    if location is None:
        raise invalid_arg(component, "location", None,
                           "with a cluster name instead of GkeCluster.ref, give the cluster's location")
    check_location(component, "location", location)
    return ClusterRef(name=cluster, location=location)


@dataclass(frozen=True)
class UpgradePause:
    """A window with no minor or node upgrades, so a run is never drained by GKE."""

    start: datetime
    end: datetime


@dataclass(frozen=True)
class GkeClusterArgs:
    project: str
    location: str                                   # region (regional cluster) or zone (zonal)
    network: pulumi.Input[str]
    subnetwork: pulumi.Input[str]
    tags: ResourceTags
    node_zones: Sequence[str] = ()                  # the plan's zones; empty = GKE's default zones
    pods_range_name: str = "pods"
    services_range_name: str = "services"
    release_channel: ReleaseChannel = "REGULAR"
    cluster_name: str | None = None                 # GKE name; default: the component name
    # Control plane access: the DNS endpoint (IAM-authenticated, reachable from CI without an
    # IP allowlist) and the IP endpoint, which only `master_authorized_cidrs` may reach.
    dns_endpoint: bool = True
    master_authorized_cidrs: Sequence[str] = ()
    private_endpoint: bool = False                  # IP endpoint only inside the VPC
    master_ipv4_cidr: str | None = None             # None: Private Service Connect control plane
    multi_networking: bool = False                  # GPUDirect pools need it
    # The oldest GKE version the control plane may run (TPU7x: 1.34.0-gke.2201000, the hardware table's
    # [tpu.tpu7x] gke_min_version); None: the release channel's default.
    min_master_version: str | None = None
    filesystem: Filesystem = "none"
    system_machine_type: str = "e2-standard-4"
    system_nodes_per_zone: int = 1
    node_service_account_id: str | None = None
    upgrade_pause: UpgradePause | None = None
    # Hours from the cluster's creation to the end of the run it is built for (for_plan: the plan's wall-clock hours,
    # waits included); None: not known. Without a pause, a run outlasting GKE's first automatic upgrade is warned.
    run_hours: float | None = None
    maintenance_start_utc: str = "03:00"
    # Clusters hold no data (buckets do) and spot environments are reaped, so destroy must work.
    deletion_protection: bool = False

    @classmethod
    def for_plan(cls, plan: Plan, *, tags: ResourceTags, project: str, network: Any,
                 **overrides: Any) -> "GkeClusterArgs":
        """A regional cluster for a Plan, wired to a GcpNetwork (multi-networking when it has fabric VPCs)."""
        return cls(**{"project": project, "location": plan.region, "network": network.network_id,
                      "subnetwork": network.subnet_id, "tags": tags, "node_zones": plan.zones,
                      "pods_range_name": network.pods_range_name, "services_range_name": network.services_range_name,
                      "multi_networking": bool(network.extra_networks), "filesystem": plan.storage.filesystem,
                      "min_master_version": _plan_min_version(plan), "run_hours": _plan_run_hours(plan), **overrides})

    def __post_init__(self) -> None:
        check_args(self)  # the arguments check themselves on construction (one convention, every cloud)


def _plan_run_hours(plan: Plan) -> float:
    """The plan's run as wall-clock hours from the stack's creation: its waits and legs included where the capacity
    mode has them (estimate details capacity_wall_hours), else its hours (a service's: inference.hours)."""
    return max(plan.chosen.hours, float(plan.estimate.details.get("capacity_wall_hours", 0) or 0))


def _plan_min_version(plan: Plan) -> str | None:
    """The GKE version the plan's accelerators need at least (hardware table), else None."""
    if plan.tpu is None:
        return None
    generation = hardware.current().tpu_generations[plan.tpu.generation]
    return generation.gke_min_version or None


def validate(name: str, args: GkeClusterArgs) -> str:
    """Check args before anything registers; returns the node service-account id."""
    check_args(args)
    if args.node_service_account_id is not None:
        return _explicit_account_id(args.node_service_account_id)
    return service_account_id(COMPONENT, name, "nodes")


def check_args(args: GkeClusterArgs) -> None:
    """Everything about the arguments that does not depend on the component's name."""
    check_location(COMPONENT, "location", args.location)
    if not args.project:
        raise invalid_arg(COMPONENT, "project", args.project, "the project names the Workload Identity pool")
    for i, zone in enumerate(args.node_zones):
        check_zone(COMPONENT, f"node_zones[{i}]", zone, within=args.location)
    if is_zone(args.location) and args.node_zones and args.location not in args.node_zones:
        raise invalid_arg(COMPONENT, "node_zones", list(args.node_zones),
                           f"a zonal cluster's node zones must include its own zone {args.location}")
    if args.run_hours is not None and not args.run_hours > 0:
        raise invalid_arg(COMPONENT, "run_hours", args.run_hours, "hours from the cluster's creation to the run's end: "
                                                                  "a positive number, or None when not known")
    if args.release_channel not in RELEASE_CHANNELS:
        raise invalid_arg(COMPONENT, "release_channel", args.release_channel, f"allowed: {', '.join(RELEASE_CHANNELS)}")
    if args.master_ipv4_cidr is not None:
        master = check_cidr(COMPONENT, "master_ipv4_cidr", args.master_ipv4_cidr)
        if master.prefixlen != 28:
            raise invalid_arg(COMPONENT, "master_ipv4_cidr", args.master_ipv4_cidr,
                               "the control-plane range must be a /28")
    for i, cidr in enumerate(args.master_authorized_cidrs):
        if check_cidr(COMPONENT, f"master_authorized_cidrs[{i}]", cidr).prefixlen == 0:
            raise invalid_arg(COMPONENT, f"master_authorized_cidrs[{i}]", cidr,
                               "opens the control plane to the whole internet; list your office/CI ranges, "
                               "or rely on the IAM-authenticated DNS endpoint")
        problem = documentation_range_problem(cidr)
        if problem:
            raise invalid_arg(COMPONENT, f"master_authorized_cidrs[{i}]", cidr, problem)
    if args.cluster_name is not None:
        check_name(COMPONENT, args.cluster_name, limit=GKE_NAME_LIMIT, autonamed=False, field="cluster_name")
    if args.filesystem == "fsx-lustre":
        raise invalid_arg(COMPONENT, "filesystem", args.filesystem, "FSx for Lustre is AWS; use managed-lustre")
    if args.system_nodes_per_zone < 1:
        raise invalid_arg(COMPONENT, "system_nodes_per_zone", args.system_nodes_per_zone, "at least 1")
    if args.upgrade_pause is not None:
        pause = args.upgrade_pause
        problem = upgrade_pause_problem(pause.start, pause.end, now=datetime.now(timezone.utc),
                                        channel=args.release_channel)
        if problem:
            raise invalid_arg(COMPONENT, "upgrade_pause", pause, problem)
    if not _is_hh_mm(args.maintenance_start_utc):
        raise invalid_arg(COMPONENT, "maintenance_start_utc", args.maintenance_start_utc, "expected HH:MM")
    if args.node_service_account_id is not None:
        _explicit_account_id(args.node_service_account_id)


def _explicit_account_id(account_id: str) -> str:
    if not re.fullmatch(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$", account_id):
        raise invalid_arg(COMPONENT, "node_service_account_id", account_id,
                           "service account ids are 6-30 characters: lowercase letters, digits, '-'")
    return account_id


def _is_hh_mm(value: str) -> bool:
    try:
        datetime.strptime(value, "%H:%M")
    except (TypeError, ValueError):
        return False
    return True


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_kubeconfig(context: str, endpoint: str | None, ca_certificate: str | None) -> str:
    """A kubeconfig that authenticates through gke-gcloud-auth-plugin (no static credentials)."""
    cluster: dict = {"server": f"https://{endpoint or ''}"}
    if ca_certificate:
        cluster["certificate-authority-data"] = ca_certificate
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": cluster}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
        "users": [{"name": context, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "gke-gcloud-auth-plugin",
            "installHint": "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin",
            "provideClusterInfo": True,
        }}}],
    }
    return yaml.safe_dump(config, sort_keys=False)


class GkeCluster(pulumi.ComponentResource):
    """Private GKE Standard cluster with Workload Identity, a least-privilege node SA and a system pool."""

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None):
        check_name(COMPONENT, name, longest_suffix="-system", limit=GKE_NAME_LIMIT)
        account_id = validate(name, args)
        super().__init__("accel:gcp:GkeCluster", name, None, opts)
        inherit_dependencies(self, opts)

        labels = compute_labels(args.tags)
        cluster_name = args.cluster_name or name
        self.workload_pool = f"{args.project}.svc.id.goog"
        self.location = args.location
        self.release_channel = args.release_channel
        self.multi_networking = args.multi_networking
        if args.release_channel != "UNSPECIFIED" and args.upgrade_pause is None \
                and run_outlasts_first_upgrade(args.run_hours):
            # Once for the cluster (its pools share it), and only where an automatic upgrade can reach the run.
            budget = load_gke_rules().disruption_budget
            run = "the run's end is not known" if args.run_hours is None else f"the run lasts ~{args.run_hours:,.0f} h"
            pulumi.log.warn(
                f"{name}: cluster channel {args.release_channel} keeps node auto-upgrade on, and {run}, past the "
                f"{budget.patch_hours:g} h GKE waits after creating a cluster before it may upgrade it (and then its "
                f"nodes) on its own ({budget.source}); pause upgrades for the run with GkeClusterArgs.upgrade_pause",
                resource=self)

        node_sa = gcp.serviceaccount.Account(
            f"{name}-nodes",
            account_id=account_id,
            project=args.project,
            display_name=f"GKE nodes of {name}",
            description="Node identity: logs, metrics, image pulls. Workloads use Workload Identity instead.",
            opts=child_opts(self),
        )
        email = node_sa.account_id.apply(lambda a: f"{a}@{args.project}.iam.gserviceaccount.com")
        self.node_service_account_email = email
        self.node_service_account_bindings = [
            gcp.projects.IAMMember(
                f"{name}-nodes-{role.split('/')[-1].replace('.', '-').lower()}",
                project=args.project,
                role=role,
                member=email.apply(lambda e: f"serviceAccount:{e}"),
                opts=child_opts(self),
            )
            for role in NODE_ROLES
        ]

        zones = list(args.node_zones)
        if is_zone(args.location):
            # A zonal cluster's node_locations lists only the zones beyond its own.
            zones = [z for z in zones if z != args.location]

        addons: dict = {
            "gcs_fuse_csi_driver_config": {"enabled": True},
            "gce_persistent_disk_csi_driver_config": {"enabled": True},
            "http_load_balancing": {"disabled": False},
            "horizontal_pod_autoscaling": {"disabled": False},
        }
        if args.filesystem == "filestore":
            addons["gcp_filestore_csi_driver_config"] = {"enabled": True}
        if args.filesystem == "managed-lustre":
            addons["lustre_csi_driver_config"] = {"enabled": True}

        maintenance: dict = {"daily_maintenance_window": {"start_time": args.maintenance_start_utc}}
        if args.upgrade_pause is not None:
            maintenance["maintenance_exclusions"] = [{
                "exclusion_name": "training-run",
                "start_time": _rfc3339(args.upgrade_pause.start),
                "end_time": _rfc3339(args.upgrade_pause.end),
                "exclusion_options": {"scope": "NO_MINOR_OR_NODE_UPGRADES"},
            }]

        private_cluster: dict = {"enable_private_nodes": True, "enable_private_endpoint": args.private_endpoint}
        if args.master_ipv4_cidr is not None:
            private_cluster["master_ipv4_cidr_block"] = args.master_ipv4_cidr

        cluster_args: dict = dict(
            name=cluster_name,
            project=args.project,
            location=args.location,
            network=args.network,
            subnetwork=args.subnetwork,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy={
                "cluster_secondary_range_name": args.pods_range_name,
                "services_secondary_range_name": args.services_range_name,
            },
            private_cluster_config=private_cluster,
            control_plane_endpoints_config={
                "dns_endpoint_config": {"allow_external_traffic": args.dns_endpoint},
                "ip_endpoints_config": {"enabled": True},
            },
            master_authorized_networks_config={
                "cidr_blocks": [{"cidr_block": c, "display_name": f"allowed-{i}"}
                                for i, c in enumerate(args.master_authorized_cidrs)],
                "gcp_public_cidrs_access_enabled": False,
            },
            workload_identity_config={"workload_pool": self.workload_pool},
            release_channel={"channel": args.release_channel},
            **({"min_master_version": args.min_master_version} if args.min_master_version else {}),
            enable_shielded_nodes=True,
            datapath_provider="ADVANCED_DATAPATH",
            enable_multi_networking=args.multi_networking,
            addons_config=addons,
            remove_default_node_pool=True,
            initial_node_count=1,
            # Only for the default pool GKE creates and this cluster removes at once.
            node_config={
                "service_account": email,
                "oauth_scopes": [CLOUD_PLATFORM_SCOPE],
                "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True},
                "workload_metadata_config": {"mode": "GKE_METADATA"},
            },
            logging_config={"enable_components": ["SYSTEM_COMPONENTS", "WORKLOADS"]},
            monitoring_config={"enable_components": ["SYSTEM_COMPONENTS"], "managed_prometheus": {"enabled": True}},
            maintenance_policy=maintenance,
            resource_labels=labels,
            deletion_protection=args.deletion_protection,
        )
        if zones:
            cluster_args["node_locations"] = zones

        cluster = gcp.container.Cluster(
            f"{name}-gke", **cluster_args, opts=child_opts(self, depends_on=self.node_service_account_bindings),
        )

        system_pool = gcp.container.NodePool(
            f"{name}-system",
            cluster=cluster.name,
            location=args.location,
            project=args.project,
            initial_node_count=args.system_nodes_per_zone,
            autoscaling={"min_node_count": args.system_nodes_per_zone,
                         "max_node_count": args.system_nodes_per_zone + SYSTEM_POOL_EXTRA_NODES},
            management={"auto_repair": True, "auto_upgrade": args.release_channel != "UNSPECIFIED"},
            network_config={"enable_private_nodes": True},
            node_config={
                "machine_type": args.system_machine_type,
                "disk_type": "pd-balanced",
                "disk_size_gb": 100,
                "image_type": "COS_CONTAINERD",
                "service_account": email,
                "oauth_scopes": [CLOUD_PLATFORM_SCOPE],
                "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True},
                "workload_metadata_config": {"mode": "GKE_METADATA"},
                "labels": {**args.tags.kubernetes_labels(), "accel.dev/pool": "system"},
                "resource_labels": compute_labels(args.tags, pool="system"),
            },
            opts=child_opts(self),
        )

        self.cluster = cluster
        self.system_pool = system_pool
        self.name = cluster.name
        self.id = cluster.id
        self.endpoint = cluster.endpoint
        self.ca_certificate = cluster.master_auth.apply(
            lambda auth: auth.cluster_ca_certificate if auth else None)
        self.dns_endpoint = cluster.control_plane_endpoints_config.apply(
            lambda c: c.dns_endpoint_config.endpoint if c and c.dns_endpoint_config else None)
        context = f"gke_{args.project}_{args.location}_{cluster_name}"
        if args.dns_endpoint:
            # The DNS endpoint presents a publicly trusted certificate: no CA data to carry.
            server = self.dns_endpoint.apply(lambda host: (host, None))
        else:
            server = pulumi.Output.all(cluster.endpoint, self.ca_certificate).apply(lambda p: (p[0], p[1]))
        self.kubeconfig = pulumi.Output.secret(
            server.apply(lambda host_ca: build_kubeconfig(context, host_ca[0], host_ca[1])))
        self.ref = ClusterRef(
            name=cluster.name,
            location=args.location,
            release_channel=args.release_channel,
            multi_networking=args.multi_networking,
            node_service_account_email=email,
            upgrades_paused=args.upgrade_pause is not None,
            upgrades_judged=True,
        )
        self.register_outputs({
            "name": self.name,
            "endpoint": self.endpoint,
            "kubeconfig": self.kubeconfig,
            "node_service_account_email": self.node_service_account_email,
            "workload_pool": self.workload_pool,
        })
