"""`accel choose --write-stack` edits a stack file as a round trip: comments and key order survive."""

from __future__ import annotations

from pathlib import Path

import yaml

from accel.stack.pin import pin_to_stack_file

STACK = """\
# Scenario: the team's pretraining run (top comment)
secretsprovider: passphrase
config:
  # who pays for it (comment inside config)
  accel:owner: team-a   # trailing comment on a value
  gcp:project: acme-ml
  accel:workload:
    name: old-run   # replaced on a re-pin
  # the region this team is allowed in
  gcp:region: us-east5
environment:
  - shared
"""

WORKLOAD = {"name": "llama-70b-pretrain", "kind": "pretrain"}
PLAN = {"schema_version": 2, "chosen": {"spot": False}, "estimate": {"hours": 10.0}}


def pinned(tmp_path: Path) -> str:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(STACK)
    pin_to_stack_file(path, WORKLOAD, PLAN)
    return path.read_text()


def test_comments_at_the_top_and_inside_config_survive_a_pin(tmp_path):
    text = pinned(tmp_path)
    for comment in ("# Scenario: the team's pretraining run (top comment)", "# who pays for it (comment inside config)",
                    "# trailing comment on a value", "# the region this team is allowed in"):
        assert comment in text


def test_a_pin_keeps_the_key_order_and_replaces_only_workload_and_plan(tmp_path):
    written = yaml.safe_load(pinned(tmp_path))
    assert list(written) == ["secretsprovider", "config", "environment"]
    assert list(written["config"]) == ["accel:owner", "gcp:project", "accel:workload", "gcp:region", "accel:plan"]
    assert written["config"]["accel:workload"] == WORKLOAD and written["config"]["accel:plan"] == PLAN
    assert written["config"]["gcp:region"] == "us-east5" and written["environment"] == ["shared"]


def test_pinning_again_keeps_the_comments_where_they_were(tmp_path):
    once = pinned(tmp_path)
    pin_to_stack_file(tmp_path / "Pulumi.dev.yaml", WORKLOAD, PLAN)
    assert (tmp_path / "Pulumi.dev.yaml").read_text() == once
