"""GcpNetwork: the VPC a private training cluster lives in, plus the GPU fabrics A3 machines need.

- One custom-mode VPC and one regional subnet for nodes, with secondary ranges for GKE pods
  and services and Private Google Access, so nodes reach GCS and Artifact Registry without
  public IPs.
- Cloud Router + Cloud NAT for the node subnet only: egress without public IPs.
- Ingress firewall limited to what training needs: node-to-node and pod-to-pod traffic,
  Google health checks, and SSH through IAP only when asked. Nothing from 0.0.0.0/0.
- GPUDirect fabrics, only when the plan's GPU pool asks: 4 extra VPCs for A3 High (TCPX),
  8 for A3 Mega (TCPXO), each with one subnet and MTU 8244; for A3 Ultra one extra gVNIC VPC
  and one RoCE VPC (RDMA network profile of the zone) with a subnet per GPU NIC.
- Private services access (a peering range and the servicenetworking connection) when the
  plan asks for Managed Lustre, with the Lustre port open from that range.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp

from accel.base.cidrs import (
    GCP_RESERVED_PER_SUBNET,
    GKE_DEFAULT_MAX_PODS_PER_NODE,
    RangeNeed,
    capacity_problems,
    gke_pod_block,
    gke_pod_range_nodes,
    gke_pod_range_prefix,
    prefix_for,
    usable_addresses,
)
from accel.base.errors import invalid_arg
from accel.components.gcp._common import (
    SYSTEM_POOL_EXTRA_NODES,
    check_cidr,
    check_disjoint,
    check_location,
    check_name,
    check_zone,
    child_opts,
    inherit_dependencies,
    is_zone,
)
from accel.components.tags import ResourceTags
from accel.policies.plan import Filesystem, GpuPool, Plan

COMPONENT = "GcpNetwork"
PODS_RANGE = "pods"
SERVICES_RANGE = "services"

# Google's published source ranges (VPC docs): health-check probers and IAP TCP forwarding.
HEALTH_CHECK_RANGES = ("35.191.0.0/16", "130.211.0.0/22")
IAP_RANGE = "35.235.240.0/20"
# Lustre clients listen on 988; 6988 is the port of instances created with GKE support (legacy).
LUSTRE_PORTS = ("988", "6988")
# GPUDirect-TCPX/TCPXO VPCs use MTU 8244 (GKE GPUDirect docs); RDMA and gVNIC networks 8896.
GPUDIRECT_MTU = 8244
RDMA_MTU = 8896
# Extra VPCs per fabric: A3 High has 4 secondary NICs, A3 Mega 8; A3 Ultra one RoCE VPC.
FABRIC_NETWORKS = {"gpudirect-tcpx": 4, "gpudirect-tcpxo": 8, "rdma": 1}


@dataclass(frozen=True)
class ExtraNetworkRef:
    """One additional node network for a GKE node pool: VPC name and subnet name."""

    network: pulumi.Input[str]
    subnetwork: pulumi.Input[str]


@dataclass(frozen=True)
class GcpNetworkArgs:
    region: str
    tags: ResourceTags
    project: str | None = None
    node_cidr: str = "10.0.0.0/20"
    pods_cidr: str = "10.16.0.0/14"
    services_cidr: str = "10.20.0.0/20"
    # TPU multislice DCN traffic and large transfers gain from jumbo frames.
    mtu: int = 8896
    iap_ssh: bool = False
    gpu: GpuPool | None = None                  # the plan's GPU pool; its fabric decides the extra networks
    fabric_zone: str | None = None              # zone of the RDMA network profile (A3 Ultra)
    fabric_cidr: str = "192.168.0.0/16"         # carved into fabric_subnet_prefix subnets for the extra networks
    filesystem: Filesystem = "none"             # managed-lustre adds private services access
    private_service_cidr: str = "10.32.0.0/20"  # peering range for Google-managed services
    nat_max_ports_per_vm: int = 4096
    # Address capacity (accel/base/cidrs.py): the most nodes the cluster can reach, all pools at their
    # maximum plus surge, and how many of them are GPU nodes on the fabric networks. None: not checked
    # (a hand-built network); for_plan counts them from the Plan.
    max_nodes: int | None = None
    max_fabric_nodes: int | None = None
    node_count_why: str = ""
    max_pods_per_node: int = GKE_DEFAULT_MAX_PODS_PER_NODE  # GKE Standard's default; the cluster sets no other
    fabric_subnet_prefix: int = 24              # each fabric subnet; for_plan widens it for large fleets

    @classmethod
    def for_plan(cls, plan: Plan, *, tags: ResourceTags, project: str, system_nodes_per_zone: int = 1,
                 **overrides: Any) -> "GcpNetworkArgs":
        """The network for a Plan: its region, the GPU pool's fabric networks in the plan's zone, and ranges
        sized for the most nodes the plan's pools can reach (the defaults where those suffice)."""
        count = plan_node_count(plan, system_nodes_per_zone=system_nodes_per_zone)
        sized = sized_ranges(count, plan.gpu)
        return cls(**{"region": plan.region, "tags": tags, "project": project, "gpu": plan.gpu,
                      "fabric_zone": plan.zones[0], "filesystem": plan.storage.filesystem,
                      "max_nodes": count.total, "max_fabric_nodes": count.accelerator if plan.gpu else 0,
                      "node_count_why": count.why, **sized, **overrides})

    def __post_init__(self) -> None:
        validate(self)  # the arguments check themselves on construction (one convention, every cloud)


@dataclass(frozen=True)
class NodeCount:
    """The most nodes a planned GKE cluster can reach: accelerator pools at their maximum size, the
    system pool at its autoscaling maximum in every zone, and one surge node per pool during upgrades."""

    accelerator: int
    accelerator_pools: int
    system: int

    @property
    def surge(self) -> int:
        return self.accelerator_pools + 1

    @property
    def total(self) -> int:
        return self.accelerator + self.system + self.surge

    @property
    def why(self) -> str:
        return (f"{self.accelerator:,} accelerator nodes in {self.accelerator_pools} pool(s) at their maximum size"
                f" + {self.system} system + {self.surge} upgrade surge")


def plan_node_count(plan: Plan, *, system_nodes_per_zone: int = 1) -> NodeCount:
    """Counted from the Plan the pools are built from (TpuSlice: hosts per slice each; GpuNodePool: the
    plan's pool sizes), and GkeCluster's system pool (its zones x (per zone + SYSTEM_POOL_EXTRA_NODES))."""
    if plan.tpu is not None:
        accelerator, pools = plan.tpu.slices * plan.tpu.hosts_per_slice, plan.tpu.slices
    else:
        assert plan.gpu is not None
        accelerator, pools = sum(plan.gpu.pool_sizes), plan.gpu.pools
    system = len(plan.zones) * (system_nodes_per_zone + SYSTEM_POOL_EXTRA_NODES)
    return NodeCount(accelerator=accelerator, accelerator_pools=pools, system=system)


# Where grown ranges go: beside the defaults, never overlapping them (node 10.0/20, pods 10.16/14,
# services 10.20/20, private services 10.32/20, fabrics 192.168/16).
_WIDE_PODS_BASE = "10.64.0.0"        # up to a /10 (10.64-10.127): 16,384 nodes at a /24 each
_WIDE_FABRIC_BASE = "172.16.0.0/12"  # fabric subnets that outgrow 192.168.0.0/16


def sized_ranges(count: NodeCount, gpu: GpuPool | None,
                 max_pods_per_node: int = GKE_DEFAULT_MAX_PODS_PER_NODE) -> dict[str, Any]:
    """Ranges that hold `count`: the defaults when they do, else the smallest block that does."""
    defaults = {f.name: f.default for f in GcpNetworkArgs.__dataclass_fields__.values() if f.name in
                ("node_cidr", "pods_cidr", "fabric_cidr", "fabric_subnet_prefix")}
    sized: dict[str, Any] = {}
    if gke_pod_range_nodes(defaults["pods_cidr"], max_pods_per_node) < count.total:
        sized["pods_cidr"] = f"{_WIDE_PODS_BASE}/{gke_pod_range_prefix(count.total, max_pods_per_node)}"
    if usable_addresses(defaults["node_cidr"], GCP_RESERVED_PER_SUBNET) < count.total:
        sized["node_cidr"] = f"10.0.0.0/{prefix_for(count.total, reserved=GCP_RESERVED_PER_SUBNET)}"
    if gpu is not None and gpu.fabric != "none":
        prefix = min(defaults["fabric_subnet_prefix"],
                     prefix_for(count.accelerator, reserved=GCP_RESERVED_PER_SUBNET))
        sized["fabric_subnet_prefix"] = prefix
        subnets = _fabric_subnet_count(gpu.fabric, gpu)
        if 2 ** (prefix - ipaddress.ip_network(defaults["fabric_cidr"]).prefixlen) < subnets:
            sized["fabric_cidr"] = _WIDE_FABRIC_BASE
    return sized


def address_needs(args: "GcpNetworkArgs") -> list[RangeNeed]:
    """What each range must hold for args.max_nodes (accel/base/cidrs.py)."""
    if args.max_nodes is None:
        return []
    why = args.node_count_why or "max_nodes"
    block = gke_pod_block(args.max_pods_per_node)
    needs = [
        RangeNeed("node_cidr", args.node_cidr, usable_addresses(args.node_cidr, GCP_RESERVED_PER_SUBNET),
                  args.max_nodes, "nodes", why,
                  f"use a /{prefix_for(args.max_nodes, reserved=GCP_RESERVED_PER_SUBNET)} or larger (one address "
                  f"per node, {GCP_RESERVED_PER_SUBNET} reserved per subnet)"),
        RangeNeed("pods_cidr", args.pods_cidr, gke_pod_range_nodes(args.pods_cidr, args.max_pods_per_node),
                  args.max_nodes, "nodes", why,
                  f"GKE gives each node a /{32 - block.bit_length() + 1} ({block} addresses for "
                  f"{args.max_pods_per_node} Pods per node): use a "
                  f"/{gke_pod_range_prefix(args.max_nodes, args.max_pods_per_node)} or larger"),
    ]
    fabric_nodes = args.max_fabric_nodes or 0
    if args.gpu is not None and args.gpu.fabric != "none" and fabric_nodes:
        subnet = f"{ipaddress.ip_network(args.fabric_cidr).network_address}/{args.fabric_subnet_prefix}"
        needs.append(RangeNeed(
            "fabric_subnet_prefix", subnet, usable_addresses(subnet, GCP_RESERVED_PER_SUBNET), fabric_nodes, "nodes",
            f"every {args.gpu.machine_type} node takes one address in each of the "
            f"{_fabric_subnet_count(args.gpu.fabric, args.gpu)} {args.gpu.fabric} subnets; {fabric_nodes:,} GPU nodes",
            f"use /{prefix_for(fabric_nodes, reserved=GCP_RESERVED_PER_SUBNET)} fabric subnets or larger"))
    return needs


@dataclass
class _Fabric:
    networks: list = field(default_factory=list)
    subnets: list = field(default_factory=list)
    refs: list[ExtraNetworkRef] = field(default_factory=list)


def validate(args: GcpNetworkArgs) -> str:
    """Check everything before anything registers; returns the GPU fabric ('none' if no extra networks)."""
    check_location(COMPONENT, "region", args.region)
    if is_zone(args.region):
        raise invalid_arg(COMPONENT, "region", args.region, "the network is regional: pass a region, not a zone")
    ranges = {
        "node_cidr": check_cidr(COMPONENT, "node_cidr", args.node_cidr),
        "pods_cidr": check_cidr(COMPONENT, "pods_cidr", args.pods_cidr),
        "services_cidr": check_cidr(COMPONENT, "services_cidr", args.services_cidr),
    }
    if not 1300 <= args.mtu <= 8896:
        raise invalid_arg(COMPONENT, "mtu", args.mtu, "VPC MTU must be between 1300 and 8896")
    ports = args.nat_max_ports_per_vm
    if not (64 <= ports <= 65536 and ports & (ports - 1) == 0):
        raise invalid_arg(COMPONENT, "nat_max_ports_per_vm", ports,
                           "dynamic port allocation needs a power of two between 64 and 65536")
    if args.filesystem == "fsx-lustre":
        raise invalid_arg(COMPONENT, "filesystem", args.filesystem,
                           "FSx for Lustre is AWS; on Google Cloud use managed-lustre or filestore")
    if args.filesystem == "managed-lustre":
        ranges["private_service_cidr"] = check_cidr(COMPONENT, "private_service_cidr", args.private_service_cidr)
        if ranges["private_service_cidr"].prefixlen > 24:
            raise invalid_arg(COMPONENT, "private_service_cidr", args.private_service_cidr,
                               "private services access needs at least a /24")
    fabric = args.gpu.fabric if args.gpu is not None else "none"
    if fabric == "efa":
        raise invalid_arg(COMPONENT, "gpu.fabric", fabric, "EFA is AWS; Google Cloud fabrics are "
                           "gpudirect-tcpx, gpudirect-tcpxo and rdma")
    if fabric != "none":
        assert args.gpu is not None
        wanted = FABRIC_NETWORKS[fabric]
        if args.gpu.extra_networks != wanted:
            raise invalid_arg(COMPONENT, "gpu.extra_networks", args.gpu.extra_networks,
                               f"{fabric} needs exactly {wanted} extra VPC network(s)")
        fabric_range = check_cidr(COMPONENT, "fabric_cidr", args.fabric_cidr)
        ranges["fabric_cidr"] = fabric_range
        needed = _fabric_subnet_count(fabric, args.gpu)
        size = args.fabric_subnet_prefix
        if not 8 <= size <= 29:
            raise invalid_arg(COMPONENT, "fabric_subnet_prefix", size, "a subnet prefix between /8 and /29")
        if fabric_range.prefixlen > size or 2 ** (size - fabric_range.prefixlen) < needed:
            raise invalid_arg(COMPONENT, "fabric_cidr", args.fabric_cidr,
                               f"{fabric} needs {needed} /{size} subnets; give a larger range such as "
                               f"{'192.168.0.0/16' if size >= 24 else _WIDE_FABRIC_BASE}")
        if fabric == "rdma":
            if not args.project:
                raise invalid_arg(COMPONENT, "project", args.project,
                                   "an RDMA network names its network profile by project; set project")
            if args.fabric_zone is None:
                raise invalid_arg(COMPONENT, "fabric_zone", None,
                                   "an RDMA (RoCE) network is bound to one zone; set the GPU pool's zone")
            check_zone(COMPONENT, "fabric_zone", args.fabric_zone, within=args.region)
    check_disjoint(COMPONENT, ranges)
    problems = capacity_problems(address_needs(args))
    if problems:
        first = problems[0].split(" ", 1)[0]
        raise invalid_arg(COMPONENT, first, getattr(args, first), "; ".join(problems))
    return fabric


def _fabric_subnet_count(fabric: str, gpu: GpuPool) -> int:
    # A3 Ultra: one gVNIC subnet plus one RDMA subnet per GPU NIC (one NIC per GPU).
    return gpu.gpus_per_node + 1 if fabric == "rdma" else FABRIC_NETWORKS[fabric]


def _allow_all_internal() -> list[dict]:
    return [{"protocol": "tcp"}, {"protocol": "udp"}, {"protocol": "icmp"}]


class GcpNetwork(pulumi.ComponentResource):
    """Custom VPC + node subnet + NAT + minimal firewall, and the GPU fabric networks when asked."""

    def __init__(self, name: str, args: GcpNetworkArgs, opts: pulumi.ResourceOptions | None = None):
        check_name(COMPONENT, name, longest_suffix="-allow-health-checks")
        fabric = validate(args)
        super().__init__("accel:gcp:GcpNetwork", name, None, opts)
        inherit_dependencies(self, opts)

        project = {"project": args.project} if args.project else {}
        self.region = args.region
        self.pods_range_name = PODS_RANGE
        self.services_range_name = SERVICES_RANGE
        self.fabric = fabric

        vpc = gcp.compute.Network(
            f"{name}-vpc",
            auto_create_subnetworks=False,
            routing_mode="REGIONAL",
            mtu=args.mtu,
            description=f"accel training network for {args.tags.workload} ({args.tags.stack})",
            **project,
            opts=child_opts(self),
        )
        subnet = gcp.compute.Subnetwork(
            f"{name}-subnet",
            network=vpc.id,
            region=args.region,
            ip_cidr_range=args.node_cidr,
            private_ip_google_access=True,
            stack_type="IPV4_ONLY",
            secondary_ip_ranges=[
                {"range_name": PODS_RANGE, "ip_cidr_range": args.pods_cidr},
                {"range_name": SERVICES_RANGE, "ip_cidr_range": args.services_cidr},
            ],
            **project,
            opts=child_opts(self),
        )
        router = gcp.compute.Router(
            f"{name}-router", network=vpc.id, region=args.region, **project, opts=child_opts(self),
        )
        self.nat = gcp.compute.RouterNat(
            f"{name}-nat",
            router=router.name,
            region=args.region,
            nat_ip_allocate_option="AUTO_ONLY",
            # Only the node subnet (all its ranges: nodes and pods) is translated; GPU fabrics never leave the VPC.
            source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
            subnetworks=[{"name": subnet.id, "source_ip_ranges_to_nats": ["ALL_IP_RANGES"]}],
            enable_dynamic_port_allocation=True,
            enable_endpoint_independent_mapping=False,
            min_ports_per_vm=64,
            max_ports_per_vm=args.nat_max_ports_per_vm,
            log_config={"enable": True, "filter": "ERRORS_ONLY"},
            **project,
            opts=child_opts(self),
        )

        firewalls = [
            gcp.compute.Firewall(
                f"{name}-allow-internal",
                network=vpc.id,
                direction="INGRESS",
                description="Node-to-node and pod-to-pod traffic inside the training cluster",
                source_ranges=[args.node_cidr, args.pods_cidr],
                allows=_allow_all_internal(),
                **project,
                opts=child_opts(self),
            ),
            gcp.compute.Firewall(
                f"{name}-allow-health-checks",
                network=vpc.id,
                direction="INGRESS",
                description="Google Cloud load-balancer and health-check probers",
                source_ranges=list(HEALTH_CHECK_RANGES),
                allows=[{"protocol": "tcp"}],
                **project,
                opts=child_opts(self),
            ),
        ]
        if args.iap_ssh:
            firewalls.append(gcp.compute.Firewall(
                f"{name}-allow-iap-ssh",
                network=vpc.id,
                direction="INGRESS",
                description="SSH only through Identity-Aware Proxy TCP forwarding",
                source_ranges=[IAP_RANGE],
                allows=[{"protocol": "tcp", "ports": ["22"]}],
                **project,
                opts=child_opts(self),
            ))

        self.private_service_connection = None
        if args.filesystem == "managed-lustre":
            psa = ipaddress.ip_network(args.private_service_cidr)
            psa_range = gcp.compute.GlobalAddress(
                f"{name}-psa-range",
                network=vpc.id,
                purpose="VPC_PEERING",
                address_type="INTERNAL",
                address=str(psa.network_address),
                prefix_length=psa.prefixlen,
                description="Private services access range (Managed Lustre)",
                **project,
                opts=child_opts(self),
            )
            self.private_service_connection = gcp.servicenetworking.Connection(
                f"{name}-psa",
                network=vpc.id,
                service="servicenetworking.googleapis.com",
                reserved_peering_ranges=[psa_range.name],
                opts=child_opts(self),
            )
            firewalls.append(gcp.compute.Firewall(
                f"{name}-allow-lustre",
                network=vpc.id,
                direction="INGRESS",
                description="Managed Lustre servers reach their clients on the Lustre port",
                source_ranges=[args.private_service_cidr],
                allows=[{"protocol": "tcp", "ports": list(LUSTRE_PORTS)}],
                **project,
                opts=child_opts(self),
            ))

        fabric_parts = _Fabric()
        if fabric in ("gpudirect-tcpx", "gpudirect-tcpxo"):
            fabric_parts = self._gpudirect_networks(name, args, FABRIC_NETWORKS[fabric], project)
        elif fabric == "rdma":
            assert args.gpu is not None
            fabric_parts = self._rdma_networks(name, args, args.gpu.gpus_per_node, project)

        self.network = vpc
        self.subnet = subnet
        self.router = router
        self.firewalls = firewalls
        self.network_id = vpc.id
        self.network_name = vpc.name
        self.network_self_link = vpc.self_link
        self.subnet_id = subnet.id
        self.subnet_name = subnet.name
        self.subnet_self_link = subnet.self_link
        self.extra_networks: list[ExtraNetworkRef] = fabric_parts.refs
        self.extra_network_resources = fabric_parts.networks
        self.register_outputs({
            "network_id": self.network_id,
            "network_name": self.network_name,
            "subnet_id": self.subnet_id,
            "subnet_name": self.subnet_name,
            "pods_range_name": PODS_RANGE,
            "services_range_name": SERVICES_RANGE,
            "extra_networks": [{"network": r.network, "subnetwork": r.subnetwork} for r in self.extra_networks],
        })

    def _fabric_subnet_ranges(self, args: GcpNetworkArgs) -> list[str]:
        return [str(s) for s in ipaddress.ip_network(args.fabric_cidr).subnets(new_prefix=args.fabric_subnet_prefix)]

    def _gpudirect_networks(self, name: str, args: GcpNetworkArgs, count: int, project: dict) -> _Fabric:
        """One VPC + subnet + internal firewall per GPU NIC (TCPX: 4, TCPXO: 8)."""
        parts = _Fabric()
        ranges = self._fabric_subnet_ranges(args)
        for i in range(count):
            self._internal_vpc(parts, args, project, network_name=f"{name}-gpunet-{i}",
                               subnet_name=f"{name}-gpusub-{i}", firewall_name=f"{name}-gpunet-{i}-internal",
                               mtu=GPUDIRECT_MTU, cidr=ranges[i],
                               description=f"GPUDirect NIC {i} network ({args.gpu.fabric if args.gpu else ''})",
                               traffic="GPU-to-GPU traffic between nodes of the pool")
        return parts

    def _internal_vpc(self, parts: _Fabric, args: GcpNetworkArgs, project: dict, *, network_name: str,
                      subnet_name: str, firewall_name: str, mtu: int, cidr: str, description: str,
                      traffic: str) -> None:
        """One extra node network: a VPC, its subnet, and a firewall that admits only the fabric's range."""
        network = gcp.compute.Network(network_name, auto_create_subnetworks=False, mtu=mtu, description=description,
                                      **project, opts=child_opts(self))
        subnet = gcp.compute.Subnetwork(subnet_name, network=network.id, region=args.region, ip_cidr_range=cidr,
                                        **project, opts=child_opts(self))
        gcp.compute.Firewall(firewall_name, network=network.id, direction="INGRESS", description=traffic,
                             source_ranges=[args.fabric_cidr], allows=_allow_all_internal(), **project,
                             opts=child_opts(self))
        parts.networks.append(network)
        parts.subnets.append(subnet)
        parts.refs.append(ExtraNetworkRef(network=network.name, subnetwork=subnet.name))

    def _rdma_networks(self, name: str, args: GcpNetworkArgs, nics: int, project: dict) -> _Fabric:
        """A3 Ultra: a second gVNIC VPC, and one RoCE VPC with a subnet per CX-7 NIC."""
        parts = _Fabric()
        ranges = self._fabric_subnet_ranges(args)
        self._internal_vpc(parts, args, project, network_name=f"{name}-gvnic", subnet_name=f"{name}-gvnic-sub",
                           firewall_name=f"{name}-gvnic-internal", mtu=RDMA_MTU, cidr=ranges[0],
                           description="Second gVNIC network of A3 Ultra nodes",
                           traffic="Traffic between nodes on the second gVNIC")
        # RoCE VPCs allow all traffic implicitly and accept no firewall rules of their own.
        rdma = gcp.compute.Network(
            f"{name}-rdma",
            auto_create_subnetworks=False,
            mtu=RDMA_MTU,
            network_profile=f"projects/{args.project}/global/networkProfiles/{args.fabric_zone}-vpc-roce",
            description="RDMA (RoCE) network for GPU-to-GPU traffic",
            **project,
            opts=child_opts(self),
        )
        parts.networks.append(rdma)
        for i in range(nics):
            subnet = gcp.compute.Subnetwork(
                f"{name}-rdma-sub-{i}", network=rdma.id, region=args.region, ip_cidr_range=ranges[i + 1],
                **project, opts=child_opts(self),
            )
            parts.subnets.append(subnet)
            parts.refs.append(ExtraNetworkRef(network=rdma.name, subnetwork=subnet.name))
        return parts
