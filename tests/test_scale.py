"""Frontier scale (docs/scale.md): a 16,384-H100 fleet laid out as pools within each cloud's limits,
the Kueue Topology over the cloud's placement labels, and the Plan's pool layout."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from accel.policies import hardware
from accel.policies.selection.fleet_layout import FleetLayoutError, nodes_per_pool
from accel.policies.plan import GpuPool, pool_sizes
from tests.crds import CRDS, served_schema

ROOT = Path(__file__).resolve().parents[1]
FLEETS = {"llama-405b-h100-gcp": ("gcp:container/nodePool:NodePool", "gke_compact_placement_max_nodes"),
          "llama-405b-h100-aws": ("aws:eks/nodeGroup:NodeGroup", "eks_nodes_per_managed_node_group")}


def crd_schema(name: str) -> dict:
    return served_schema(CRDS / "kueue" / f"kueue.x-k8s.io_{name}.yaml", "v1beta1")


def gpu_pools(document: dict, pool_type: str) -> list[dict]:
    return [r for r in document["resources"] if r["type"] == pool_type and "-gpu" in r["name"]]


def max_nodes(resource: dict) -> int:
    inputs = resource["inputs"]
    return inputs["autoscaling"]["totalMaxNodeCount"] if "autoscaling" in inputs else inputs["scalingConfig"]["maxSize"]


# ---- the layout decision --------------------------------------------------------------------------

@given(nodes=st.integers(1, 20_000), limit=st.integers(1, 2_000), group=st.integers(1, 64))
def test_pools_add_up_to_the_fleet_and_each_stays_within_the_limit_in_whole_groups(nodes, limit, group):
    try:
        per_pool = nodes_per_pool(nodes, limit, group)
    except FleetLayoutError:
        assert group > limit and nodes > limit
        return
    sizes = pool_sizes(nodes, per_pool)
    assert sum(sizes) == nodes and max(sizes) <= limit
    if per_pool is not None:
        assert per_pool % group == 0 and all(size == per_pool for size in sizes[:-1])


def test_a_fleet_within_one_pool_is_not_split():
    assert nodes_per_pool(150, 150) is None and pool_sizes(150, None) == [150]


def test_a_plan_pool_count_given_on_input_must_agree_with_its_layout():
    pool = {"accelerator": "h100-80gb", "machine_type": "a3-highgpu-8g", "gpus_per_node": 8, "nodes": 2048,
            "nodes_per_pool": 150}
    assert GpuPool.model_validate({**pool, "pools": 14}).pools == 14
    with pytest.raises(ValueError, match="gpu.pools is 3 but gpu.nodes and gpu.nodes_per_pool says 14"):
        GpuPool.model_validate({**pool, "pools": 3})


# ---- the 16,384-H100 stacks -------------------------------------------------------------------------

@pytest.mark.parametrize("stack", FLEETS)
def test_the_16384_gpu_stack_plans_every_pool_within_its_limit_and_the_nodes_add_up(planned_stacks, stack):
    document = planned_stacks[stack]
    pool_type, limit_name = FLEETS[stack]
    pools = gpu_pools(document, pool_type)
    plan = document["plan"]["gpu"]
    assert plan["nodes"] * plan["gpus_per_node"] == 16384
    assert len(pools) == plan["pools"] > 1
    assert all(max_nodes(p) <= hardware.current().limit(limit_name) for p in pools)
    assert sum(max_nodes(p) for p in pools) == plan["nodes"]


def test_every_gke_pool_of_the_fleet_is_its_own_compact_placement(planned_stacks):
    pools = gpu_pools(planned_stacks["llama-405b-h100-gcp"], FLEETS["llama-405b-h100-gcp"][0])
    assert all(p["inputs"]["placementPolicy"] == {"type": "COMPACT"} for p in pools)


def test_every_eks_node_group_of_the_fleet_has_its_own_cluster_placement_group(planned_stacks):
    document = planned_stacks["llama-405b-h100-aws"]
    groups = {r["name"] for r in document["resources"] if r["type"] == "aws:ec2/placementGroup:PlacementGroup"}
    assert len(groups) == document["plan"]["gpu"]["pools"]


@pytest.mark.parametrize("stack, levels", [("llama-405b-h100-gcp", "gke_topology_levels"),
                                           ("llama-405b-h100-aws", "eks_topology_levels"),
                                           # p6e-gb200 is placed by its NVLink clique: the clique, then the node
                                           ("llama-405b-p6e", "nvlink_topology_levels")])
def test_the_kueue_topology_follows_the_clouds_placement_labels_and_the_flavor_names_it(planned_stacks, stack, levels):
    import jsonschema

    document = planned_stacks[stack]
    [topology] = [r["inputs"] for r in document["resources"] if r["type"] == "kubernetes:kueue.x-k8s.io/v1beta1:Topology"]
    jsonschema.validate(topology, crd_schema("topologies"))
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == list(
        getattr(hardware.current().kubernetes, levels))
    flavors = [r["inputs"] for r in document["resources"]
               if r["type"] == "kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor"]
    for flavor in flavors:
        jsonschema.validate(flavor, crd_schema("resourceflavors"))
    assert [f["spec"].get("topologyName") for f in flavors] == [topology["metadata"]["name"]]


def test_a_pool_without_a_scale_out_fabric_gets_no_topology(planned_stacks):
    document = planned_stacks["llama-8b-serving-gpu"]
    assert not [r for r in document["resources"] if r["type"] == "kubernetes:kueue.x-k8s.io/v1beta1:Topology"]


# ---- quotas ---------------------------------------------------------------------------------------------

def quotas_of(planned_stacks, stack: str) -> dict[str, dict]:
    return {need["name"]: need for need in planned_stacks[stack]["quotas"]}


def test_the_gcp_fleet_lists_its_gpu_and_cpu_quota_by_the_consoles_names(planned_stacks):
    document = planned_stacks["llama-405b-h100-gcp"]
    gpu = document["plan"]["gpu"]
    machine = hardware.current().gcp_gpu_machines[gpu["machine_type"]]
    quotas = quotas_of(planned_stacks, "llama-405b-h100-gcp")
    assert quotas["NVIDIA_H100_GPUS"]["amount"] == 16384
    assert quotas["CPUS"]["amount"] == machine.vcpus * gpu["nodes"]
    assert {need["region"] for need in quotas.values()} == {document["plan"]["region"]}


def test_the_aws_fleet_lists_its_p_instance_vcpus(planned_stacks):
    gpu = planned_stacks["llama-405b-h100-aws"]["plan"]["gpu"]
    vcpus = hardware.current().aws_gpu_instances[gpu["machine_type"]].vcpus
    assert quotas_of(planned_stacks, "llama-405b-h100-aws")["Running On-Demand P instances"]["amount"] == vcpus * 2048


def test_a_tpu_multislice_lists_its_chips_quota(planned_stacks):
    tpu = planned_stacks["llama-70b-v5p"]["plan"]["tpu"]
    assert quotas_of(planned_stacks, "llama-70b-v5p")["TPU v5p chips"]["amount"] == tpu["chips_per_slice"] * tpu["slices"]


def test_spot_capacity_asks_for_the_preemptible_quota(planned_stacks):
    spot = [(stack, doc) for stack, doc in planned_stacks.items()
            if doc["plan"] and doc["plan"]["capacity"]["provisioning"] == "spot" and doc["plan"]["cloud"] == "gcp"]
    assert spot
    for stack, _ in spot:
        assert all(name.startswith("PREEMPTIBLE_") or name.startswith("preemptible ")
                   for name in quotas_of(planned_stacks, stack)), stack


def test_the_16384_h100_pin_is_estimated_on_both_clouds():
    from accel.policies.catalog import load_catalog
    from accel.policies.selection.choose import choose
    from accel.policies.workload import load_workload

    choice = choose(load_workload(ROOT / "examples" / "llama-405b-h100.yaml"), load_catalog())
    assert {o.cloud for o in choice.options} == {"gcp", "aws"}
    assert all(o.chips == 16384 and o.hosts == 2048 for o in choice.options)
    assert choice.options[0] == choice.chosen and choice.chosen.total_usd <= choice.options[1].total_usd


# ---- TPU multislice beyond one pod -----------------------------------------------------------------------

@pytest.mark.parametrize("generation, topology, slices", [("v5p", "16x16x24", 2), ("v6e", "16x16", 32)])
def test_a_tpu_multislice_beyond_one_pod_plans_one_pool_per_slice(tmp_path, generation, topology, slices):
    from accel.offline_plan import plan_stack

    base = (ROOT / "stacks" / "Pulumi.llama-70b-v5p.yaml").read_text().split("  accel:hardware:\n")[0]
    path = tmp_path / f"Pulumi.multislice-{generation}.yaml"
    path.write_text(base + f"  accel:hardware:\n    accelerator: tpu-{generation}\n    topology: {topology}\n"
                           f"    slices: {slices}\n    spot: false\n")
    result = plan_stack(None, path, ROOT)
    tpu = result.plan["tpu"]
    pod = hardware.current().tpu_generations[generation].max_chips_per_slice
    assert tpu["slices"] == slices and tpu["chips_per_slice"] * slices > pod   # more chips than one slice may hold
    pools = [r for r in result.capture.resources if r.type == "gcp:container/nodePool:NodePool" and "-tpu" in r.name]
    assert len(pools) == slices
    assumptions = {a["name"]: a["value"] for a in result.plan["estimate"]["assumptions"]}
    assert 0 < assumptions["multislice_efficiency"] < 1   # the data-centre network's cost on the estimate


@pytest.mark.parametrize("stack, clique", [("llama-405b-p6e", True), ("llama-405b-h100-aws", False),
                                           ("llama-70b-finetune-aws", False)])
def test_a_pool_placed_by_its_nvlink_clique_gets_gpu_feature_discovery_to_label_it(planned_stacks, stack, clique):
    """Kueue leaves a node without every level's label out of its Topology: the device plugin chart runs GFD (and
    NFD, whose worker tolerates the GPU pools' taints) where a pool's Topology is nvidia.com/gpu.clique."""
    document = planned_stacks[stack]
    [plugin] = [r["inputs"] for r in document["resources"] if r["type"] == "kubernetes:helm.sh/v3:Release"
                and r["inputs"]["name"] == "nvidia-device-plugin"]
    values = plugin["values"]
    assert ("gfd" in values) == clique and ("nfd" in values) == clique
    if clique:
        assert values["gfd"] == {"enabled": True}
        tolerations = values["nfd"]["worker"]["tolerations"]
        assert tolerations == values["tolerations"]
        assert {"key": "nvidia.com/gpu", "operator": "Exists"} in [
            {k: v for k, v in t.items() if k in ("key", "operator")} for t in tolerations]
