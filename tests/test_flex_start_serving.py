"""A month-long service is not planned on seven-day capacity.

Flex-start and queued provisioning run at most their longest request (capacity_modes.yaml
limits.max_duration_hours, 168 h, source gke-flex-start), after which every node is removed: a service whose
inference.hours exceed it is not served through them (policies/selection/serving_capacity.py). The offering is
rejected saying why and what to do instead, a service within the limit may still use it (GKE allows flex-start
for serving), and a pin on such capacity is refused at choose and plan time (exit 2)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from accel.base.errors import EXIT_INVALID
from accel.policies.catalog import load_catalog
from accel.policies.cloud.capacity_modes import load_modes
from accel.policies.selection.choose import choose
from accel.policies.workload import WorkloadFieldError, load_workload, workload_from_mapping
from tests.scratch_project import scratch_project, workload_stack

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "llama-70b-inference.yaml"
QUEUED_OFFERINGS = ("gcp-a3-ultragpu-8g", "gcp-a4-highgpu-8g", "gcp-tpu7x")   # catalog provisioning flex-start


def longest_request() -> float:
    limit = load_modes().modes["gcp-flex-start"].limits.max_duration_hours
    assert limit is not None
    return limit


def service(hours: float, pin: dict | None = None, **constraints):
    workload = {"name": "chat", "kind": "inference", "model": {"parameters": "70B", "sequence_length": 4096},
                "inference": {"tokens_per_second": 20000, "p99_latency_ms": 50, "framework": "jax", "hours": hours},
                "constraints": {"clouds": ["gcp", "aws"], "spot": "never", **constraints}}
    if pin is not None:
        workload["hardware"] = pin
    return workload_from_mapping(workload, "t.yaml")


@functools.cache
def _choice(hours: float, objective: str = "cost"):
    return choose(service(hours), load_catalog(), objective)   # type: ignore[arg-type]


def test_the_limit_is_the_mode_tables():
    assert longest_request() == 168
    assert load_modes().modes["gcp-flex-start"].limits.source == "gke-flex-start"


@pytest.mark.parametrize("objective", ["cost", "time"])
def test_a_month_long_service_is_not_offered_on_flex_start(objective):
    # Before: examples/llama-70b-inference.yaml (730 h) chose 3 x a3-ultragpu-8g on flex-start at $130.14/h.
    choice = choose(load_workload(EXAMPLE), load_catalog(), objective)   # type: ignore[arg-type]
    assert all(o.provisioning not in ("flex-start", "queued") for o in [*choice.options, *choice.closest_infeasible])
    rejected = {r["offering"]: " ".join(r["reasons"]) for r in choice.rejected}
    for offering in QUEUED_OFFERINGS:
        reason = rejected[offering]
        assert "a service of 730 h (inference.hours) outlives flex-start's longest request, 168 h" in reason
        assert "gcp-flex-start: gke-flex-start" in reason
        assert "a declared reservation of" in reason and "or inference.hours at most 168" in reason
    assert "constraints.spot: required" in rejected["gcp-a3-ultragpu-8g"]   # A3 Ultra has spot prices


def test_a_service_within_the_limit_may_still_use_flex_start():
    choice = _choice(longest_request())
    assert choice.chosen.offering == "gcp-a3-ultragpu-8g" and choice.chosen.provisioning == "flex-start"
    assert not any(r["offering"] == "gcp-a3-ultragpu-8g" for r in choice.rejected)


def test_one_hour_past_the_limit_is_refused():
    choice = _choice(longest_request() + 1)
    assert choice.chosen.provisioning != "flex-start"
    assert any(r["offering"] == "gcp-a3-ultragpu-8g" for r in choice.rejected)


def test_a_declared_reservation_still_serves_the_machine():
    from accel.policies.cloud.reservations import DeclaredReservation

    held = [DeclaredReservation(name="a3u", machineType="a3-ultragpu-8g", count=4, zone="us-central1-b")]
    choice = choose(service(730), load_catalog(), "cost", reservations=held)
    a3 = [o for o in choice.options if o.offering == "gcp-a3-ultragpu-8g"]
    assert a3 and all(o.provisioning == "reservation" for o in a3)


@pytest.mark.parametrize("pin, field", [({"accelerator": "h200-141gb", "chips": 24, "cloud": "gcp"},
                                         "hardware.accelerator"),
                                        ({"accelerator": "h200-141gb", "chips": 24, "machine_type": "a3-ultragpu-8g"},
                                         "hardware.machine_type")])
def test_a_pinned_service_on_flex_start_past_the_limit_is_refused(pin, field):
    with pytest.raises(WorkloadFieldError) as refused:
        choose(service(730, pin), load_catalog())
    assert refused.value.field == field and refused.value.exit_code == EXIT_INVALID
    assert "outlives flex-start's longest request, 168 h" in refused.value.problem
    assert "hardware.spot: true" in refused.value.problem


def test_a_pin_within_the_limit_or_with_another_cloud_is_served():
    within = choose(service(longest_request(), {"accelerator": "h200-141gb", "chips": 24, "cloud": "gcp"}),
                    load_catalog())
    assert within.chosen.provisioning == "flex-start"
    # An H200 pin on either cloud is served on AWS's on-demand p5en rather than refused.
    elsewhere = choose(service(730, {"accelerator": "h200-141gb", "chips": 24}), load_catalog())
    assert elsewhere.chosen.cloud == "aws" and elsewhere.chosen.provisioning == "on-demand"


def test_accel_choose_and_plan_refuse_the_pin_with_exit_2(tmp_path, monkeypatch):
    from accel import cli

    workload = {"name": "chat", "kind": "inference", "model": {"parameters": "70B"},
                "hardware": {"accelerator": "h200-141gb", "chips": 24, "cloud": "gcp"},
                "inference": {"tokens_per_second": 20000, "framework": "jax"}}
    path = tmp_path / "chat.yaml"
    path.write_text(json.dumps(workload))
    cli._register_commands()
    chosen = CliRunner().invoke(cli.app, ["choose", str(path)], catch_exceptions=False)
    assert chosen.exit_code == 2, chosen.output
    assert "hardware.accelerator" in chosen.output and "168 h" in chosen.output
    scratch_project(tmp_path, {"chat": workload_stack(workload)})
    monkeypatch.chdir(tmp_path)
    planned = CliRunner().invoke(cli.app, ["plan", "-s", "chat"], catch_exceptions=False)
    assert planned.exit_code == 2, planned.output
    assert "hardware.accelerator" in planned.output


def test_a_stack_pinned_to_a_month_on_flex_start_is_refused_at_plan(tmp_path, monkeypatch):
    """A stack written by `accel choose --write-stack` before the rule pins A3 Ultra on flex-start for the 730-hour
    service: `accel plan` and `accel job` refuse it (exit 2) naming accel:plan's capacity.provisioning; the same
    pin for a week's service plans."""
    import yaml

    from accel import cli

    scratch_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    week = tmp_path / "week.yaml"
    example = yaml.safe_load(EXAMPLE.read_text())
    example["inference"]["hours"] = longest_request()
    week.write_text(yaml.safe_dump(example))
    cli._register_commands()
    written = CliRunner().invoke(cli.app, ["choose", str(week), "--write-stack", "chat"], catch_exceptions=False)
    assert written.exit_code == 0, written.output
    stack = tmp_path / "stacks" / "Pulumi.chat.yaml"
    config = yaml.safe_load(stack.read_text())
    assert config["config"]["accel:plan"]["capacity"]["provisioning"] == "flex-start"
    assert CliRunner().invoke(cli.app, ["plan", "-s", "chat"], catch_exceptions=False).exit_code == 0
    for workload in (config["config"]["accel:workload"], config["config"]["accel:plan"]["workload"]):
        workload["inference"]["hours"] = 730
    stack.write_text(yaml.safe_dump(config))
    for command in ("plan", "job"):
        refused = CliRunner().invoke(cli.app, [command, "-s", "chat"], catch_exceptions=False)
        assert refused.exit_code == EXIT_INVALID, refused.output
        assert "accel:plan: capacity.provisioning is 'flex-start'" in refused.output
        assert "outlives flex-start's longest request, 168 h" in refused.output


def test_the_queued_modes_are_stated_once_with_the_mode_table():
    # Which provisioning is queued (flex-start, queued provisioning) is one constant beside the mode table, which the
    # search, its timing and the serving rule read; every mode the table bounds by a longest queued request is one.
    from accel.policies.cloud import capacity_modes
    from accel.policies.selection import capacity, candidates, serving_capacity

    queued = capacity_modes.QUEUED_PROVISIONING
    assert serving_capacity.QUEUED_PROVISIONING is queued and candidates.QUEUED_PROVISIONING is queued
    assert capacity.QUEUED_PROVISIONING is queued
    gcp_queued = {m.provisioning for m in capacity_modes.load_modes().modes.values()
                  if m.id in ("gcp-flex-start", "gcp-queued")}
    assert gcp_queued == set(queued)


# ------------------------------------------------- a short service on a machine sold on demand and through DWS

def h100_service(hours: float, capacity=None):
    """The 70B chat service on H100s on Google Cloud only: A3 High and A3 Mega are sold on demand and through
    flex-start (capacity_modes.yaml applicability), at the mode's factor (gcp-accel-price-sheet-2026-09)."""
    constraints = {"clouds": ["gcp"], "accelerators": ["h100-80gb"]}
    if capacity is not None:
        constraints["capacity"] = capacity
    return service(hours, **constraints)


def test_a_short_service_on_an_on_demand_machine_is_offered_flex_start_where_it_is_cheaper():
    choice = choose(h100_service(120), load_catalog())
    chosen = choice.chosen
    assert chosen.provisioning == "flex-start" and chosen.machine_type == "a3-highgpu-8g"
    assert chosen.price_source.startswith("gcp-accel-price-sheet-2026-09")
    same_fleet = next(o for o in choice.options if o.offering == chosen.offering and o.hosts == chosen.hosts
                      and o.region == chosen.region and o.provisioning == "on-demand")
    factor = load_modes().price_factor("gcp-flex-start", chosen.machine_type)[0]
    assert chosen.hourly_usd == pytest.approx(factor * same_fleet.hourly_usd, rel=1e-6)
    assert any(line.startswith("Capacity mode gcp-flex-start: flex-start: one request of at most 7 days")
               for line in choice.rationale)
    assert any("neither waits in the queue before it serves" in line for line in choice.rationale)


@pytest.mark.parametrize("hours", [169, 730])
def test_a_service_past_the_limit_on_an_on_demand_machine_stays_on_demand(hours):
    choice = choose(h100_service(hours), load_catalog())
    assert {o.provisioning for o in choice.options} == {"on-demand"}


def test_a_short_service_past_the_hosts_flex_start_supplies_is_not_offered_it():
    capacity = {"obtainability": {"frontier-gpu": {"flex-start": {"max_hosts": 2}}}}
    choice = choose(h100_service(120, capacity), load_catalog())
    assert choice.chosen.hosts > 2
    assert {o.provisioning for o in choice.options} == {"on-demand"}
