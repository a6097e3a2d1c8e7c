"""A hardware pin whose machine a declared reservation holds is sized and priced on that reservation by the pin's own
evaluation (policies/selection/pin.py, reservations.bill_on_reservation): the Choice `accel choose` prints and the
Plan `accel plan` builds are one answer, with nothing for use_reservation to correct afterwards. And the closest
near miss is picked by one rule wherever a refusal names one (explain.nearest_miss)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from accel.base.units import money
from accel.policies.catalog import load_catalog
from accel.policies.cloud.reservations import DeclaredReservation, use_reservation
from accel.policies.selection.choose import choose, make_plan
from accel.policies.selection.explain import nearest_miss
from accel.policies.workload import workload_from_mapping

SERVING = {"name": "llama-405b-serving-a4x", "kind": "inference", "model": {"parameters": "405B",
                                                                            "sequence_length": 8192},
           "inference": {"tokens_per_second": 15000, "p99_latency_ms": 60, "framework": "pytorch"},
           "constraints": {"clouds": ["gcp"], "spot": "never", "accelerators": ["gb200"]},
           "hardware": {"accelerator": "gb200", "chips": 72, "cloud": "gcp", "machine_type": "a4x-highgpu-4g",
                        "spot": False}}
RESERVATION = {"name": "a4x-nvl72-reservation", "machineType": "a4x-highgpu-4g", "count": 18, "zone": "us-central1-b"}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.mark.parametrize("billing", [{"committedUsdPerMachineHour": 40.0}, {"marginal": "zero"}, {}],
                         ids=["committed", "prepaid", "catalog-rate"])
def test_the_pins_choice_is_already_the_plan_on_its_reservation(catalog, billing):
    held = [DeclaredReservation.model_validate({**RESERVATION, **billing})]
    spec = workload_from_mapping(SERVING, "serving.yaml")
    choice = choose(spec, catalog, reservations=held)
    plan = make_plan(spec, choice, catalog)
    assert use_reservation(plan, held) is plan   # nothing left to put on the reservation afterwards
    assert plan.capacity.reservation == RESERVATION["name"] and plan.capacity.mode == "gcp-reservation"
    assert plan.zones == [RESERVATION["zone"]] and plan.chosen == choice.chosen == choice.options[0]
    assert plan.estimate == choice.estimate
    assert plan.rationale[-1].startswith(f"Capacity: the stack's reservation '{RESERVATION['name']}'")
    pinned = choice.rationale[0]
    if billing:   # billed otherwise than the catalog: the pin's own line states it so, from the start
        chosen = choice.chosen
        assert pinned.endswith(f" at {money(chosen.hourly_usd)}/h, {money(chosen.total_usd)} in total, as the "
                               "reservation bills it.")
        assert choice.chosen.hourly_usd == (18 * 40.0 if "committedUsdPerMachineHour" in billing else 0.0)
    else:
        assert "as the reservation bills it" not in pinned


def test_a_pin_on_a_declared_capacity_block_is_billed_for_its_window_in_its_choice(catalog):
    block = DeclaredReservation.model_validate(
        {"name": "cr-0b200e72a1b2c3d4e", "kind": "capacity-block", "machineType": "p6e-gb200.36xlarge", "count": 18,
         "ultraserverType": "u-p6e-gb200x72", "zone": "us-east-1-dfw-2a", "start": "2030-01-06T11:30:00Z",
         "end": "2030-01-13T11:30:00Z"})
    spec = workload_from_mapping(
        {"name": "p6e", "kind": "pretrain", "model": {"parameters": "405B", "sequence_length": 8192},
         "training": {"tokens": "10B", "framework": "pytorch", "precision": "bf16"},
         "constraints": {"clouds": ["aws"], "spot": "never"},
         "hardware": {"accelerator": "gb200", "chips": 72, "cloud": "aws", "spot": False}}, "p6e.yaml")
    choice = choose(spec, catalog, reservations=[block])
    assert choice.chosen.provisioning == "capacity-block" and choice.reservation == block.name
    assert choice.chosen.hours == pytest.approx(block.window.hours)
    assert choice.estimate.details["capacity_wall_hours"] < choice.chosen.hours
    assert use_reservation(make_plan(spec, choice, catalog), [block]).capacity.reservation == block.name


def near(overshoot: float, total: float, offering: str, region: str, family: str = "gpu"):
    candidate = SimpleNamespace(evaluation=SimpleNamespace(total_usd=total), offering=SimpleNamespace(id=offering),
                                regions=[region], family=family)
    return (overshoot, candidate, "")


def test_the_nearest_miss_overshoots_least_then_costs_least_then_by_offering_and_region():
    misses = [near(2.0, 1.0, "a", "r"), near(1.0, 9.0, "z", "z"), near(1.0, 5.0, "y", "b"), near(1.0, 5.0, "y", "a"),
              near(1.0, 5.0, "x", "c"), near(math.inf, 0.0, "a", "a")]
    assert nearest_miss(misses) is misses[4]           # least overshoot, then cheaper, then offering x before y
    assert nearest_miss(misses[:4]) is misses[3]       # the same offering: the first region by name
    assert nearest_miss([misses[-1]]) is None          # never sized: no closest fleet to name
    assert nearest_miss(misses, "tpu") is None
    assert nearest_miss([*misses, near(5.0, 1.0, "t", "a", "tpu")], "tpu")[1].offering.id == "t"
