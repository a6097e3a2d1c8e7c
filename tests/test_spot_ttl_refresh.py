"""A spot stack's TTL always covers its current run (newcomer finding 2, issue #31).

Re-choosing onto an existing stack (`accel choose --write-stack`) refreshes a TTL the new run has
outgrown; a stack file whose TTL is shorter than its pinned run is refused at plan time, naming
accel:ttl and the value to set.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from accel.base.errors import UsageError
from accel.base.units import parse_ttl
from accel.policies.spot_ttl import ttl_for_run
from accel.stack.pin import pin_to_stack_file
from accel.stack.settings import settings_from_config

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = {"name": "llama-8b-finetune"}


def spot_plan(hours: float) -> dict:
    return {"chosen": {"spot": True}, "estimate": {"hours": hours}}


def config_of(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["config"]


def test_re_choosing_a_longer_run_refreshes_the_ttl_and_its_tags(tmp_path):
    path = tmp_path / "Pulumi.spot.yaml"
    pin_to_stack_file(path, WORKLOAD, spot_plan(42.5))
    first = config_of(path)["accel:ttl"]
    assert first == ttl_for_run(42.5)
    told: list[str] = []
    pin_to_stack_file(path, WORKLOAD, spot_plan(90.0), warn=told.append)
    config = config_of(path)
    assert config["accel:ttl"] == ttl_for_run(90.0)
    assert parse_ttl(config["accel:ttl"]).total_seconds() >= 90 * 3600
    assert config["pulumi:tags"]["accel:ttl"] == ttl_for_run(90.0)
    assert any("shorter than the new run" in line for line in told)


def test_a_ttl_that_still_covers_the_new_run_is_kept(tmp_path):
    path = tmp_path / "Pulumi.spot.yaml"
    path.write_text("config:\n  accel:ephemeral: true\n  accel:ttl: 2w\n", encoding="utf-8")
    pin_to_stack_file(path, WORKLOAD, spot_plan(100.0))
    assert config_of(path)["accel:ttl"] == "2w"


def test_an_absolute_expiry_is_left_to_its_owner(tmp_path):
    path = tmp_path / "Pulumi.spot.yaml"
    path.write_text("config:\n  accel:ephemeral: true\n  accel:expiresAt: '2030-01-01T00:00:00Z'\n", encoding="utf-8")
    pin_to_stack_file(path, WORKLOAD, spot_plan(100.0))
    assert "accel:ttl" not in config_of(path)


@pytest.mark.parametrize("ttl", ["1h", "12h", "1d"])
def test_a_ttl_shorter_than_the_pinned_run_is_refused_naming_the_key(ttl):
    config = config_of(ROOT / "stacks" / "Pulumi.llama-70b-tpu.yaml")
    hours = config["accel:plan"]["estimate"]["hours"]
    assert hours > 24
    with pytest.raises(UsageError) as refused:
        settings_from_config({**config, "accel:ephemeral": "true", "accel:ttl": ttl}, "Pulumi.x.yaml")
    message = str(refused.value)
    assert f"accel:ttl: {ttl!r} is shorter than the pinned run" in message
    assert f"pulumi config set accel:ttl {ttl_for_run(hours)}" in message


def test_a_ttl_covering_the_pinned_run_is_accepted():
    config = config_of(ROOT / "stacks" / "Pulumi.llama-70b-tpu.yaml")
    hours = config["accel:plan"]["estimate"]["hours"]
    settings = settings_from_config({**config, "accel:ephemeral": "true", "accel:ttl": ttl_for_run(hours)}, "x")
    assert settings.ttl == ttl_for_run(hours)
