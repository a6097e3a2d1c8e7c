"""The reaper under hostile or unusual state: deny by default, and always a report.

- A stack is destroyed only when everything that can hold data is retained: a storage type the
  old nine-type list missed, or a type accel does not know at all, keeps the stack, with why
  (policies/data_classes.py, shared with the review).
- SIGTERM / SIGINT during a reap: the stack in hand is finished, the rest are reported as not
  reached, and the JSON report is printed; a second signal stops at once and reports the stack in
  hand as failed.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from accel import reaper
from accel.policies.data_classes import classify
from tests.test_reap import NODE_POOL, NOW, TTL_12H, FakePulumi, _by_stack

MISSED_STORAGE = [
    "gcp:compute/regionDisk:RegionDisk", "gcp:netapp/volume:Volume", "aws:fsx/openZfsFileSystem:OpenZfsFileSystem",
    "aws:fsx/ontapFileSystem:OntapFileSystem", "kubernetes:core/v1:PersistentVolumeClaim", "gcp:compute/snapshot:Snapshot",
    "aws:ebs/snapshot:Snapshot", "gcp:bigquery/dataset:Dataset", "aws-native:s3:Bucket",
    "google-native:storage/v1:Bucket", "aws:rds/instance:Instance", "gcp:sql/databaseInstance:DatabaseInstance",
]
UNKNOWN = ["mycorp:index:Datastore", "gcp:somethingnew/thing:Thing", "kubernetes:helm.sh/v3:Release"]


@pytest.fixture
def fake(tmp_path) -> FakePulumi:
    return FakePulumi(tmp_path)


def reap(fake: FakePulumi, **kwargs) -> reaper.ReapReport:
    return reaper.reap(fake.workspace(), now=NOW, sleep=lambda _s: None,
                       retry=reaper.RetryPolicy(attempts=1, base_delay=0), **kwargs)


@pytest.mark.parametrize("resource_type", MISSED_STORAGE)
def test_an_unretained_storage_type_outside_the_old_list_keeps_the_stack(fake, resource_type):
    fake.add_stack("spot-run", TTL_12H, resources=[{"type": NODE_POOL, "name": "pool"},
                                                   {"type": resource_type, "name": "data"}])
    outcome = _by_stack(reap(fake))["spot-run"]
    assert outcome.status == "refused" and fake.calls_of("destroy") == []
    assert any("data" in error and "not retain_on_delete" in error for error in outcome.errors)


@pytest.mark.parametrize("resource_type", UNKNOWN)
def test_a_type_accel_does_not_know_keeps_the_stack_and_says_why(fake, resource_type):
    fake.add_stack("spot-run", TTL_12H, resources=[{"type": NODE_POOL, "name": "pool"},
                                                   {"type": resource_type, "name": "mystery", "inputs": {"chart": "postgres"}}])
    report = reap(fake)
    outcome = _by_stack(report)["spot-run"]
    assert (outcome.status, report.exit_code) == ("refused", 1)
    assert fake.calls_of("destroy") == []
    assert f"is of type {resource_type}" in outcome.errors[0] and "may hold data" in outcome.errors[0]


@pytest.mark.parametrize("resource_type", MISSED_STORAGE + UNKNOWN)
def test_the_same_resource_retained_on_delete_lets_the_stack_go(fake, resource_type):
    fake.add_stack("spot-run", TTL_12H, resources=[{"type": NODE_POOL, "name": "pool"},
                                                   {"type": resource_type, "name": "kept", "retainOnDelete": True}])
    assert _by_stack(reap(fake))["spot-run"].status == "destroyed"


def test_what_accel_builds_is_classified_with_no_unknowns():
    """Every type the bundled stacks declare is either stateless or retained storage (classify only)."""
    built = ["gcp:container/nodePool:NodePool", "gcp:compute/network:Network", "aws:eks/nodeGroup:NodeGroup",
             "aws:s3/bucketPolicy:BucketPolicy", "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue",
             "kubernetes:core/v1:Namespace", "pulumi:providers:gcp", "accel:cluster:TrainingCluster"]
    assert [classify(t)[0] for t in built] == ["stateless"] * len(built)
    assert classify("kubernetes:helm.sh/v3:Release", {"chart": "oci://registry.k8s.io/kueue/charts/kueue"})[0] == \
        "stateless"
    assert classify("kubernetes:core/v1:PersistentVolume", {"spec": {"persistentVolumeReclaimPolicy": "Retain"}})[0] \
        == "stateless"
    assert classify("kubernetes:core/v1:PersistentVolume", {"spec": {"persistentVolumeReclaimPolicy": "Delete"}})[0] \
        == "data"


def test_a_stop_request_finishes_the_stack_in_hand_and_reports_the_rest(fake):
    for name in ("a-first", "b-second", "c-third"):
        fake.add_stack(name, TTL_12H)
    asked: list[str] = []
    report = reap(fake, interrupted=lambda: "SIGTERM" if asked.append("?") or len(asked) > 1 else None)
    outcomes = _by_stack(report)
    assert outcomes["a-first"].status == "destroyed"
    assert [outcomes[n].status for n in ("b-second", "c-third")] == ["undecided", "undecided"]
    assert "got SIGTERM" in outcomes["b-second"].detail
    assert report.exit_code == 1 and [o.stack for o in report.left] == ["b-second", "c-third"]


@pytest.fixture
def cli(fake, monkeypatch):
    from typer.testing import CliRunner

    from accel.cli import _register_commands, app

    _register_commands()
    monkeypatch.setenv("PATH", fake.env()["PATH"])
    monkeypatch.setenv("PULUMI_HOME", fake.env()["PULUMI_HOME"])
    return lambda *args: CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("signals", [1, 2])
def test_sigterm_during_a_destroy_still_prints_the_json_report(fake, cli, monkeypatch, signals):
    fake.add_stack("a-first", TTL_12H)
    fake.add_stack("b-second", TTL_12H)
    original = reaper._Teardown.run

    def destroy_then_get_signalled(self, *args, **kwargs):
        for _ in range(signals):
            os.kill(os.getpid(), signal.SIGTERM)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(reaper._Teardown, "run", destroy_then_get_signalled)
    result = cli("reap", "--json", "--now", "2026-03-02T01:00:00Z", "--work-dir", str(fake.project),
                 "--retry-delay", "0")
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    statuses = {s["stack"]: s["status"] for s in report["stacks"]}
    assert statuses["b-second"] == "undecided"
    assert statuses["a-first"] == ("destroyed" if signals == 1 else "failed")
    assert "b-second" in report["left"]
    assert signal.getsignal(signal.SIGTERM) is not None  # the previous handler is back


def test_a_signalled_run_exits_1_even_when_the_stack_in_hand_finished(fake, cli, monkeypatch):
    fake.add_stack("only", TTL_12H)
    original = reaper._Teardown.run

    def destroy_then_get_signalled(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(reaper._Teardown, "run", destroy_then_get_signalled)
    result = cli("reap", "--json", "--now", "2026-03-02T01:00:00Z", "--work-dir", str(fake.project),
                 "--retry-delay", "0")
    report = json.loads(result.stdout)
    assert [s["status"] for s in report["stacks"]] == ["destroyed"] and report["left"] == []
    assert result.exit_code == 1 and "got SIGINT" in result.stderr
