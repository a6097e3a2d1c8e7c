"""The GPU training layout the job actually runs: Megatron-LM with --use-distributed-optimizer keeps the bf16 weights
and fp32 gradients whole on every data-parallel replica and shards the fp32 master weights and Adam moments over the
replicas (6 + 12/d bytes per parameter, Megatron's dist_optimizer.md). A replica is the smallest tensor x pipeline
group whose GPUs hold their share on the fleet it is laid out on (policies/parallelism.py distributed_replica_need),
checked against published layouts (tests/fixtures/published_layouts.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from accel.policies.catalog import load_catalog
from accel.policies.estimator.estimate import distributed_optimizer_state, min_chips_for_memory, resolve
from accel.policies.parallelism import ShardedState, distributed_replica_need, training_degrees, training_parallelism
from accel.policies.plan import Estimate, GpuPool, plan_parallelism
from accel.policies.selection.choose import choose_plan
from accel.policies.selection.replica_fleet import training_size
from accel.policies.selection.ladders import Size
from accel.policies.workload import load_workload, workload_from_mapping

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = yaml.safe_load((ROOT / "tests" / "fixtures" / "published_layouts.yaml").read_text())["layouts"]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def pretrain(parameters: float, sequence_length: int = 8192, framework: str = "pytorch", **training):
    return workload_from_mapping({
        "name": "t", "kind": "pretrain", "owner": "t",
        "model": {"parameters": parameters, "sequence_length": sequence_length},
        "training": {"tokens": "1T", "framework": framework, **training},
        "constraints": {"clouds": ["gcp", "aws"]}}, "t.yaml")


def rule_layout(catalog, parameters: float, accelerator: str, gpus_per_node: int, nodes: int, unit: int = 1,
                sequence_length: int = 8192):
    spec = pretrain(parameters, sequence_length)
    state = distributed_optimizer_state(spec, resolve(spec, catalog.defaults), catalog.accelerators[accelerator])
    return state, training_parallelism(distributed_replica_need(state, gpus_per_node, nodes, unit), gpus_per_node,
                                       nodes, unit)


def test_the_bytes_per_parameter_are_megatrons_own_table(catalog):
    optimizer = catalog.defaults.training.distributed_optimizer
    assert (optimizer.replicated_bytes_per_parameter, optimizer.sharded_bytes_per_parameter) == (6, 12)
    assert "dist_optimizer.md" in optimizer.source and "309ffca6" in optimizer.source and "6 + 12/d" in optimizer.source


def whole_state_layout(catalog, parameters: float, accelerator: str, gpus_per_node: int, nodes: int):
    """The layout before: a replica holding the whole training state (no optimizer sharding across replicas)."""
    spec = pretrain(parameters)
    need = min_chips_for_memory(spec, resolve(spec, catalog.defaults), catalog.accelerators[accelerator])
    return training_parallelism(need, gpus_per_node, nodes)


@pytest.mark.parametrize("nodes", [1, 2, 4, 16])
def test_a_7b_model_on_8_gpu_h100_nodes_is_tp1_or_tp2_not_tp8(catalog, nodes):
    state, layout = rule_layout(catalog, 7e9, "h100-80gb", 8, nodes)
    assert layout.tensor in (1, 2) and layout.pipeline == 1
    assert layout.replica_gpus * layout.data == 8 * nodes
    assert state.fits(layout.replica_gpus, layout.data)
    # One node's 8 replicas share the optimizer state too little for TP1; from two nodes on, TP1.
    assert layout.tensor == (2 if nodes == 1 else 1)


def test_a_13b_model_on_4_h100_nodes_is_tp2_where_the_whole_state_took_tp4(catalog):
    state, layout = rule_layout(catalog, 13e9, "h100-80gb", 8, 4)
    assert (layout.tensor, layout.pipeline, layout.data) == (2, 1, 16)
    assert whole_state_layout(catalog, 13e9, "h100-80gb", 8, 4).tensor == 4
    assert not state.fits(1, 32)


def test_a_larger_fleet_shards_the_optimizer_thinner_so_its_replica_is_never_larger(catalog):
    state, _ = rule_layout(catalog, 405e9, "h100-80gb", 8, 1)
    layouts = [training_parallelism(distributed_replica_need(state, 8, nodes), 8, nodes) for nodes in
               (16, 32, 64, 256, 2048)]
    sizes = [layout.replica_gpus for layout in layouts]
    assert sizes == sorted(sizes, reverse=True)
    # 405B: TP8 x PP16 on 16 and 32 nodes (DP1, DP2), TP8 x PP8 from 64 nodes (DP8) on.
    assert [(layout.pipeline, layout.data) for layout in layouts] == [(16, 1), (16, 2), (8, 8), (8, 32), (8, 256)]


@settings(max_examples=150, deadline=None)
@given(parameters=st.floats(5e8, 2e12), gpus_per_node=st.sampled_from([1, 2, 4, 8]),
       nodes=st.integers(1, 4096), usable_gb=st.sampled_from([21.6, 72.0, 77.3, 125.0, 169.0]))
def test_the_chosen_replica_holds_its_share_and_the_next_smaller_one_does_not(parameters, gpus_per_node, nodes,
                                                                               usable_gb):
    usable = usable_gb * 1e9
    state = ShardedState(parameters * (6 + 0.25 * 16) / usable, parameters * 12 / usable)
    need = distributed_replica_need(state, gpus_per_node, nodes)
    tensor, pipeline, data, _ = training_degrees(need, gpus_per_node, nodes)
    replica = tensor * pipeline
    larger = training_degrees(replica + 1, gpus_per_node, nodes)
    # It fits, or the fleet holds no larger replica (the search never plans such a fleet: its floor is the state).
    assert state.fits(replica, data) or larger[0] * larger[1] <= replica
    if need > 1:
        smaller_tensor, smaller_pipeline, smaller_data, _ = training_degrees(need - 1, gpus_per_node, nodes)
        assert smaller_tensor * smaller_pipeline < replica
        assert not state.fits(smaller_tensor * smaller_pipeline, smaller_data)


@pytest.mark.parametrize("row", PUBLISHED, ids=[row["id"] for row in PUBLISHED])
def test_the_rule_against_published_layouts(catalog, row):
    """Where the rule agrees with practice, and where it lays out less than the run did (each row's `rule`,
    docs/scale.md 'Distributed optimizer'). It never needs more GPUs per model-parallel group than the run used:
    practice's replicas are at least what memory needs."""
    nodes = row["gpus"] // row["gpus_per_node"]
    _, layout = rule_layout(catalog, row["parameters"], row["accelerator"], row["gpus_per_node"], nodes,
                            row["domain_unit_nodes"], row["sequence_length"])
    published = row["tensor"] * row["pipeline"]
    said = ("agrees" if (layout.tensor, layout.pipeline) == (row["tensor"], row["pipeline"]) else
            "smaller" if layout.tensor * layout.pipeline < published else "larger")
    assert said == row["rule"], f"{row['id']}: the rule gives {layout.text()}"
    assert layout.replica_gpus <= published * row["context"]
    assert row["url"].startswith("https://") and row["source"]


def test_the_search_times_the_replica_the_plan_lays_out(catalog):
    """38 x 8-GPU nodes of a 70B model: the whole-state rule's 32-GPU replicas (TP8 x PP4) leave 2 nodes idle; the
    distributed optimizer's 16-GPU replicas (TP8 x PP2) train on all 38, and the Plan derives the same layout."""
    spec = pretrain(70e9)
    resolved = resolve(spec, catalog.defaults)
    h100 = catalog.accelerators["h100-80gb"]
    need, state = min_chips_for_memory(spec, resolved, h100), distributed_optimizer_state(spec, resolved, h100)
    fleet = Size(chips=304, hosts=38, slices=1, topology=None, machine_type="a3-highgpu-8g", chips_per_host=8)
    assert training_size(fleet, need, 1).hosts == 36
    assert training_size(fleet, need, 1, state=state) is fleet
    pool = GpuPool(accelerator="h100-80gb", machine_type="a3-highgpu-8g", gpus_per_node=8, nodes=38)
    details = {"replicated_state_gpus": state.replicated, "sharded_state_gpus": state.sharded}
    estimate = Estimate(flops=1.0, min_chips_for_memory=need, hours=1, hourly_usd=1, total_usd=1, mfu=0.4,
                        goodput=0.9, details=details)
    layout = plan_parallelism("pretrain", pool, estimate)
    assert (layout.tensor, layout.pipeline, layout.data) == (8, 2, 19)
    # A plan stored before the estimate recorded the sharded state keeps the layout it was pinned with.
    stored = estimate.model_copy(update={"details": {}})
    assert (plan_parallelism("pretrain", pool, stored).tensor, plan_parallelism("pretrain", pool, stored).pipeline) \
        == (8, 4)


def test_the_pytorch_example_plans_a_small_replica_and_a_jax_plan_keeps_the_whole_state(catalog):
    plan = choose_plan(load_workload(ROOT / "examples" / "llama-8b-finetune-cuda.yaml"), catalog)
    assert plan.parallelism is not None and plan.parallelism.tensor <= 2 and plan.parallelism.pipeline == 1
    assert "sharded_state_gpus" in plan.estimate.details
    assert any(a.name == "distributed optimizer" and "309ffca6" in a.source for a in plan.estimate.assumptions)
    jax = choose_plan(pretrain(70e9, framework="jax").model_copy(
        update={"constraints": pretrain(70e9).constraints.model_copy(update={"deadline_days": 60.0})}), catalog)
    assert "sharded_state_gpus" not in jax.estimate.details
    assert not any(a.name == "distributed optimizer" for a in jax.estimate.assumptions)


def test_only_the_replicas_the_global_batch_keeps_busy_share_the_optimizer_state(catalog):
    """A fleet past the GPUs the batch feeds trains on those alone (policies/plan.py plan_parallelism, details.
    busy_chips): the optimizer state is spread over their replicas, not the idle ones."""
    state, layout = rule_layout(catalog, 7e9, "h100-80gb", 8, 16)
    assert (layout.tensor, layout.data) == (1, 128)
    assert not state.fits(1, 8)
    assert training_parallelism(distributed_replica_need(state, 8, 16, busy_gpus=8), 8, 16).tensor == 2
