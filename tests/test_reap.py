"""accel reap / destroy-after-run through the real Automation API, against a recording stand-in CLI.

The stand-in (tests/fixtures/fake_pulumi) is started by the SDK's own PulumiCommand as
<root>/bin/pulumi; it answers `stack ls --json`, `stack tag ls --json`, `stack export`,
`stack history --json`, `destroy` and `stack rm` with the CLI's JSON and error texts, and
logs every argv. Its "cloud" list says what still exists after a destroy.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pulumi.automation import PulumiCommand
from typer.testing import CliRunner

from accel import reaper
from accel.cli import _register_commands, app
from accel.policies.lifecycle import TAG_EPHEMERAL, TAG_EXPIRES_AT, TAG_TTL, Reason

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "fixtures" / "fake_pulumi"
UTC = timezone.utc
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NOW = T0 + timedelta(hours=13)
TTL_12H = {TAG_EPHEMERAL: "true", TAG_TTL: "12h"}
NODE_POOL = "gcp:container/nodePool:NodePool"
BUCKET = "gcp:storage/bucket:Bucket"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


class FakePulumi:
    """Builds the stand-in's state, installs it as <root>/bin/pulumi, reads back its call log."""

    def __init__(self, root: Path, backend: str = "cloud") -> None:
        self.root = root
        self.state_path = root / "state.json"
        self.log_path = root / "calls.jsonl"
        self.bin_dir = root / "bin"
        self.bin_dir.mkdir(parents=True)
        script = self.bin_dir / "pulumi"
        script.write_text(
            "#!/bin/sh\n"
            f"FAKE_PULUMI_STATE='{self.state_path}' FAKE_PULUMI_LOG='{self.log_path}' "
            f"exec '{sys.executable}' '{FAKE}' \"$@\"\n"
        )
        script.chmod(0o755)
        self.project = root / "project"
        self.project.mkdir()
        (self.project / "Pulumi.yaml").write_text("name: accel\nruntime: python\n")
        self.state = {"backend": backend, "version": "3.211.0", "current": None, "cloud": [], "stacks": {}}
        self.save()

    def add_stack(self, name: str, tags: dict[str, str] | None = None, updated: datetime | None = T0,
                  history: list[dict] | None = None, resources: list[dict] | None = None, **flags) -> None:
        if resources is None:
            resources = [{"type": NODE_POOL, "name": "pool"}, {"type": BUCKET, "name": "ckpt", "retainOnDelete": True}]
        entries = history if history is not None else (
            [{"kind": "update", "startTime": _stamp(updated - timedelta(minutes=5)), "endTime": _stamp(updated)}]
            if updated else [])
        stack_resources = []
        for resource in resources:
            urn = f"urn:pulumi:{name}::accel::{resource['type']}::{resource['name']}"
            stack_resources.append({"urn": urn, **{k: v for k, v in resource.items() if k != "name"}})
            self.state["cloud"].append(urn)
        self.state["stacks"][name] = {"tags": tags or {}, "history": entries, "resources": stack_resources, **flags}
        self.save()

    def save(self) -> None:
        self.state_path.write_text(json.dumps(self.state, indent=2))

    def load(self) -> dict:
        return json.loads(self.state_path.read_text())

    def calls(self) -> list[list[str]]:
        if not self.log_path.exists():
            return []
        lines = self.log_path.read_text().splitlines()
        return [[a for a in json.loads(line)["argv"] if a != "--non-interactive"] for line in lines]

    def calls_of(self, *prefix: str) -> list[list[str]]:
        return [c for c in self.calls() if c[: len(prefix)] == list(prefix)]

    def destroys_of(self, stack: str) -> list[list[str]]:
        return [c for c in self.calls_of("destroy") if c[c.index("--stack") + 1] == stack]

    def cloud(self) -> list[str]:
        return [urn.rsplit("::", 1)[-1] for urn in self.load()["cloud"]]

    def workspace(self):
        return reaper.open_workspace(self.project, pulumi_command=PulumiCommand(root=str(self.root)))

    def env(self) -> dict[str, str]:
        return {**os.environ, "PATH": f"{self.bin_dir}{os.pathsep}{os.environ['PATH']}",
                "PULUMI_HOME": str(self.root / "pulumi-home")}


@pytest.fixture
def fake(tmp_path) -> FakePulumi:
    return FakePulumi(tmp_path)


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def run_reap(fake, sleeps):
    def _run(**kwargs):
        kwargs.setdefault("now", NOW)
        kwargs.setdefault("retry", reaper.RetryPolicy(attempts=3, base_delay=30, factor=2))
        return reaper.reap(fake.workspace(), sleep=sleeps.append, **kwargs)
    return _run


def _by_stack(report) -> dict[str, reaper.StackOutcome]:
    return {o.stack: o for o in report.outcomes}


# --- what gets destroyed -------------------------------------------------------------------

def test_expired_stack_is_destroyed_then_removed_from_the_backend(fake, run_reap):
    fake.add_stack("spot-run", TTL_12H)
    outcome = _by_stack(run_reap())["spot-run"]
    assert (outcome.status, outcome.reason) == ("destroyed", Reason.EXPIRED)
    kinds = [c[:2] for c in fake.calls() if c[0] == "destroy" or c[:2] == ["stack", "rm"]]
    assert kinds == [["destroy", "--skip-preview"], ["stack", "rm"]]
    assert "spot-run" not in fake.load()["stacks"]


def test_removal_never_forces_and_keeps_the_stack_file(fake, run_reap):
    fake.add_stack("spot-run", TTL_12H)
    run_reap()
    assert fake.calls_of("stack", "rm") == [["stack", "rm", "--yes", "--preserve-config", "spot-run"]]


def test_destroy_leaves_retained_data_in_the_cloud(fake, run_reap):
    fake.add_stack("spot-run", TTL_12H, resources=[
        {"type": NODE_POOL, "name": "tpu-pool"},
        {"type": BUCKET, "name": "checkpoints", "retainOnDelete": True},
        {"type": BUCKET, "name": "datasets", "retainOnDelete": True},
    ])
    run_reap()
    assert fake.cloud() == ["checkpoints", "datasets"]


def test_fresh_stack_is_left_alone_and_says_when_it_expires(fake, run_reap):
    fake.add_stack("spot-run", TTL_12H, updated=NOW - timedelta(hours=2))
    outcome = _by_stack(run_reap())["spot-run"]
    assert (outcome.status, outcome.reason, outcome.detail) == (
        "skipped", Reason.FRESH, "expires in 10h (2026-03-02T11:00:00Z)")
    assert fake.calls_of("destroy") == []


def test_stack_without_the_ephemeral_marker_is_never_destroyed(fake, run_reap):
    fake.add_stack("prod", {TAG_EXPIRES_AT: "2020-01-01T00:00:00Z"})
    outcome = _by_stack(run_reap())["prod"]
    assert (outcome.status, outcome.reason) == ("skipped", Reason.NOT_EPHEMERAL)
    assert fake.calls_of("destroy") == [] and fake.calls_of("stack", "export") == []


def test_stack_with_an_update_in_progress_is_skipped(fake, run_reap):
    fake.add_stack("spot-run", {TAG_EPHEMERAL: "true", TAG_EXPIRES_AT: _stamp(NOW - timedelta(hours=1))},
                   in_progress=True)
    report = run_reap()
    outcome = _by_stack(report)["spot-run"]
    assert (outcome.status, outcome.reason, report.exit_code) == ("skipped", Reason.UPDATE_IN_PROGRESS, 0)
    assert fake.calls_of("destroy") == []


def test_stack_busy_longer_than_the_limit_past_its_expiry_fails_the_run_naming_it(fake, run_reap):
    fake.add_stack("stuck", {TAG_EPHEMERAL: "true", TAG_EXPIRES_AT: _stamp(NOW - timedelta(hours=7))},
                   in_progress=True)
    report = run_reap(busy_limit=timedelta(hours=6))
    outcome = _by_stack(report)["stuck"]
    assert (outcome.status, outcome.reason, report.exit_code) == ("undecided", Reason.BUSY_PAST_LIMIT, 1)
    assert [o.stack for o in report.left] == ["stuck"] and fake.calls_of("destroy") == []


def test_locked_stack_on_a_self_managed_backend_is_skipped_without_retry(tmp_path, sleeps):
    fake = FakePulumi(tmp_path, backend="diy")  # `stack ls` cannot report progress; the destroy finds the lock
    fake.add_stack("spot-run", TTL_12H, locked=True)
    report = reaper.reap(fake.workspace(), now=NOW, sleep=sleeps.append)
    outcome = _by_stack(report)["spot-run"]
    assert (outcome.status, outcome.reason, report.exit_code) == ("skipped", Reason.UPDATE_IN_PROGRESS, 0)
    assert (fake.calls_of("refresh") != [], sleeps, fake.calls_of("stack", "rm")) == (True, [], [])


def test_locked_stack_on_a_self_managed_backend_past_the_busy_limit_fails_the_run(tmp_path, sleeps):
    fake = FakePulumi(tmp_path, backend="diy")
    fake.add_stack("spot-run", TTL_12H, locked=True)
    report = reaper.reap(fake.workspace(), now=NOW + timedelta(hours=7), sleep=sleeps.append,
                         busy_limit=timedelta(hours=6))
    outcome = _by_stack(report)["spot-run"]
    assert (outcome.status, outcome.reason, report.exit_code) == ("undecided", Reason.BUSY_PAST_LIMIT, 1)


def test_unparseable_tag_reaps_the_rest_and_fails_the_run_naming_the_stack(fake, run_reap):
    fake.add_stack("broken", {TAG_EPHEMERAL: "true", TAG_TTL: "forever"})
    fake.add_stack("spot-run", TTL_12H)
    report = run_reap()
    outcomes = _by_stack(report)
    assert (outcomes["broken"].status, outcomes["broken"].reason) == ("undecided", Reason.UNPARSEABLE_TAG)
    assert (outcomes["spot-run"].status, report.exit_code, [o.stack for o in report.left]) == (
        "destroyed", 1, ["broken"])


def test_ephemeral_marker_without_any_expiry_fails_the_run(fake, run_reap):
    fake.add_stack("forgotten", {TAG_EPHEMERAL: "true"})
    report = run_reap()
    assert (_by_stack(report)["forgotten"].status, report.exit_code) == ("undecided", 1)


def test_unreadable_state_fails_the_run_naming_the_stack(fake, run_reap):
    fake.add_stack("spot-run", TTL_12H, export_fails=True)
    report = run_reap()
    outcome = _by_stack(report)["spot-run"]
    assert (outcome.status, report.exit_code) == ("failed", 1)
    assert "could not read the stack's state" in outcome.detail and fake.calls_of("destroy") == []


# --- refresh before destroy ----------------------------------------------------------------

def test_every_destroy_is_preceded_by_a_refresh_of_the_same_stack(fake, run_reap):
    fake.add_stack("spot-run", TTL_12H)
    run_reap()
    steps = [c[0] for c in fake.calls() if c[0] in ("refresh", "destroy")]
    assert steps == ["refresh", "destroy"]
    refresh = fake.calls_of("refresh")[0]
    assert refresh[refresh.index("--stack") + 1] == "spot-run"


def test_refresh_drops_what_was_deleted_out_of_band_so_the_destroy_succeeds(fake, run_reap):
    fake.add_stack("spot-run", TTL_12H)
    state = fake.load()
    state["cloud"].remove("urn:pulumi:spot-run::accel::gcp:container/nodePool:NodePool::pool")
    fake.state = state
    fake.save()
    outcome = _by_stack(run_reap())["spot-run"]
    assert outcome.status == "destroyed" and fake.cloud() == ["ckpt"]


def test_a_failing_refresh_is_retried_and_never_followed_by_a_destroy(fake, run_reap, sleeps):
    fake.add_stack("spot-run", TTL_12H, refresh_failures=-1)
    report = run_reap()
    outcome = _by_stack(report)["spot-run"]
    assert (outcome.status, outcome.attempts, sleeps, report.exit_code) == ("failed", 3, [30, 60], 1)
    assert outcome.errors[0].startswith("refresh attempt 1: ") and fake.calls_of("destroy") == []


def test_ttl_counts_from_the_last_up_not_a_later_refresh(fake, run_reap):
    fake.add_stack("spot-run", TTL_12H, history=[
        {"kind": "update", "startTime": _stamp(T0 - timedelta(minutes=5)), "endTime": _stamp(T0)},
        {"kind": "refresh", "startTime": _stamp(T0 + timedelta(hours=11)), "endTime": _stamp(T0 + timedelta(hours=11))},
    ])
    outcome = _by_stack(run_reap())["spot-run"]
    assert (outcome.status, outcome.expires_at) == ("destroyed", T0 + timedelta(hours=12))


def test_a_later_up_renews_the_ttl(fake, run_reap):
    fake.add_stack("spot-run", TTL_12H, history=[
        {"kind": "update", "startTime": _stamp(T0), "endTime": _stamp(T0)},
        {"kind": "update", "startTime": _stamp(T0 + timedelta(hours=11)), "endTime": _stamp(T0 + timedelta(hours=11))},
    ])
    outcome = _by_stack(run_reap())["spot-run"]
    assert (outcome.status, outcome.reason) == ("skipped", Reason.FRESH)


# --- data safety ---------------------------------------------------------------------------

def test_stack_whose_data_is_not_retained_is_refused_and_reported(fake, run_reap):
    fake.add_stack("spot-run", TTL_12H, resources=[{"type": BUCKET, "name": "checkpoints"}])
    report = run_reap()
    outcome = _by_stack(report)["spot-run"]
    assert (outcome.status, report.exit_code) == ("refused", 1)
    assert "not retain_on_delete" in outcome.errors[0]
    assert fake.calls_of("destroy") == [] and fake.cloud() == ["checkpoints"]


def test_stack_with_a_protected_resource_is_refused_before_any_destroy(fake, run_reap):
    fake.add_stack("spot-run", TTL_12H, resources=[{"type": BUCKET, "name": "ckpt", "retainOnDelete": True,
                                                    "protect": True}])
    outcome = _by_stack(run_reap())["spot-run"]
    assert outcome.status == "refused" and fake.calls_of("destroy") == []


# --- failures ------------------------------------------------------------------------------

def test_destroy_that_fails_once_is_retried_after_a_backoff_then_removed(fake, run_reap, sleeps):
    fake.add_stack("spot-run", TTL_12H, destroy_failures=1)
    outcome = _by_stack(run_reap())["spot-run"]
    assert (outcome.status, outcome.attempts, sleeps) == ("destroyed", 2, [30])
    assert "Error 503" in outcome.errors[0]
    assert [c[0] for c in fake.calls() if c[0] == "destroy" or c[:2] == ["stack", "rm"]] == ["destroy", "destroy", "stack"]


def test_destroy_that_keeps_failing_backs_off_exponentially_and_is_never_removed(fake, run_reap, sleeps):
    fake.add_stack("spot-run", TTL_12H, destroy_failures=-1)
    report = run_reap()
    outcome = _by_stack(report)["spot-run"]
    assert (outcome.status, outcome.attempts, sleeps, report.exit_code) == ("failed", 3, [30, 60], 1)
    assert fake.calls_of("stack", "rm") == []
    assert "spot-run" in fake.load()["stacks"] and "pool" in fake.cloud()


def test_one_failing_destroy_does_not_stop_the_others(fake, run_reap):
    fake.add_stack("a-stuck", TTL_12H, destroy_failures=-1)
    fake.add_stack("b-expired", TTL_12H)
    report = run_reap()
    assert {o.stack: o.status for o in report.outcomes} == {"a-stuck": "failed", "b-expired": "destroyed"}
    assert [o.stack for o in report.left] == ["a-stuck"]


def test_failed_removal_after_a_good_destroy_is_retried_then_reported(fake, run_reap, sleeps):
    fake.add_stack("spot-run", TTL_12H, rm_failures=5)
    outcome = _by_stack(run_reap())["spot-run"]
    assert (outcome.status, len(fake.calls_of("stack", "rm")), sleeps) == ("failed", 3, [30, 60])
    assert outcome.detail.endswith("destroyed but still listed in the backend")


# --- dry run -------------------------------------------------------------------------------

def _mixed_project(fake: FakePulumi) -> None:
    fake.add_stack("expired", TTL_12H)
    fake.add_stack("fresh", TTL_12H, updated=NOW - timedelta(hours=1))
    fake.add_stack("prod", {})
    fake.add_stack("unsafe", TTL_12H, resources=[{"type": BUCKET, "name": "raw"}])


def test_dry_run_changes_nothing(fake, run_reap):
    _mixed_project(fake)
    before = fake.load()
    report = run_reap(dry_run=True)
    assert _by_stack(report)["expired"].status == "would-destroy"
    assert fake.calls_of("destroy") == [] and fake.calls_of("stack", "rm") == []
    assert fake.load()["stacks"] == before["stacks"] and fake.load()["cloud"] == before["cloud"]


def test_dry_run_decrypts_no_secret(fake, run_reap):
    _mixed_project(fake)
    fake.state["stacks"]["expired"]["secrets"] = {"dbPassword": "hunter2"}
    fake.save()
    report = run_reap(dry_run=True)
    assert _by_stack(report)["expired"].status == "would-destroy"
    assert fake.calls_of("stack", "export") and not [c for c in fake.calls() if "--show-secrets" in c]


def test_a_real_run_decrypts_no_secret_either(fake, run_reap):
    fake.add_stack("spot-run", TTL_12H, secrets={"dbPassword": "hunter2"})
    assert _by_stack(run_reap())["spot-run"].status == "destroyed"
    assert not [c for c in fake.calls() if "--show-secrets" in c]


def test_dry_run_shows_the_same_decisions_as_a_real_run(fake, run_reap, tmp_path):
    _mixed_project(fake)
    dry = [(o.stack, o.action, o.reason) for o in run_reap(dry_run=True).outcomes]
    real = [(o.stack, o.action, o.reason) for o in run_reap().outcomes]
    assert dry == real


# --- the lock ------------------------------------------------------------------------------

def test_reaper_does_not_start_while_another_holds_the_lock(tmp_path):
    lock = tmp_path / "reap.lock"
    with reaper.reap_lock(lock):
        with pytest.raises(reaper.ReapLocked, match="another `accel reap` is running"):
            with reaper.reap_lock(lock):
                pass


def test_lock_is_free_again_after_a_run(tmp_path):
    lock = tmp_path / "reap.lock"
    with reaper.reap_lock(lock):
        pass
    with reaper.reap_lock(lock):
        assert lock.exists()


def test_second_reaper_started_during_a_destroy_exits_at_once_and_destroys_nothing(fake):
    fake.add_stack("spot-run", TTL_12H, destroy_seconds=120)  # until the test releases it
    command = [sys.executable, "-m", "accel.cli", "reap", "--now", "2026-03-02T01:00:00Z",
               "--work-dir", str(fake.project)]

    def start():
        return subprocess.Popen(command, cwd=ROOT, env=fake.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    first = start()
    destroying = Path(str(fake.state_path) + ".destroying")
    deadline = time.monotonic() + 60
    while not destroying.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert destroying.exists(), "the first reaper never reached its destroy"
    second = start()
    second_code = second.wait(timeout=60)
    first_still_destroying = first.poll() is None
    Path(str(fake.state_path) + ".release").touch()
    assert (first.wait(timeout=60), second_code) == (0, 1)
    assert first_still_destroying and "another `accel reap` is running" in second.stderr.read()
    assert len(fake.destroys_of("spot-run")) == 1


# --- the command line ----------------------------------------------------------------------

@pytest.fixture
def cli(fake, monkeypatch):
    _register_commands()
    monkeypatch.setenv("PATH", fake.env()["PATH"])
    monkeypatch.setenv("PULUMI_HOME", fake.env()["PULUMI_HOME"])
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


def test_reap_json_reports_every_stack_and_what_was_left(fake, cli):
    fake.add_stack("a-stuck", TTL_12H, destroy_failures=-1)
    fake.add_stack("b-expired", TTL_12H)
    result = cli("reap", "--json", "--now", "2026-03-02T01:00:00Z", "--work-dir", str(fake.project),
                 "--retry-delay", "0")
    report = json.loads(result.stdout)
    assert result.exit_code == 1
    assert [(s["stack"], s["status"], s["reason"]) for s in report["stacks"]] == [
        ("a-stuck", "failed", "expired"), ("b-expired", "destroyed", "expired")]
    assert report["left"] == ["a-stuck"]


def test_reap_dry_run_table_names_the_decisions(fake, cli):
    fake.add_stack("spot-run", TTL_12H)
    result = cli("reap", "--dry-run", "--now", "2026-03-02T01:00:00Z", "--work-dir", str(fake.project))
    assert result.exit_code == 0
    assert "spot-run" in result.stdout and "would-destroy" in result.stdout and "nothing changed" in result.stdout


def test_reap_with_a_bad_now_exits_2_naming_the_option(fake, cli):
    result = cli("reap", "--now", "tomorrow", "--work-dir", str(fake.project))
    assert result.exit_code == 2
    assert "--now: 'tomorrow' is not an ISO 8601 time" in result.stderr and "Traceback" not in result.stderr


def test_reap_outside_a_project_exits_2(fake, cli, tmp_path):
    result = cli("reap", "--work-dir", str(tmp_path))
    assert result.exit_code == 2 and "--work-dir: no Pulumi.yaml" in result.stderr


def test_reap_without_a_backend_login_says_so_without_a_traceback(fake, cli):
    fake.state["logged_out"] = True
    fake.save()
    result = cli("reap", "--work-dir", str(fake.project))
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert "could not list the project's stacks (is the CLI logged in?): error: PULUMI_ACCESS_TOKEN" in result.stderr


def test_reap_json_without_the_pulumi_cli_prints_an_error_object_and_exits_1(fake, cli, monkeypatch, tmp_path):
    empty = tmp_path / "no-pulumi-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = cli("reap", "--json", "--work-dir", str(fake.project))
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report == {"error": {"kind": "pulumi-unavailable", "message": report["error"]["message"]},
                      "exit_code": 1, "dry_run": False, "work_dir": str(fake.project.resolve())}
    assert report["error"]["message"].startswith("the pulumi CLI is not on PATH")
    assert "error: the pulumi CLI is not on PATH" in result.stderr and "Traceback" not in result.stderr


def test_reap_json_with_a_bad_option_prints_an_error_object_and_exits_2(fake, cli, tmp_path):
    bad_now = cli("reap", "--json", "--now", "tomorrow", "--work-dir", str(fake.project))
    not_a_project = cli("reap", "--json", "--work-dir", str(tmp_path / "elsewhere"))
    for result, option in ((bad_now, "--now"), (not_a_project, "--work-dir")):
        assert result.exit_code == 2
        error = json.loads(result.stdout)["error"]
        assert error["kind"] == "invalid-input" and error["message"].startswith(f"{option}: ")


def test_reap_json_while_locked_prints_an_error_object(fake, cli):
    with reaper.reap_lock(reaper.default_lock_path(fake.project)):
        result = cli("reap", "--json", "--work-dir", str(fake.project))
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"]["kind"] == "locked"


def test_reap_while_locked_exits_with_a_clear_message_and_runs_nothing(fake, cli):
    fake.add_stack("spot-run", TTL_12H)
    with reaper.reap_lock(reaper.default_lock_path(fake.project)):
        result = cli("reap", "--now", "2026-03-02T01:00:00Z", "--work-dir", str(fake.project))
    assert result.exit_code == 1 and "another `accel reap` is running" in result.stderr
    assert fake.calls() == []


def test_destroy_after_run_propagates_a_failing_exit_code_and_tears_down(fake, cli):
    fake.add_stack("train", {})
    result = cli("destroy-after-run", "-s", "train", "--work-dir", str(fake.project), "--",
                 sys.executable, "-c", "import sys; sys.exit(3)")
    assert result.exit_code == 3
    assert len(fake.destroys_of("train")) == 1 and fake.cloud() == ["ckpt"]


def test_destroy_after_run_keeps_the_stack_unless_asked_to_remove_it(fake, cli):
    fake.add_stack("train", {})
    result = cli("destroy-after-run", "-s", "train", "--work-dir", str(fake.project), "--",
                 sys.executable, "-c", "pass")
    assert result.exit_code == 0
    assert fake.calls_of("stack", "rm") == [] and "train" in fake.load()["stacks"]


def test_destroy_after_run_passes_the_commands_own_options_through(fake, cli, tmp_path):
    fake.add_stack("train", {})
    out = tmp_path / "argv.json"
    result = cli("destroy-after-run", "-s", "train", "--work-dir", str(fake.project), "--remove", "--",
                 sys.executable, "-c", f"import json, sys; json.dump(sys.argv[1:], open({str(out)!r}, 'w'))",
                 "--lr", "3e-4", "-s", "x")
    assert result.exit_code == 0
    assert json.loads(out.read_text()) == ["--lr", "3e-4", "-s", "x"]
    assert "train" not in fake.load()["stacks"]


def test_destroy_after_run_refuses_an_unknown_stack_before_running_anything(fake, cli, tmp_path):
    marker = tmp_path / "ran"
    result = cli("destroy-after-run", "-s", "typo", "--work-dir", str(fake.project), "--",
                 sys.executable, "-c", f"open({str(marker)!r}, 'w')")
    assert result.exit_code == 2 and not marker.exists()
    assert "no stack named 'typo'" in result.stderr


def test_destroy_after_run_refuses_a_stack_that_would_lose_data_before_running(fake, cli, tmp_path):
    fake.add_stack("train", {}, resources=[{"type": BUCKET, "name": "checkpoints"}])
    marker = tmp_path / "ran"
    result = cli("destroy-after-run", "-s", "train", "--work-dir", str(fake.project), "--",
                 sys.executable, "-c", f"open({str(marker)!r}, 'w')")
    assert result.exit_code == 1 and not marker.exists()
    assert fake.calls_of("destroy") == []


def test_destroy_after_run_fails_a_successful_run_whose_teardown_failed(fake, cli):
    fake.add_stack("train", {}, destroy_failures=-1)
    result = cli("destroy-after-run", "-s", "train", "--work-dir", str(fake.project), "--attempts", "2",
                 "--retry-delay", "0", "--", sys.executable, "-c", "pass")
    assert result.exit_code == 1 and "teardown of train failed" in result.stderr
    assert len(fake.destroys_of("train")) == 2


def test_destroy_after_run_with_a_command_that_does_not_exist_destroys_nothing(fake, cli):
    fake.add_stack("train", {})
    result = cli("destroy-after-run", "-s", "train", "--work-dir", str(fake.project), "--", "trian.py")
    assert result.exit_code == 127 and fake.calls_of("destroy") == [] and "pool" in fake.cloud()
    assert "trian.py: command not found" in result.stderr and "left as it is" in result.stderr


def test_destroy_after_run_with_a_file_that_is_not_executable_destroys_nothing(fake, cli, tmp_path):
    fake.add_stack("train", {})
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    result = cli("destroy-after-run", "-s", "train", "--work-dir", str(fake.project), "--", str(script))
    assert result.exit_code == 126 and fake.calls_of("destroy") == []
    assert "not executable" in result.stderr


def test_destroy_after_run_with_a_command_that_cannot_start_destroys_nothing(fake, cli, tmp_path):
    fake.add_stack("train", {})
    script = tmp_path / "train.sh"
    script.write_text("#!/no/such/interpreter\n")
    script.chmod(0o755)
    result = cli("destroy-after-run", "-s", "train", "--work-dir", str(fake.project), "--", str(script))
    assert result.exit_code in (126, 127) and fake.calls_of("destroy") == []
    assert "could not start" in result.stderr


def test_destroy_after_run_checks_the_command_before_asking_the_backend_anything(fake, cli):
    fake.add_stack("train", {})
    cli("destroy-after-run", "-s", "train", "--work-dir", str(fake.project), "--", "trian.py")
    assert fake.calls() == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_destroy_after_run_tears_down_when_the_run_is_interrupted(fake, tmp_path, signum):
    fake.add_stack("train", {})
    started = tmp_path / "started"
    training = f"import pathlib, time; pathlib.Path({str(started)!r}).touch(); time.sleep(60)"
    run = subprocess.Popen(
        [sys.executable, "-m", "accel.cli", "destroy-after-run", "-s", "train", "--work-dir", str(fake.project),
         "--", sys.executable, "-c", training],
        cwd=ROOT, env=fake.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), run.stderr.read() if run.poll() is not None else "command never started"
    run.send_signal(signum)
    code = run.wait(timeout=60)
    assert code == 128 + signum
    assert len(fake.destroys_of("train")) == 1 and fake.cloud() == ["ckpt"]
