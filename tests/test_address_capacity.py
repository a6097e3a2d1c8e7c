"""Address capacity: every range holds the largest node count its stack can reach (accel/base/cidrs.py).

Each rule with its mutated bad case: the 405B GKE fleet on the old fixed /14 pod range (1,024 nodes) and
/24 GPUDirect subnets (252 nodes), a node subnet too small, and the 405B EKS fleet under the VPC CNI's
default warm ENI (100 addresses per p5 node) in the old /19. The bundled stacks are recounted from what
they declare (node pool maxima, the CNI's env), not from the functions that sized them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accel.base.cidrs import (
    AWS_RESERVED_PER_SUBNET,
    EKS_FREE_PER_SUBNET,
    VpcCniSettings,
    gke_pod_block,
    gke_pod_range_nodes,
    usable_addresses,
    vpc_cni_addresses_per_node,
)
from accel.base.errors import ComponentArgsError
from accel.components.tags import ResourceTags
from accel.policies.plan import Plan

ROOT = Path(__file__).resolve().parents[1]
TAGS = ResourceTags(owner="t", workload="w", stack="s", cost_center="c")


def plan_of(planned_results, stack: str) -> Plan:
    return Plan.model_validate(planned_results[stack].plan)


# ---- the rules ------------------------------------------------------------------------------------

@pytest.mark.parametrize("max_pods, block", [(8, 16), (16, 32), (32, 64), (64, 128), (110, 256), (256, 512)])
def test_gke_gives_each_node_a_pod_block_twice_its_max_pods(max_pods, block):
    # GKE "Configure maximum Pods per node": 110 -> /24, 64 -> /25, 32 -> /26, 16 -> /27, 8 -> /28.
    assert gke_pod_block(max_pods) == block


def test_the_old_fixed_pod_range_holds_1024_nodes():
    assert gke_pod_range_nodes("10.16.0.0/14") == 1024


def test_the_vpc_cni_default_holds_two_whole_p5_enis_and_the_targets_hold_what_they_say():
    # eni-and-ip-target.md: WARM_ENI_TARGET=1 keeps a full ENI free (p3dn, 3 pods: 2 ENIs, 98 secondary);
    # p5.48xlarge: 2 ENIs of 50 addresses on network card 0 (eni-max-pods.txt: 100).
    assert vpc_cni_addresses_per_node(VpcCniSettings(), pods=3, ips_per_eni=50, max_enis=2) == 100
    targets = VpcCniSettings(warm_eni_target=None, warm_ip_target=5, minimum_ip_target=10)
    # The same table: MINIMUM 10, WARM 5 -> 7 pods: 12 secondary, 15 pods: 20 secondary (one ENI).
    assert vpc_cni_addresses_per_node(targets, pods=7, ips_per_eni=50, max_enis=2) == 1 + 12
    assert vpc_cni_addresses_per_node(targets, pods=15, ips_per_eni=50, max_enis=2) == 1 + 20
    # Prefix delegation: one /28 per 16 pods plus one warm /28 by default, so never under 33 per node.
    prefixes = VpcCniSettings(prefix_delegation=True)
    assert vpc_cni_addresses_per_node(prefixes, pods=5, ips_per_eni=50, max_enis=2) == 1 + 32


# ---- Google Cloud ---------------------------------------------------------------------------------

def test_the_405b_gke_fleet_on_the_old_pod_range_is_refused_naming_range_need_and_fix(planned_results):
    from accel.components.gcp.network import GcpNetworkArgs

    plan = plan_of(planned_results, "llama-405b-h100-gcp")
    with pytest.raises(ComponentArgsError) as caught:
        GcpNetworkArgs.for_plan(plan, tags=TAGS, project="p", pods_cidr="10.16.0.0/14")
    message = str(caught.value)
    assert "pods_cidr 10.16.0.0/14 holds 1,024 nodes" in message
    assert "2,048 accelerator nodes in 15 pool(s)" in message and "/12 or larger" in message


def test_the_405b_gke_fleet_on_24_gpudirect_subnets_is_refused(planned_results):
    from accel.components.gcp.network import GcpNetworkArgs

    plan = plan_of(planned_results, "llama-405b-h100-gcp")
    with pytest.raises(ComponentArgsError) as caught:
        GcpNetworkArgs.for_plan(plan, tags=TAGS, project="p", fabric_subnet_prefix=24)
    message = str(caught.value)
    assert "holds 252 nodes" in message and "2,048 GPU nodes" in message and "/20 fabric subnets" in message


def test_a_node_subnet_smaller_than_the_fleet_is_refused(planned_results):
    from accel.components.gcp.network import GcpNetworkArgs

    plan = plan_of(planned_results, "llama-70b-a3mega-gcp")
    with pytest.raises(ComponentArgsError, match=r"node_cidr 10.0.0.0/27 holds 28 nodes"):
        GcpNetworkArgs.for_plan(plan, tags=TAGS, project="p", node_cidr="10.0.0.0/27")


def gke_node_maxima(resources: list[dict]) -> tuple[int, int]:
    """(all nodes, GPUDirect nodes) the declared node pools reach at their maxima, + 1 surge per pool."""
    cluster = next(r for r in resources if r["type"] == "gcp:container/cluster:Cluster")
    zones = len(cluster["inputs"].get("nodeLocations") or [None])
    total = fabric = 0
    for pool in (r for r in resources if r["type"] == "gcp:container/nodePool:NodePool"):
        inputs = pool["inputs"]
        scaling = inputs.get("autoscaling") or {}
        if "totalMaxNodeCount" in scaling:
            nodes = scaling["totalMaxNodeCount"]
        elif "maxNodeCount" in scaling:
            nodes = scaling["maxNodeCount"] * len(inputs.get("nodeLocations") or [None] * zones)
        else:
            nodes = inputs.get("nodeCount", 0) * len(inputs.get("nodeLocations") or [None] * zones)
        total += nodes + 1
        if (inputs.get("networkConfig") or {}).get("additionalNodeNetworkConfigs"):
            fabric += nodes
    return total, fabric


@pytest.mark.parametrize("stack", ["llama-405b-h100-gcp", "llama-70b-a3mega-gcp", "llama-70b-tpu", "llama-70b-v5p"])
def test_every_gke_stacks_ranges_hold_what_its_node_pools_can_reach(planned_stacks, stack):
    resources = planned_stacks[stack]["resources"]
    nodes, fabric_nodes = gke_node_maxima(resources)
    subnets = {r["name"]: r["inputs"] for r in resources if r["type"] == "gcp:compute/subnetwork:Subnetwork"}
    main = next(s for s in subnets.values() if s.get("secondaryIpRanges"))
    pods = next(r["ipCidrRange"] for r in main["secondaryIpRanges"] if r["rangeName"] == "pods")
    assert gke_pod_range_nodes(pods) >= nodes
    assert usable_addresses(main["ipCidrRange"], 4) >= nodes
    for name, subnet in subnets.items():
        if subnet is not main:
            assert usable_addresses(subnet["ipCidrRange"], 4) >= fabric_nodes, name


# ---- AWS ------------------------------------------------------------------------------------------

def test_the_405b_eks_fleet_under_the_cnis_default_warm_eni_is_refused(planned_results):
    from accel.components.aws.network import AwsNetworkArgs
    from accel.components.aws.vpc_cni import DEFAULT_VPC_CNI

    plan = plan_of(planned_results, "llama-405b-h100-aws")
    with pytest.raises(ComponentArgsError) as caught:
        AwsNetworkArgs.for_plan(plan, TAGS, extra_zones=["us-east-1b"], vpc_cni=DEFAULT_VPC_CNI)
    message = str(caught.value)
    assert "100 per p5.48xlarge" in message and "WARM_ENI_TARGET=1" in message and "more than 8" in message


def test_a_hand_set_need_larger_than_the_subnet_is_refused():
    from accel.components.aws.network import AwsNetworkArgs

    wide = AwsNetworkArgs(region="us-east-1", zones=["us-east-1a", "us-east-1b"], tags=TAGS,
                          cidr_block="10.0.0.0/20", gpu_zone_addresses=900, address_why="test")
    assert wide.subnet_cidrs()[0] == {"us-east-1a": "10.0.0.0/22", "us-east-1b": "10.0.4.0/23"}
    with pytest.raises(ComponentArgsError, match=r"needs 5,000 addresses \(test\).*more than 8"):
        AwsNetworkArgs(region="us-east-1", zones=["us-east-1a", "us-east-1b"], tags=TAGS,
                       cidr_block="10.0.0.0/20", gpu_zone_addresses=5000, address_why="test")


@pytest.mark.parametrize("stack", ["llama-405b-h100-aws", "llama-70b-finetune-aws", "llama-8b-serving-gpu"])
def test_every_eks_stacks_gpu_zone_holds_its_node_groups_at_their_maxima(planned_stacks, stack):
    from accel.components.aws.vpc_cni import eni_limits, system_node_addresses

    resources = planned_stacks[stack]["resources"]
    addon = next(r for r in resources if r["type"] == "aws:eks/addon:Addon" and r["inputs"]["addonName"] == "vpc-cni")
    env = json.loads(addon["inputs"]["configurationValues"])["env"]
    settings = VpcCniSettings(warm_eni_target=int(env["WARM_ENI_TARGET"]) if "WARM_ENI_TARGET" in env else None,
                              warm_ip_target=int(env["WARM_IP_TARGET"]) if "WARM_IP_TARGET" in env else None,
                              minimum_ip_target=int(env["MINIMUM_IP_TARGET"]) if "MINIMUM_IP_TARGET" in env else None,
                              prefix_delegation=env.get("ENABLE_PREFIX_DELEGATION") == "true")
    subnets = {r["urn"].rsplit("::", 1)[0] + "::" + r["name"]: r for r in resources
               if r["type"] == "aws:ec2/subnet:Subnet" and "-private-" in r["name"]}
    first = min(subnets.values(), key=lambda r: r["inputs"]["cidrBlock"])
    need = 0
    for group in (r for r in resources if r["type"] == "aws:eks/nodeGroup:NodeGroup"):
        maximum = group["inputs"]["scalingConfig"]["maxSize"]
        if group["name"].endswith("-system"):
            need += maximum * max(map(system_node_addresses, group["inputs"]["instanceTypes"]))
            continue
        types = group["inputs"].get("instanceTypes") or []
        enis, ips = max((eni_limits(t) for t in types), default=eni_limits(""))
        per_node = vpc_cni_addresses_per_node(settings, pods=5, ips_per_eni=ips, max_enis=enis)
        need += (maximum + 2) * per_node
    assert usable_addresses(first["inputs"]["cidrBlock"], AWS_RESERVED_PER_SUBNET) - EKS_FREE_PER_SUBNET >= need


@pytest.mark.parametrize("system_nodes", [None, 5])   # None: both sides left at their defaults
def test_the_gpu_zone_counts_the_system_node_group_eks_cluster_builds(declare, planned_results, system_nodes):
    """The GPU zone's subnet is sized for the system node group as EksCluster declares it (its maxSize and
    instance type), by default and when the node count is set on both."""
    from accel.components.aws.cluster import EksCluster, EksClusterArgs
    from accel.components.aws.network import plan_addresses
    from accel.components.aws.vpc_cni import system_node_addresses

    given = {} if system_nodes is None else {"system_nodes": system_nodes}
    args = EksClusterArgs(region="us-east-1", subnet_ids=["subnet-a", "subnet-b"], control_plane_security_group_id="sg",
                          node_security_group_id="sg", tags=TAGS, public_access_cidrs=["35.190.10.0/24"], **given)
    group = declare(lambda: EksCluster("train", args)).named("train-system").inputs
    _, why = plan_addresses(plan_of(planned_results, "llama-70b-finetune-aws"), **given)
    counted = (f"{group['scalingConfig']['maxSize']} system nodes x "
               f"{max(map(system_node_addresses, group['instanceTypes']))}")
    assert why.endswith("; " + counted)


@pytest.mark.parametrize("types", [["m6i.xlarge", "m6i.4xlarge"], ["m6i.4xlarge", "m6i.xlarge"]])
def test_the_gpu_zone_counts_the_system_node_groups_largest_instance_type(declare, planned_results, types):
    """The system node group may launch any type it lists: each of its nodes is counted as the type with the most
    addresses (m6i.4xlarge: 8 ENIs x 30 = 240, m6i.xlarge 4 x 15 = 60), wherever that type stands in the list."""
    from accel.components.aws.cluster import EksCluster, EksClusterArgs
    from accel.components.aws.network import AwsNetworkArgs, plan_addresses

    plan = plan_of(planned_results, "llama-70b-finetune-aws")
    args = EksClusterArgs(region="us-east-1", subnet_ids=["subnet-a", "subnet-b"], control_plane_security_group_id="sg",
                          node_security_group_id="sg", tags=TAGS, public_access_cidrs=["35.190.10.0/24"],
                          system_instance_types=types)
    group = declare(lambda: EksCluster("train", args)).named("train-system").inputs
    assert group["instanceTypes"] == types
    maximum = group["scalingConfig"]["maxSize"]
    default, default_why = plan_addresses(plan)
    assert default_why.endswith(f"; {maximum} system nodes x 60")
    total, why = plan_addresses(plan, system_instance_types=group["instanceTypes"])
    assert total == default + maximum * (240 - 60)
    assert why.endswith(f"; {maximum} system nodes x 240 (as m6i.4xlarge, the most of {', '.join(types)})")
    network = AwsNetworkArgs.for_plan(plan, TAGS, extra_zones=["us-east-1b"], system_instance_types=types)
    assert network.gpu_zone_addresses == total


def test_a_system_instance_type_the_table_does_not_list_is_counted_at_its_largest_capacity():
    """eni_limits' fallback (the smallest entry) over-counts a GPU node's few pods, but a system node is counted at
    its every address: an unlisted type there is counted as the table's largest, never as a small one."""
    from accel.components.aws.vpc_cni import eni_limits, system_node_addresses
    from accel.policies import hardware

    largest = max(e.enis * e.ipv4_per_eni for e in hardware.current().aws_eni_limits.values())
    assert system_node_addresses("m7i.16xlarge") == largest == 15 * 50
    assert eni_limits("m7i.16xlarge") == (4, 15)   # a GPU node's fallback stays the smallest entry
    assert system_node_addresses("m6i.xlarge") == 4 * 15


def test_the_system_instance_types_are_a_list(planned_results):
    from accel.components.aws.network import AwsNetworkArgs

    plan = plan_of(planned_results, "llama-70b-finetune-aws")
    for bad in ("m6i.4xlarge", []):
        with pytest.raises(ComponentArgsError, match=r"AwsNetworkArgs\.system_instance_types.*a list of one or more"):
            AwsNetworkArgs.for_plan(plan, TAGS, extra_zones=["us-east-1b"], system_instance_types=bad)
