"""Machine types accel knows and does not offer (policies/catalog/not_offered.yaml): naming one says why.

A4X Max (a4x-maxgpu-4g-metal, GB300 bare metal on Google Cloud) is the first row: its GKE DRANET networking is
not built (docs/scale.md, "GB300 NVL72"), so a reservation or a hardware pin naming it is refused with that reason,
not pointed at A4X's a4x-highgpu-4g, a machine of another generation the user holds no reservation for."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.catalog.not_offered import NotOfferedTableError, offered_anyway, table, why_not_offered
from accel.policies.cloud.commitments import DeclaredCommitment
from accel.policies.cloud.reservations import DeclaredReservation, declaration_problems
from accel.policies.selection.choose import choose
from accel.policies.workload import WorkloadFieldError, workload_from_mapping

A4X_MAX = "a4x-maxgpu-4g-metal"


def reservation(machine_type: str) -> DeclaredReservation:
    return DeclaredReservation(name="a4x-max-block", machineType=machine_type, count=18, zone="us-central1-b")


def pinned(machine_type: str):
    return workload_from_mapping({
        "name": "w", "kind": "pretrain", "model": {"parameters": "405B", "sequence_length": 8192},
        "training": {"tokens": "10B", "framework": "pytorch", "precision": "bf16"},
        "constraints": {"clouds": ["gcp"], "spot": "never"},
        "hardware": {"accelerator": "gb300", "chips": 72, "cloud": "gcp", "machine_type": machine_type,
                     "spot": False}}, "test")


def test_every_row_names_a_chip_of_the_hardware_table_and_a_cloud():
    chips = hardware.current().chips
    for machine_type, row in table().items():
        assert row["accelerator"] in chips, machine_type
        assert row["cloud"] in {"gcp", "aws"}, machine_type


def test_no_row_is_a_machine_the_catalog_sells():
    """A row leaves the table in the change that adds its offering; one left behind is caught."""
    sold = {offering.machine_type for offering in load_catalog().offerings}
    assert offered_anyway(sold) == []
    assert offered_anyway(sold | {A4X_MAX}) == [A4X_MAX]  # mutated: A4X Max offered while its row stays


def test_a_reservation_of_a4x_max_is_refused_with_the_reason_not_a_near_spelling():
    [problem] = declaration_problems([reservation(A4X_MAX)], load_catalog().offerings)
    assert (problem.index, problem.key) == (0, "machineType")
    assert problem.problem.startswith(f"'{A4X_MAX}' is A4X Max (gb300 on gcp), which accel does not offer")
    assert "DRANET" in problem.problem and "a4x-highgpu-4g" not in problem.problem


def test_a_committed_use_discount_on_a4x_max_is_refused_with_the_reason():
    commitment = DeclaredCommitment.model_validate({"name": "cud-a4x-max", "kind": "committed-use",
                                                    "machineType": A4X_MAX, "count": 18, "region": "us-central1",
                                                    "discount": 0.5})
    [problem] = declaration_problems([commitment], load_catalog().offerings)
    assert problem.key == "machineType" and "which accel does not offer" in problem.problem


def test_only_the_exact_name_gets_the_reason_a_typo_keeps_the_ordinary_refusal():
    [problem] = declaration_problems([reservation("a4x-highgpu-4gx")], load_catalog().offerings)
    assert problem.problem.startswith("'a4x-highgpu-4gx' is sold by no catalog offering; did you mean")
    [problem] = declaration_problems([reservation(A4X_MAX + "x")], load_catalog().offerings)
    assert problem.problem.startswith(f"'{A4X_MAX}x' is sold by no catalog offering")
    assert why_not_offered(A4X_MAX + "x") is None and "does not offer" not in problem.problem


def test_a_hardware_pin_on_a4x_max_is_an_input_error_naming_the_reason():
    with pytest.raises(WorkloadFieldError) as raised:
        choose(pinned(A4X_MAX), load_catalog())
    assert raised.value.field == "hardware.machine_type"
    assert "which accel does not offer" in str(raised.value) and "docs/scale.md" in str(raised.value)


@pytest.mark.parametrize("row", [
    "a4x-maxgpu-4g-metal: {series: A4X Max, cloud: gcp, accelerator: gb300, why: x, see: y}",  # no source
    "a4x-maxgpu-4g-metal: {series: A4X Max, cloud: gcp, accelerator: gb300, why: '', see: y, source: z}",
    "a4x-maxgpu-4g-metal: {series: A4X Max, cloud: gcp, accelerator: gb300, why: x, see: y, source: z, price: 1}",
    "- a4x-maxgpu-4g-metal",
])
def test_a_malformed_row_is_refused(tmp_path: Path, row: str):
    path = tmp_path / "not_offered.yaml"
    path.write_text(row + "\n")
    with pytest.raises(NotOfferedTableError):
        table(path)
