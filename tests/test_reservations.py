"""Reservations as a capacity type: a stack declares what it holds, the plan takes it, and `accel plan`
refuses pools that do not fit it, saying exactly what does not (policies/reservations.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel.base.errors import UsageError
from accel.policies.catalog import load_catalog
from accel.policies.reservations import DeclaredReservation, reservation_problems, use_reservation
from accel.policies.ranking import plan_from_pin
from accel.policies.workload import workload_from_mapping

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def h100_plan():
    workload = workload_from_mapping({
        "name": "r", "kind": "pretrain", "model": {"parameters": "70B"},
        "training": {"tokens": "1T", "framework": "pytorch"},
        "constraints": {"clouds": ["gcp"], "spot": "never"},
        "hardware": {"accelerator": "h100-80gb", "chips": 2048, "cloud": "gcp"}}, "r.yaml")
    return plan_from_pin(workload, load_catalog())


def held(plan, **update) -> DeclaredReservation:
    fields = {"name": "a3-block-1", "machineType": plan.gpu.machine_type, "count": plan.gpu.nodes,
              "zone": plan.zones[0], **update}
    return DeclaredReservation.model_validate(fields)


def test_a_plan_takes_the_declared_reservation_of_its_machine_type(h100_plan):
    reservation = held(h100_plan)
    plan = use_reservation(h100_plan, [reservation])
    assert (plan.capacity.provisioning, plan.capacity.reservation) == ("reservation", "a3-block-1")
    assert plan.chosen.provisioning == "reservation" and plan.zones == [reservation.zone]
    assert reservation_problems(plan, [reservation]) == []


def test_a_reservation_in_another_zone_of_the_region_moves_the_pools_there(h100_plan):
    zone = h100_plan.region + "-z"
    plan = use_reservation(h100_plan, [held(h100_plan, zone=zone)])
    assert plan.zones == [zone] and reservation_problems(plan, [held(h100_plan, zone=zone)]) == []


def test_a_reservation_too_small_for_the_pools_is_refused_with_the_shortfall(h100_plan):
    small = held(h100_plan, count=h100_plan.gpu.nodes - 48)
    [problem] = reservation_problems(use_reservation(h100_plan, [small]), [small])
    assert f"holds {small.count} x {small.machineType}" in problem and "(48 more)" in problem


def test_a_reservation_of_another_machine_type_is_refused_naming_both(h100_plan):
    other = held(h100_plan, machineType="a3-megagpu-8g")
    [problem] = reservation_problems(use_reservation(h100_plan, [other]), [other])
    assert "a3-megagpu-8g" in problem and h100_plan.gpu.machine_type in problem


def test_a_pinned_plan_on_a_reservation_in_another_zone_is_refused(h100_plan):
    plan = use_reservation(h100_plan, [held(h100_plan)])
    moved = held(h100_plan, zone=h100_plan.region + "-q")
    [problem] = reservation_problems(plan, [moved])
    assert f"is in {moved.zone} but the pools are in {plan.zones[0]}" in problem


def test_a_plan_naming_an_undeclared_reservation_is_refused(h100_plan):
    plan = use_reservation(h100_plan, [held(h100_plan)])
    [problem] = reservation_problems(plan, [held(h100_plan, name="another")])
    assert "'a3-block-1', which accel:reservations does not declare" in problem


def test_no_declared_reservation_leaves_the_plan_as_it_was(h100_plan):
    assert use_reservation(h100_plan, []) is h100_plan and reservation_problems(h100_plan, []) == []


# ---- accel plan -----------------------------------------------------------------------------------------

def write_stack(tmp_path: Path, count: int, zone: str = "us-central1-a") -> Path:
    text = (ROOT / "stacks" / "Pulumi.llama-405b-h100-gcp.yaml").read_text()
    text += (f"  accel:reservations:\n    - name: a3-reserved\n      machineType: a3-highgpu-8g\n"
             f"      count: {count}\n      zone: {zone}\n")
    path = tmp_path / "Pulumi.reserved.yaml"
    path.write_text(text)
    return path


def test_a_reservation_backed_stack_plans_every_pool_on_the_reservation(tmp_path):
    from accel.offline_plan import plan_stack

    result = plan_stack(None, write_stack(tmp_path, 2048), ROOT)
    assert result.plan["capacity"]["provisioning"] == "reservation"
    pools = [r for r in result.capture.resources if r.type == "gcp:container/nodePool:NodePool" and "-gpu-" in r.name]
    assert pools and all(p.inputs["nodeConfig"]["reservationAffinity"]["values"] == ["a3-reserved"] for p in pools)


def test_a_stack_whose_pools_overflow_its_reservation_is_refused_before_up(tmp_path):
    from accel.offline_plan import plan_stack

    with pytest.raises(UsageError) as error:
        plan_stack(None, write_stack(tmp_path, 2000), ROOT)
    assert error.value.exit_code == 2
    assert "accel:reservations" in str(error.value) and "holds 2000 x a3-highgpu-8g" in str(error.value)
    assert "(48 more)" in str(error.value)
