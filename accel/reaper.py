"""Tear down expired spot environments through the Pulumi Automation API, never losing data.

`reap()` lists the project's stacks, asks accel.policies.lifecycle which ones have expired, checks
their state (data must be retained on delete, nothing protected), destroys them with retries
and removes them from the backend only after the destroy succeeded. `teardown()` is the same
destroy for one named stack (used by `accel destroy-after-run`). Both shell out to the pulumi
CLI through a LocalWorkspace, so tests inject a stand-in PulumiCommand.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel

from accel.base.errors import AccelError
from accel.policies.lifecycle import (
    DEFAULT_BUSY_LIMIT,
    Decision,
    Reason,
    busy_decision,
    format_timestamp,
    reap_decision,
    teardown_blockers,
    uses_ttl,
)

Status = Literal["skipped", "would-destroy", "destroyed", "gone", "failed", "refused", "undecided"]
# Statuses that leave an expired (or possibly expired) stack and its compute behind: exit non-zero.
# `undecided`: marked ephemeral, but its expiry could not be read or it stayed busy past the limit.
LEFT_STATUSES: frozenset[str] = frozenset({"failed", "refused", "undecided"})
HISTORY_PAGE_SIZE = 20
HISTORY_MAX_PAGES = 5

Log = Callable[[str], None]


class ReapLocked(AccelError):
    """Another reaper holds the lock: this run does nothing."""


class ReapInterrupted(AccelError):
    """A second SIGINT/SIGTERM/SIGHUP: stop now, in the middle of the current stack, and report."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(f"interrupted by {signal_name}")
        self.signal_name = signal_name


class PulumiUnavailable(AccelError):
    """The pulumi CLI could not be started or cannot reach the backend."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: `attempts` tries, waiting base, base*factor, ... (capped) between them."""

    attempts: int = 3
    base_delay: float = 30.0
    factor: float = 2.0
    max_delay: float = 600.0

    def delays(self) -> Iterator[float]:
        for attempt in range(self.attempts - 1):
            yield min(self.base_delay * self.factor**attempt, self.max_delay)


class StackOutcome(BaseModel):
    stack: str
    action: Literal["destroy", "skip"]
    reason: Reason | None = None
    detail: str
    expires_at: datetime | None = None
    status: Status
    attempts: int = 0
    errors: list[str] = []

    @property
    def left(self) -> bool:
        return self.status in LEFT_STATUSES

    def to_json(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        data["reason"] = self.reason.value if self.reason else None
        data["expires_at"] = format_timestamp(self.expires_at) if self.expires_at else None
        return data


class ReapReport(BaseModel):
    now: datetime
    dry_run: bool
    work_dir: str
    outcomes: list[StackOutcome] = []

    @property
    def left(self) -> list[StackOutcome]:
        return [o for o in self.outcomes if o.left]

    @property
    def exit_code(self) -> int:
        return 1 if self.left else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "now": format_timestamp(self.now),
            "dry_run": self.dry_run,
            "work_dir": self.work_dir,
            "stacks": [o.to_json() for o in self.outcomes],
            "left": [o.stack for o in self.left],
        }


def open_workspace(work_dir: str | Path, pulumi_command: Any = None, pulumi_home: str | None = None) -> Any:
    """A LocalWorkspace on the project directory; the real `pulumi` from PATH unless injected."""
    from pulumi.automation import InvalidVersionError, LocalWorkspace, PulumiCommand

    if pulumi_command is None:
        try:
            pulumi_command = PulumiCommand()
        except FileNotFoundError:
            raise PulumiUnavailable(
                "the pulumi CLI is not on PATH; install it (https://www.pulumi.com/docs/install/) and log in "
                "to the backend that holds the stacks"
            ) from None
        except (subprocess.CalledProcessError, InvalidVersionError) as error:
            raise PulumiUnavailable(f"the pulumi CLI on PATH cannot be used: {error}") from None
    return LocalWorkspace(work_dir=str(work_dir), pulumi_home=pulumi_home, pulumi_command=pulumi_command)


def default_lock_path(work_dir: str | Path, pulumi_home: str | None = None) -> Path:
    """One lock per project per machine, beside the CLI's own state in PULUMI_HOME."""
    home = Path(pulumi_home or os.environ.get("PULUMI_HOME") or Path.home() / ".pulumi")
    return home / f"accel-reap-{_project_name(Path(work_dir))}.lock"


def _project_name(work_dir: Path) -> str:
    from accel.base.safe_files import read_text
    from accel.base.yaml_files import parse_yaml

    for candidate in ("Pulumi.yaml", "Pulumi.yml"):
        path = work_dir / candidate
        if path.exists():
            try:
                data = parse_yaml(read_text(path, "project file"))
            except Exception:  # noqa: BLE001 (the lock name only; `pulumi` reports a broken Pulumi.yaml itself)
                data = None
            name = data.get("name") if isinstance(data, dict) else None
            if isinstance(name, str) and name:
                return "".join(c if c.isalnum() or c in "-_" else "-" for c in name)
    return "project"


@contextmanager
def reap_lock(path: str | Path, blocking: bool = False) -> Iterator[IO[str]]:
    """An exclusive flock; raises ReapLocked at once if another process holds it (unless blocking)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            raise ReapLocked(
                f"another `accel reap` is running (lock {path} is held); not starting a second one"
            ) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} since {format_timestamp(datetime.now(timezone.utc))}\n")
            handle.flush()
            yield handle
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _command_error_types() -> tuple[type[Exception], type[Exception], type[Exception]]:
    from pulumi.automation import CommandError, ConcurrentUpdateError, StackNotFoundError

    return CommandError, ConcurrentUpdateError, StackNotFoundError


def _brief(error: Exception) -> str:
    """The useful lines of a CLI failure: its stderr, else the tail of its stdout."""
    text = str(error)
    stderr = text.split(" stderr: ", 1)[1] if " stderr: " in text else ""
    stdout = text.split(" stdout: ", 1)[1].split("\n stderr: ", 1)[0] if " stdout: " in text else ""
    lines = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
    lines += [line.strip() for line in stdout.splitlines() if "error" in line.lower()]
    unique = list(dict.fromkeys(lines))
    return "; ".join(unique[-4:]) or text.strip()[-400:]


def _last_deployed(stack: Any) -> datetime | None:
    """End of the stack's last `pulumi up`, so a refresh or failed destroy never renews a TTL."""
    oldest_seen = None
    for page in range(1, HISTORY_MAX_PAGES + 1):
        entries = stack.history(page_size=HISTORY_PAGE_SIZE, page=page, show_secrets=False)
        for entry in entries:
            moment = entry.end_time or entry.start_time
            if entry.kind == "update":
                return moment
            oldest_seen = moment
        if len(entries) < HISTORY_PAGE_SIZE:
            return None
    return oldest_seen  # the last update is older than everything looked at


class _Teardown:
    """Destroy one stack with retries, then (optionally) remove it; the shared core of reap and destroy-after-run."""

    def __init__(self, workspace: Any, retry: RetryPolicy, sleep: Callable[[float], None], log: Log,
                 on_output: Log | None) -> None:
        self.workspace = workspace
        self.retry = retry
        self.sleep = sleep
        self.log = log
        self.on_output = on_output

    def run(self, outcome: StackOutcome, stack: Any, remove: bool, message: str) -> StackOutcome:
        command_error, concurrent_error, not_found = _command_error_types()
        delays = self.retry.delays()
        while True:
            outcome.attempts += 1
            step = "refresh"
            try:
                # Refresh first: destroy works from the state, and state that missed a node pool the
                # cloud re-created (or kept one someone deleted) makes the destroy leave compute behind or fail.
                stack.refresh(message=message, color="never", suppress_progress=True, show_secrets=False,
                              on_output=self._echo(outcome.stack))
                step = "destroy"
                stack.destroy(continue_on_error=True, message=message, color="never", suppress_progress=True,
                              show_secrets=False, on_output=self._echo(outcome.stack))
                break
            except not_found:
                return self._gone(outcome)
            except concurrent_error:
                return outcome.model_copy(update={
                    "status": "skipped", "reason": Reason.UPDATE_IN_PROGRESS,
                    "detail": "the stack is locked by a running update; the next run will look again"})
            except command_error as error:
                outcome.errors.append(f"{step} attempt {outcome.attempts}: {_brief(error)}")
                delay = next(delays, None)
                if delay is None:
                    outcome.status = "failed"
                    self.log(f"{outcome.stack}: {step} failed {outcome.attempts} times; left in place")
                    return outcome
                self.log(f"{outcome.stack}: {step} failed (attempt {outcome.attempts}); retrying in {delay:g}s")
                self.sleep(delay)
        if not remove:
            outcome.status = "destroyed"
            return outcome
        delays = self.retry.delays()
        while True:
            try:
                # Never --force: a stack that still holds resources must stay where someone can see it.
                # Keep the stack file: it is source, committed next to the program.
                self.workspace.remove_stack(outcome.stack, preserve_config=True)
                outcome.status = "destroyed"
                return outcome
            except not_found:
                return self._gone(outcome)
            except command_error as error:
                outcome.errors.append(f"stack rm: {_brief(error)}")
                delay = next(delays, None)
                if delay is None:
                    outcome.status = "failed"
                    outcome.detail += "; destroyed but still listed in the backend"
                    return outcome
                self.sleep(delay)

    def _echo(self, stack_name: str) -> Log | None:
        on_output = self.on_output
        return None if on_output is None else (lambda line: on_output(f"{stack_name} │ {line}"))

    @staticmethod
    def _gone(outcome: StackOutcome) -> StackOutcome:
        outcome.status = "gone"
        outcome.detail += "; already removed by someone else"
        return outcome


def export_state(workspace: Any, name: str) -> dict[str, Any]:
    """The stack's `deployment` as `pulumi stack export` prints it, secrets left encrypted.

    Not `workspace.export_stack()`: that passes --show-secrets, which decrypts every secret (and
    needs the secrets provider's key) just to read flags and labels.
    """
    env = {"PULUMI_HOME": workspace.pulumi_home} if workspace.pulumi_home else {}
    result = workspace.pulumi_command.run(["stack", "export", "--stack", name], workspace.work_dir,
                                          {**env, **workspace.env_vars})
    try:
        state = json.loads(result.stdout)
    except json.JSONDecodeError as error:
        raise AccelError(f"stack {name!r}: `pulumi stack export` printed no readable state ({error})") from None
    return (state.get("deployment") if isinstance(state, dict) else None) or {}


def check_state(workspace: Any, name: str) -> list[str]:
    """Why destroying this stack now would lose data or fail (empty = safe), from its exported state."""
    return teardown_blockers(export_state(workspace, name).get("resources") or [])


def reap(
    workspace: Any,
    now: datetime | None = None,
    dry_run: bool = False,
    retry: RetryPolicy = RetryPolicy(),
    sleep: Callable[[float], None] = time.sleep,
    log: Log = lambda _: None,
    on_output: Log | None = None,
    busy_limit: timedelta = DEFAULT_BUSY_LIMIT,
    interrupted: Callable[[], str | None] = lambda: None,
) -> ReapReport:
    """Decide for every stack of the project, destroy and remove the expired ones, report it all.

    `interrupted()` names a signal once one asked the reaper to stop: the stack in hand is
    finished, every later one is reported `undecided` (not reached), and the report is returned.
    ReapInterrupted raised while a stack is in hand (a second signal) reports that stack `failed`
    (its destroy may be half done; a rerun completes it) and the rest `undecided`.

    One stack's failure never stops the others. Anything not decided (an unreadable marker or
    expiry, unreadable state, a stack busy past `busy_limit`) is reported and fails the run.
    Hold `reap_lock` around this call.
    """
    from pulumi.automation import Stack

    command_error, _, not_found = _command_error_types()
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    report = ReapReport(now=now, dry_run=dry_run, work_dir=str(workspace.work_dir))
    try:
        summaries = workspace.list_stacks()
    except command_error as error:
        raise PulumiUnavailable(f"could not list the project's stacks (is the CLI logged in?): {_brief(error)}") \
            from None
    originally_selected = next((s.name for s in summaries if s.current), None)
    selected: list[str] = []

    def select(name: str, ws: Any) -> Any:
        selected.append(name)
        return Stack.select(name, ws)

    teardown = _Teardown(workspace, retry, sleep, log, on_output)
    stopped: str | None = None
    for summary in summaries:
        stopped = stopped or interrupted()
        if stopped:
            report.outcomes.append(StackOutcome(stack=summary.name, action="skip", status="undecided",
                                                detail=f"not reached: the reaper got {stopped} and stopped"))
            continue
        try:
            outcome = _reap_one(workspace, select, summary, now, dry_run, teardown, command_error, not_found, log,
                                busy_limit)
        except ReapInterrupted as signal_stop:
            stopped = signal_stop.signal_name
            outcome = StackOutcome(stack=summary.name, action="skip", status="failed",
                                   detail=f"interrupted by {stopped} while in hand; its destroy may be half done, "
                                          "so run `accel reap` again to finish it",
                                   errors=[f"interrupted by {stopped}"])
        except Exception as error:  # one stack's surprise must not leave the others running
            outcome = StackOutcome(stack=summary.name, action="skip", detail="unexpected error", status="failed",
                                   errors=[f"{type(error).__name__}: {_brief(error)}"])
        log(f"{outcome.stack}: {outcome.status} ({outcome.detail})")
        report.outcomes.append(outcome)
    gone = {o.stack for o in report.outcomes if o.status in ("destroyed", "gone")}
    if originally_selected and originally_selected not in gone and set(selected) - {originally_selected}:
        try:
            workspace.select_stack(originally_selected)  # put the user's selection back
        except command_error:
            pass
    return report


def _reap_one(workspace: Any, select: Callable[[str, Any], Any], summary: Any, now: datetime, dry_run: bool,
              teardown: _Teardown, command_error: type[Exception], not_found: type[Exception],
              log: Log, busy_limit: timedelta) -> StackOutcome:
    name = summary.name
    try:
        tags = workspace.list_tags(name)
    except not_found:
        return StackOutcome(stack=name, action="skip", detail="removed while the reaper ran", status="gone")
    except command_error as error:
        return StackOutcome(stack=name, action="skip", detail="could not read the stack's tags", status="failed",
                            errors=[f"stack tag ls: {_brief(error)}"])
    decision = reap_decision(summary, tags, now, busy_limit=busy_limit)
    stack = None
    try:
        if decision.reason is Reason.FRESH and uses_ttl(tags):
            # Fresh by its last operation of any kind; count the TTL from the last `pulumi up`.
            stack = select(name, workspace)
            decision = reap_decision(summary, tags, now, last_deployed=_last_deployed(stack), busy_limit=busy_limit)
        if decision.action == "skip":
            return _outcome(decision, "undecided" if decision.undecided else "skipped")
        blockers = check_state(workspace, name)
        if blockers:
            return _outcome(decision, "refused", errors=blockers,
                            detail=f"{decision.detail}; not destroyed: it would lose data or fail")
        if dry_run:
            return _outcome(decision, "would-destroy")
        log(f"{name}: {decision.detail}; destroying")
        stack = stack or select(name, workspace)
    except not_found:
        return _outcome(decision, "gone", detail=f"{decision.detail}; removed while the reaper ran")
    except command_error as error:
        return _outcome(decision, "failed", errors=[_brief(error)],
                        detail=f"{decision.detail}; could not read the stack's state")
    except ReapInterrupted:
        raise
    except AccelError as error:
        return _outcome(decision, "failed", errors=[str(error)],
                        detail=f"{decision.detail}; could not read the stack's state")
    message = f"accel reap: {decision.detail}"
    outcome = teardown.run(_outcome(decision, "failed"), stack, remove=True, message=message)
    if outcome.reason is Reason.UPDATE_IN_PROGRESS:  # found locked at destroy time (self-managed backends)
        busy = busy_decision(name, decision.expires_at, now, busy_limit)
        return _outcome(busy, "undecided" if busy.undecided else "skipped",
                        detail=busy.detail if busy.undecided else outcome.detail)
    return outcome


def _outcome(decision: Decision, status: Status, errors: list[str] | None = None,
             detail: str | None = None) -> StackOutcome:
    return StackOutcome(stack=decision.stack, action=decision.action, reason=decision.reason,
                        detail=detail or decision.detail, expires_at=decision.expires_at, status=status,
                        errors=list(errors or []))


def teardown(
    workspace: Any,
    stack_name: str,
    remove: bool = False,
    retry: RetryPolicy = RetryPolicy(),
    sleep: Callable[[float], None] = time.sleep,
    log: Log = lambda _: None,
    on_output: Log | None = None,
    reason: str = "run finished",
) -> StackOutcome:
    """Destroy one named stack (compute goes, retained data stays); remove it from the backend if asked."""
    from pulumi.automation import Stack

    command_error, _, not_found = _command_error_types()
    outcome = StackOutcome(stack=stack_name, action="destroy", detail=reason, status="failed")
    try:
        blockers = check_state(workspace, stack_name)
        if blockers:
            return outcome.model_copy(update={"status": "refused", "errors": blockers,
                                              "detail": f"{reason}; not destroyed: it would lose data or fail"})
        stack = Stack.select(stack_name, workspace)
    except not_found:
        return outcome.model_copy(update={"status": "gone", "detail": f"{reason}; the stack no longer exists"})
    except command_error as error:
        return outcome.model_copy(update={"errors": [_brief(error)]})
    except AccelError as error:
        return outcome.model_copy(update={"errors": [str(error)]})
    return _Teardown(workspace, retry, sleep, log, on_output).run(
        outcome, stack, remove=remove, message=f"accel destroy-after-run: {reason}")
