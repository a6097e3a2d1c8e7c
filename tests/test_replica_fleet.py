"""A GPU training fleet is timed on the nodes holding its whole model replicas, the layout the Plan derives and
`accel job` starts ranks on (accel/job/plan_view.py rank_nodes), and paid on every node: a fleet sized past whole
replicas is no faster than its replicas, so the search prefers fleets without idle nodes. TPU fleets train whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.parallelism import training_parallelism
from accel.policies.selection.candidates import search_context
from accel.policies.selection.choose import choose
from accel.policies.selection.ladders import Size, gpu_fleet
from accel.policies.selection.replica_fleet import replica_nodes, training_size
from accel.policies.workload import load_workload, workload_from_mapping

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _a4x_405b():
    """The workload of stacks/Pulumi.llama-405b-a4x.yaml: 405B on A4X, whose 18-tray NVL72 racks are placed whole
    and whose replicas take 16 trays (tensor 8 over two trays x pipeline 8)."""
    return workload_from_mapping({
        "name": "llama-405b-a4x", "kind": "pretrain", "model": {"parameters": "405B", "sequence_length": 8192},
        "training": {"tokens": "20B", "framework": "pytorch", "precision": "bf16"},
        "constraints": {"clouds": ["gcp"], "spot": "never"}}, "test")


def test_36_a4x_trays_for_16_tray_replicas_time_like_32_and_cost_like_36(catalog):
    ctx = search_context(_a4x_405b(), catalog, "cost")
    a4x = next(o for o in catalog.offerings if o.machine_type == "a4x-highgpu-4g")
    need = ctx.min_memory_chips(a4x)
    unit = hardware.current().nvlink_domain_unit_nodes("a4x-highgpu-4g")
    layout = training_parallelism(need, 4, 36, unit)
    assert (unit, layout.tensor, layout.pipeline, layout.data) == (18, 8, 8, 2)   # two 16-tray replicas
    fleet, replicas = gpu_fleet(a4x, 36), gpu_fleet(a4x, 32)
    assert ctx.trained_size(a4x, fleet) == replicas
    model = ctx.training_model(a4x, False)
    timed = ctx.trained_size(a4x, fleet)
    assert model.hours(timed.chips, timed.hosts, timed.slices) == model.hours(128, 32, 1)
    assert model.hours(timed.chips, timed.hosts, timed.slices) > model.hours(144, 36, 1)   # what was timed before


@pytest.mark.parametrize(("nodes", "busy"), [(16, 16), (17, 16), (31, 16), (32, 32), (36, 32), (54, 48)])
def test_replica_nodes_follow_the_plan_layout(nodes, busy):
    """The same rule as the Plan (tensor x pipeline x data GPUs, whole nodes): A4X trays, 64-GPU replicas."""
    assert replica_nodes(60, 4, nodes, 18) == busy


def test_a_tpu_fleet_and_a_fleet_of_whole_replicas_are_timed_whole():
    tpu = Size(256, 64, 1, "16x16", "ct6e-standard-4t", 4)
    assert training_size(tpu, 10_000, 1) is tpu
    whole = Size(128, 16, 1, None, "a3-megagpu-8g", 8)
    assert training_size(whole, 78, 1) is whole


@pytest.mark.parametrize("objective", ["cost", "time"])
def test_the_search_picks_a_fleet_without_idle_nodes(catalog, objective):
    """llama-70b-finetune-aws chose 132 p4d nodes for 8-node replicas (128 training) on cost and 465 on time
    before the estimate timed whole replicas; then each chosen fleet was whole replicas (136 and 472). Its PyTorch
    run shards the optimizer state over the replicas (Megatron's distributed optimizer), so a replica is 4 nodes
    (TP8 x PP4, p4d or g6e) where it was 8, and the whole-replica fleets the search picks are 132 and 468."""
    spec = load_workload(ROOT / "examples" / "llama-70b-finetune-aws.yaml")
    choice = choose(spec, catalog, objective)
    ctx = search_context(spec, catalog, objective)
    chosen, offering = choice.chosen, choice.chosen_offering
    fleet = gpu_fleet(offering, chosen.hosts)
    assert ctx.trained_size(offering, fleet) == fleet
    assert (chosen.hosts, objective) in ((132, "cost"), (468, "time"))


def test_the_hand_pinned_a4x_stack_plans_the_run_of_its_32_training_trays(catalog):
    """A pin is not searched, but its estimate times the same nodes: stacks/Pulumi.llama-405b-a4x.yaml pays 36 trays
    and its job starts ranks on 32 (tests/test_job_rank_nodes.py), so its hours are the 32 trays' run."""
    from tests.conftest import planned_result

    plan = planned_result("llama-405b-a4x").plan
    ctx = search_context(_a4x_405b(), catalog, "cost")
    a4x = next(o for o in catalog.offerings if o.machine_type == "a4x-highgpu-4g")
    model = ctx.training_model(a4x, False)
    assert (plan["chosen"]["chips"], plan["chosen"]["hosts"]) == (144, 36)
    assert plan["chosen"]["hours"] == pytest.approx(model.hours(128, 32, 1), rel=1e-9)
    assert plan["chosen"]["hours"] > model.hours(144, 36, 1) * 1.1
