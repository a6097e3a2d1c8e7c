"""GcpNetwork: a private VPC for training, and the GPU fabrics A3 machines need."""

from __future__ import annotations

import ipaddress

import pytest

from accel.base.errors import ComponentArgsError
from accel.components.gcp.network import GcpNetwork, GcpNetworkArgs
from accel.components.tags import ResourceTags
from accel.policies.plan import GpuPool
from tests import harness

TAGS = ResourceTags(workload="llama-70b", stack="dev", owner="ml-platform", cost_center="research")
NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"

A3_MEGA = GpuPool(accelerator="h100-80gb", machine_type="a3-megagpu-8g", gpus_per_node=8, nodes=4, guest_accelerator="nvidia-h100-mega-80gb",
                  fabric="gpudirect-tcpxo", extra_networks=8, compact_placement=True)
A3_HIGH = GpuPool(accelerator="h100-80gb", machine_type="a3-highgpu-8g", gpus_per_node=8, nodes=2, guest_accelerator="nvidia-h100-80gb",
                  fabric="gpudirect-tcpx", extra_networks=4)
A3_ULTRA = GpuPool(accelerator="h200-141gb", machine_type="a3-ultragpu-8g", gpus_per_node=8, nodes=2, guest_accelerator="nvidia-h200-141gb",
                   fabric="rdma", extra_networks=1)


def network(declare, **overrides):
    args = GcpNetworkArgs(**{"region": "us-central1", "tags": TAGS, **overrides})
    return declare(lambda: GcpNetwork("train", args))


def rejected(declare, match: str, **overrides) -> ComponentArgsError:
    """Build with bad args inside a program; the error must come before any resource registers."""
    args = {"region": "us-central1", "tags": TAGS, **overrides}
    return harness.rejected(declare, lambda: GcpNetwork("train", GcpNetworkArgs(**args)), ComponentArgsError, match)


def test_vpc_has_no_auto_subnets(declare):
    capture = network(declare)
    (vpc,) = capture.of_type(NETWORK)
    assert vpc.inputs["autoCreateSubnetworks"] is False
    assert vpc.parent_name == "train"


def test_node_subnet_has_pod_and_service_ranges_and_private_google_access(declare):
    capture = network(declare)
    subnet = capture.named("train-subnet")
    assert subnet.inputs["ipCidrRange"] == "10.0.0.0/20"
    assert subnet.inputs["privateIpGoogleAccess"] is True
    ranges = {r["rangeName"]: r["ipCidrRange"] for r in subnet.inputs["secondaryIpRanges"]}
    assert ranges == {"pods": "10.16.0.0/14", "services": "10.20.0.0/20"}


def test_cloud_nat_gives_the_node_subnet_egress_without_public_ips(declare):
    capture = network(declare)
    nat = capture.named("train-nat")
    assert nat.inputs["natIpAllocateOption"] == "AUTO_ONLY"
    assert nat.inputs["sourceSubnetworkIpRangesToNat"] == "LIST_OF_SUBNETWORKS"
    assert len(nat.inputs["subnetworks"]) == 1
    assert nat.inputs["subnetworks"][0]["sourceIpRangesToNats"] == ["ALL_IP_RANGES"]
    assert capture.named("train-subnet").urn in nat.dependencies
    assert capture.named("train-router").inputs["region"] == nat.inputs["region"] == "us-central1"


def test_no_firewall_rule_admits_the_internet(declare):
    capture = network(declare, iap_ssh=True, filesystem="managed-lustre")
    rules = capture.of_type(FIREWALL)
    assert rules
    for rule in rules:
        assert rule.inputs["direction"] == "INGRESS"
        for source in rule.inputs["sourceRanges"]:
            assert ipaddress.ip_network(source).prefixlen >= 8, f"{rule.name} admits {source}"


def test_internal_rule_covers_nodes_and_pods_only(declare):
    rule = network(declare).named("train-allow-internal")
    assert rule.inputs["sourceRanges"] == ["10.0.0.0/20", "10.16.0.0/14"]


def test_health_check_rule_admits_google_probers(declare):
    rule = network(declare).named("train-allow-health-checks")
    assert sorted(rule.inputs["sourceRanges"]) == ["130.211.0.0/22", "35.191.0.0/16"]


def test_iap_ssh_is_closed_unless_asked(declare):
    assert not any(r.name.endswith("iap-ssh") for r in network(declare).resources)
    rule = network(declare, iap_ssh=True).named("train-allow-iap-ssh")
    assert rule.inputs["sourceRanges"] == ["35.235.240.0/20"]
    assert rule.inputs["allows"] == [{"protocol": "tcp", "ports": ["22"]}]


def test_no_extra_networks_without_a_gpu_fabric(declare):
    capture = network(declare, gpu=GpuPool(accelerator="l4", machine_type="g2-standard-48", gpus_per_node=4, nodes=2))
    assert len(capture.of_type(NETWORK)) == 1
    assert len(capture.of_type(SUBNET)) == 1


def test_a3_mega_gets_eight_tcpxo_networks_with_jumbo_mtu(declare):
    capture = network(declare, gpu=A3_MEGA)
    extra = [n for n in capture.of_type(NETWORK) if n.name.startswith("train-gpunet-")]
    assert len(extra) == 8
    assert {n.inputs["mtu"] for n in extra} == {8244}
    subnets = [capture.named(f"train-gpusub-{i}") for i in range(8)]
    assert len([s for s in capture.of_type(SUBNET) if s.name.startswith("train-gpusub-")]) == 8
    assert len({s.inputs["ipCidrRange"] for s in subnets}) == 8
    for i, subnet in enumerate(subnets):
        assert capture.named(f"train-gpunet-{i}").urn in subnet.dependencies
        assert capture.named(f"train-gpunet-{i}-internal").inputs["sourceRanges"] == ["192.168.0.0/16"]


def test_a3_high_gets_four_tcpx_networks(declare):
    capture = network(declare, gpu=A3_HIGH)
    assert len([n for n in capture.of_type(NETWORK) if n.name.startswith("train-gpunet-")]) == 4


def test_a3_ultra_gets_a_gvnic_network_and_an_rdma_network_with_a_subnet_per_gpu(declare):
    capture = network(declare, gpu=A3_ULTRA, project="acme-ml", fabric_zone="us-central1-b")
    rdma = capture.named("train-rdma")
    assert rdma.inputs["networkProfile"] == "projects/acme-ml/global/networkProfiles/us-central1-b-vpc-roce"
    assert rdma.inputs["mtu"] == 8896
    assert capture.named("train-gvnic").inputs["mtu"] == 8896
    rdma_subnets = [s for s in capture.of_type(SUBNET) if s.name.startswith("train-rdma-sub-")]
    assert len(rdma_subnets) == 8
    assert not any(r.name.startswith("train-rdma") for r in capture.of_type(FIREWALL))


def test_extra_network_refs_match_the_fabric(mode):
    built = {}

    def program():
        built["net"] = GcpNetwork("train", GcpNetworkArgs(region="us-central1", tags=TAGS, gpu=A3_ULTRA,
                                                          project="acme-ml", fabric_zone="us-central1-b"))

    harness.run(program, mode=mode)
    assert len(built["net"].extra_networks) == 9  # one gVNIC + eight RDMA subnets


def test_managed_lustre_gets_private_services_access(declare):
    capture = network(declare, filesystem="managed-lustre")
    address = capture.named("train-psa-range")
    assert address.inputs["purpose"] == "VPC_PEERING"
    assert (address.inputs["address"], address.inputs["prefixLength"]) == ("10.32.0.0", 20)
    connection = capture.named("train-psa")
    assert connection.inputs["service"] == "servicenetworking.googleapis.com"
    assert capture.named("train-allow-lustre").inputs["sourceRanges"] == ["10.32.0.0/20"]


def test_no_private_services_access_without_lustre(declare):
    assert not any(r.name.startswith("train-psa") for r in network(declare, filesystem="filestore").resources)


def test_overlapping_ranges_are_rejected(declare):
    error = rejected(declare, "overlaps", pods_cidr="10.0.0.0/14")
    assert error.field == "pods_cidr"


def test_a_zone_is_not_a_region(declare):
    rejected(declare, "pass a region", region="us-central1-a")


def test_efa_is_not_a_google_fabric(declare):
    rejected(declare, "EFA is AWS", gpu=GpuPool(accelerator="h100-80gb", machine_type="a3-megagpu-8g", gpus_per_node=8, nodes=2, fabric="efa"))


def test_tcpxo_needs_eight_networks(declare):
    rejected(declare, "exactly 8", gpu=A3_MEGA.model_copy(update={"extra_networks": 4}))


def test_rdma_needs_the_zone_of_its_network_profile(declare):
    rejected(declare, "bound to one zone", gpu=A3_ULTRA, project="acme-ml")


def test_rdma_zone_must_be_in_the_region(declare):
    rejected(declare, "must be a zone of us-central1", gpu=A3_ULTRA, project="acme-ml", fabric_zone="us-east5-a")


def test_fabric_range_must_hold_every_subnet(declare):
    rejected(declare, "needs 8 /24 subnets", gpu=A3_MEGA, fabric_cidr="192.168.0.0/22")


def test_nat_port_limit_must_be_a_power_of_two(declare):
    rejected(declare, "power of two", nat_max_ports_per_vm=3000)


def test_name_must_be_a_gcp_name(declare):
    def program():
        with pytest.raises(ComponentArgsError, match="lowercase letter"):
            GcpNetwork("Train_Net", GcpNetworkArgs(region="us-central1", tags=TAGS))

    assert declare(program).resources == []


def test_gcp_components_never_load_pulumi_aws():
    import subprocess
    import sys

    code = ("import sys; import accel.components.gcp.network, accel.components.gcp.cluster, accel.components.gcp.tpu, "
            "accel.components.gcp.gpu, accel.components.gcp.storage; print('pulumi_aws' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=str(__import__("pathlib").Path(__file__).resolve().parent.parent))
    assert result.stdout.strip() == "False"
