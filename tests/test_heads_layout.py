"""A GPU training layout for a named architecture is one Megatron-LM accepts: the plan's tensor degree divides the
row's query heads and KV heads (query groups), the state it no longer holds going to a deeper pipeline, its pipeline
fits the row's layers and its expert-parallel degree divides the experts and a stage's ranks
(policies/parallelism.py within_heads, expert_within_ranks). The job's own refusals (accel/job/megatron_run.py)
are the judge: whatever fleet the plan lays a row out on, `accel job` takes it, or the plan itself refuses naming
model.architecture."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from accel.base.errors import UsageError
from accel.job import megatron_run
from accel.policies import hardware
from accel.policies.architectures.rows import table
from accel.policies.parallelism import HeadsLayoutError, gpu_parallelism, within_heads
from accel.policies.plan import Plan, plan_parallelism
from accel.policies.workload import ModelSpec
from tests.conftest import planned_result

ROWS = sorted(table().rows)


def test_qwen3_30b_on_64_h100_trains_at_tp4_where_tp8_splits_its_4_kv_heads_nowhere():
    row = table().rows["qwen3-30b-a3b"]
    heads = row.tensor_heads
    assert heads == 4
    # The old rule (no heads): TP8 x PP1 x DP8, which Megatron-LM core_v0.15.3 refused (transformer_config.py l.758)
    # and core_v0.19.0 takes by replicating each KV head over two ranks (l.1338-1345); MaxText shards both head axes
    # over its tensor axis, and the plan keeps the tensor degree within the heads for both.
    assert gpu_parallelism(True, 8, 8, 8, None).text() == "TP8 x PP1 x DP8"
    narrowed = gpu_parallelism(True, 8, 8, 8, None, heads=heads, layers=row.layers)
    assert narrowed.text() == "TP4 x PP2 x DP8"
    # Same GPUs per replica, so the same data-parallel degree, timed nodes and fleet as the search priced.
    assert narrowed.replica_gpus == 8
    # Megatron's pipeline is the outermost rank dimension: stage 0 is ranks 0-31 (nodes 0-3), stage 1 ranks 32-63, so
    # a replica spans 2 nodes; on a one-node fleet both stages share the node.
    assert narrowed.stages_per_node is None and narrowed.group_nodes == 2
    one_node = gpu_parallelism(True, 8, 1, 8, None, heads=heads, layers=row.layers)
    assert one_node.text() == "TP4 x PP2 x DP1" and one_node.stages_per_node == 2 and one_node.group_nodes == 1


def test_a_row_whose_heads_the_layout_already_divides_keeps_it():
    row = table().rows["llama3.1-405b"]
    heads = row.tensor_heads
    for nodes, need in ((2048, 64), (64, 8), (36, 20)):
        assert gpu_parallelism(True, 8, nodes, need, None, heads=heads, layers=row.layers) == \
            gpu_parallelism(True, 8, nodes, need, None)


def test_an_nvl72_tensor_group_over_two_trays_narrows_to_one_tray():
    # TP8 over two 4-GPU GB200 trays of an 18-tray domain; 4 KV heads: TP4 on one tray, twice the stages.
    assert within_heads(8, 4, 2, 4) == (4, 8, 1)


def test_a_pipeline_deeper_than_the_layers_is_refused_at_plan_time_naming_the_row():
    with pytest.raises(HeadsLayoutError, match="more pipeline stages than its 26 layers"):
        within_heads(8, 16, 1, 4, layers=26)
    with pytest.raises(HeadsLayoutError, match="TP8 x PP32"):
        within_heads(8, 32, 1, 8, layers=26)
    assert within_heads(8, 16, 1, 4, layers=32) == (4, 32, 1)


@pytest.fixture(scope="module")
def base_plan() -> Plan:
    """llama-70b-a4's plan (B200, 8 GPUs a node), its estimate reduced to the whole-state figure each case sets."""
    return Plan.model_validate(planned_result("llama-70b-a4").plan)


def _case(base: Plan, architecture: str, machine: tuple[str, str, int], nodes: int, need: int) -> Plan:
    accelerator, machine_type, gpus = machine
    model = ModelSpec.model_validate({"architecture": architecture, "sequence_length": 4096})
    workload = base.workload.model_copy(update={"model": model})
    details = {k: v for k, v in base.estimate.details.items()
               if k not in ("replicated_state_gpus", "sharded_state_gpus", "busy_chips", "context_parallel",
                            "pipeline_parallel", "tensor_parallel", "replica_chips")}
    estimate = base.estimate.model_copy(update={"min_chips_for_memory": need, "details": details})
    gpu = base.gpu.model_copy(update={"accelerator": accelerator, "machine_type": machine_type,
                                      "gpus_per_node": gpus, "nodes": nodes, "nvlink_clique_nodes": None})
    return base.model_copy(update={"workload": workload, "estimate": estimate, "gpu": gpu})


MACHINES = [("b200", "a4-highgpu-8g", 8), ("h100-80gb", "a3-megagpu-8g", 8), ("gb200", "a4x-highgpu-4g", 4)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(architecture=st.sampled_from(ROWS), machine=st.sampled_from(MACHINES), nodes=st.integers(1, 256),
       need=st.integers(1, 1024))
def test_the_job_never_refuses_a_layout_the_plan_chose_for_a_named_row(base_plan, architecture, machine, nodes,
                                                                     need):
    plan = _case(base_plan, architecture, machine, nodes, need)
    try:
        layout = plan.parallelism
    except HeadsLayoutError as error:   # no layout holds it: said at plan time, naming the field
        assert str(error).startswith(f"model.architecture: {architecture}:")
        row = table().rows[architecture]
        assert "more pipeline stages than its" in str(error) and str(row.layers) in str(error)
        return
    assert layout is not None
    degrees = megatron_run.layout(plan)
    megatron_run.model_shape(plan, degrees)   # the job's refusals: heads, query groups, layers over PP, experts
    if degrees.expert > 1:   # expert TP 1: world a multiple of EP x PP (parallel_state.py initialize_model_parallel)
        world = degrees.model_ranks * degrees.data
        assert world % (degrees.expert * degrees.pipeline) == 0
    # The replica keeps the GPUs of the layout the state alone sets, as the search timed it.
    unit = hardware.current().nvlink_domain_unit_nodes(plan.gpu.machine_type, None)
    plain = gpu_parallelism(True, machine[2], nodes, need, None, domain_unit_nodes=unit)
    assert (layout.replica_gpus, layout.data) == (plain.replica_gpus, plain.data)


def test_the_old_rule_would_hand_the_job_a_layout_it_refuses(base_plan, monkeypatch):
    """The mutated case: Qwen3 30B-A3B with 6 KV heads (neither a multiple nor a divisor of 8) on 8 nodes; without
    the heads rule it gets TP8 and the job refuses it."""
    from dataclasses import replace

    monkeypatch.setitem(table().rows, "qwen3-30b-a3b", replace(table().rows["qwen3-30b-a3b"], kv_heads=6))
    plan = _case(base_plan, "qwen3-30b-a3b", MACHINES[1], 8, 8)
    megatron_run.model_shape(plan, megatron_run.layout(plan))
    monkeypatch.setattr("accel.policies.plan.architecture_heads", lambda architecture: (0, 0))
    assert megatron_run.layout(plan).tensor == 8
    with pytest.raises(UsageError, match="6 KV heads .query groups. neither split over tensor parallelism 8"):
        megatron_run.model_shape(plan, megatron_run.layout(plan))


def test_the_plan_names_the_row_when_no_layout_holds_it(base_plan):
    plan = _case(base_plan, "gemma2-2b", MACHINES[0], 64, 512)   # TP8 x PP64 of state, 26 layers
    with pytest.raises(HeadsLayoutError, match=r"^model.architecture: gemma2-2b: on 64 x a4-highgpu-8g"):
        plan_parallelism("pretrain", plan.gpu, plan.estimate, None, architecture="gemma2-2b")


@given(experts=st.sampled_from([8, 64, 128, 160, 256]), tensor=st.sampled_from([1, 2, 4, 8]),
       data=st.integers(1, 64), domain=st.sampled_from([4, 8, 16, 72]))
def test_the_expert_degree_divides_the_experts_and_a_stages_ranks(experts, tensor, data, domain):
    from accel.policies.parallelism import Parallelism, expert_parallelism, expert_within_ranks

    ep = expert_parallelism(experts, domain)
    layout = expert_within_ranks(Parallelism(tensor=tensor, pipeline=2, data=data, expert=ep if ep > 1 else None))
    expert = layout.expert or 1
    assert experts % expert == 0 and (tensor * data) % expert == 0
    assert expert == math.gcd(ep, tensor * data)   # the widest the ranks allow
