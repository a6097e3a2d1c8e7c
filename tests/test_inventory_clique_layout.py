"""GB200 inventories labelled by their NVLink clique lay tensor parallelism across the trays of one clique, as A4X does.

An existing cluster's inventory that says its nodes carry GPU Feature Discovery's nvidia.com/gpu.clique
(accel:cluster inventory nvlink_clique_label) is placed by that clique (its Kueue Topology: the clique, then the node).
The clique's size in nodes (HardwareFacts.inventory_clique_nodes: the inventory's NVLink domain over its GPUs per
node) is then the one unit that
1. the search lays fleets out and times them by (the inventory's Offering, SearchContext.domain_unit, the serving
   replica sizes),
2. the Plan states (gpu.nvlink_clique_nodes) and its own check re-derives the layout from: a layout across trays on
   an inventory without the label is refused,
3. the stack holds the pinned Plan to (its inventory must label cliques of that size), and
4. the job places each tensor-parallel group by (inside one clique), its pods claiming the job's ComputeDomain.
stacks/Pulumi.onprem-gb200.yaml states no label, so nothing changes for it; tests/fixtures/inventories/
Pulumi.onprem-gb200-clique.yaml is the same two NVL72 racks with the label.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from accel.components.kubernetes.pools import ExistingCluster
from accel.job.service import check_manifests, job_of
from accel.job.topology import PREFERRED, SLICE_REQUIRED, SLICE_SIZE, level_nodes, \
    topology_request
from accel.offline_plan import plan_stack
from accel.policies import hardware
from accel.policies.catalog import CatalogError, load_catalog, offerings_from_inventory
from accel.policies.parallelism import tensor_parallel_nodes, training_degrees
from accel.policies.plan import Plan
from accel.policies.selection.candidates import search_context
from accel.policies.selection.ladders import replica_sizes
from accel.policies.workload import workload_from_mapping
from tests.compute_domain_checks import assert_claims_a_valid_compute_domain
from tests.conftest import planned_result

ROOT = Path(__file__).resolve().parent.parent
LABELLED = ROOT / "tests" / "fixtures" / "inventories" / "Pulumi.onprem-gb200-clique.yaml"
CLIQUE, NODE = hardware.current().kubernetes.nvlink_topology_levels


@pytest.fixture(scope="module")
def labelled():
    return plan_stack(None, LABELLED, ROOT)


def _inventory(**fields) -> dict:
    return {"accelerator": "gb200", "count": 144, "usd_per_chip_hour": 4.2, "name": "rack", "gpus_per_node": 4,
            **fields}


def _stack(tmp_path: Path, plan: dict | None = None, **entry) -> Path:
    """stacks/Pulumi.onprem-gb200.yaml with `entry` on its inventory and `plan` pinned (accel:plan)."""
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.onprem-gb200.yaml").read_text())
    stack["config"]["accel:cluster"]["inventory"][0].update(entry)
    if plan is not None:
        stack["config"]["accel:plan"] = plan
    path = tmp_path / "Pulumi.onprem-gb200.yaml"
    path.write_text(yaml.safe_dump(stack))
    return path


# ------------------------------------------------------------------------------ 1. one unit, from the inventory
@settings(max_examples=40, deadline=None)
@given(per_node=st.sampled_from([4, 8]), nodes=st.integers(2, 18))   # a GB200 tray: 4 (8: the inventory's say)
def test_the_search_the_plan_and_the_placement_read_one_clique_size(per_node, nodes):
    """However the inventory states its domain, the Offering the search reads, the unit the layout takes and the
    level size the job's placement takes are the one figure HardwareFacts.inventory_clique_nodes derives."""
    facts = hardware.current()
    domain = nodes * per_node
    [offering] = offerings_from_inventory([_inventory(gpus_per_node=per_node, count=domain * 2,
                                                      nvlink_domain_gpus=domain, nvlink_clique_label=True)])
    cluster = ExistingCluster(name="dc", inventory=[{"accelerator": "gb200", "chips": domain * 2,
                                                     "usd_per_chip_hour": 4.2, "gpus_per_node": per_node,
                                                     "nvlink_domain_gpus": domain, "nvlink_clique_label": True}])
    assert offering.nvlink_clique_nodes == nodes
    assert cluster.labelled_clique_nodes("gb200") == nodes
    assert facts.nvlink_domain_unit_nodes(offering.machine_type, offering.nvlink_clique_nodes) == nodes
    assert level_nodes(CLIQUE, offering.machine_type, hardware.current().inventory_clique_nodes("gb200", per_node, domain)) == nodes
    # A serving replica of whole trays stays within the span the layout's tensor groups may take.
    spans = [s.hosts for s in replica_sizes(offering, 10**6) if s.hosts > 1]
    assert max(spans, default=1) == tensor_parallel_nodes(nodes)


def test_an_inventory_without_the_label_keeps_tensor_parallelism_in_the_tray():
    [offering] = offerings_from_inventory([_inventory()])
    assert offering.nvlink_clique_nodes is None
    assert hardware.current().nvlink_domain_unit_nodes(offering.machine_type, offering.nvlink_clique_nodes) == 1
    assert [s.hosts for s in replica_sizes(offering, 10**6)] == [1, 1, 1]
    assert ExistingCluster(name="dc", inventory=[{"accelerator": "gb200", "chips": 72, "usd_per_chip_hour": 4.2,
                                                  "gpus_per_node": 4}]).labelled_clique_nodes("gb200") is None


def test_a_clique_label_where_the_node_is_the_domain_is_refused_by_the_offering():
    with pytest.raises(CatalogError, match=r"inventory\[0\]\.nvlink_clique_label: gb200 nodes of 4 GPUs share no "
                                           r"NVLink domain across nodes"):
        offerings_from_inventory([_inventory(nvlink_domain_gpus=4, nvlink_clique_label=True)])


def test_the_search_lays_out_and_times_fleets_by_the_labelled_clique():
    spec = workload_from_mapping(yaml.safe_load(LABELLED.read_text())["config"]["accel:workload"], "w.yaml")
    ctx = search_context(spec, load_catalog(None), "cost")
    [with_label] = offerings_from_inventory([_inventory(nvlink_clique_label=True)])
    [without] = offerings_from_inventory([_inventory(name="other")])
    assert (ctx.domain_unit(with_label), ctx.domain_unit(without)) == (18, 1)
    need = ctx.min_memory_chips(with_label)
    assert need > 4    # the 70B state needs more than one tray: the layout's tensor group is what the unit decides
    assert training_degrees(need, 4, 24, ctx.domain_unit(with_label))[::3] == (8, 2)    # TP8 over 2 trays
    assert training_degrees(need, 4, 24, ctx.domain_unit(without))[::3] == (4, 1)       # TP4 in the tray


# ------------------------------------------------------------------------------ 2. the plan and its own check
def test_the_labelled_inventory_plans_tensor_parallelism_across_two_trays(labelled):
    unlabelled = planned_result("onprem-gb200").plan
    assert labelled.plan["gpu"]["nvlink_clique_nodes"] == 18
    # The PyTorch run's distributed optimizer shards the optimizer state over the 11 replicas: 2 trays hold one.
    assert labelled.plan["parallelism"] == {"tensor": 8, "pipeline": 1, "data": 11, "tensor_nodes": 2,
                                            "group_nodes": 2}
    # Same fleet and run: the replica is still 2 trays (TP4 x PP2 without the label), timed on the same nodes.
    assert unlabelled["parallelism"] == {"tensor": 4, "pipeline": 2, "data": 11, "group_nodes": 2}
    assert "nvlink_clique_nodes" not in unlabelled["gpu"]
    assert (labelled.plan["chosen"]["chips"], labelled.plan["chosen"]["hours"]) == \
        (unlabelled["chosen"]["chips"], unlabelled["chosen"]["hours"])
    Plan.model_validate(labelled.plan)     # the stored layout is the one it re-derives


def test_the_plan_check_refuses_a_layout_across_trays_on_an_inventory_without_the_label(labelled):
    mutated = copy.deepcopy(labelled.plan)
    del mutated["gpu"]["nvlink_clique_nodes"]
    with pytest.raises(ValidationError, match=r"parallelism.*derived from workload.kind, gpu.gpus_per_node"):
        Plan.model_validate(mutated)
    onprem = copy.deepcopy(planned_result("onprem-gb200").plan)
    onprem["parallelism"] = labelled.plan["parallelism"]
    with pytest.raises(ValidationError, match=r"parallelism"):
        Plan.model_validate(onprem)


def test_the_plan_check_refuses_a_clique_on_a_cloud_plan():
    plan = copy.deepcopy(planned_result("llama-405b-a4x").plan)
    plan["gpu"]["nvlink_clique_nodes"] = 18
    with pytest.raises(ValidationError, match=r"gpu.nvlink_clique_nodes is 18 but a4x-highgpu-4g on gcp is placed by "
                                              r"the hardware table's unit: only an existing cluster's inventory"):
        Plan.model_validate(plan)


def test_a_clique_of_one_node_is_no_clique(labelled):
    plan = copy.deepcopy(labelled.plan)
    plan["gpu"]["nvlink_clique_nodes"] = 1
    with pytest.raises(ValidationError, match=r"gpu.nvlink_clique_nodes\n.*greater than 1"):
        Plan.model_validate(plan)


# ------------------------------------------------------------------------------ 3. the stack holds the pin to it
def test_the_stack_refuses_a_plan_laid_out_for_a_clique_its_inventory_does_not_label(labelled, tmp_path):
    pinned = labelled.plan
    assert plan_stack(None, _stack(tmp_path, pinned, nvlink_clique_label=True), ROOT).plan["parallelism"] == \
        pinned["parallelism"]
    with pytest.raises(Exception, match=r"plan.gpu.nvlink_clique_nodes: the plan was laid out for NVLink cliques "
                                        r"of 18 nodes, but existing_cluster.inventory says no NVLink clique label"):
        plan_stack(None, _stack(tmp_path, pinned), ROOT)
    with pytest.raises(Exception, match=r"cliques of 18 nodes, but existing_cluster.inventory says nodes labelled "
                                        r"by NVLink cliques of 9"):
        plan_stack(None, _stack(tmp_path, pinned, nvlink_clique_label=True, nvlink_domain_gpus=36), ROOT)


def test_a_plan_laid_out_in_the_tray_still_runs_on_a_labelled_inventory(tmp_path):
    """Pinned before the clique counted for the layout: tensor parallelism in the tray is right on any inventory."""
    pinned = planned_result("onprem-gb200").plan
    result = plan_stack(None, _stack(tmp_path, pinned, nvlink_clique_label=True), ROOT)
    assert result.plan["parallelism"] == pinned["parallelism"]


# ------------------------------------------------------------------------------ 4. the job
def test_the_job_keeps_each_tensor_group_in_one_clique_and_claims_the_compute_domain(labelled):
    job = job_of(labelled)
    [jobset] = [m for m in job.manifests if m["kind"] == "JobSet"]
    annotations = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"]
    # Each 2-tray replica, its one tensor group, required in one clique (18-tray racks hold 9 replicas).
    assert annotations == {SLICE_REQUIRED: CLIQUE, SLICE_SIZE: "2"}
    assert "parallelism TP8 x PP1 x DP11 (the Plan's)" in job.derivations
    assert f"topology: each tensor-parallel group (2 nodes) stays in that {CLIQUE}, one NVLink domain or less" \
        in job.derivations
    assert_claims_a_valid_compute_domain(labelled, job)
    assert check_manifests(labelled, job.manifests).ok


def test_a_replica_wider_than_the_clique_requires_each_tensor_group_in_one():
    """One replica of 24 trays: no clique holds it (preferred in one), but each 2-tray tensor group must share one."""
    request = topology_request((CLIQUE, NODE), "gb200", 24, 24, 2, clique_nodes=18, fleet_nodes=36)
    assert request.annotations == {SLICE_REQUIRED: CLIQUE, SLICE_SIZE: "2", PREFERRED: CLIQUE}


@settings(max_examples=60, deadline=None)
@given(clique=st.integers(2, 18), need=st.integers(5, 300), nodes=st.integers(2, 72))
def test_every_tensor_group_the_layout_spans_across_trays_is_placed_in_one_clique(clique, need, nodes):
    """Whatever the clique, the state and the fleet, the layout derived with the clique's unit and the job's request
    with that clique agree: a tensor group across trays is required inside one clique, alone or within its replica
    (a slice of whole groups no larger than the clique), or the whole job is required in one."""
    tensor, pipeline, _, span = training_degrees(need, 4, nodes, hardware.current().nvlink_domain_unit_nodes("gb200",
                                                                                                           clique))
    assert span <= tensor_parallel_nodes(clique) and clique % span == 0 and tensor == 4 * span
    request = topology_request((CLIQUE, NODE), "gb200", nodes, pipeline * span, span, clique_nodes=clique,
                               fleet_nodes=nodes)
    annotations = request.annotations
    if span > 1:
        sliced = annotations.get(SLICE_REQUIRED) == CLIQUE and int(annotations[SLICE_SIZE]) % span == 0 \
            and int(annotations[SLICE_SIZE]) <= clique
        whole = annotations.get("kueue.x-k8s.io/podset-required-topology") == CLIQUE and nodes <= clique
        assert sliced or whole, annotations


@pytest.mark.parametrize(("clique_nodes", "levels"), [
    (None, (CLIQUE, NODE)),     # the inventory's clique size unknown
    (9, (CLIQUE, NODE)),        # 9-tray cliques: 2-tray groups do not tile them, a group would straddle two
    (18, (NODE,)),              # no clique level in the pool's Topology (no label)
])
def test_a_tensor_group_across_trays_with_no_clique_to_hold_it_is_refused(clique_nodes, levels):
    with pytest.raises(ValueError, match=r"gb200: a tensor-parallel group spans 2 nodes but no placement unit"):
        topology_request(levels, "gb200", 24, 4, 2, clique_nodes=clique_nodes, fleet_nodes=36)


# ------------------------------------------------------------------------------ 5. serving across two trays
SERVING = {"name": "llama-405b-serve", "kind": "inference", "model": {"parameters": "405B", "sequence_length": 4096},
           "inference": {"tokens_per_second": 5000, "p99_latency_ms": 80, "framework": "pytorch", "hours": 730},
           "constraints": {"clouds": ["kubernetes"]}}


def _serving_stack(tmp_path: Path, **entry) -> Path:
    stack = yaml.safe_load(LABELLED.read_text())
    stack["config"]["accel:workload"] = SERVING
    stack["config"]["accel:cluster"]["inventory"][0].update(entry)
    path = tmp_path / "Pulumi.serve.yaml"
    path.write_text(yaml.safe_dump(stack))
    return path


def test_a_labelled_inventory_serves_a_replica_over_two_trays_of_one_clique(tmp_path):
    """405B's bf16 weights (810 GB) do not fit one 4-GPU tray: on the labelled racks a replica is TP8 over two trays
    of one clique (the search's replica sizes), its leader and worker required in one clique, claiming the
    ComputeDomain; without the label no replica fits (tensor parallelism stays in the tray)."""
    result = plan_stack(None, _serving_stack(tmp_path), ROOT)
    assert result.plan["parallelism"]["tensor"] == 8 and result.plan["parallelism"]["tensor_nodes"] == 2
    job = job_of(result)
    [lws] = [m for m in job.manifests if m["kind"] == "LeaderWorkerSet"]
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 2
    assert template["leaderTemplate"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] == CLIQUE
    assert "ComputeDomain" in {m["kind"] for m in job.manifests}
    assert check_manifests(result, job.manifests).ok
    with pytest.raises(Exception, match=r"memory fit eliminated 1: kubernetes-gb200"):
        plan_stack(None, _serving_stack(tmp_path, nvlink_clique_label=False), ROOT)
