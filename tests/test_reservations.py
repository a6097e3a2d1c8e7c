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


# ---- capacity blocks: the window -------------------------------------------------------------------------

BLOCK = {"name": "cr-02168da1478b509e0", "machineType": "p5.48xlarge", "count": 4, "zone": "us-east-1a",
         "kind": "capacity-block"}


def test_a_capacity_block_declares_its_window_in_utc():
    block = DeclaredReservation.model_validate({**BLOCK, "start": "2030-01-06T13:30:00+02:00",
                                                "end": "2030-01-13T11:30:00Z"})
    assert block.window is not None and block.window.start.isoformat() == "2030-01-06T11:30:00+00:00"


@pytest.mark.parametrize("window,says", [
    ({}, "start and end: missing"),
    ({"start": "2030-01-06T11:30:00Z"}, "end: missing"),
    ({"start": "2030-01-13T11:30:00Z", "end": "2030-01-06T11:30:00Z"}, "must be after start"),
    ({"start": "2030-01-06T11:30:00Z", "end": "2030-01-06T12:00:00Z"}, "too short"),
])
def test_a_capacity_block_without_a_usable_window_is_refused_naming_the_keys(window, says):
    with pytest.raises(ValueError, match=says):
        DeclaredReservation.model_validate({**BLOCK, **window})


def test_a_time_without_a_zone_is_refused():
    with pytest.raises(ValueError, match="timezone"):
        DeclaredReservation.model_validate({**BLOCK, "start": "2030-01-06T11:30:00", "end": "2030-01-13T11:30:00Z"})


def test_a_reservation_takes_no_window():
    with pytest.raises(ValueError, match="only a kind capacity-block has a window"):
        DeclaredReservation.model_validate({**BLOCK, "kind": "reservation", "start": "2030-01-06T11:30:00Z"})


def capacity_block_stack(tmp_path: Path, reservations: str) -> Path:
    from tests.capacity_matrix import write_matrix_project

    project = tmp_path / "project"
    write_matrix_project(project, ROOT)
    path = project / "stacks" / "Pulumi.p5-capacity-block.yaml"
    text = path.read_text()
    path.write_text(text[:text.index("  accel:reservations:")] + reservations)
    return path


def test_a_capacity_block_stack_without_its_block_declared_is_refused_with_the_entry_to_add(tmp_path):
    from accel.offline_plan import plan_stack

    with pytest.raises(UsageError) as error:
        plan_stack(None, capacity_block_stack(tmp_path, ""), tmp_path / "project")
    assert error.value.exit_code == 2
    assert "cr-02168da1478b509e0" in str(error.value) and "kind: capacity-block" in str(error.value)
    assert "start: <block start>, end: <block end>" in str(error.value)


def test_a_stack_whose_block_ends_before_it_starts_is_refused_naming_the_key(tmp_path):
    from accel.offline_plan import plan_stack

    entry = ("  accel:reservations:\n  - {name: cr-02168da1478b509e0, kind: capacity-block, machineType: p5.48xlarge,"
             " count: 4, zone: us-east-1a, start: '2030-01-13T11:30:00Z', end: '2030-01-06T11:30:00Z'}\n")
    with pytest.raises(UsageError) as error:
        plan_stack(None, capacity_block_stack(tmp_path, entry), tmp_path / "project")
    assert error.value.exit_code == 2
    assert "accel:reservations.0" in str(error.value) and "must be after start" in str(error.value)
