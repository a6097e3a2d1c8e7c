"""What a newcomer sees first: help everywhere, bare `accel`, tables that do not break words, one row per
repeated guardrail finding, and words that fit what the stack is (a service has no checkpoint)."""

from __future__ import annotations

import io
from datetime import datetime, timezone

import pytest
from rich.console import Console
from typer.testing import CliRunner

from accel.cli import COMMANDS, _register_commands, app


@pytest.fixture(scope="module")
def invoke():
    _register_commands()
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args), env={"COLUMNS": "200"})


def test_bare_accel_prints_the_help_and_exits_0(invoke):
    result = invoke()
    assert result.exit_code == 0 and "Usage: accel" in result.stdout


@pytest.mark.parametrize("args", [[], *[[name] for name in COMMANDS]], ids=lambda a: " ".join(a) or "accel")
def test_dash_h_is_help_wherever_help_is(invoke, args):
    short, long = invoke(*args, "-h"), invoke(*args, "--help")
    assert short.exit_code == long.exit_code == 0
    assert short.stdout == long.stdout


def test_the_summary_names_every_command(invoke):
    summary = " ".join(invoke("--help").stdout.split("╭", 1)[0].split()).lower()
    assert [name for name in COMMANDS if name not in summary] == []


def test_an_argument_named_by_its_metavar_shows_no_type_and_no_braces(invoke):
    text = invoke("choose", "--help").stdout
    assert "WORKLOAD.yaml" in text and "<str>" not in text and "{WORKLOAD.yaml}" not in text


def test_the_reap_table_never_breaks_a_stack_name_at_80_columns():
    from accel.commands.reap import _render
    from accel.reaper import ReapReport, Reason, StackOutcome

    names = ["my-llama-70b-pretrain", "my-llama-8b-finetune-cuda"]
    report = ReapReport(now=datetime(2026, 11, 25, 12, tzinfo=timezone.utc), dry_run=True, work_dir=".", outcomes=[
        StackOutcome(stack=name, action="destroy", reason=Reason.EXPIRED, status="would-destroy",
                     detail="expired 3d 2h ago (accel:ttl 56h from the last update at 2026-11-20T10:00:00Z)")
        for name in names])
    buffer = io.StringIO()
    _render(report, Console(file=buffer, width=80, color_system=None))
    lines = buffer.getvalue().splitlines()
    assert max(map(len, lines)) <= 80
    assert all(any(name in line for line in lines) for name in names)


def test_violations_saying_the_same_of_several_resources_are_one_row():
    from accel.commands.plan import group_violations

    message = ("aws:s3/bucket:Bucket '{}' violates ownership-labels: placeholder values accel:cost-center='unknown', "
               "so its cost cannot be attributed. Fix: set owner and cost_center.")
    violations = [{"policy": "ownership-labels", "level": "advisory", "resource": f"urn:x::{n}", "message": message.format(n)}
                  for n in ("checkpoints", "datasets", "cluster")]
    other = {"policy": "ephemeral-has-expiry", "level": "advisory", "resource": "urn:x::pool",
             "message": "gcp:container/nodePool:NodePool 'pool' violates ephemeral-has-expiry: no ttl. Fix: add one."}
    rows = group_violations([*violations, other])
    assert rows[0] == ("ownership-labels", ["checkpoints", "datasets", "cluster"],
                       "placeholder values accel:cost-center='unknown', so its cost cannot be attributed. "
                       "Fix: set owner and cost_center.")
    assert rows[1] == ("ephemeral-has-expiry", ["pool"], other["message"])  # alone: the whole message


def render_decision(plan: dict) -> str:
    from types import SimpleNamespace

    from accel.commands.plan import render_decision as render

    buffer = io.StringIO()
    render(SimpleNamespace(plan=plan, hourly_usd=5.0, run_usd=3650.0), Console(file=buffer, width=200, color_system=None))
    return buffer.getvalue()


def test_one_host_is_one_host_and_a_service_has_a_period_not_a_run():
    chosen = {"chips": 8, "accelerator": "a100-40gb", "hosts": 1, "machine_type": "p4d.24xlarge", "spot": True,
              "hours": 730.0, "mfu": 0.1}
    text = render_decision({"chosen": chosen, "cloud": "aws", "region": "us-east-1", "workload": {"kind": "inference"}})
    assert "1 host of p4d.24xlarge" in text and "1 hosts" not in text
    assert "serving period" in text and "estimated run" not in text and "MFU" not in text


@pytest.mark.parametrize("provisioning", ["flex-start", "reservation", "capacity-block", "on-demand", "spot"])
def test_the_hardware_line_names_the_capacity_the_plan_is_obtained_on(provisioning):
    # A flex-start TPU7x pin, a reserved A4X pin and a capacity-block p6e pin all read "on-demand" before.
    chosen = {"chips": 256, "accelerator": "b200", "hosts": 32, "machine_type": "a4-highgpu-8g",
              "spot": provisioning == "spot", "provisioning": provisioning, "hours": 150.0, "mfu": 0.4}
    text = render_decision({"chosen": chosen, "cloud": "gcp", "region": "us-central1", "workload": {"kind": "pretrain"}})
    hardware = next(line for line in text.splitlines() if line.startswith("Hardware"))
    assert hardware.endswith(f"on gcp us-central1, {provisioning}")


def test_spot_for_a_service_is_not_said_to_restart_from_a_checkpoint():
    from accel.policies.selection.tradeoffs import CAPACITY_RISK, SERVING_RISK

    assert "checkpoint" in CAPACITY_RISK["spot"] and "checkpoint" not in SERVING_RISK["spot"]


@pytest.mark.parametrize("command", ["plan", "job"])
def test_stack_names_tab_complete(command, monkeypatch):
    import subprocess
    import sys
    from pathlib import Path

    accel = Path(sys.executable).with_name("accel")
    if not accel.is_file():
        pytest.skip("needs the installed accel script beside python")
    root = Path(__file__).resolve().parent.parent
    env = {**__import__("os").environ, "_TYPER_COMPLETE_ARGS": f"accel {command} -s llama-7",
           "_ACCEL_COMPLETE": "complete_zsh"}
    offered = subprocess.run([str(accel)], env=env, cwd=root, capture_output=True, text=True, timeout=120).stdout
    assert "llama-70b-tpu" in offered and "dev-spot" not in offered
