"""A serving fleet paid in whole placement units runs the replicas those units hold.

An A4X pool is whole 18-tray NVLink domains and a p6e-gb200 fleet whole UltraServers (hardware table node_step):
a 70B service whose target needs 8 one-GPU replicas is still bought as 18 trays (72 GPUs). The trays are paid for
either way, so the plan runs every whole replica they hold (policies/selection/ladders.py filled_replicas), each
inside one unit (its tensor-parallel group within the unit's NVLink domain), and says what that buys: the fleet's
tokens/s and its price per million tokens. Machines placed node by node keep the target's replicas.
"""

from __future__ import annotations

import functools
import json

from hypothesis import given, strategies as st

from accel.job.context import JobContext
from accel.job.manifests import JobOptions, generate
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.cloud.reservations import DeclaredReservation
from accel.policies.selection.choose import choose, choose_plan
from accel.policies.selection.ladders import Size, filled_replicas, gpu_fleet, replicas_held
from accel.policies.workload import workload_from_mapping

# rs02 of the day-one sweep (/work/repro/rs02.yaml): Llama 3.1 70B on an 18-tray A4X reservation, 4,000 tok/s.
RS02 = {"name": "rs02", "kind": "inference", "model": {"architecture": "llama3.1-70b"},
        "inference": {"tokens_per_second": 4000, "p99_latency_ms": 80},
        "constraints": {"clouds": ["gcp"], "spot": "never", "accelerators": ["gb200"]}}
A4X_RACK = [DeclaredReservation(name="a4x-nvl72-reservation", machineType="a4x-highgpu-4g", count=18,
                                zone="us-central1-b")]


def offering_of(machine_type: str):
    return next(o for o in load_catalog().offerings if o.machine_type == machine_type)


@functools.cache
def rs02_choice():
    return choose(workload_from_mapping(RS02, "rs02.yaml"), load_catalog(), "cost", reservations=A4X_RACK)


def test_a_70b_service_on_an_a4x_rack_runs_every_replica_the_rack_holds():
    choice = rs02_choice()
    detail = choice.estimate.details
    assert choice.chosen.machine_type == "a4x-highgpu-4g" and choice.chosen.hosts == 18
    assert detail["replica_chips"] == 1 and detail["target_replicas"] == 8
    assert detail["replicas"] == 72                                     # 18 trays x 4 GPUs, one replica each
    # 72 replicas' tokens/s (the per-replica figure is rounded to 0.1 tok/s)
    assert abs(detail["tokens_per_second"] - 72 * detail["tokens_per_second_per_replica"]) <= 72 * 0.05
    per_million = choice.chosen.hourly_usd / (detail["tokens_per_second"] * 3600) * 1e6
    assert abs(detail["usd_per_million_tokens"] - per_million) < 1e-3


def test_the_rationale_says_what_the_paid_units_serve_and_at_what_price_per_token():
    choice = rs02_choice()
    sized = next(line for line in choice.rationale if line.startswith("Sized for"))
    assert "8 replicas of 1 chip" in sized                               # what the target needs
    fleet = next(line for line in choice.rationale if line.startswith("Fleet:"))
    assert "the paid unit runs 72 replicas, not the 8 the target needs" in fleet
    assert f"{choice.estimate.details['tokens_per_second']:,.0f} tok/s" in fleet
    assert "per million tokens served flat out" in fleet
    assert "past the packing cost" not in fleet                          # no longer idle


def test_the_serving_job_runs_the_filled_replicas():
    plan = choose_plan(workload_from_mapping(RS02, "rs02.yaml"), load_catalog(), reservations=A4X_RACK)
    generated = generate(plan, JobContext(stack="t"), JobOptions())
    deployment = next(m for m in generated.manifests if m["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 72


def test_a_replica_of_two_trays_stays_inside_one_domain():
    # 8-GPU replicas (2 trays) tile an 18-tray domain 9 times; two domains hold 18, and a 4-tray replica leaves two
    # trays of each domain spare rather than spanning two domains.
    a4x = offering_of("a4x-highgpu-4g")
    two_trays, four_trays = (Size(n * 4, n, 1, None, "a4x-highgpu-4g", 4) for n in (2, 4))
    assert replicas_held(a4x, two_trays, gpu_fleet(a4x, 18)) == 9
    assert replicas_held(a4x, two_trays, gpu_fleet(a4x, 36)) == 18
    assert replicas_held(a4x, four_trays, gpu_fleet(a4x, 36)) == 8      # not 36 // 4 = 9


@given(replica_gpus=st.sampled_from([1, 2, 4]), needed=st.integers(1, 40), units=st.integers(1, 4),
       most_chips=st.integers(1, 400))
def test_filled_replicas_fill_whole_units_within_the_chip_limit(replica_gpus, needed, units, most_chips):
    for machine_type in ("a4x-highgpu-4g", "p6e-gb200.36xlarge"):
        offering = offering_of(machine_type)
        step = hardware.current().node_step(machine_type)
        replica = Size(replica_gpus, 1, 1, None, machine_type, offering.chips_per_host)
        fleet = gpu_fleet(offering, units * step)
        filled = filled_replicas(offering, replica, needed, fleet, most_chips)
        held = fleet.chips // replica_gpus
        assert filled >= needed                                          # never fewer than the target needs
        assert filled == max(needed, min(held, most_chips // replica_gpus))


def test_machines_placed_node_by_node_keep_the_targets_replicas():
    h100 = offering_of("p5.48xlarge")
    assert hardware.current().node_step("p5.48xlarge") == 1
    replica = Size(1, 1, 1, None, "p5.48xlarge", 8)
    assert filled_replicas(h100, replica, 3, gpu_fleet(h100, 2), 10_000) == 3
