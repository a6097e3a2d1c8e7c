"""TPU slices on GKE (one node pool per slice) and as bare TPU VMs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from accel.base.errors import ComponentArgsError
from accel.components.gcp.cluster import ClusterRef
from accel.components.gcp.tpu import TpuSlice, TpuSliceArgs, TpuVmSlice, TpuVmSliceArgs
from accel.components.tags import ResourceTags
from accel.policies.hardware import shapes
from accel.policies.plan import Capacity, TpuPool
from tests import harness

TAGS = ResourceTags(workload="llama-70b", stack="dev", owner="ml-platform", cost_center="research")
NODE_POOL = "gcp:container/nodePool:NodePool"
ZONE = "us-east5-a"
CLUSTER = ClusterRef(name="train", location="us-east5", node_service_account_email="train-nodes@acme.iam.gserviceaccount.com",
                     upgrades_paused=True)


def tpu_pool(generation: str, topology: str, slices: int = 1) -> TpuPool:
    """The pool the policy layer would write for this shape."""
    gen = shapes.generation(generation)
    chips = shapes.topology_chips(topology)
    return TpuPool(
        generation=generation, topology=topology, chips_per_slice=chips, slices=slices,
        machine_type=shapes.machine_type(generation, topology),
        chips_per_host=shapes.chips_per_host(generation, topology),
        hosts_per_slice=shapes.hosts_per_slice(generation, topology),
        gke_accelerator=gen.gke_accelerator, tpu_vm_type=shapes.tpu_vm_type(generation, chips),
        runtime_version=gen.runtime_version,
    )


V5P_MULTISLICE = tpu_pool("v5p", "4x4x8", slices=4)
V6E_POD = tpu_pool("v6e", "16x16")


def slice_args(pool: TpuPool, **overrides) -> TpuSliceArgs:
    return TpuSliceArgs(**{"pool": pool, "capacity": Capacity(), "cluster": CLUSTER, "zone": ZONE, "tags": TAGS,
                           **overrides})


def declare_slice(declare, pool: TpuPool, **overrides):
    return declare(lambda: TpuSlice("tpu", slice_args(pool, **overrides)))


def rejected(declare, build, match: str) -> ComponentArgsError:
    return harness.rejected(declare, build, ComponentArgsError, match)


# --- GKE node pools --------------------------------------------------------------------


def test_multislice_v5p_is_four_identical_compact_pools(declare):
    capture = declare_slice(declare, V5P_MULTISLICE)
    pools = capture.of_type(NODE_POOL)
    assert sorted(p.name for p in pools) == ["tpu-s0", "tpu-s1", "tpu-s2", "tpu-s3"]
    for pool in pools:
        assert pool.parent_name == "tpu"
        assert pool.inputs["nodeConfig"]["machineType"] == "ct5p-hightpu-4t"
        assert pool.inputs["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4x8"}
        assert pool.inputs["nodeCount"] == 32  # 128 chips / 4 per VM
        assert pool.inputs["nodeLocations"] == [ZONE]
        assert pool.inputs["cluster"] == "train"
        assert pool.inputs["location"] == "us-east5"


def test_v6e_16x16_is_one_pool_of_64_hosts(declare):
    (pool,) = declare_slice(declare, V6E_POD).of_type(NODE_POOL)
    assert pool.inputs["nodeConfig"]["machineType"] == "ct6e-standard-4t"
    assert pool.inputs["nodeCount"] == 64
    assert pool.inputs["placementPolicy"]["tpuTopology"] == "16x16"


def test_single_host_slice_needs_no_placement_policy(declare):
    (pool,) = declare_slice(declare, tpu_pool("v6e", "2x4")).of_type(NODE_POOL)
    assert pool.inputs["nodeConfig"]["machineType"] == "ct6e-standard-8t"
    assert pool.inputs["nodeCount"] == 1
    assert "placementPolicy" not in pool.inputs


def test_slices_are_private_and_use_workload_identity(declare):
    for pool in declare_slice(declare, V5P_MULTISLICE).of_type(NODE_POOL):
        assert pool.inputs["networkConfig"]["enablePrivateNodes"] is True
        assert pool.inputs["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
        assert pool.inputs["nodeConfig"]["serviceAccount"] == "train-nodes@acme.iam.gserviceaccount.com"


def test_each_slice_is_labelled_with_its_index_and_the_stack(declare):
    capture = declare_slice(declare, V5P_MULTISLICE)
    for i in range(4):
        config = capture.named(f"tpu-s{i}").inputs["nodeConfig"]
        assert config["resourceLabels"]["tpu-slice"] == str(i)
        assert config["resourceLabels"]["workload"] == "llama-70b"
        assert config["labels"]["accel.dev/slice"] == str(i)
        assert config["labels"]["accel.dev/stack"] == "dev"


def test_spot_slices_are_spot_and_say_so(declare):
    for pool in declare_slice(declare, V5P_MULTISLICE, capacity=Capacity(provisioning="spot")).of_type(NODE_POOL):
        assert pool.inputs["nodeConfig"]["spot"] is True
        assert pool.inputs["nodeConfig"]["resourceLabels"]["spot"] == "true"


def test_on_demand_slices_are_not_spot(declare):
    for pool in declare_slice(declare, V5P_MULTISLICE).of_type(NODE_POOL):
        assert pool.inputs["nodeConfig"]["spot"] is False
        assert "reservationAffinity" not in pool.inputs["nodeConfig"]


def test_a_max_run_duration_bounds_every_slice_node(declare):
    for pool in declare_slice(declare, V5P_MULTISLICE, max_run_duration="43200s").of_type(NODE_POOL):
        assert pool.inputs["nodeConfig"]["maxRunDuration"] == "43200s"


def test_a_malformed_max_run_duration_is_rejected(declare):
    rejected(declare, lambda: TpuSlice("tpu", slice_args(V6E_POD, max_run_duration="12h")), "whole seconds")


def test_reserved_slices_consume_the_named_reservation(declare):
    capture = declare_slice(declare, V6E_POD, capacity=Capacity(provisioning="reservation", reservation="v6e-res"))
    (pool,) = capture.of_type(NODE_POOL)
    assert pool.inputs["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["v6e-res"],
    }


def test_queued_slices_start_empty_and_scale_to_the_whole_slice(declare):
    (pool,) = declare_slice(declare, V6E_POD, capacity=Capacity(provisioning="queued")).of_type(NODE_POOL)
    assert pool.inputs["queuedProvisioning"] == {"enabled": True}
    assert pool.inputs["initialNodeCount"] == 0
    # Per-zone bounds in the pool's one zone, as Cluster Toolkit's gke-node-pool does for TPU flex-start.
    assert pool.inputs["autoscaling"]["minNodeCount"] == 0
    assert pool.inputs["autoscaling"]["maxNodeCount"] == 64
    assert pool.inputs["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert "nodeCount" not in pool.inputs


def test_queued_slices_run_on_flex_start_vms(declare):
    # GKE: queued provisioning needs --flex-start as well as --enable-queued-provisioning.
    (pool,) = declare_slice(declare, V6E_POD, capacity=Capacity(provisioning="queued")).of_type(NODE_POOL)
    assert pool.inputs["nodeConfig"]["flexStart"] is True


@pytest.mark.parametrize("provisioning", ["flex-start", "queued"])
def test_tpu_v4_cannot_use_flex_start(declare, provisioning):
    error = rejected(declare, lambda: TpuSlice("tpu", slice_args(tpu_pool("v4", "2x2x4"),
                                                                 capacity=Capacity(provisioning=provisioning))),
                     "does not support TPU v4")
    assert error.field == "capacity.provisioning"


def test_flex_start_slices_cannot_outlive_seven_days(declare):
    rejected(declare, lambda: TpuSlice("tpu", slice_args(V6E_POD, capacity=Capacity(provisioning="flex-start"),
                                                         max_run_duration="604801s")),
             "at most seven days")


def test_flex_start_slices_ask_for_flex_start(declare):
    (pool,) = declare_slice(declare, V6E_POD, capacity=Capacity(provisioning="flex-start")).of_type(NODE_POOL)
    assert pool.inputs["nodeConfig"]["flexStart"] is True
    assert "queuedProvisioning" not in pool.inputs


def test_auto_upgrade_is_off_on_a_cluster_without_a_channel(declare):
    ref = ClusterRef(name="train", location="us-east5", release_channel="UNSPECIFIED")
    for pool in declare_slice(declare, V5P_MULTISLICE, cluster=ref).of_type(NODE_POOL):
        assert pool.inputs["management"]["autoUpgrade"] is False


def test_channel_clusters_keep_auto_upgrade_as_gke_requires(declare):
    ref = ClusterRef(name="train", location="us-east5", release_channel="REGULAR", upgrades_paused=False)
    for pool in declare_slice(declare, V5P_MULTISLICE, cluster=ref).of_type(NODE_POOL):
        assert pool.inputs["management"]["autoUpgrade"] is True


def test_a_cluster_name_with_its_location_is_enough(declare):
    capture = declare_slice(declare, V6E_POD, cluster="existing", location="us-east5")
    (pool,) = capture.of_type(NODE_POOL)
    assert (pool.inputs["cluster"], pool.inputs["location"]) == ("existing", "us-east5")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["v4", "v5p", "v5e", "v6e"]).flatmap(
    lambda g: st.tuples(st.just(g), st.sampled_from(shapes.valid_topologies(g)))))
def test_every_valid_shape_becomes_a_pool_of_its_host_count(shape):
    generation, topology = shape
    pool = tpu_pool(generation, topology)
    capture = harness.run(lambda: TpuSlice("tpu", slice_args(pool)), mode="up")
    (node_pool,) = capture.of_type(NODE_POOL)
    assert node_pool.inputs["nodeCount"] == shapes.hosts_per_slice(generation, topology)
    assert node_pool.inputs["nodeConfig"]["machineType"] == shapes.machine_type(generation, topology)
    assert ("placementPolicy" in node_pool.inputs) == (node_pool.inputs["nodeCount"] > 1)


def test_topology_invalid_for_the_generation_is_rejected(declare):
    bad = V5P_MULTISLICE.model_copy(update={"topology": "4x4x6"})
    error = rejected(declare, lambda: TpuSlice("tpu", slice_args(bad)), "multiple of 4")
    assert error.field == "pool.topology"


def test_3d_topology_on_a_2d_generation_is_rejected(declare):
    bad = V6E_POD.model_copy(update={"topology": "4x4x4"})
    rejected(declare, lambda: TpuSlice("tpu", slice_args(bad)), "2D")


def test_machine_type_must_fit_the_topology(declare):
    bad = V6E_POD.model_copy(update={"machine_type": "ct6e-standard-8t"})
    error = rejected(declare, lambda: TpuSlice("tpu", slice_args(bad)), "needs machine_type 'ct6e-standard-4t'")
    assert error.field == "pool.machine_type"


def test_host_count_must_match_the_topology(declare):
    bad = V6E_POD.model_copy(update={"hosts_per_slice": 32})
    rejected(declare, lambda: TpuSlice("tpu", slice_args(bad)), "needs hosts_per_slice 64")


def test_compact_placement_needs_a_zone_not_a_region(declare):
    rejected(declare, lambda: TpuSlice("tpu", slice_args(V6E_POD, zone="us-east5")), "one zone")


def test_slice_zone_must_be_in_the_clusters_region(declare):
    rejected(declare, lambda: TpuSlice("tpu", slice_args(V6E_POD, zone="us-central1-a")), "must be a zone of us-east5")


def test_reservation_without_a_name_is_rejected(declare):
    rejected(declare, lambda: TpuSlice("tpu", slice_args(V6E_POD, capacity=Capacity(provisioning="reservation"))),
             "needs the reservation name")


def test_capacity_blocks_are_aws_only(declare):
    capacity = Capacity(provisioning="capacity-block")
    rejected(declare, lambda: TpuSlice("tpu", slice_args(V6E_POD, capacity=capacity)), "AWS offering")


def test_a_bare_cluster_name_needs_its_location(declare):
    rejected(declare, lambda: TpuSlice("tpu", slice_args(V6E_POD, cluster="existing")), "give the cluster's location")


# --- TPU VMs ---------------------------------------------------------------------------


def vm_args(pool: TpuPool, **overrides) -> TpuVmSliceArgs:
    return TpuVmSliceArgs(**{"pool": pool, "capacity": Capacity(), "zone": ZONE, "network": "train-vpc",
                             "subnetwork": "train-subnet", "tags": TAGS, "project": "acme-ml", **overrides})


def test_spot_tpu_vms_are_one_vm_per_slice_without_public_ips(declare):
    pool = tpu_pool("v5p", "2x2x4", slices=2)
    capture = declare(lambda: TpuVmSlice("vm", vm_args(pool, capacity=Capacity(provisioning="spot"),
                                                        service_account_email="tpu@acme-ml.iam.gserviceaccount.com")))
    vms = capture.of_type("gcp:tpu/v2Vm:V2Vm")
    assert sorted(v.name for v in vms) == ["vm-s0", "vm-s1"]
    for vm in vms:
        assert vm.inputs["acceleratorType"] == "v5p-32"
        assert vm.inputs["runtimeVersion"] == "v2-alpha-tpuv5"
        assert vm.inputs["schedulingConfig"] == {"spot": True}
        assert vm.inputs["networkConfig"]["enableExternalIps"] is False
        assert vm.inputs["serviceAccount"]["email"] == "tpu@acme-ml.iam.gserviceaccount.com"
        assert vm.inputs["labels"]["spot"] == "true"
        assert vm.inputs["labels"]["workload"] == "llama-70b"


def test_queued_tpu_vms_arrive_together_in_one_queued_resource(declare):
    capture = declare(lambda: TpuVmSlice("vm", vm_args(V6E_POD.model_copy(update={"slices": 2}),
                                                        capacity=Capacity(provisioning="queued"))))
    (queued,) = capture.of_type("gcp:tpu/v2QueuedResource:V2QueuedResource")
    specs = queued.inputs["tpu"]["nodeSpecs"]
    assert [s["nodeId"] for s in specs] == ["vm-s0", "vm-s1"]
    for spec in specs:
        assert spec["parent"] == f"projects/acme-ml/locations/{ZONE}"
        assert spec["node"]["acceleratorType"] == "v6e-256"
        assert spec["node"]["networkConfig"]["enableExternalIps"] is False
    assert capture.of_type("gcp:tpu/v2Vm:V2Vm") == []


def test_reserved_tpu_vms_use_the_reservation(declare):
    capture = declare(lambda: TpuVmSlice("vm", vm_args(V6E_POD, capacity=Capacity(provisioning="reservation",
                                                                                   reservation="r1"))))
    (vm,) = capture.of_type("gcp:tpu/v2Vm:V2Vm")
    assert vm.inputs["schedulingConfig"] == {"reserved": True}


def test_tpu_vm_type_must_count_tensorcores_for_v5p(declare):
    bad = tpu_pool("v5p", "2x2x4").model_copy(update={"tpu_vm_type": "v5p-16"})
    rejected(declare, lambda: TpuVmSlice("vm", vm_args(bad)), "is 'v5p-32'")


def test_flex_start_tpu_vms_are_rejected(declare):
    rejected(declare, lambda: TpuVmSlice("vm", vm_args(V6E_POD, capacity=Capacity(provisioning="flex-start"))),
             "TpuSlice")


def test_queued_tpu_vms_need_the_project(declare):
    rejected(declare, lambda: TpuVmSlice("vm", vm_args(V6E_POD, project=None, capacity=Capacity(provisioning="queued"))),
             "set project")
