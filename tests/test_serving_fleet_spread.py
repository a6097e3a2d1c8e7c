"""A serving fleet honours what its minimum is for, and the unit its cloud places.

assumptions.yaml inference.min_replicas (2) says "a service keeps at least two replicas to survive a node failure or
a rolling update": the replicas it asks for sit on that many nodes (policies/selection/ladders.py serving_fleet),
and the vLLM Deployment spreads its pods over the nodes' hostnames (accel/job/replica_spread.py). A GPU fleet of a
machine placed in units (hardware table node_step: an A4X pool is whole 18-tray NVLink domains, which
components/gcp/gpu.py requires of every A4X node pool) is sized in those units; an offering sold only as reserved
capacity whose units outgrow the declared reservation is ruled out saying so.
"""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import given, strategies as st

from accel.job.context import JobContext
from accel.job.manifests import JobOptions, generate
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.cloud.reservations import DeclaredReservation
from accel.policies.selection.choice import NoFeasibleOption
from accel.policies.selection.choose import choose, choose_plan
from accel.policies.selection.ladders import Size, serving_fleet
from accel.policies.workload import workload_from_mapping

# sv07 of the day-one sweep: Qwen3-30B-A3B in fp8 on AWS H100s, two 1-GPU replicas, both once on one p5.48xlarge.
SV07 = {"name": "sv07", "kind": "inference", "model": {"architecture": "qwen3-30b-a3b"},
        "inference": {"tokens_per_second": 8000, "p99_latency_ms": 60, "framework": "pytorch", "precision": "fp8"},
        "constraints": {"clouds": ["aws"], "spot": "allowed", "accelerators": ["h100-80gb"]}}
# rs02: Llama 3.1 70B on GB200, an 18-tray A4X reservation (one NVL72 rack), once sized 1 tray.
RS02 = {"name": "rs02", "kind": "inference", "model": {"architecture": "llama3.1-70b"},
        "inference": {"tokens_per_second": 4000, "p99_latency_ms": 80},
        "constraints": {"clouds": ["gcp"], "spot": "never", "accelerators": ["gb200"]}}


def a4x_reservation(count: int) -> list[DeclaredReservation]:
    return [DeclaredReservation(name="a4x-nvl72-reservation", machineType="a4x-highgpu-4g", count=count,
                                zone="us-central1-b")]


@functools.cache
def _choice(workload_json: str, reserved: int = 0):
    spec = workload_from_mapping(json.loads(workload_json), "t.yaml")
    return choose(spec, load_catalog(), "cost", reservations=a4x_reservation(reserved) if reserved else ())


def choice_of(workload: dict, reserved: int = 0):
    return _choice(json.dumps(workload, sort_keys=True), reserved)


# ----- the minimum's replicas on separate nodes -----

def test_two_one_gpu_replicas_are_sized_on_two_nodes_and_the_rationale_says_the_cost():
    choice = choice_of(SV07)
    detail = choice.estimate.details
    assert (detail["replicas"], detail["replica_chips"]) == (2, 1)
    assert choice.chosen.machine_type == "p5.48xlarge" and choice.chosen.hosts == 2
    line = next(line for line in choice.rationale if line.startswith("Fleet:"))
    per_node = choice.chosen.hourly_usd / 2
    assert "2 nodes, not the 1 node" in line and "each on its own node" in line
    assert f"${per_node:,.2f}/h" in line


def test_a_workload_that_keeps_one_replica_packs_on_one_node():
    # The minimum is the contract: a workload that lowers it to one asks for no spread.
    choice = choice_of({**SV07, "assumptions": {"min_replicas": 1}, "inference": {**SV07["inference"]}})
    assert choice.chosen.hosts == 1
    assert not any(line.startswith("Fleet:") for line in choice.rationale)


H100_NODE = Size(8, 1, 1, None, "p5.48xlarge", 8)


@given(replica_gpus=st.sampled_from([1, 2, 4, 8]), replicas=st.integers(1, 40), spread=st.integers(1, 4))
def test_a_fleet_holds_its_replicas_on_at_least_the_nodes_the_minimum_keeps_apart(replica_gpus, replicas, spread):
    offering = next(o for o in load_catalog().offerings if o.machine_type == "p5.48xlarge")
    replica = Size(replica_gpus, 1, 1, None, "p5.48xlarge", 8)
    fleet = serving_fleet(offering, replica, replicas, spread)
    assert fleet.hosts * 8 // replica_gpus >= replicas                  # holds them all
    assert fleet.hosts >= min(replicas, spread)                         # the minimum's replicas apart
    assert fleet.hosts == max(-(-replicas * replica_gpus // 8), min(replicas, spread))   # and no more


# ----- A4X in whole NVLink domains -----

def test_a4x_serving_on_a_rack_reservation_is_sized_in_whole_18_tray_domains():
    choice = choice_of(RS02, reserved=18)
    assert choice.chosen.machine_type == "a4x-highgpu-4g"
    step = hardware.current().node_step("a4x-highgpu-4g")
    assert step == 18 and choice.chosen.hosts == 18
    line = next(line for line in choice.rationale if line.startswith("Fleet:"))
    assert "whole units of 18 nodes" in line


def test_a4x_serving_on_a_reservation_smaller_than_a_domain_is_ruled_out_naming_it():
    with pytest.raises(NoFeasibleOption) as raised:
        choice_of(RS02, reserved=4)
    assert "gcp-a4x-highgpu-4g" in raised.value.eliminations["capacity"]
    assert "need 18 nodes (whole units of 18 nodes" in str(raised.value)
    assert "gcp-a4x-highgpu-4g: reservation: " in str(raised.value)     # the capacity it was sized on
    assert "more than the 4 of reservation 'a4x-nvl72-reservation'" in str(raised.value)


def test_the_a4x_serving_fleet_is_one_the_gke_pool_accepts():
    # The rule the component applies (components/gcp/gpu.py: a multiple of the placement unit), read from the
    # same hardware table the search sizes by.
    facts = hardware.current()
    unit = facts.placement_units["a4x-highgpu-4g"]
    assert choice_of(RS02, reserved=18).chosen.hosts % unit.nodes == 0


# ----- the job spreads them -----

@functools.cache
def _plan(workload_json: str):
    return choose_plan(workload_from_mapping(json.loads(workload_json), "t.yaml"), load_catalog())


def serving_deployment(workload: dict, nodes: int | None = None):
    """(the Deployment, the derivations) of the workload's serving job; `nodes`: its GPU pool mutated to that many
    nodes (a plan pinned before the sizing spread its replicas)."""
    plan = _plan(json.dumps(workload, sort_keys=True))
    if nodes is not None:
        assert plan.gpu is not None
        plan = plan.model_copy(update={"gpu": plan.gpu.model_copy(update={"nodes": nodes})})
    generated = generate(plan, JobContext(stack="t"), JobOptions())
    return next(m for m in generated.manifests if m["kind"] == "Deployment"), "\n".join(generated.derivations)


def test_the_deployment_spreads_its_replicas_over_node_hostnames():
    deployment, derivations = serving_deployment(SV07)
    spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert spread == [{"maxSkew": 1, "minDomains": 2, "topologyKey": "kubernetes.io/hostname",
                       "whenUnsatisfiable": "DoNotSchedule",
                       "labelSelector": {"matchLabels": deployment["spec"]["selector"]["matchLabels"]},
                       "matchLabelKeys": ["pod-template-hash"]}]
    assert "never share a node" in derivations
    # and the API server's rules for it, as ported (accel/job/rules/pod.py), pass it
    from accel.job import rules

    spread_rules = [rules.RULES[rule] for rule in ("pod/topology-spread", "pod/topology-spread-match-label-keys",
                                                   "pod/topology-spread-match-label-keys-need-selector")]
    assert rules.run(rules.Scope([deployment]), spread_rules) == []


def test_a_plan_pinned_on_one_node_is_told_not_given_a_spread_it_could_never_meet():
    deployment, derivations = serving_deployment(SV07, nodes=1)
    assert "topologySpreadConstraints" not in deployment["spec"]["template"]["spec"]
    assert "one node lost is the whole service" in derivations
