"""Day one: `accel choose W.yaml --write-stack NAME`, then `accel plan -s NAME`, works for every example.

No real project id is needed offline; the plan says which keys `pulumi up` still needs and the
exact `pulumi config set` commands; a spot plan is written with a TTL from its estimated run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from accel.base.units import parse_ttl
from accel import cli
from accel.offline_plan import plan_stack
from accel.policies.plan import Plan
from tests.conftest import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def accel():
    cli._register_commands()
    return cli.app


def fresh_project(tmp_path: Path) -> Path:
    """The project as a user clones it, without any stack file."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, project / name)
    return project


def choose_and_write(project: Path, example: Path, stack: str, monkeypatch) -> dict:
    monkeypatch.chdir(project)
    outcome = CliRunner().invoke(accel(), ["choose", str(example), "--write-stack", stack])
    assert outcome.exit_code == 0, outcome.output
    return yaml.safe_load((project / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_a_written_stack_plans_offline_and_says_what_pulumi_up_still_needs(tmp_path, monkeypatch, example):
    project = fresh_project(tmp_path)
    config = choose_and_write(project, example, "day-one", monkeypatch)
    plan = Plan.model_validate(config["accel:plan"])

    result = plan_stack("day-one", None, project)

    assert result.exit_code == 0, result.mandatory_violations
    needed = {item["key"]: item["command"] for item in result.needed_before_up}
    expected = {"gcp": {"gcp:project"}, "aws": {"accel:apiAccessCidrs"}}.get(plan.cloud, set())
    if plan.capacity.mode in ("aws-capacity-block", "gcp-calendar"):   # booked by the search: buy it first
        expected |= {"accel:reservations"}
    assert set(needed) == expected
    for key, command in needed.items():
        for each in command.split(" && "):
            assert each.startswith("pulumi config set ") and key in each and each.endswith("-s day-one")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_a_spot_plan_is_written_with_a_ttl_that_outlasts_its_estimated_run(tmp_path, monkeypatch, example):
    config = choose_and_write(fresh_project(tmp_path), example, "day-one", monkeypatch)
    plan = Plan.model_validate(config["accel:plan"])
    if not plan.chosen.spot:
        assert "accel:ttl" not in config
        return
    ttl_hours = parse_ttl(config["accel:ttl"]).total_seconds() / 3600
    assert ttl_hours > plan.estimate.hours
    assert config["pulumi:tags"] == {"accel:ephemeral": "true", "accel:ttl": config["accel:ttl"]}


def test_the_examples_include_a_spot_plan():
    # Otherwise the TTL test above checks nothing: llama-8b-finetune-cuda allows spot and gets it.
    assert any("spot: allowed" in path.read_text() for path in EXAMPLES)


def test_pulumi_up_without_the_keys_stops_with_the_commands(tmp_path, monkeypatch):
    """Outside offline planning (the real CLI) a missing key is an error naming the command, not a placeholder."""
    from accel.stack.program import read_stack
    from accel.base.errors import UsageError
    from accel.stack.config import load_stack_config

    project = fresh_project(tmp_path)
    choose_and_write(project, ROOT / "examples" / "llama-70b-finetune-aws.yaml", "day-one", monkeypatch)
    values = load_stack_config(project, "day-one", None).values
    with pytest.raises(UsageError, match=r"pulumi config set --path 'accel:apiAccessCidrs\[0\]'"):
        read_stack(values, "day-one")


def test_plan_output_lists_the_commands(tmp_path, monkeypatch):
    project = fresh_project(tmp_path)
    choose_and_write(project, ROOT / "examples" / "llama-70b-finetune-aws.yaml", "day-one", monkeypatch)
    outcome = CliRunner().invoke(accel(), ["plan", "-s", "day-one"])
    assert outcome.exit_code == 0, outcome.output
    assert "Before `pulumi up`" in outcome.stdout
    assert "pulumi config set --path 'accel:apiAccessCidrs[0]' <your-egress-ip>/32 -s day-one" in outcome.stdout
