"""GpuNodePool: tainted GPU node pools, autoscaled from zero, on GPUDirect fabrics for A3."""

from __future__ import annotations


from accel.base.errors import ComponentArgsError
from accel.components.gcp.cluster import ClusterRef
from accel.components.gcp.gpu import GpuNodePool, GpuNodePoolArgs
from accel.components.gcp.network import ExtraNetworkRef, GcpNetwork, GcpNetworkArgs
from accel.components.tags import ResourceTags
from accel.policies.plan import Capacity, GpuPool
from tests import harness

TAGS = ResourceTags(workload="llama-70b", stack="dev", owner="ml-platform", cost_center="research")
NODE_POOL = "gcp:container/nodePool:NodePool"
ZONE = "us-central1-a"
MULTI_NETWORK_CLUSTER = ClusterRef(name="train", location="us-central1", multi_networking=True,
                                   node_service_account_email="train-nodes@acme.iam.gserviceaccount.com",
                                   upgrades_paused=True)
PLAIN_CLUSTER = ClusterRef(name="train", location="us-central1", upgrades_paused=True)
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}

A3_MEGA = GpuPool(accelerator="h100-80gb", machine_type="a3-megagpu-8g", gpus_per_node=8, nodes=16, guest_accelerator="nvidia-h100-mega-80gb",
                  fabric="gpudirect-tcpxo", extra_networks=8, compact_placement=True)
A3_ULTRA = GpuPool(accelerator="h200-141gb", machine_type="a3-ultragpu-8g", gpus_per_node=8, nodes=4, guest_accelerator="nvidia-h200-141gb",
                   fabric="rdma", extra_networks=1, compact_placement=True)
G2_L4 = GpuPool(accelerator="l4", machine_type="g2-standard-48", gpus_per_node=4, nodes=6, guest_accelerator="nvidia-l4")
A2_ULTRA = GpuPool(accelerator="a100-80gb", machine_type="a2-ultragpu-8g", gpus_per_node=8, nodes=2)


def fake_networks(count: int) -> list[ExtraNetworkRef]:
    return [ExtraNetworkRef(network=f"gpunet-{i}", subnetwork=f"gpusub-{i}") for i in range(count)]


def pool_args(pool: GpuPool, **overrides) -> GpuNodePoolArgs:
    return GpuNodePoolArgs(**{"pool": pool, "capacity": Capacity(), "cluster": PLAIN_CLUSTER, "zone": ZONE,
                              "tags": TAGS, **overrides})


def declare_pool(declare, pool: GpuPool, **overrides):
    capture = declare(lambda: GpuNodePool("gpu", pool_args(pool, **overrides)))
    (node_pool,) = capture.of_type(NODE_POOL)
    return node_pool.inputs


def rejected(declare, match: str, pool: GpuPool, **overrides) -> ComponentArgsError:
    return harness.rejected(declare, lambda: GpuNodePool("gpu", pool_args(pool, **overrides)), ComponentArgsError, match)


def test_a3_mega_pool_attaches_the_eight_tcpxo_networks_of_the_vpc(declare):
    def program():
        net = GcpNetwork("net", GcpNetworkArgs(region="us-central1", tags=TAGS, gpu=A3_MEGA))
        GpuNodePool("a3m", pool_args(A3_MEGA, cluster=MULTI_NETWORK_CLUSTER, extra_networks=net.extra_networks))

    capture = declare(program)
    pool = capture.named("a3m-pool")
    assert len(pool.inputs["networkConfig"]["additionalNodeNetworkConfigs"]) == 8
    for i in range(8):  # each extra network and its subnet feed the pool
        assert capture.named(f"net-gpunet-{i}").urn in pool.dependencies
        assert capture.named(f"net-gpusub-{i}").urn in pool.dependencies
    config = pool.inputs["nodeConfig"]
    assert config["machineType"] == "a3-megagpu-8g"
    assert config["gvnic"] == {"enabled": True}


def test_a3_mega_runs_eight_h100_mega_gpus_with_the_managed_driver(declare):
    inputs = declare_pool(declare, A3_MEGA, cluster=MULTI_NETWORK_CLUSTER, extra_networks=fake_networks(8))
    assert inputs["nodeConfig"]["guestAccelerators"] == [{
        "type": "nvidia-h100-mega-80gb", "count": 8, "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
    }]


def test_a3_mega_is_compact_in_one_zone_and_uses_its_local_ssds(declare):
    inputs = declare_pool(declare, A3_MEGA, cluster=MULTI_NETWORK_CLUSTER, extra_networks=fake_networks(8))
    assert inputs["placementPolicy"] == {"type": "COMPACT"}
    assert inputs["nodeLocations"] == [ZONE]
    assert inputs["nodeConfig"]["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 16}


def test_a3_mega_network_refs_reach_the_pool_as_given(declare):
    inputs = declare_pool(declare, A3_MEGA, cluster=MULTI_NETWORK_CLUSTER, extra_networks=fake_networks(8))
    assert inputs["networkConfig"]["additionalNodeNetworkConfigs"][3] == {"network": "gpunet-3", "subnetwork": "gpusub-3"}


def test_gpu_nodes_are_tainted(declare):
    assert declare_pool(declare, G2_L4)["nodeConfig"]["taints"] == [GPU_TAINT]


def test_gpu_pools_scale_from_zero_to_the_plans_node_count(declare):
    inputs = declare_pool(declare, A3_MEGA, cluster=MULTI_NETWORK_CLUSTER, extra_networks=fake_networks(8))
    assert inputs["initialNodeCount"] == 0
    assert (inputs["autoscaling"]["totalMinNodeCount"], inputs["autoscaling"]["totalMaxNodeCount"]) == (0, 16)


def test_g2_l4_spot_pool(declare):
    inputs = declare_pool(declare, G2_L4, capacity=Capacity(provisioning="spot"))
    config = inputs["nodeConfig"]
    assert config["machineType"] == "g2-standard-48"
    assert config["spot"] is True
    assert config["resourceLabels"]["spot"] == "true"
    assert config["guestAccelerators"][0]["type"] == "nvidia-l4"
    assert config["guestAccelerators"][0]["count"] == 4
    assert inputs["autoscaling"]["locationPolicy"] == "ANY"
    assert "placementPolicy" not in inputs
    assert "additionalNodeNetworkConfigs" not in inputs["networkConfig"]
    assert "ephemeralStorageLocalSsdConfig" not in config  # G2 local SSD is optional and the plan asked for none


def test_g2_local_ssd_when_the_plan_asks(declare):
    config = declare_pool(declare, G2_L4.model_copy(update={"local_ssd_count": 4}))["nodeConfig"]
    assert config["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 4}


def test_gpu_nodes_have_no_public_ips_and_use_workload_identity(declare):
    inputs = declare_pool(declare, G2_L4, cluster=MULTI_NETWORK_CLUSTER)
    assert inputs["networkConfig"]["enablePrivateNodes"] is True
    assert inputs["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert inputs["nodeConfig"]["serviceAccount"] == "train-nodes@acme.iam.gserviceaccount.com"


def test_a3_ultra_attaches_a_gvnic_and_eight_rdma_subnets_on_hyperdisk(declare):
    def program():
        net = GcpNetwork("net", GcpNetworkArgs(region="us-central1", tags=TAGS, gpu=A3_ULTRA, project="acme",
                                               fabric_zone=ZONE))
        GpuNodePool("a3u", pool_args(A3_ULTRA, cluster=MULTI_NETWORK_CLUSTER, extra_networks=net.extra_networks))

    capture = declare(program)
    pool = capture.named("a3u-pool")
    assert len(pool.inputs["networkConfig"]["additionalNodeNetworkConfigs"]) == 9
    assert capture.named("net-gvnic-sub").urn in pool.dependencies
    assert capture.named("net-rdma-sub-7").urn in pool.dependencies
    assert pool.inputs["nodeConfig"]["diskType"] == "hyperdisk-balanced"
    assert pool.inputs["nodeConfig"]["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 32}


def test_a2_ultra_uses_its_bundled_ssds(declare):
    config = declare_pool(declare, A2_ULTRA)["nodeConfig"]
    assert config["guestAccelerators"][0]["type"] == "nvidia-a100-80gb"
    assert config["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 8}


def test_reserved_gpus_consume_the_named_reservation(declare):
    config = declare_pool(declare, G2_L4, capacity=Capacity(provisioning="reservation", reservation="l4-res"))["nodeConfig"]
    assert config["reservationAffinity"]["values"] == ["l4-res"]
    assert config["spot"] is False


def test_queued_gpus_use_queued_provisioning_without_auto_repair(declare):
    inputs = declare_pool(declare, A2_ULTRA, capacity=Capacity(provisioning="queued"), min_nodes=1)
    assert inputs["queuedProvisioning"] == {"enabled": True}
    assert inputs["management"]["autoRepair"] is False
    assert inputs["autoscaling"]["totalMinNodeCount"] == 0


def test_queued_gpus_run_on_flex_start_vms(declare):
    # GKE: queued provisioning needs --flex-start as well as --enable-queued-provisioning.
    config = declare_pool(declare, A2_ULTRA, capacity=Capacity(provisioning="queued"))["nodeConfig"]
    assert config["flexStart"] is True
    assert config["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}


def test_on_demand_and_spot_gpus_are_not_flex_start(declare):
    for capacity in (Capacity(), Capacity(provisioning="spot")):
        assert "flexStart" not in declare_pool(declare, G2_L4, capacity=capacity)["nodeConfig"]


def test_pool_is_labelled_with_the_stack(declare):
    labels = declare_pool(declare, G2_L4)["nodeConfig"]["resourceLabels"]
    assert (labels["workload"], labels["stack"], labels["owner"], labels["pool"]) == (
        "llama-70b", "dev", "ml-platform", "gpu")


def test_unknown_machine_type_is_rejected(declare):
    error = rejected(declare, "allowed: a3-ultragpu-8g", G2_L4.model_copy(update={"machine_type": "p5.48xlarge"}))
    assert error.field == "pool.machine_type"


def test_gpu_count_must_match_the_machine(declare):
    rejected(declare, "has 4 GPU", G2_L4.model_copy(update={"gpus_per_node": 8}))


def test_accelerator_must_match_the_machine(declare):
    rejected(declare, "carries nvidia-l4", G2_L4.model_copy(update={"guest_accelerator": "nvidia-h100-80gb"}))


def test_tcpxo_needs_an_a3_mega(declare):
    bad = A3_MEGA.model_copy(update={"machine_type": "a3-highgpu-8g", "guest_accelerator": "nvidia-h100-80gb"})
    rejected(declare, "does not support gpudirect-tcpxo; it needs a3-megagpu-8g", bad,
             cluster=MULTI_NETWORK_CLUSTER, extra_networks=fake_networks(8))


def test_tcpxo_needs_all_eight_networks(declare):
    rejected(declare, "attaches exactly 8", A3_MEGA, cluster=MULTI_NETWORK_CLUSTER, extra_networks=fake_networks(4))


def test_gpudirect_needs_a_multi_networking_cluster(declare):
    error = rejected(declare, "multi-networking", A3_MEGA, extra_networks=fake_networks(8))
    assert error.field == "cluster.multi_networking"


def test_local_ssds_beyond_the_machine_are_rejected(declare):
    rejected(declare, "at most 4 local SSD", G2_L4.model_copy(update={"local_ssd_count": 6}))


def test_compact_placement_has_a_size_limit(declare):
    rejected(declare, "at most 150 nodes", A3_MEGA.model_copy(update={"nodes": 200}),
             cluster=MULTI_NETWORK_CLUSTER, extra_networks=fake_networks(8))


def test_a_max_run_duration_bounds_the_pool_nodes(declare):
    inputs = declare_pool(declare, G2_L4, capacity=Capacity(provisioning="spot"), max_run_duration="3600s")
    assert inputs["nodeConfig"]["maxRunDuration"] == "3600s"


def test_a_malformed_max_run_duration_is_rejected(declare):
    rejected(declare, "whole seconds", G2_L4, max_run_duration="1h")


def test_flex_start_nodes_cannot_outlive_seven_days(declare):
    error = rejected(declare, "at most seven days", G2_L4, capacity=Capacity(provisioning="flex-start"),
                     max_run_duration="864000s")
    assert error.field == "max_run_duration"


def test_on_demand_nodes_may_run_longer_than_seven_days(declare):
    assert declare_pool(declare, G2_L4, max_run_duration="864000s")["nodeConfig"]["maxRunDuration"] == "864000s"


def test_gpu_zone_must_be_in_the_clusters_region(declare):
    rejected(declare, "must be a zone of us-central1", G2_L4, zone="europe-west4-a")


def test_compact_placement_with_queued_provisioning_is_rejected_for_gpus(declare):
    # Cluster Toolkit gke-node-pool precondition: COMPACT with queued provisioning only for TPUs.
    error = rejected(declare, "queued-provisioning GPU pool", A3_ULTRA, capacity=Capacity(provisioning="queued"),
                     cluster=MULTI_NETWORK_CLUSTER, extra_networks=fake_networks(9))
    assert error.field == "pool.compact_placement" and "cluster-toolkit" in str(error)


def without_fabric(pool: GpuPool) -> GpuPool:
    """The pool with no scale-out fabric: no Kueue Topology places it, so flex-start stays plain flex-start."""
    return pool.model_copy(update={"fabric": "none", "extra_networks": 0})


def test_compact_placement_with_flex_start_is_rejected_outside_a3_ultra_a4_h4d(declare):
    error = rejected(declare, "only on a3-ultragpu, a4-highgpu, h4d", without_fabric(A3_MEGA),
                     capacity=Capacity(provisioning="flex-start"))
    assert error.field == "pool.compact_placement"


def test_a3_ultra_flex_start_pool_without_a_fabric_keeps_compact_placement(declare):
    inputs = declare_pool(declare, without_fabric(A3_ULTRA), capacity=Capacity(provisioning="flex-start"))
    assert inputs["placementPolicy"] == {"type": "COMPACT"}
    assert inputs["nodeConfig"]["flexStart"] is True
    assert "queuedProvisioning" not in inputs


def test_a_flex_start_pool_on_a_fabric_is_built_with_queued_provisioning(declare):
    # Kueue places a fabric pool by a Topology and reaches nodes to come only through a ProvisioningRequest check;
    # GKE answers those only for queued-provisioning pools (policies/cloud/flex_start.py).
    inputs = declare_pool(declare, A3_ULTRA.model_copy(update={"compact_placement": False}),
                          capacity=Capacity(provisioning="flex-start"), cluster=MULTI_NETWORK_CLUSTER,
                          extra_networks=fake_networks(9))
    assert inputs["queuedProvisioning"] == {"enabled": True}
    assert inputs["nodeConfig"]["flexStart"] is True
    assert inputs["autoscaling"]["totalMinNodeCount"] == 0 and inputs["initialNodeCount"] == 0
    assert inputs["management"]["autoRepair"] is False


def test_a_flex_start_pool_without_a_fabric_stays_plain_flex_start(declare):
    inputs = declare_pool(declare, G2_L4, capacity=Capacity(provisioning="flex-start"))
    assert "queuedProvisioning" not in inputs
    assert inputs["nodeConfig"]["flexStart"] is True


def test_a_compact_flex_start_pool_on_a_fabric_is_refused_as_queued(declare):
    # GKE takes no COMPACT placement on a queued-provisioning GPU pool, which a flex-start fabric pool is.
    error = rejected(declare, "queued-provisioning GPU pool", A3_ULTRA, capacity=Capacity(provisioning="flex-start"),
                     cluster=MULTI_NETWORK_CLUSTER, extra_networks=fake_networks(9))
    assert error.field == "pool.compact_placement" and "built with queued provisioning" in str(error)


def test_queued_gpu_pool_without_compact_placement_is_accepted(declare):
    inputs = declare_pool(declare, A3_MEGA.model_copy(update={"compact_placement": False}),
                          capacity=Capacity(provisioning="queued"), cluster=MULTI_NETWORK_CLUSTER,
                          extra_networks=fake_networks(8))
    assert "placementPolicy" not in inputs and inputs["queuedProvisioning"] == {"enabled": True}
