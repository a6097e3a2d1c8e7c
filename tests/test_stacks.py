"""Every example stack in stacks/ plans offline, builds what its scenario says, and passes the
mandatory guardrails; ephemeral stacks keep their data through teardown."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel.offline_plan import PlanResult
from accel.policies.catalog import load_catalog
from accel.policies.storage_types import STORAGE_TYPES

ROOT = Path(__file__).resolve().parent.parent
STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
DATA_TYPES = STORAGE_TYPES


@pytest.fixture(scope="module")
def planned(planned_results) -> dict[str, PlanResult]:
    """The bundled stacks' plans, shared with the rest of the suite (tests/conftest.py)."""
    return planned_results


def inputs_of(result: PlanResult, type_token: str) -> list[dict]:
    return [r.inputs for r in result.capture.of_type(type_token)]


def cluster_queue_quota(result: PlanResult) -> dict[str, str]:
    [queue] = inputs_of(result, "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue")
    resources = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    return {r["name"]: r["nominalQuota"] for r in resources}


def test_the_bundled_stacks_are_the_documented_scenarios():
    assert set(STACKS) == {"llama-70b-tpu", "llama-70b-v5p", "llama-70b-finetune-aws", "llama-8b-serving-gpu",
                           "dev-spot", "onprem-gpus", "llama-405b-h100-gcp", "llama-405b-h100-aws",
                           "llama-70b-a3mega-gcp", "llama-70b-tpu7x", "llama-70b-a4", "llama-405b-a4x",
                           "llama-70b-p6-b200", "llama-405b-p6e", "onprem-gb200", "llama-405b-serving-a4x",
                           "llama-405b-serving-h100"}


def test_every_stack_file_is_documented_at_its_top():
    for stack in STACKS:
        assert (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text().startswith("# "), stack


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_passes_the_mandatory_guardrails(planned, stack):
    result = planned[stack]
    assert result.guardrails_evaluated
    assert result.mandatory_violations == []


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_exports_its_plan_and_cost(planned, stack):
    result = planned[stack]
    assert result.plan is not None and result.plan["workload"]["name"]
    assert result.pinned_hourly_usd == pytest.approx(result.plan["estimate"]["hourly_usd"], abs=0.01)
    assert result.pinned_run_usd == pytest.approx(result.plan["estimate"]["total_usd"], abs=0.01)


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_costs_what_its_declared_resources_cost(planned, stack):
    result = planned[stack]
    built = result.built
    if result.existing_cluster is not None:  # an existing cluster: nothing is built, its chips cost what the plan says
        assert built.accelerator_pools == []
        assert result.hourly_usd == pytest.approx(result.plan["estimate"]["hourly_usd"] + built.hourly_usd, abs=0.01)
        return
    assert built.chips == result.plan["chosen"]["chips"] and built.nodes == result.plan["chosen"]["hosts"]
    assert built.accelerator_hourly_usd == pytest.approx(result.plan["estimate"]["hourly_usd"], abs=0.01)
    assert result.hourly_usd == pytest.approx(built.hourly_usd, abs=0.01)
    assert result.run_usd == pytest.approx(built.hourly_usd * result.plan["estimate"]["hours"], abs=0.01)


def test_default_stack_builds_the_pinned_tpu_multislice_on_gke(planned):
    result = planned["llama-70b-tpu"]
    tpu = result.plan["tpu"]
    pools = [p for p in inputs_of(result, "gcp:container/nodePool:NodePool")
             if p.get("placementPolicy", {}).get("tpuTopology")]
    assert len(pools) == tpu["slices"] > 1
    for pool in pools:
        assert pool["nodeConfig"]["machineType"] == tpu["machine_type"]
        assert pool["placementPolicy"] == {"type": "COMPACT", "tpuTopology": tpu["topology"]}
        assert pool["nodeCount"] == tpu["hosts_per_slice"]
        assert pool["nodeLocations"] == [result.plan["zones"][0]]
    assert int(cluster_queue_quota(result)["google.com/tpu"]) == tpu["chips_per_slice"] * tpu["slices"]
    assert result.providers_used == ["gcp", "kubernetes"]


def test_v5p_stack_is_four_slices_of_8x8x8_with_128_hosts_each(planned):
    result = planned["llama-70b-v5p"]
    assert result.plan["pinned"] is True
    pools = [p for p in inputs_of(result, "gcp:container/nodePool:NodePool")
             if p.get("placementPolicy", {}).get("tpuTopology") == "8x8x8"]
    assert [p["nodeConfig"]["machineType"] for p in pools] == ["ct5p-hightpu-4t"] * 4
    assert {p["nodeCount"] for p in pools} == {128}


def test_aws_finetune_builds_efa_nodes_on_its_capacity_blocks_and_fsx(planned):
    # The search books the fleet as Capacity Blocks (docs/capacity.md): one node group per block, each on the
    # block's launch template (the instance type is there), EFA on every network card; a block is its own
    # placement, so no cluster placement group is created.
    result = planned["llama-70b-finetune-aws"]
    gpu = result.plan["gpu"]
    groups = [g for g in inputs_of(result, "aws:eks/nodeGroup:NodeGroup") if g.get("amiType", "").endswith("NVIDIA")]
    assert len(groups) == gpu["pools"] > 1
    assert [g["scalingConfig"]["maxSize"] for g in groups] == [64] * (gpu["pools"] - 1) + [gpu["nodes"] % 64 or 64]
    assert {g["capacityType"] for g in groups} == {"CAPACITY_BLOCK"}
    assert all(g["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}] for g in groups)
    templates = [t for t in inputs_of(result, "aws:ec2/launchTemplate:LaunchTemplate")
                 if t.get("instanceMarketOptions") == {"marketType": "capacity-block"}]
    assert len(templates) == len(groups) and {t["instanceType"] for t in templates} == {gpu["machine_type"]}
    # One interface per network card of the pinned machine type, as the hardware facts table has it.
    table = load_catalog().offering(result.plan["chosen"]["offering"]).efa_interfaces
    for template in templates:
        interfaces = template["networkInterfaces"]
        assert len(interfaces) == gpu["efa_interfaces"] == table > 0
        assert {i["interfaceType"] for i in interfaces} <= {"efa", "efa-only"}
        assert template["metadataOptions"]["httpTokens"] == "required"
    assert not inputs_of(result, "aws:ec2/placementGroup:PlacementGroup")
    [fsx] = result.capture.of_type("aws:fsx/lustreFileSystem:LustreFileSystem")
    assert fsx.inputs["deploymentType"] == "PERSISTENT_2" and fsx.retain_on_delete
    assert "gcp" not in result.providers_used


def test_serving_stack_builds_an_inference_gpu_pool_and_no_buckets(planned):
    result = planned["llama-8b-serving-gpu"]
    assert result.plan["workload"]["kind"] == "inference"
    assert result.plan["chosen"]["accelerator"] in ("l4", "l40s")
    assert not [r for r in result.capture.resources if r.type in DATA_TYPES]
    assert int(cluster_queue_quota(result)["nvidia.com/gpu"]) == result.plan["chosen"]["chips"]


def test_spot_dev_stack_is_labelled_with_its_ttl_and_runs_on_spot(planned):
    result = planned["dev-spot"]
    [pool] = [p for p in inputs_of(result, "gcp:container/nodePool:NodePool") if p["nodeConfig"].get("guestAccelerators")]
    assert pool["nodeConfig"]["spot"] is True
    assert pool["nodeConfig"]["resourceLabels"]["ttl"] == "12h"
    assert pool["nodeConfig"]["resourceLabels"]["ephemeral"] == "true"
    assert pool["nodeConfig"]["maxRunDuration"] == "43200s"  # GKE stops the nodes even if no reaper runs
    lifecycle = result.capture.outputs["lifecycle"]
    assert (lifecycle["ephemeral"], lifecycle["ttl"], lifecycle.get("expiresAt")) == (True, "12h", None)
    # One node: no collectives cross nodes, so no GPUDirect fabric and no GKE network objects.
    assert result.plan["gpu"]["fabric"] == "none"
    assert inputs_of(result, "kubernetes:networking.gke.io/v1:GKENetworkParamSet") == []
    assert inputs_of(result, "kubernetes:networking.gke.io/v1:Network") == []


def test_destroying_an_ephemeral_stack_never_deletes_its_data(planned):
    """`pulumi destroy` deletes every resource that is neither retained nor protected (and fails on
    protected ones): for the spot stack that set must contain no bucket or filesystem."""
    result = planned["dev-spot"]
    data = [r for r in result.capture.resources if r.type in DATA_TYPES]
    assert {r.inputs["labels"]["data-role"] for r in data} == {"dataset", "checkpoint"}
    deleted_by_destroy = [r for r in result.capture.resources if r.custom and not r.retain_on_delete]
    assert not [r for r in deleted_by_destroy if r.type in DATA_TYPES]
    assert not [r for r in result.capture.resources if r.protect], "protect would make the reaper's destroy fail"


def test_every_data_resource_of_every_stack_is_retained_and_never_force_destroyed(planned):
    for stack, result in planned.items():
        for resource in result.capture.resources:
            if resource.type in DATA_TYPES:
                assert resource.retain_on_delete, (stack, resource.name)
                assert resource.inputs.get("forceDestroy") in (None, False), (stack, resource.name)


def test_existing_cluster_stack_creates_no_cloud_resources_and_queues_the_planned_gpus(planned):
    result = planned["onprem-gpus"]
    assert result.providers_used == ["kubernetes"]
    assert result.plan["cloud"] == "kubernetes"
    releases = {r.inputs["chart"] for r in result.capture.of_type("kubernetes:helm.sh/v3:Release")}
    assert "nvidia-device-plugin" in releases
    assert int(cluster_queue_quota(result)["nvidia.com/gpu"]) == result.plan["chosen"]["chips"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_extra_node_network_of_a_gke_gpu_pool_is_declared_to_the_cluster(planned, stack):
    """Pods reach a GPUDirect NIC only through a GKENetworkParamSet + Network for its subnet."""
    result = planned[stack]
    # The pools of a split fleet (docs/scale.md) each attach the same extra networks, declared once.
    per_pool = {len(p.get("networkConfig", {}).get("additionalNodeNetworkConfigs") or [])
                for p in inputs_of(result, "gcp:container/nodePool:NodePool")} - {0}
    assert len(per_pool) <= 1, per_pool
    param_sets = inputs_of(result, "kubernetes:networking.gke.io/v1:GKENetworkParamSet")
    networks = inputs_of(result, "kubernetes:networking.gke.io/v1:Network")
    assert len(param_sets) == len(networks) == (per_pool.pop() if per_pool else 0)
