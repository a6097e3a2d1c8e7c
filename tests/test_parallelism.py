"""The parallelism a GPU plan implies (policies/parallelism.py) and the pools that hold whole model
replicas and whole placement units (policies/selection/fleet_layout.py, docs/scale.md)."""

from __future__ import annotations

import math
from itertools import accumulate

import pytest
from hypothesis import given, settings, strategies as st

from accel.policies import hardware
from accel.policies.selection.fleet_layout import FleetLayoutError, nodes_per_pool
from accel.policies.parallelism import serving_parallelism, training_parallelism
from accel.policies.plan import Plan, pool_sizes


@given(need=st.integers(1, 4096), gpus=st.sampled_from([1, 2, 4, 8, 16]), nodes=st.integers(1, 4096))
def test_a_training_replica_holds_the_state_unless_the_whole_fleet_is_one_replica(need, gpus, nodes):
    p = training_parallelism(need, gpus, nodes)
    assert p.tensor <= gpus and p.group_nodes <= nodes
    assert p.tensor * p.pipeline >= need or p.pipeline == nodes
    assert p.tensor * p.pipeline * p.data <= max(nodes * gpus, p.tensor * p.pipeline)


@given(need=st.integers(1, 4096), gpus=st.sampled_from([1, 2, 4, 8]), nodes=st.integers(1, 4096))
def test_tensor_parallelism_stays_inside_a_node_and_pipelines_are_powers_of_two_below_the_fleet(need, gpus, nodes):
    p = training_parallelism(need, gpus, nodes)
    assert p.tensor <= gpus
    assert p.pipeline == nodes or p.pipeline & (p.pipeline - 1) == 0


def test_llama_405b_on_h100_nodes_is_the_published_tp8_pp16_layout():
    # Llama 3 paper, Table 4: 16,384 H100s as TP8 x PP16 x DP128. 105 GPUs hold its training state.
    p = training_parallelism(105, 8, 2048)
    assert (p.tensor, p.pipeline, p.data, p.group_nodes) == (8, 16, 128, 16)


def test_a_serving_replica_wider_than_a_node_is_pipelined_over_its_nodes():
    p = serving_parallelism(16, 8, 6)
    assert (p.tensor, p.pipeline, p.group_nodes, p.data) == (8, 2, 2, 3)


def test_a_serving_replica_over_two_trays_of_one_nvlink_domain_is_one_tensor_parallel_group():
    # A4X: 4-GPU trays in 18-tray NVL72 racks placed as a unit (tensor groups may span 2 trays). The serving
    # estimate costs an 8-GPU replica as one all-reduce group over NVLink, so the layout is TP8 over 2 trays.
    p = serving_parallelism(8, 4, 18, domain_unit_nodes=18)
    assert (p.tensor, p.pipeline, p.tensor_nodes, p.group_nodes, p.data) == (8, 1, 2, 2, 9)
    # Past the span a group may take inside the domain (4 trays), or where the domain is the node, the replica's
    # nodes are pipeline stages.
    assert (serving_parallelism(16, 4, 16, domain_unit_nodes=18).pipeline,
            serving_parallelism(8, 4, 18).tensor_nodes) == (4, None)


# ---- pools of whole replicas and whole units ---------------------------------------------------------

@settings(deadline=None)
@given(nodes=st.integers(1, 20_000), limit=st.integers(1, 2_000), group=st.integers(1, 64),
       unit=st.none() | st.integers(1, 64))
def test_a_replica_never_straddles_two_pools(nodes, limit, group, unit):
    try:
        per_pool = nodes_per_pool(nodes, limit, group, unit)
    except FleetLayoutError:
        assert group > limit and nodes > limit
        return
    sizes = pool_sizes(nodes, per_pool)
    assert sum(sizes) == nodes and max(sizes) <= limit
    # Replicas are laid out from the first node: every boundary between pools falls between two replicas.
    boundaries = list(accumulate(sizes))[:-1]
    assert all(boundary % group == 0 for boundary in boundaries)


@given(nodes=st.integers(1, 20_000), limit=st.integers(1, 2_000), group=st.integers(1, 32), unit=st.integers(1, 32))
def test_a_pool_is_a_whole_number_of_documented_units_when_such_a_pool_fits(nodes, limit, group, unit):
    per_pool = nodes_per_pool(nodes, limit, group, unit) if group <= limit else None
    if per_pool is not None and math.lcm(group, unit) <= limit:
        assert per_pool % unit == 0 and per_pool % group == 0
        assert per_pool > limit - math.lcm(group, unit)


def test_only_a_documented_unit_size_shapes_the_pools():
    units = hardware.current().placement_units
    assert units["a4x-highgpu-4g"].nodes == 18
    assert units["a3-megagpu-8g"].nodes is None and units["p5.48xlarge"].nodes is None
    assert nodes_per_pool(2048, 150, 16, units["a3-megagpu-8g"].nodes) == 144
    assert nodes_per_pool(2048, 150, 4, units["a4x-highgpu-4g"].nodes) == 144   # lcm(4, 18) = 36: 4 units of 36


# ---- the 16,384-H100 stacks --------------------------------------------------------------------------

@pytest.mark.parametrize("stack", ["llama-405b-h100-gcp", "llama-405b-h100-aws"])
def test_the_16384_gpu_stacks_pools_hold_whole_model_replicas(planned_stacks, stack):
    plan = Plan.model_validate(planned_stacks[stack]["plan"])
    parallelism = plan.parallelism
    assert parallelism is not None and parallelism.group_nodes > 1
    sizes = plan.gpu.pool_sizes
    assert all(size % parallelism.group_nodes == 0 for size in sizes)
    assert parallelism.tensor * parallelism.pipeline * parallelism.data == plan.chosen.chips


def test_the_plan_json_reports_the_parallelism(planned_stacks):
    document = planned_stacks["llama-405b-h100-gcp"]["plan"]
    assert set(document["parallelism"]) == {"tensor", "pipeline", "data", "group_nodes"}


def test_a_plan_whose_pools_split_a_replica_is_refused(planned_stacks):
    document = dict(planned_stacks["llama-405b-h100-gcp"]["plan"])
    document["gpu"] = {**document["gpu"], "nodes_per_pool": 150}
    document.pop("parallelism")
    document["gpu"].pop("pools")
    with pytest.raises(ValueError, match="gpu.nodes_per_pool is 150, not a whole number of the 8-node model replicas"):
        Plan.model_validate(document)


def test_a_parallelism_given_on_input_must_agree_with_the_plan(planned_stacks):
    document = dict(planned_stacks["llama-405b-h100-gcp"]["plan"])
    assert Plan.model_validate(document).parallelism.pipeline == 8
    document["parallelism"] = {**document["parallelism"], "pipeline": 4}
    with pytest.raises(ValueError, match="plan.parallelism is .* but workload.kind"):
        Plan.model_validate(document)


def test_a_tpu_plan_has_no_gpu_parallelism(planned_stacks):
    tpu = next(d["plan"] for d in planned_stacks.values() if (d.get("plan") or {}).get("family") == "tpu")
    assert tpu["parallelism"] is None


def test_a_replica_wider_than_one_pool_is_cut_at_the_limit_in_whole_nodes():
    from accel.policies.catalog import load_catalog
    from accel.policies.selection.fleet_layout import gpu_nodes_per_pool

    offering = next(o for o in load_catalog().offerings if o.machine_type == "a3-highgpu-8g")
    assert gpu_nodes_per_pool(offering, 2048, compact=True, training=True, group_nodes=256) == 150


# ---- expert parallelism (mixture of experts) ---------------------------------------------------------

def test_a_moe_training_layout_names_its_expert_parallel_degree_and_a_dense_one_does_not():
    from accel.policies.parallelism import gpu_parallelism

    moe = gpu_parallelism(True, 8, 322, 78, None, expert=8)
    dense = gpu_parallelism(True, 8, 322, 78, None)
    assert moe.text() == "TP8 x PP16 x DP20, EP8" and dense.text() == "TP8 x PP16 x DP20"
    # A dense plan's document keeps its keys; a MoE plan's carries the degree.
    assert "expert" not in dense.model_dump() and moe.model_dump()["expert"] == 8


@given(experts=st.integers(2, 512), domain=st.sampled_from([None, 0, 4, 8, 72]), chips=st.none() | st.integers(1, 4096))
def test_experts_spread_over_one_scale_up_domain_never_past_the_experts_or_the_chips(experts, domain, chips):
    from accel.policies.parallelism import expert_parallelism

    ep = expert_parallelism(experts, domain, chips)
    assert 1 <= ep <= experts and (chips is None or ep <= chips) and experts % ep == 0   # Megatron's rule
    if domain:
        bound = min(domain, experts, chips or experts)
        assert ep <= domain and not any(experts % wider == 0 for wider in range(ep + 1, bound + 1))


def test_the_plan_and_the_estimator_spread_experts_over_the_one_domain_the_table_states(tmp_path):
    """The scale-up domain is read in one place (HardwareFacts.scale_up_domain_chips): change it in the table
    and the Plan's expert-parallel degree and the one the estimator costs its all-to-all at both follow."""
    from pathlib import Path

    from accel.policies.estimator import moe
    from accel.policies.plan import Estimate, GpuPool, plan_parallelism

    # TP8 x PP1 x DP32 on 64 trays: a stage's 256 ranks hold EP64 (Megatron's world a multiple of EP x PP; 72 trays'
    # 288 ranks would not, policies/parallelism.py expert_within_ranks).
    estimate = Estimate(flops=1.0, min_chips_for_memory=8, hours=1.0, hourly_usd=1.0, total_usd=1.0, mfu=0.4,
                        goodput=0.7)
    pool = GpuPool(accelerator="gb200", machine_type="a4x-highgpu-4g", gpus_per_node=4, nodes=64)
    facts = hardware.current()
    assert facts.scale_up_domain_chips("gb200") == 72 and facts.scale_up_domain_chips("h100-80gb") == 8
    assert facts.scale_up_domain_chips("tpu-v5p") == 0 and facts.scale_up_domain_chips("l4") is None
    # 256 experts over a 72-GPU domain: EP64, the widest degree dividing them (Megatron refuses EP72).
    assert plan_parallelism("pretrain", pool, estimate, 256).expert == moe.default_expert_parallel(256, "gb200") == 64
    table = Path(hardware.__file__).with_name("facts.toml").read_text(encoding="utf-8")
    head, _, rest = table.partition("[collective_fabrics.gb200]\ndomain_chips = 72")
    assert rest, "the gb200 collective fabric entry moved: update this test's edit"
    (tmp_path / "facts.toml").write_text(head + "[collective_fabrics.gb200]\ndomain_chips = 36" + rest, encoding="utf-8")
    with hardware.using(hardware.load_facts(tmp_path / "facts.toml")):
        assert plan_parallelism("pretrain", pool, estimate, 256).expert == 32
        assert moe.default_expert_parallel(256, "gb200") == 32


def test_the_deepseek_v3_plan_says_ep_in_its_parallelism_line_as_the_estimate_costed_it():
    from pathlib import Path

    from accel.policies import choose_plan, load_catalog, load_workload

    root = Path(__file__).resolve().parent.parent
    plan = choose_plan(load_workload(root / "examples" / "deepseek-v3-moe.yaml"), load_catalog())
    assert plan.parallelism is not None and plan.parallelism.expert == 8
    line = next(r for r in plan.rationale if r.startswith("Parallelism:"))
    assert ", EP8 " in line
    assert any(r.startswith("Experts: expert parallelism 8 ") for r in plan.rationale)
    # The plan's document round-trips with the derived degree in it.
    again = Plan.model_validate(plan.model_dump(mode="json"))
    assert again.parallelism == plan.parallelism
