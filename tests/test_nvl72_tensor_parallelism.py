"""Tensor parallelism across the nodes of one NVLink domain (GB200 NVL72): the Plan lets a tensor-parallel group
span whole nodes only inside a domain the cloud places as a unit a job can require (A4X's 18-node sub-block), never
across two domains, and never on a machine whose domain is the node; `accel job` keeps each group in one domain
(policies/parallelism.py, HardwareFacts.nvlink_domain_unit_nodes, accel/job/topology.py, docs/scale.md)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from accel.job.topology import PREFERRED, REQUIRED, SLICE_REQUIRED, SLICE_SIZE, topology_request
from accel.policies import hardware
from accel.policies.parallelism import tensor_parallel_nodes, training_parallelism
from accel.policies.plan import Plan
from tests.test_job import generated, planned, recheck

GKE = hardware.current().kubernetes.gke_topology_levels
BLOCK, SUBBLOCK, HOST, NODE = GKE


def pod_annotations(manifests) -> dict:
    jobset = next(m for m in manifests if m["kind"] == "JobSet")   # the ComputeDomain comes first on GB200
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"]


# ---- the layout --------------------------------------------------------------------------------------

def test_a_405b_state_on_an_nvl72_rack_of_4_gpu_trays_is_tp8_over_two_trays():
    # 49 GB200 hold Llama 3.1 405B's training state (estimate.min_chips_for_memory); A4X racks of 18 trays.
    p = training_parallelism(49, 4, 36, domain_unit_nodes=18)
    assert (p.tensor, p.tensor_nodes, p.pipeline, p.data, p.group_nodes) == (8, 2, 8, 2, 16)
    assert p.text() == "TP8 x PP8 x DP2"


def test_a_70b_state_on_an_nvl72_rack_is_tp8_pp2():
    p = training_parallelism(9, 4, 36, domain_unit_nodes=18)
    assert (p.tensor, p.tensor_nodes, p.pipeline, p.data, p.group_nodes) == (8, 2, 2, 9, 4)


def test_a_state_that_fits_one_tray_keeps_tensor_parallelism_in_the_tray():
    p = training_parallelism(3, 4, 36, domain_unit_nodes=18)
    assert (p.tensor, p.tensor_nodes, p.pipeline) == (4, None, 1)


def test_tensor_groups_tile_the_domain_unit_so_none_straddles_two_domains():
    assert [tensor_parallel_nodes(n) for n in (1, 2, 9, 18, 36, 72)] == [1, 2, 1, 2, 4, 8]


@given(need=st.integers(1, 4096), gpus=st.sampled_from([1, 2, 4, 8]), unit=st.integers(1, 72),
       units=st.integers(1, 64))
def test_a_tensor_group_never_spans_more_than_one_domain_unit(need, gpus, unit, units):
    nodes = unit * units   # fleets of such machines come in whole units (HardwareFacts.node_step)
    p = training_parallelism(need, gpus, nodes, domain_unit_nodes=unit)
    span = p.tensor_nodes or 1
    assert p.tensor == gpus * span or (span == 1 and p.tensor <= gpus)
    # Groups of `span` consecutive nodes tile every unit: span divides the unit, so group i never straddles two.
    assert unit % span == 0 and nodes % span == 0 and span & (span - 1) == 0
    assert p.group_nodes == p.pipeline * span <= nodes
    assert p.tensor * p.pipeline >= need or p.group_nodes > nodes // 2


@given(need=st.integers(1, 4096), gpus=st.sampled_from([1, 2, 4, 8, 16]), nodes=st.integers(1, 4096))
def test_where_the_domain_is_the_node_the_layout_is_the_one_it_always_was(need, gpus, nodes):
    p = training_parallelism(need, gpus, nodes)
    assert p == training_parallelism(need, gpus, nodes, domain_unit_nodes=1)
    assert p.tensor <= gpus and p.tensor_nodes is None and p.group_nodes == p.pipeline
    assert "tensor_nodes" not in p.model_dump()


# ---- which machines: the hardware table ---------------------------------------------------------------

def test_only_a_documented_unit_of_one_nvlink_domain_lets_tensor_parallelism_span_nodes():
    facts = hardware.current()
    assert facts.nvlink_domain_unit_nodes("a4x-highgpu-4g") == 18   # an A4X sub-block: one NVL72 rack
    # p6e-gb200: the NVLink clique GPU Feature Discovery labels (one UltraServer), the smaller UltraServer's 9 nodes;
    # 9 is odd, so a tensor-parallel group still stays in the tray (pairs of trays would not tile it).
    assert facts.nvlink_domain_unit_nodes("p6e-gb200.36xlarge") == 9
    assert tensor_parallel_nodes(facts.nvlink_domain_unit_nodes("p6e-gb200.36xlarge")) == 1
    spanning = {m for m in (*facts.gcp_gpu_machines, *facts.aws_gpu_instances) if facts.nvlink_domain_unit_nodes(m) > 1}
    assert spanning == {"a4x-highgpu-4g", "p6e-gb200.36xlarge", "p6e-gb300.36xlarge"}
    # p6e-gb300: one x72, the only UltraServer type known, so its clique is 18 trays and TP spans two.
    assert tensor_parallel_nodes(facts.nvlink_domain_unit_nodes("p6e-gb300.36xlarge")) == 2
    # A machine whose NVLink domain is the node (H100, B200, the 16-GPU A2) never does, whatever its unit.
    for machine in ("a3-megagpu-8g", "a4-highgpu-8g", "p5.48xlarge", "a2-megagpu-16g", "not-a-machine"):
        assert facts.nvlink_domain_unit_nodes(machine) == 1


# ---- the stacks: the Plan and the job ------------------------------------------------------------------

def test_the_405b_a4x_plan_is_tp8_pp4_with_two_tray_tensor_groups():
    # TP8 x PP8 x DP2 while a replica held the whole state; the PyTorch run's distributed optimizer shards the
    # optimizer state over the replicas, so 8 trays hold one (tests/test_distributed_optimizer_layout.py).
    plan = Plan.model_validate(planned("llama-405b-a4x").plan)
    p = plan.parallelism
    assert (p.tensor, p.tensor_nodes, p.pipeline, p.data, p.group_nodes) == (8, 2, 4, 4, 8)
    assert plan.model_dump(mode="json")["parallelism"]["tensor_nodes"] == 2
    assert any("tensor-parallel groups of 2 nodes, each inside one NVLink domain" in line for line in plan.rationale)


# (llama-405b-p6e's block says u-p6e-gb200x72, whose 18 trays are one unit: TP8 over two trays. The same stack with
# a block that does not say it stays in the tray: tests/test_ultraserver_clique_layout.py.)
@pytest.mark.parametrize("stack", ["onprem-gb200", "llama-405b-h100-gcp"])
def test_where_no_unit_holds_one_domain_tensor_parallelism_stays_in_the_node(stack):
    plan = Plan.model_validate(planned(stack).plan)
    assert plan.parallelism.tensor == plan.gpu.gpus_per_node and plan.parallelism.tensor_nodes is None
    assert "tensor_nodes" not in planned(stack).plan["parallelism"]


def test_a_pinned_plan_claiming_tensor_groups_across_nodes_where_the_domain_is_the_node_is_refused():
    document = dict(planned("llama-405b-p6e").plan)
    document["parallelism"] = {"tensor": 8, "pipeline": 8, "data": 1, "tensor_nodes": 2}
    with pytest.raises(ValueError, match="plan.parallelism is .* but workload.kind"):
        Plan.model_validate(document)


def test_the_405b_a4x_job_requires_each_tensor_group_in_one_nvlink_domain_and_schedules():
    # 36 nodes are not a whole number of 16-node replicas, so no replica can be required: each 2-node
    # tensor-parallel group is (before, the job only preferred a sub-block, and a group could straddle two racks).
    job = generated("llama-405b-a4x")
    annotations = pod_annotations(job.manifests)
    assert annotations[SLICE_REQUIRED] == SUBBLOCK and annotations[SLICE_SIZE] == "2"
    assert annotations[PREFERRED] == BLOCK and REQUIRED not in annotations
    assert recheck("llama-405b-a4x", job.manifests).errors == []


def test_a_replica_required_inside_one_domain_already_holds_its_tensor_groups():
    request = topology_request(GKE, "a4x-highgpu-4g", 36, 6, tensor_nodes=2)
    assert request.annotations == {SLICE_REQUIRED: SUBBLOCK, SLICE_SIZE: "6", PREFERRED: BLOCK}
    assert "each tensor-parallel group (2 nodes) stays in that" in request.notes[-1]


def test_a_job_that_is_one_replica_wider_than_a_domain_still_requires_each_tensor_group_in_one():
    request = topology_request(GKE, "a4x-highgpu-4g", 36, 36, tensor_nodes=2)
    assert request.annotations == {REQUIRED: BLOCK, SLICE_REQUIRED: SUBBLOCK, SLICE_SIZE: "2"}


def test_tensor_groups_across_nodes_on_a_machine_with_no_domain_unit_is_a_bug_not_a_silent_straddle():
    with pytest.raises(ValueError, match="no placement unit"):
        topology_request(GKE, "a3-megagpu-8g", 32, 16, tensor_nodes=2)


def test_an_a4x_plan_pinned_with_the_layout_derived_before_still_loads_and_now_reads_tp8():
    # Stack files pinned by `accel choose --write-stack` before 2026-11-27 carry TP4 x PP16 for this fleet, and an
    # estimate that does not record the distributed optimizer's state (so the whole state sets their layout).
    document = dict(planned("llama-405b-a4x").plan)
    details = {k: v for k, v in document["estimate"]["details"].items()
               if k not in ("replicated_state_gpus", "sharded_state_gpus")}
    document["estimate"] = {**document["estimate"], "details": details}
    document["parallelism"] = {"tensor": 4, "pipeline": 16, "data": 2, "group_nodes": 16}
    assert Plan.model_validate(document).parallelism.text() == "TP8 x PP8 x DP2"
    document["parallelism"] = {"tensor": 4, "pipeline": 8, "data": 2, "group_nodes": 16}   # neither layout
    with pytest.raises(ValueError, match="plan.parallelism is .* but workload.kind"):
        Plan.model_validate(document)


def test_replicas_that_do_not_pack_into_sub_blocks_are_not_required_in_one_but_their_tensor_groups_are():
    # 70B on 36 A4X: TP8 x PP2 x DP9, 4-node replicas; two 18-node sub-blocks hold 8 of them, not 9, so a
    # per-replica requirement would keep the job queued forever. Each 2-node tensor group is required instead.
    request = topology_request(GKE, "a4x-highgpu-4g", 36, 4, tensor_nodes=2)
    assert request.annotations == {SLICE_REQUIRED: SUBBLOCK, SLICE_SIZE: "2", PREFERRED: BLOCK}
    # Replicas that pack (3 six-node ones per sub-block) are still required whole.
    assert topology_request(GKE, "a4x-highgpu-4g", 36, 6).annotations == {
        SLICE_REQUIRED: SUBBLOCK, SLICE_SIZE: "6", PREFERRED: BLOCK}
    # A tray-bound layout whose replicas do not pack only prefers the sub-block, as a job of no whole replicas does.
    assert topology_request(GKE, "a4x-highgpu-4g", 36, 4).annotations == {PREFERRED: SUBBLOCK}


# ---- p6e-gb200: a group of up to one UltraServer's trays in one NVLink clique --------------------------------

P6E_LEVELS = hardware.current().kubernetes.nvlink_topology_levels
CLIQUE = "nvidia.com/gpu.clique"


def test_p6e_is_placed_by_the_nvlink_clique_gpu_feature_discovery_labels():
    facts = hardware.current()
    unit = facts.placement_units["p6e-gb200.36xlarge"]
    assert (unit.level, unit.nodes) == (CLIQUE, 9)      # the smaller UltraServer: u-p6e-gb200x36
    assert unit.nodes == min(facts.aws_gpu_instances["p6e-gb200.36xlarge"].ultraserver_sizes)
    assert facts.pool_topology_levels("p6e-gb200.36xlarge", ("x",)) == P6E_LEVELS == (CLIQUE, "kubernetes.io/hostname")
    # Every other machine keeps its cloud's levels.
    for machine in ("p5.48xlarge", "p6-b200.48xlarge", "a4x-highgpu-4g"):
        assert facts.pool_topology_levels(machine, ("x",)) == ("x",)


@given(nodes=st.integers(2, 512), group=st.integers(2, 9))
def test_a_p6e_replica_of_at_most_one_ultraserver_is_required_in_one_clique(nodes, group):
    """Replicas of 2..9 trays: each required in one clique (or, where cliques of 9 cannot hold them all whole, the
    job only preferred there); never required anywhere a clique cannot hold."""
    request = topology_request(P6E_LEVELS, "p6e-gb200.36xlarge", nodes, group)
    annotations = request.annotations
    for key in (REQUIRED, SLICE_REQUIRED, PREFERRED):
        assert annotations.get(key, CLIQUE) == CLIQUE
    if group < nodes and nodes % group == 0 and (nodes // 9) * (9 // group) + (nodes % 9) // group >= nodes // group:
        assert annotations[SLICE_REQUIRED] == CLIQUE and annotations[SLICE_SIZE] == str(group)
    if group >= nodes:
        assert annotations == {REQUIRED: CLIQUE}


@given(nodes=st.integers(10, 512))
def test_a_p6e_job_wider_than_one_ultraserver_is_never_required_in_one(nodes):
    request = topology_request(P6E_LEVELS, "p6e-gb200.36xlarge", nodes, nodes)
    assert request.annotations == {PREFERRED: CLIQUE}
    assert "more than one nvidia.com/gpu.clique holds (9)" in request.notes[0]


def test_the_405b_p6e_job_requires_one_clique_and_claims_the_compute_domain():
    """llama-405b-p6e: one 16-tray replica (TP8 over two trays x PP8) on the one u-p6e-gb200x72 its Capacity Block
    says it is; the 18-tray clique holds the whole replica, so the job requires one (a block that does not say its
    UltraServer type is laid out by the 9 trays a clique is known to hold, TP4 x PP16, and only preferred in one:
    tests/test_ultraserver_clique_layout.py)."""
    plan = Plan.model_validate(planned("llama-405b-p6e").plan)
    p = plan.parallelism
    assert (p.tensor, p.tensor_nodes, p.pipeline, p.data) == (8, 2, 8, 1)
    assert plan.gpu.nvlink_clique_nodes == 18
    jobset = next(m for m in generated("llama-405b-p6e").manifests if m["kind"] == "JobSet")
    template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    assert annotations[REQUIRED] == CLIQUE and PREFERRED not in annotations
    assert template["spec"]["resourceClaims"][0]["name"] == "compute-domain-channel"
