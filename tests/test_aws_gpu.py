"""GpuNodeGroup: instance types, capacity, taints, IMDSv2, EFA interfaces and placement, reservations."""

import base64
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings, strategies as st

from accel.base.errors import ComponentArgsError
from accel.components.aws.gpu import GpuNodeGroup, GpuNodeGroupArgs, network_interfaces
from accel.policies import hardware
from accel.policies.cloud.capacity_blocks import CapacityBlockWindow, load_capacity_block_facts
from accel.components.tags import ResourceTags
from accel.policies.plan import Capacity, GpuPool
from tests import harness

TAGS = ResourceTags(workload="llama-70b", stack="aws-dev", owner="ml-platform")
SUBNETS = {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b", "us-east-1c": "subnet-c"}
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT = "aws:ec2/placementGroup:PlacementGroup"

P5_EFA = GpuPool(accelerator="h100-80gb", machine_type="p5.48xlarge", gpus_per_node=8, nodes=16, fabric="efa", efa_interfaces=32,
                 compact_placement=True)
G6E_SPOT = GpuPool(accelerator="l40s", machine_type="g6e.4xlarge", alternate_machine_types=["g6e.8xlarge", "g6e.16xlarge"],
                   gpus_per_node=1, nodes=6)
P4D_EFA = GpuPool(accelerator="a100-40gb", machine_type="p4d.24xlarge", gpus_per_node=8, nodes=4, fabric="efa", efa_interfaces=4,
                  compact_placement=True)
ON_DEMAND = Capacity()
SPOT = Capacity(provisioning="spot")
RESERVATION = Capacity(provisioning="reservation", reservation="cr-0a1b2c3d4e5f67890")
CAPACITY_BLOCK = Capacity(provisioning="capacity-block", reservation="cr-02168da1478b509e0")
SCHEDULE = "aws:autoscaling/schedule:Schedule"
# A one-week block as EC2 sells them (11:30 UTC start and end).
BLOCK = CapacityBlockWindow(datetime(2030, 1, 6, 11, 30, tzinfo=timezone.utc),
                            datetime(2030, 1, 13, 11, 30, tzinfo=timezone.utc))


def args(pool=P5_EFA, capacity=ON_DEMAND, **overrides) -> GpuNodeGroupArgs:
    values = dict(pool=pool, capacity=capacity, cluster_name="train", node_role_arn="arn:aws:iam::123456789012:role/n",
                  subnet_ids=SUBNETS, security_group_ids=["sg-nodes"], tags=TAGS, availability_zone="us-east-1a")
    if capacity.provisioning == "capacity-block":
        values["capacity_block_window"] = BLOCK
    values.update(overrides)
    return GpuNodeGroupArgs(**values)


def build(pool=P5_EFA, capacity=ON_DEMAND, **overrides):
    return lambda: GpuNodeGroup("gpu", args(pool, capacity, **overrides))


def parts(capture):
    """(node group, launch template, placement group or None)."""
    placement = capture.of_type(PLACEMENT)
    return capture.named("gpu-nodes"), capture.named("gpu-template"), placement[0] if placement else None


def rejected(declare, build_args) -> str:
    return str(harness.rejected(declare, build_args, ComponentArgsError))


# --- p5.48xlarge, EFA, on-demand --------------------------------------------------------


def test_p5_on_demand_group_uses_the_nvidia_al2023_ami_and_one_instance_type(declare):
    group, _, _ = parts(declare(build()))
    assert group.inputs["amiType"] == "AL2023_x86_64_NVIDIA"
    assert group.inputs["capacityType"] == "ON_DEMAND"
    assert group.inputs["instanceTypes"] == ["p5.48xlarge"]


def test_p5_gets_one_efa_interface_per_network_card(declare):
    _, template, _ = parts(declare(build()))
    interfaces = template.inputs["networkInterfaces"]
    assert len(interfaces) == 32
    assert sorted(i["networkCardIndex"] for i in interfaces) == list(range(32))
    primary = interfaces[0]
    assert (primary["networkCardIndex"], primary["deviceIndex"], primary["interfaceType"]) == (0, 0, "efa")
    assert all(i["deviceIndex"] == 1 and i["interfaceType"] == "efa-only" for i in interfaces[1:])


def test_efa_interfaces_carry_the_node_security_group_and_die_with_the_node(declare):
    _, template, _ = parts(declare(build()))
    for interface in template.inputs["networkInterfaces"]:
        assert interface["securityGroups"] == ["sg-nodes"]
        assert interface["deleteOnTermination"] == "true"
        assert "subnetId" not in interface  # a managed node group picks the subnet


def test_efa_nodes_share_a_cluster_placement_group_in_one_zone(declare):
    group, template, placement = parts(declare(build()))
    assert placement is not None and placement.inputs["strategy"] == "cluster"
    assert placement.urn in template.dependencies and "placement" in template.inputs
    assert group.inputs["subnetIds"] == ["subnet-a"]


def test_gpu_nodes_are_tainted_and_labelled(declare):
    group, _, _ = parts(declare(build(accelerator="h100-80gb")))
    assert group.inputs["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
    labels = group.inputs["labels"]
    assert labels["accel.dev/accelerator"] == "h100-80gb"
    assert labels["accel.dev/efa"] == "true"
    assert labels["nvidia.com/gpu.present"] == "true"
    assert labels["accel.dev/capacity"] == "on-demand"


def test_group_scales_from_zero_to_the_plan_node_count(declare):
    group, _, _ = parts(declare(build()))
    assert group.inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 16, "maxSize": 16}


def test_start_nodes_sets_only_the_initial_size(declare):
    group, _, _ = parts(declare(build(start_nodes=0)))
    assert group.inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 16}


def test_launch_template_requires_imdsv2_and_encrypts_the_root_volume(declare):
    _, template, _ = parts(declare(build()))
    assert template.inputs["metadataOptions"] == {"httpEndpoint": "enabled", "httpTokens": "required",
                                                  "httpPutResponseHopLimit": 1}
    root = template.inputs["blockDeviceMappings"][0]
    assert root["deviceName"] == "/dev/xvda"
    assert root["ebs"]["encrypted"] == "true" and root["ebs"]["volumeType"] == "gp3"
    assert root["ebs"]["volumeSize"] == 512


def test_local_nvme_is_striped_through_nodeadm(declare):
    _, template, _ = parts(declare(build()))
    user_data = base64.b64decode(template.inputs["userData"]).decode()
    assert "Content-Type: application/node.eks.aws" in user_data
    assert "strategy: RAID0" in user_data


def test_launch_template_tags_instances_volumes_and_interfaces(declare):
    tags = ResourceTags(workload="w", stack="s", ephemeral=True, expires_at=datetime(2026, 5, 1, tzinfo=timezone.utc))
    _, template, _ = parts(declare(build(capacity=SPOT, pool=G6E_SPOT, availability_zone=None, tags=tags)))
    specs = {s["resourceType"]: s["tags"] for s in template.inputs["tagSpecifications"]}
    assert set(specs) == {"instance", "volume", "network-interface"}
    for rendered in specs.values():
        assert rendered["accel:capacity"] == "spot"
        assert rendered["accel:ephemeral"] == "true"
        assert rendered["accel:expires-at"] == "2026-05-01t00-00-00z"


def test_node_group_waits_for_the_cluster_compute_dependencies(declare):
    import pulumi

    def program():
        marker = pulumi.CustomResource("test:index:Marker", "cni-ready")
        GpuNodeGroup("gpu", args(depends_on=[marker]))

    capture = declare(program)
    assert capture.named("cni-ready").urn in capture.named("gpu-nodes").dependencies


# --- g6e spot with three instance types -------------------------------------------------


def test_g6e_spot_group_diversifies_over_three_instance_types(declare):
    group, _, placement = parts(declare(build(G6E_SPOT, SPOT, availability_zone=None)))
    assert group.inputs["capacityType"] == "SPOT"
    assert group.inputs["instanceTypes"] == ["g6e.4xlarge", "g6e.8xlarge", "g6e.16xlarge"]
    assert placement is None


def test_spot_without_a_placement_need_spreads_over_every_private_subnet(declare):
    group, _, _ = parts(declare(build(G6E_SPOT, SPOT, availability_zone=None)))
    assert sorted(group.inputs["subnetIds"]) == ["subnet-a", "subnet-b", "subnet-c"]


def test_spot_is_chosen_by_capacity_type_not_by_launch_template_market_options(declare):
    _, template, _ = parts(declare(build(G6E_SPOT, SPOT, availability_zone=None)))
    assert "instanceMarketOptions" not in template.inputs  # EKS managed node groups reject it
    assert "capacityReservationSpecification" not in template.inputs


def test_non_efa_node_has_one_private_interface_without_a_public_ip(declare):
    _, template, _ = parts(declare(build(G6E_SPOT, SPOT, availability_zone=None)))
    assert template.inputs["networkInterfaces"] == [{
        "deviceIndex": 0, "networkCardIndex": 0, "associatePublicIpAddress": "false",
        "deleteOnTermination": "true", "securityGroups": ["sg-nodes"]}]


def test_spot_nodes_are_tagged_spot(declare):
    group, _, _ = parts(declare(build(G6E_SPOT, SPOT, availability_zone=None)))
    assert group.inputs["tags"]["accel:capacity"] == "spot"
    assert group.inputs["labels"]["accel.dev/capacity"] == "spot"


# --- p4d with an On-Demand Capacity Reservation -----------------------------------------


def test_p4d_reservation_is_on_demand_capacity_aimed_at_the_reservation(declare):
    group, template, _ = parts(declare(build(P4D_EFA, RESERVATION)))
    assert group.inputs["capacityType"] == "ON_DEMAND"
    assert group.inputs["instanceTypes"] == ["p4d.24xlarge"]
    assert template.inputs["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0a1b2c3d4e5f67890"}}
    assert "instanceMarketOptions" not in template.inputs


def test_p4d_uses_four_efa_interfaces_of_type_efa(declare):
    _, template, _ = parts(declare(build(P4D_EFA, RESERVATION)))
    interfaces = template.inputs["networkInterfaces"]
    assert [i["interfaceType"] for i in interfaces] == ["efa"] * 4  # no EFA-only on p4d
    assert [i["networkCardIndex"] for i in interfaces] == [0, 1, 2, 3]
    assert [i["deviceIndex"] for i in interfaces] == [0, 1, 1, 1]


def test_reservation_group_stays_in_the_reservation_zone_without_a_new_placement_group(declare):
    # An existing ODCR cannot be moved into a new cluster placement group (EC2 docs, cr-cpg.html).
    group, template, placement = parts(declare(build(P4D_EFA, RESERVATION, availability_zone="us-east-1b")))
    assert group.inputs["subnetIds"] == ["subnet-b"]
    assert placement is None and "placement" not in template.inputs


# --- capacity blocks ----------------------------------------------------------------------


def test_capacity_block_uses_capacity_block_market_and_the_template_instance_type(declare):
    group, template, _ = parts(declare(build(P5_EFA, CAPACITY_BLOCK)))
    assert group.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert "instanceTypes" not in group.inputs
    assert template.inputs["instanceType"] == "p5.48xlarge"
    assert template.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert template.inputs["capacityReservationSpecification"]["capacityReservationTarget"] == {
        "capacityReservationId": "cr-02168da1478b509e0"}


def test_capacity_block_group_starts_at_zero_and_needs_no_placement_group(declare):
    # EKS capacity-blocks-mng: desired size 0 until the block is active; no cluster placement group needed.
    group, template, placement = parts(declare(build(P5_EFA, CAPACITY_BLOCK)))
    assert group.inputs["scalingConfig"]["desiredSize"] == 0
    assert group.inputs["scalingConfig"]["maxSize"] == P5_EFA.nodes
    assert placement is None and "placement" not in template.inputs


def schedules(capture) -> dict[str, dict]:
    return {r.name: r.inputs for r in capture.of_type(SCHEDULE)}


def test_capacity_block_group_scales_out_to_the_block_size_at_the_block_start(declare):
    actions = schedules(declare(build(P5_EFA, CAPACITY_BLOCK)))
    scale_out = actions["gpu-scale-out"]
    assert scale_out["startTime"] == "2030-01-06T11:30:00Z"
    assert (scale_out["minSize"], scale_out["maxSize"], scale_out["desiredCapacity"]) == (0, P5_EFA.nodes, P5_EFA.nodes)
    assert scale_out["scheduledActionName"] == "gpu-scale-out"


def test_capacity_block_group_scales_in_to_zero_before_ec2_terminates_the_block(declare):
    facts = load_capacity_block_facts()
    scale_in = schedules(declare(build(P5_EFA, CAPACITY_BLOCK)))["gpu-scale-in"]
    runs_at = datetime.strptime(scale_in["startTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    # "Scale in ... to zero more than 30 minutes before the Capacity Block reservation end time" (ASG guide).
    assert BLOCK.end - runs_at > facts.ec2_terminates_before_end
    assert runs_at > BLOCK.start
    assert (scale_in["minSize"], scale_in["desiredCapacity"]) == (0, 0)


def test_capacity_block_schedules_act_on_the_node_groups_auto_scaling_group(declare):
    capture = declare(build(P5_EFA, CAPACITY_BLOCK))
    group = capture.named("gpu-nodes")
    for action in capture.of_type(SCHEDULE):
        assert group.urn in action.dependencies
        assert action.parent == group.parent  # children of the GpuNodeGroup component
        # Unknown in preview; in up mode, the group EKS reports (the mock answers as the provider does).
        assert action.inputs["autoscalingGroupName"] in (None, "eks-gpu-nodes-mock")


@pytest.mark.parametrize("capacity", [ON_DEMAND, RESERVATION])
def test_only_capacity_block_groups_are_scheduled(declare, capacity):
    assert schedules(declare(build(P5_EFA, capacity))) == {}


def test_a_capacity_block_group_without_its_window_is_refused(declare):
    message = rejected(declare, build(P5_EFA, CAPACITY_BLOCK, capacity_block_window=None))
    assert "capacity_block_window" in message and "capacity-blocks-mng" in message


def test_a_window_on_other_capacity_is_refused(declare):
    message = rejected(declare, build(P5_EFA, RESERVATION, capacity_block_window=BLOCK))
    assert "capacity_block_window" in message and "'reservation'" in message


def test_a_capacity_block_group_cannot_start_above_zero(declare):
    assert "start_nodes" in rejected(declare, build(P5_EFA, CAPACITY_BLOCK, start_nodes=4))


def test_fsx_nodes_install_the_lustre_client_at_boot_and_keep_the_nvme_raid(declare):
    _, template, _ = parts(declare(build(lustre_client=True)))
    user_data = base64.b64decode(template.inputs["userData"]).decode()
    assert "dnf install -y lustre-client" in user_data and "strategy: RAID0" in user_data
    _, plain, _ = parts(declare(build()))
    assert "lustre-client" not in base64.b64decode(plain.inputs["userData"]).decode()


# --- no public addresses anywhere -------------------------------------------------------


@pytest.mark.parametrize("pool,capacity,zone", [
    (P5_EFA, ON_DEMAND, "us-east-1a"), (G6E_SPOT, SPOT, None), (P4D_EFA, RESERVATION, "us-east-1a")])
def test_no_node_interface_can_get_a_public_ip(declare, pool, capacity, zone):
    _, template, _ = parts(declare(build(pool, capacity, availability_zone=zone)))
    interfaces = template.inputs["networkInterfaces"]
    # EC2 never auto-assigns a public IPv4 to a multi-interface launch; a single interface says "false".
    assert len(interfaces) > 1 or interfaces[0]["associatePublicIpAddress"] == "false"
    assert all(i.get("associatePublicIpAddress", "false") == "false" for i in interfaces)
    assert "vpcSecurityGroupIds" not in template.inputs


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_efa_layout_is_one_interface_per_card_with_only_the_primary_on_device_zero(data):
    instances = hardware.current().aws_gpu_instances
    efa_types = sorted(t for t, facts in instances.items() if facts.efa_cards and not facts.efa_first_card)
    facts = instances[data.draw(st.sampled_from(efa_types))]
    count = data.draw(st.integers(1, facts.efa_cards))
    interfaces = network_interfaces(count, facts.efa_only_secondaries, ["sg"])
    assert [i["network_card_index"] for i in interfaces] == list(range(count))
    assert [i["device_index"] for i in interfaces] == [0] + [1] * (count - 1)
    assert interfaces[0]["interface_type"] == "efa"
    assert all(i["interface_type"] in ("efa", "efa-only") for i in interfaces)


@settings(max_examples=20, deadline=None)
@given(count=st.integers(1, 16), device=st.sampled_from([0, 1]))
def test_where_card_0_is_ena_only_the_primary_is_plain_ena_and_every_efa_interface_takes_a_card_of_its_own(count, device):
    """p6-b300: 17 network cards, card 0 ENA only (policies/hardware/facts.toml efa_first_card = 1)."""
    interfaces = network_interfaces(count, True, ["sg"], device, first_efa_card=1)
    assert interfaces[0] == {"device_index": 0, "network_card_index": 0, "interface_type": "interface",
                             "delete_on_termination": "true", "security_groups": ["sg"]}
    efa = interfaces[1:]
    assert [i["network_card_index"] for i in efa] == list(range(1, count + 1))
    assert {i["device_index"] for i in efa} == {device} and {i["interface_type"] for i in efa} == {"efa-only"}


# --- invalid arguments fail before anything registers -----------------------------------


@pytest.mark.parametrize("build_args,expected", [
    (lambda: args(GpuPool(accelerator="h100-80gb", machine_type="p5.96xlarge", gpus_per_node=8, nodes=2)), "pool.machine_type"),
    (lambda: args(GpuPool(accelerator="l40s", machine_type="g6e.4xlarge", alternate_machine_types=["g6e.12xlarge"], gpus_per_node=1,
                          nodes=2), SPOT), "alternate_machine_types[0]"),
    (lambda: args(GpuPool(accelerator="a100-80gb", machine_type="p4de.24xlarge", alternate_machine_types=["p4d.24xlarge"], gpus_per_node=8,
                          nodes=2), SPOT), "at least its memory"),
    (lambda: args(GpuPool(accelerator="l40s", machine_type="g6e.4xlarge", alternate_machine_types=["g5.4xlarge"], gpus_per_node=1,
                          nodes=2), SPOT), "same GPU"),
    (lambda: args(GpuPool(accelerator="a100-40gb", machine_type="p4d.24xlarge", gpus_per_node=8, nodes=2, fabric="efa",
                          efa_interfaces=32)), "4 EFA-capable"),
    (lambda: args(GpuPool(accelerator="l40s", machine_type="g6e.xlarge", gpus_per_node=1, nodes=2, fabric="efa", efa_interfaces=1)),
     "does not support EFA"),
    (lambda: args(GpuPool(accelerator="h100-80gb", machine_type="p5.48xlarge", gpus_per_node=8, nodes=2, fabric="efa")), "efa_interfaces"),
    (lambda: args(GpuPool(accelerator="h100-80gb", machine_type="p5.48xlarge", gpus_per_node=8, nodes=2, fabric="gpudirect-tcpxo")),
     "pool.fabric"),
    (lambda: args(P5_EFA, availability_zone=None), "availability_zone"),
    (lambda: args(P5_EFA, availability_zone="us-east-1d"), "no private subnet"),
    (lambda: args(P4D_EFA, Capacity(provisioning="reservation")), "capacity.reservation"),
    (lambda: args(P4D_EFA, Capacity(provisioning="reservation", reservation="my-reservation")), "cr-"),
    (lambda: args(G6E_SPOT, Capacity(provisioning="flex-start")), "GCP"),
    (lambda: args(G6E_SPOT, Capacity(provisioning="reservation", reservation="cr-0a1b2c3d4e5f67890")),
     "no alternates"),
    (lambda: args(G6E_SPOT, Capacity(reservation="cr-0a1b2c3d4e5f67890"), availability_zone=None),
     "capacity.reservation"),
    (lambda: args(P5_EFA, start_nodes=17), "start_nodes"),
    (lambda: args(P5_EFA, disk_size_gib=20), "disk_size_gib"),
    (lambda: args(P5_EFA, subnet_ids={}), "subnet_ids"),
    (lambda: args(P5_EFA, labels={"bad key!": "x"}), "labels"),
    # the Kubernetes label rules (components/kubernetes/names.py): a prefix of DNS labels, a value's characters
    (lambda: args(P5_EFA, labels={"example..com/team": "x"}), "labels"),
    (lambda: args(P5_EFA, labels={"team": "research team"}), "labels"),
    (lambda: args(P5_EFA, labels={"team": "-research"}), "labels"),
])
def test_invalid_args_name_the_field_and_register_nothing(declare, build_args, expected):
    message = rejected(declare, build_args)
    assert message.startswith("GpuNodeGroupArgs.")
    assert expected in message


def test_pool_given_as_a_dict_is_validated_like_the_plan_model(declare):
    message = rejected(declare, lambda: args(pool={"machine_type": "p5.48xlarge", "gpus_per_node": 8}))
    assert "GpuNodeGroupArgs.pool" in message and "nodes" in message


def test_every_gpu_resource_carries_the_stack_tags(declare):
    capture = declare(build())
    tagged = [r for r in capture.resources if r.custom]
    assert {r.type for r in tagged} == {NODE_GROUP, TEMPLATE, PLACEMENT}
    for resource in tagged:
        assert resource.inputs["tags"]["accel:workload"] == "llama-70b", resource.name
        assert resource.inputs["tags"]["accel:capacity"] == "on-demand", resource.name
