"""AwsNetwork: private node subnets, NAT-only public subnets, S3 endpoint, training security groups."""

import ipaddress

import pytest
from hypothesis import given, settings, strategies as st

from accel.base.errors import ComponentArgsError
from accel.components.aws.network import AwsNetwork, AwsNetworkArgs
from accel.components.tags import ResourceTags
from tests import harness

TAGS = ResourceTags(workload="llama-70b", stack="aws-dev", owner="ml-platform")
ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
SUBNET = "aws:ec2/subnet:Subnet"
NAT = "aws:ec2/natGateway:NatGateway"
ROUTE = "aws:ec2/route:Route"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"


def build(**overrides):
    values = dict(region="us-east-1", zones=ZONES, tags=TAGS)
    values.update(overrides)
    return lambda: AwsNetwork("net", AwsNetworkArgs(**values))


def rejected(declare, build_args) -> str:
    return str(harness.rejected(declare, build_args, ComponentArgsError))


def subnets(capture, kind):
    return [r for r in capture.of_type(SUBNET) if r.name.startswith(f"net-{kind}-")]


def test_one_private_subnet_per_zone_and_none_maps_public_ips(declare):
    capture = declare(build())
    private = subnets(capture, "private")
    assert sorted(s.inputs["availabilityZone"] for s in private) == ZONES
    assert all(s.inputs["mapPublicIpOnLaunch"] is False for s in capture.of_type(SUBNET))


def test_private_subnets_are_tagged_for_internal_load_balancers(declare):
    capture = declare(build())
    assert all(s.inputs["tags"]["kubernetes.io/role/internal-elb"] == "1" for s in subnets(capture, "private"))


def test_nat_gateways_sit_in_public_subnets_one_per_zone(declare):
    capture = declare(build())
    nats = capture.of_type(NAT)
    assert len(nats) == len(ZONES)
    public_ids = {f"net-public-{zone}-id" for zone in ZONES}
    if all(n.inputs.get("subnetId") for n in nats):  # ids are unknown in preview
        assert {n.inputs["subnetId"] for n in nats} == public_ids


def test_single_nat_option_routes_every_zone_through_one_gateway(declare):
    capture = declare(build(nat="single"))
    assert len(capture.of_type(NAT)) == 1
    private_defaults = [r for r in capture.of_type(ROUTE) if r.name.startswith("net-private-")]
    assert len(capture.of_type("aws:ec2/eip:Eip")) == 1
    assert len(private_defaults) == len(ZONES)
    assert all(r.inputs["destinationCidrBlock"] == "0.0.0.0/0" for r in private_defaults)
    nat_urn = capture.of_type(NAT)[0].urn
    assert all(nat_urn in r.dependencies for r in private_defaults)


def test_only_the_public_route_table_reaches_the_internet_gateway(declare):
    capture = declare(build())
    igw = capture.named("net-igw")
    via_igw = [r for r in capture.of_type(ROUTE) if igw.urn in r.dependencies]
    assert [r.name for r in via_igw] == ["net-public-default"]


def test_s3_gateway_endpoint_serves_every_private_route_table(declare):
    capture = declare(build())
    endpoint = capture.named("net-s3")
    assert endpoint.inputs["serviceName"] == "com.amazonaws.us-east-1.s3"
    assert endpoint.inputs["vpcEndpointType"] == "Gateway"
    assert len(endpoint.inputs["routeTableIds"]) == len(ZONES)
    private_tables = {capture.named(f"net-private-{zone}-rt").urn for zone in ZONES}
    assert private_tables <= set(endpoint.dependencies)


def test_nodes_allow_all_traffic_to_and_from_their_own_group(declare):
    """NCCL over EFA needs all protocols inside the group, inbound and outbound."""
    capture = declare(build())
    nodes = capture.named("net-nodes")
    inbound = capture.named("net-nodes-from-nodes")
    outbound = capture.named("net-nodes-to-nodes")
    for rule in (inbound, outbound):
        assert rule.inputs["ipProtocol"] == "-1"
        assert nodes.urn in rule.dependencies
        assert "fromPort" not in rule.inputs and "cidrIpv4" not in rule.inputs


def test_control_plane_accepts_only_https_from_nodes(declare):
    capture = declare(build())
    control_plane = capture.named("net-control-plane")
    into_control_plane = [r for r in capture.of_type(INGRESS) if r.name.startswith("net-control-plane-")]
    assert len(into_control_plane) == 1
    rule = into_control_plane[0]
    assert (rule.inputs["ipProtocol"], rule.inputs["fromPort"], rule.inputs["toPort"]) == ("tcp", 443, 443)
    assert control_plane.urn in rule.dependencies and capture.named("net-nodes").urn in rule.dependencies


def test_no_rule_opens_anything_to_the_internet(declare):
    capture = declare(build())
    assert all("cidrIpv4" not in r.inputs for r in capture.of_type(INGRESS))
    open_egress = [r.name for r in capture.of_type(EGRESS) if r.inputs.get("cidrIpv4") == "0.0.0.0/0"]
    assert open_egress == ["net-nodes-to-anywhere"]


def test_vpc_has_dns_for_eks_and_endpoints(declare):
    vpc = declare(build()).named("net-vpc")
    assert vpc.inputs["enableDnsSupport"] is True and vpc.inputs["enableDnsHostnames"] is True
    assert vpc.inputs["cidrBlock"] == "10.0.0.0/16"


def test_every_aws_resource_with_tags_carries_the_stack_tags(declare):
    capture = declare(build())
    tagged = [r for r in capture.resources if r.custom and "tags" in r.inputs]
    assert len(tagged) >= 20
    for resource in tagged:
        assert resource.inputs["tags"]["accel:workload"] == "llama-70b", resource.name
        assert resource.inputs["tags"]["accel:owner"] == "ml-platform", resource.name


def test_ephemeral_stack_tags_mark_expiry(declare):
    from datetime import datetime, timezone
    tags = ResourceTags(workload="w", stack="s", ephemeral=True, expires_at=datetime(2026, 5, 1, tzinfo=timezone.utc))
    vpc = declare(build(tags=tags)).named("net-vpc")
    assert vpc.inputs["tags"]["accel:ephemeral"] == "true"
    assert vpc.inputs["tags"]["accel:expires-at"] == "2026-05-01t00-00-00z"


def test_outputs_give_private_subnets_by_zone():
    holder = {}

    def program():
        holder["net"] = AwsNetwork("net", AwsNetworkArgs(region="us-east-1", zones=ZONES, tags=TAGS))

    from tests.harness import run
    run(program, mode="up")
    net = holder["net"]
    assert list(net.private_subnet_ids) == ZONES
    assert net.zones == ZONES and net.region == "us-east-1"


def test_one_zone_is_rejected_because_eks_needs_two(declare):
    message = rejected(declare, build(zones=["us-east-1a"]))
    assert "AwsNetworkArgs.zones" in message and "at least two" in message


def test_zone_of_another_region_is_rejected(declare):
    message = rejected(declare, build(zones=["us-east-1a", "us-west-2b"]))
    assert "zones[1]" in message and "us-east-1" in message


@pytest.mark.parametrize("cidr", ["10.0.0.0/24", "10.0.0.1/16", "not-a-cidr"])
def test_unusable_vpc_cidr_is_rejected(declare, cidr):
    assert "AwsNetworkArgs.cidr_block" in rejected(declare, build(cidr_block=cidr))


def test_unknown_nat_mode_is_rejected(declare):
    assert "'per-az'" in rejected(declare, build(nat="none"))


@settings(max_examples=40, deadline=None)
@given(prefix=st.integers(16, 20), zone_count=st.integers(2, 6))
def test_subnets_never_overlap_and_stay_inside_the_vpc(prefix, zone_count):
    zones = [f"us-west-2{letter}" for letter in "abcdef"[:zone_count]]
    args = AwsNetworkArgs(region="us-west-2", zones=zones, tags=TAGS, cidr_block=f"10.64.0.0/{prefix}")
    private, public = args.subnet_cidrs()
    networks = [ipaddress.IPv4Network(c) for c in [*private.values(), *public.values()]]
    vpc = ipaddress.IPv4Network(args.cidr_block)
    assert all(n.subnet_of(vpc) for n in networks)
    assert not any(a.overlaps(b) for i, a in enumerate(networks) for b in networks[i + 1:])
    assert all(ipaddress.IPv4Network(c).num_addresses >= 512 for c in private.values())


def test_the_outputs_it_registers_are_the_ones_its_class_declares(monkeypatch):
    registered = {}
    monkeypatch.setattr(AwsNetwork, "register_outputs", lambda self, outputs: registered.update(outputs))
    from tests.harness import run
    run(build(), mode="up")
    assert list(registered) == ["vpc_id", "private_subnet_ids", "public_subnet_ids", "node_security_group_id",
                                "control_plane_security_group_id", "s3_endpoint_id"]
