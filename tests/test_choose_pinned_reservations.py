"""`accel choose --reservations FILE --write-stack` of a workload with a hardware pin puts the pinned fleet on the
declared reservation of its machine, as `accel plan` does with a stack's accel:hardware and accel:reservations:
the written stack declares the reservation and plans clean. Before, the pin ignored the file, so a pin of a machine
sold only in Capacity Blocks (P6e-GB300) wrote a plan on "capacity block None" that `accel plan` refused (the day-one
sweep's nb00/nb01, benchmarks/sweep_day_one.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from accel.offline_plan import plan_stack
from accel.policies.catalog import load_catalog
from accel.policies.cloud.reservations import DeclaredReservation, use_reservation
from accel.policies.selection.choose import choose, make_plan, plan_from_pin
from accel.policies.workload import workload_from_mapping

ROOT = Path(__file__).resolve().parents[1]
GB300_BLOCK = {"name": "cr-0b300e72a1b2c3d4e", "kind": "capacity-block", "machineType": "p6e-gb300.36xlarge",
               "count": 18, "ultraserverType": "u-p6e-gb300x72", "zone": "us-east-1-dfw-2a",
               "start": "2030-01-06T11:30:00Z", "end": "2030-01-13T11:30:00Z"}
PINNED = {"name": "gb300-pinned", "kind": "pretrain", "model": {"parameters": "405B", "sequence_length": 8192},
          "training": {"tokens": "10B", "framework": "pytorch", "precision": "bf16"},
          "constraints": {"clouds": ["aws"], "spot": "never"},
          "hardware": {"accelerator": "gb300", "chips": 72, "cloud": "aws", "spot": False},
          "owner": "sweep", "cost_center": "sweep-6"}


def choose_cli(tmp_path: Path, workload: dict, reservations: list[dict]) -> tuple[int, str]:
    from accel.commands import choose as choose_command

    (tmp_path / "stacks").mkdir(exist_ok=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    held = tmp_path / "held.yaml"
    held.write_text(yaml.safe_dump(reservations))
    path = tmp_path / "workload.yaml"
    path.write_text(yaml.safe_dump(workload))
    app = typer.Typer(pretty_exceptions_enable=False)
    app.callback()(lambda: None)
    choose_command.register(app)
    result = CliRunner().invoke(app, ["choose", str(path), "--reservations", str(held), "--write-stack", "pinned"])
    return result.exit_code, result.output


def test_a_pinned_workload_chosen_on_a_declared_block_writes_a_stack_that_plans_on_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, output = choose_cli(tmp_path, PINNED, [GB300_BLOCK])
    assert code == 0 and "Traceback" not in output, output
    stack = tmp_path / "stacks" / "Pulumi.pinned.yaml"
    config = yaml.safe_load(stack.read_text())["config"]
    assert config["accel:reservations"] == [GB300_BLOCK]
    assert config["accel:plan"]["capacity"]["reservation"] == GB300_BLOCK["name"]
    result = plan_stack(None, stack, tmp_path)
    assert result.exit_code == 0 and not result.violations and not result.job_errors


def test_the_written_pin_is_the_plan_accel_plan_makes_of_the_same_pin_and_block():
    """One answer whichever command decides it: choose's pinned plan on the block is plan_from_pin's put on it."""
    workload = workload_from_mapping(PINNED, "w.yaml")
    block = [DeclaredReservation.model_validate(GB300_BLOCK)]
    catalog = load_catalog()
    chosen = use_reservation(make_plan(workload, choose(workload, catalog, reservations=block), catalog), block)
    planned = use_reservation(plan_from_pin(workload, catalog, reservations=block), block)
    assert chosen.capacity.reservation == planned.capacity.reservation == GB300_BLOCK["name"]
    assert chosen.chosen == planned.chosen and chosen.estimate == planned.estimate


def test_a_pin_off_the_declared_machine_is_left_as_it_was(tmp_path, monkeypatch):
    """A reservation of another machine holds no part of the pin: the pin is priced as before, nothing declared."""
    monkeypatch.chdir(tmp_path)
    h100 = {**PINNED, "name": "h100-pinned", "hardware": {"accelerator": "h100-80gb", "chips": 128, "cloud": "aws",
                                                          "spot": False}}
    code, output = choose_cli(tmp_path, h100, [GB300_BLOCK])
    assert code == 0, output
    config = yaml.safe_load((tmp_path / "stacks" / "Pulumi.pinned.yaml").read_text())["config"]
    assert "accel:reservations" not in config and config["accel:plan"]["capacity"]["reservation"] is None


@pytest.mark.parametrize("reservations", [[], [GB300_BLOCK]])
def test_choose_forwards_the_declared_reservations_to_a_pin(reservations):
    """The pin is timed as held only when its block is declared: the window is billed whole."""
    workload = workload_from_mapping(PINNED, "w.yaml")
    declared = [DeclaredReservation.model_validate(r) for r in reservations]
    window = choose(workload, load_catalog(), reservations=declared).estimate.details.get("capacity_window_days")
    assert (window is not None) == bool(reservations)


# ---- a service outlasting its declared Capacity Block ------------------------------------------------------------
SERVICE = {"name": "gb300-service", "kind": "inference", "model": {"architecture": "llama3.1-70b"},
           "inference": {"tokens_per_second": 20000, "p99_latency_ms": 60, "framework": "pytorch"},
           "constraints": {"clouds": ["aws"], "spot": "never", "accelerators": ["gb300"]},
           "owner": "sweep", "cost_center": "sweep-6"}


def test_a_search_does_not_serve_a_month_on_a_one_week_block_and_says_why():
    """A Capacity Block's node group is scaled in before its window closes: a 730 h service is not sized on a
    167 h block (accel plan would refuse the stack), and the refusal names the block, its hours and the way out."""
    from accel.policies.selection.choose import NoFeasibleOption

    block = [DeclaredReservation.model_validate(GB300_BLOCK)]
    with pytest.raises(NoFeasibleOption) as refused:
        choose(workload_from_mapping(SERVICE, "w.yaml"), load_catalog(), reservations=block)
    said = " ".join(str(refused.value).split())
    assert "a service of 730 h (inference.hours)" in said
    assert "capacity block 'cr-0b300e72a1b2c3d4e' has 167.0 h" in said
    assert "inference.hours at most 167" in said


def test_a_service_within_the_block_is_served_on_it():
    block = [DeclaredReservation.model_validate(GB300_BLOCK)]
    within = {**SERVICE, "inference": {**SERVICE["inference"], "hours": 150}}
    choice = choose(workload_from_mapping(within, "w.yaml"), load_catalog(), reservations=block)
    assert choice.reservation == GB300_BLOCK["name"]


def test_a_pinned_service_longer_than_its_block_is_refused_before_a_stack_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pinned = {**SERVICE, "constraints": {"clouds": ["aws"], "spot": "never"},
              "hardware": {"accelerator": "gb300", "chips": 72, "cloud": "aws", "spot": False}}
    code, output = choose_cli(tmp_path, pinned, [GB300_BLOCK])
    said = " ".join(output.split())
    assert code == 2 and "Traceback" not in output
    assert "the run takes 730.0 h but capacity block 'cr-0b300e72a1b2c3d4e' has 167.0 h" in said
    assert not (tmp_path / "stacks" / "Pulumi.pinned.yaml").exists()
