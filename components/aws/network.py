"""AwsNetwork: the VPC a GPU training cluster lives in.

Nodes sit in private subnets (one per zone) and never get public addresses; public subnets
exist only to hold the NAT gateway(s). S3 traffic goes through a gateway endpoint, so reading a
dataset or writing a checkpoint never pays NAT data processing. Two security groups: one for
the nodes (all traffic inside the group, which NCCL over EFA needs, and EFA also needs the
egress-to-itself rule), one for the EKS control plane (HTTPS from nodes; kubelet and webhook
ports to nodes).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi

from accel.base.cidrs import (
    AWS_RESERVED_PER_SUBNET,
    EKS_FREE_PER_SUBNET,
    RangeNeed,
    VpcCniSettings,
    capacity_problems,
    usable_addresses,
)
from accel.base.errors import invalid_arg
from accel.components.aws.vpc_cni import (
    DAEMONSET_PODS_WITH_VPC_ADDRESSES,
    TRAINING_VPC_CNI,
    node_addresses,
    system_node_addresses,
)
from accel.components.aws.common import (
    SYSTEM_INSTANCE_TYPES,
    SYSTEM_NODES,
    check_cidr,
    check_region,
    check_zone,
    register_declared_outputs,
    resource_tags,
    system_max_nodes,
)
from accel.components.tags import ResourceTags

NatMode = Literal["per-az", "single"]
_ARGS = "AwsNetworkArgs"
# The VPC is cut into eight equal blocks: one private subnet per zone (at most six zones), and
# the last block split again for the small public subnets that only hold NAT gateways.
_BLOCK_BITS = 3
_PUBLIC_BITS = 3
MAX_ZONES = 6
# Smallest VPC that still leaves each private subnet room for VPC-CNI pod IPs (a /23 per zone).
_MAX_VPC_PREFIX = 20


@dataclass(frozen=True)
class AwsNetworkArgs:
    region: str
    zones: list[str] = field(metadata={"doc": "At least two (EKS control plane); GPU nodes use the first"})
    tags: ResourceTags
    cidr_block: str = "10.0.0.0/16"
    nat: NatMode = "per-az"
    # Address capacity (accel/base/cidrs.py, components/aws/vpc_cni.py): addresses the first zone's
    # private subnet (the GPU nodes' zone) must hold at the fleet's largest, and how that was counted.
    # 0: not checked (a hand-built network); for_plan counts them from the Plan.
    gpu_zone_addresses: int = 0
    address_why: str = ""

    def __post_init__(self) -> None:
        check_region(_ARGS, self.region)
        zones = list(self.zones)
        if len(zones) < 2:
            raise invalid_arg(_ARGS, "zones", zones, "EKS needs subnets in at least two availability zones; "
                          "add a second zone of the region (GPU nodes still go to the plan's zone)")
        if len(zones) > MAX_ZONES:
            raise invalid_arg(_ARGS, "zones", zones, f"at most {MAX_ZONES} zones are supported")
        if len(set(zones)) != len(zones):
            raise invalid_arg(_ARGS, "zones", zones, "each zone may appear once")
        for i, zone in enumerate(zones):
            check_zone(_ARGS, f"zones[{i}]", zone, self.region)
        network = check_cidr(_ARGS, "cidr_block", self.cidr_block)
        if network.prefixlen > _MAX_VPC_PREFIX or network.prefixlen < 16:
            raise invalid_arg(_ARGS, "cidr_block", self.cidr_block,
                          f"AWS allows /16 to /28 and nodes need room for pod IPs: use /16 to /{_MAX_VPC_PREFIX}")
        if self.nat not in ("per-az", "single"):
            raise invalid_arg(_ARGS, "nat", self.nat,
                          "allowed: 'per-az' (one NAT per zone) or 'single' (cheaper, one zone)")
        if not isinstance(self.tags, ResourceTags):
            raise invalid_arg(_ARGS, "tags", self.tags, "expected accel.components.tags.ResourceTags")
        if self.gpu_zone_addresses < 0:
            raise invalid_arg(_ARGS, "gpu_zone_addresses", self.gpu_zone_addresses, "cannot be negative")
        blocks = 2 ** _BLOCK_BITS
        if self._first_zone_blocks() + len(zones) - 1 + 1 > blocks:
            raise invalid_arg(_ARGS, "gpu_zone_addresses", self.gpu_zone_addresses, self._layout_problem())
        problems = capacity_problems(self.address_needs())
        if problems:
            raise invalid_arg(_ARGS, "cidr_block", self.cidr_block, "; ".join(problems))

    @classmethod
    def for_plan(cls, plan, tags: ResourceTags, *, extra_zones: list[str] = (), system_nodes: int = SYSTEM_NODES,
                 system_instance_types: Sequence[str] = SYSTEM_INSTANCE_TYPES,
                 vpc_cni: VpcCniSettings = TRAINING_VPC_CNI, **overrides) -> "AwsNetworkArgs":
        """The network for a Plan: its zones, plus `extra_zones` when the plan names only one, with the GPU
        zone's private subnet sized for the fleet's largest node count under the VPC CNI settings. Give
        `system_nodes` and `system_instance_types` as EksClusterArgs has them."""
        zones = list(dict.fromkeys([*plan.zones, *extra_zones]))
        addresses, why = plan_addresses(plan, system_nodes=system_nodes, system_instance_types=system_instance_types,
                                        vpc_cni=vpc_cni)
        return cls(**{"region": plan.region, "zones": zones, "tags": tags, "gpu_zone_addresses": addresses,
                      "address_why": why, **overrides})

    def _first_zone_blocks(self) -> int:
        """How many of the VPC's eight blocks the first zone's private subnet takes (1, 2, 4: a /19, /18, /17
        in a /16), the fewest that hold gpu_zone_addresses."""
        network = ipaddress.IPv4Network(self.cidr_block)
        block_prefix = network.prefixlen + _BLOCK_BITS
        wanted = self.gpu_zone_addresses + AWS_RESERVED_PER_SUBNET + EKS_FREE_PER_SUBNET
        blocks = 1
        while blocks < 2 ** _BLOCK_BITS and 2 ** (32 - block_prefix) * blocks < wanted:
            blocks *= 2
        return blocks

    def _layout_problem(self) -> str:
        network = ipaddress.IPv4Network(self.cidr_block)
        return (f"the GPU zone's subnet needs {self.gpu_zone_addresses:,} addresses ({self.address_why}): "
                f"{self._first_zone_blocks()} of the {network}'s 8 blocks, plus one per other zone "
                f"({len(self.zones) - 1}) and one for the public subnets, which is more than 8; "
                + ("use a larger VPC range (cidr_block, up to a /16) or fewer zones" if network.prefixlen > 16 else
                   "one /16 VPC cannot hold this fleet in one zone (AwsNetwork adds no secondary CIDR): split it "
                   "over two clusters, or run fewer nodes"))

    def subnet_cidrs(self) -> tuple[dict[str, str], dict[str, str]]:
        """(private, public) CIDR per zone: the first zone (the GPU nodes') takes as many of the eight
        blocks as its addresses need, each other zone one block, the public subnets the last block."""
        network = ipaddress.IPv4Network(self.cidr_block)
        blocks = list(network.subnets(prefixlen_diff=_BLOCK_BITS))
        public_blocks = list(blocks[-1].subnets(prefixlen_diff=_PUBLIC_BITS))
        first = self._first_zone_blocks()
        wide = first.bit_length() - 1
        private = {self.zones[0]: str(blocks[0].supernet(prefixlen_diff=wide))}
        private.update({zone: str(blocks[first + i]) for i, zone in enumerate(self.zones[1:])})
        public = {zone: str(public_blocks[i]) for i, zone in enumerate(self.zones)}
        return private, public

    def address_needs(self) -> list[RangeNeed]:
        """The first zone's private subnet against what its nodes can hold at most (accel/base/cidrs.py)."""
        if not self.gpu_zone_addresses:
            return []
        subnet = self.subnet_cidrs()[0][self.zones[0]]
        return [RangeNeed(f"private subnet of {self.zones[0]}", subnet,
                          usable_addresses(subnet, AWS_RESERVED_PER_SUBNET) - EKS_FREE_PER_SUBNET,
                          self.gpu_zone_addresses, "addresses", self.address_why,
                          "give the VPC a larger range (cidr_block) or fewer nodes per zone")]


def plan_addresses(plan, *, system_nodes: int = SYSTEM_NODES,
                   system_instance_types: Sequence[str] = SYSTEM_INSTANCE_TYPES,
                   vpc_cni: VpcCniSettings = TRAINING_VPC_CNI) -> tuple[int, str]:
    """(addresses, how counted) the GPU zone's private subnet must hold: every GPU node group at its
    maximum size plus EKS's update surge, and the system node group at its maximum (EksCluster's max_size,
    common.system_max_nodes), each node as the VPC CNI settings make it (components/aws/vpc_cni.py). The
    system node group may launch any of its instance types, so each of its nodes is counted as the type
    that holds the most addresses, as the GPU nodes are counted as their largest alternate."""
    from accel.policies import hardware

    if isinstance(system_instance_types, str) or not system_instance_types:
        raise invalid_arg(_ARGS, "system_instance_types", system_instance_types,
                          "give a list of one or more instance types, e.g. ['m6i.xlarge'], as EksClusterArgs has it")
    gpu = plan.gpu
    if gpu is None:
        return 0, ""
    training = plan.workload.kind != "inference"
    pods = (1 if training else gpu.gpus_per_node) + DAEMONSET_PODS_WITH_VPC_ADDRESSES
    facts = hardware.current().aws_gpu_instances
    per_type = []
    for instance in [gpu.machine_type, *gpu.alternate_machine_types]:
        spec = facts.get(instance)
        efa_ips = 0 if (spec is None or spec.efa_only_secondaries or gpu.efa_interfaces < 2) else gpu.efa_interfaces - 1
        per_type.append(node_addresses(instance, pods=pods, settings=vpc_cni, extra_interface_addresses=efa_ips))
    node = max(per_type, key=lambda n: n.per_node)
    groups = gpu.pools
    # EKS "Managed node update behavior", scale-up phase: a group grows by up to twice its zones (or
    # maxUnavailable) while it replaces nodes; GPU groups live in one zone.
    surge = 2 * groups
    gpu_nodes = sum(gpu.pool_sizes) + surge
    system_max = system_max_nodes(system_nodes)
    system_type = max(system_instance_types, key=system_node_addresses)   # the first of equals
    per_system_node = system_node_addresses(system_type)
    total = gpu_nodes * node.per_node + system_max * per_system_node
    largest = (f" (as {system_type}, the most of {', '.join(system_instance_types)})"
               if len(set(system_instance_types)) > 1 else "")
    why = (f"{sum(gpu.pool_sizes):,} GPU nodes in {groups} group(s) at their maximum size + {surge} update surge, "
           f"{node.why}; {system_max} system nodes x {per_system_node}{largest}")
    return total, why


class AwsNetwork(pulumi.ComponentResource):
    """VPC, private node subnets, NAT-only public subnets, S3 gateway endpoint, node and control-plane groups."""

    # Its outputs, registered as declared here (register_declared_outputs). It also sets, for the code that
    # builds on it: private_route_table_ids, zones, region.
    vpc_id: pulumi.Output[str]
    private_subnet_ids: dict[str, pulumi.Output[str]]
    public_subnet_ids: dict[str, pulumi.Output[str]]
    node_security_group_id: pulumi.Output[str]
    control_plane_security_group_id: pulumi.Output[str]
    s3_endpoint_id: pulumi.Output[str]

    def __init__(self, name: str, args: AwsNetworkArgs, opts: pulumi.ResourceOptions | None = None):
        if not isinstance(args, AwsNetworkArgs):
            raise invalid_arg(_ARGS, "args", type(args).__name__, "pass an AwsNetworkArgs")
        super().__init__("accel:aws:AwsNetwork", name, None, opts)
        import pulumi_aws as aws

        self._aws = aws
        self._name = name
        self._args = args
        child = pulumi.ResourceOptions(parent=self)
        private_cidrs, public_cidrs = args.subnet_cidrs()

        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args.cidr_block,
            enable_dns_support=True,      # EKS and the S3 endpoint need VPC DNS
            enable_dns_hostnames=True,
            tags=self._tags(f"{name}-vpc"),
            opts=child,
        )
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=self._tags(f"{name}-igw"), opts=child)

        public_subnets = {}
        private_subnets = {}
        for zone in args.zones:
            public_subnets[zone] = aws.ec2.Subnet(
                f"{name}-public-{zone}",
                vpc_id=vpc.id,
                availability_zone=zone,
                cidr_block=public_cidrs[zone],
                map_public_ip_on_launch=False,  # only NAT gateways live here, with their own EIPs
                tags=self._tags(f"{name}-public-{zone}", **{"kubernetes.io/role/elb": "1"}),
                opts=child,
            )
            private_subnets[zone] = aws.ec2.Subnet(
                f"{name}-private-{zone}",
                vpc_id=vpc.id,
                availability_zone=zone,
                cidr_block=private_cidrs[zone],
                map_public_ip_on_launch=False,
                tags=self._tags(f"{name}-private-{zone}", **{"kubernetes.io/role/internal-elb": "1"}),
                opts=child,
            )

        public_rt = aws.ec2.RouteTable(f"{name}-public-rt", vpc_id=vpc.id, tags=self._tags(f"{name}-public-rt"),
                                       opts=child)
        aws.ec2.Route(f"{name}-public-default", route_table_id=public_rt.id, destination_cidr_block="0.0.0.0/0",
                      gateway_id=igw.id, opts=child)
        for zone, subnet in public_subnets.items():
            aws.ec2.RouteTableAssociation(f"{name}-public-{zone}-rta", subnet_id=subnet.id, route_table_id=public_rt.id,
                                          opts=child)

        nat_zones = args.zones if args.nat == "per-az" else args.zones[:1]
        nats = {}
        for zone in nat_zones:
            eip = aws.ec2.Eip(f"{name}-nat-{zone}-eip", domain="vpc", tags=self._tags(f"{name}-nat-{zone}"), opts=child)
            nats[zone] = aws.ec2.NatGateway(
                f"{name}-nat-{zone}",
                allocation_id=eip.id,
                subnet_id=public_subnets[zone].id,
                connectivity_type="public",
                tags=self._tags(f"{name}-nat-{zone}"),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
            )

        private_rts = {}
        for zone, subnet in private_subnets.items():
            rt = aws.ec2.RouteTable(f"{name}-private-{zone}-rt", vpc_id=vpc.id,
                                    tags=self._tags(f"{name}-private-{zone}-rt"), opts=child)
            nat = nats.get(zone) or nats[nat_zones[0]]
            aws.ec2.Route(f"{name}-private-{zone}-default", route_table_id=rt.id, destination_cidr_block="0.0.0.0/0",
                          nat_gateway_id=nat.id, opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-private-{zone}-rta", subnet_id=subnet.id, route_table_id=rt.id,
                                          opts=child)
            private_rts[zone] = rt

        s3_endpoint = aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{args.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[rt.id for rt in private_rts.values()],
            tags=self._tags(f"{name}-s3"),
            opts=child,
        )

        node_sg, control_plane_sg = self._security_groups(vpc)

        self.vpc_id = vpc.id
        self.private_subnet_ids = {zone: s.id for zone, s in private_subnets.items()}
        self.public_subnet_ids = {zone: s.id for zone, s in public_subnets.items()}
        self.private_route_table_ids = {zone: rt.id for zone, rt in private_rts.items()}
        self.node_security_group_id = node_sg.id
        self.control_plane_security_group_id = control_plane_sg.id
        self.s3_endpoint_id = s3_endpoint.id
        self.zones = list(args.zones)
        self.region = args.region
        register_declared_outputs(self)

    def _tags(self, name: str, **extra: str) -> dict[str, str]:
        tags = resource_tags(self._args.tags, name)
        tags.update(extra)
        return tags

    def _security_groups(self, vpc):
        aws, name = self._aws, self._name
        child = pulumi.ResourceOptions(parent=self)
        node_sg = aws.ec2.SecurityGroup(
            f"{name}-nodes",
            vpc_id=vpc.id,
            description="EKS nodes: all traffic within the group (NCCL/EFA), control plane ports",
            tags=self._tags(f"{name}-nodes"),
            opts=child,
        )
        control_plane_sg = aws.ec2.SecurityGroup(
            f"{name}-control-plane",
            vpc_id=vpc.id,
            description="EKS control plane: HTTPS from nodes, kubelet and webhooks to nodes",
            tags=self._tags(f"{name}-control-plane"),
            opts=child,
        )

        def ingress(rule: str, group, description: str, *, source=None, protocol="-1", ports=None):
            from_port, to_port = ports or (None, None)
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-{rule}", security_group_id=group.id, referenced_security_group_id=source.id,
                ip_protocol=protocol, from_port=from_port, to_port=to_port, description=description,
                tags=self._tags(f"{name}-{rule}"), opts=child)

        def egress(rule: str, group, description: str, *, target=None, cidr=None, protocol="-1", ports=None):
            from_port, to_port = ports or (None, None)
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-{rule}", security_group_id=group.id,
                referenced_security_group_id=target.id if target is not None else None, cidr_ipv4=cidr,
                ip_protocol=protocol, from_port=from_port, to_port=to_port, description=description,
                tags=self._tags(f"{name}-{rule}"), opts=child)

        # EFA requires both an inbound and an outbound all-traffic rule that reference the group itself.
        ingress("nodes-from-nodes", node_sg, "All traffic between nodes (NCCL, EFA, pod networking)", source=node_sg)
        egress("nodes-to-nodes", node_sg, "All traffic between nodes (EFA needs the self-referencing egress)",
               target=node_sg)
        egress("nodes-to-anywhere", node_sg, "Images, AWS APIs and the control plane (via NAT or endpoints)",
               cidr="0.0.0.0/0")
        ingress("nodes-from-control-plane-https", node_sg, "Control plane to extension API servers on 443",
                source=control_plane_sg, protocol="tcp", ports=(443, 443))
        ingress("nodes-from-control-plane", node_sg, "Control plane to kubelet (10250) and webhooks",
                source=control_plane_sg, protocol="tcp", ports=(1025, 65535))
        ingress("control-plane-from-nodes", control_plane_sg, "Nodes to the Kubernetes API",
                source=node_sg, protocol="tcp", ports=(443, 443))
        egress("control-plane-to-nodes-https", control_plane_sg, "Control plane to extension API servers on 443",
               target=node_sg, protocol="tcp", ports=(443, 443))
        egress("control-plane-to-nodes", control_plane_sg, "Control plane to kubelet (10250) and webhooks",
               target=node_sg, protocol="tcp", ports=(1025, 65535))
        return node_sg, control_plane_sg
