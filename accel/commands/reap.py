"""`accel reap` and `accel destroy-after-run`: tear spot compute down, keep the data."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import NoReturn

import typer

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from accel.base.errors import AccelError, UsageError, fail
from accel.commands.completion import complete_stack
from accel.policies.lifecycle import DEFAULT_BUSY_LIMIT, LifecycleError, format_timestamp, parse_timestamp, parse_ttl

DEFAULT_ATTEMPTS = 3
DEFAULT_RETRY_DELAY = 30.0
MAX_RETRY_DELAY = 3600.0  # an hour before the first retry; doubled per attempt, so already days by the fifth
EXIT_NOT_FOUND = 127  # what a shell returns for a command it cannot find
EXIT_CANNOT_RUN = 126  # ... and for one it found but cannot execute

_STATUS_STYLE = {
    "destroyed": "green", "would-destroy": "yellow", "gone": "dim", "skipped": "dim",
    "failed": "bold red", "refused": "bold red", "undecided": "bold red",
}


def _project_dir(work_dir: Path) -> Path:
    if not any((work_dir / name).is_file() for name in ("Pulumi.yaml", "Pulumi.yml")):
        raise UsageError(f"--work-dir: no Pulumi.yaml in {work_dir}; point it at the project directory")
    return work_dir.resolve()


def _retry(attempts: int, retry_delay: float):
    from accel.reaper import RetryPolicy

    return RetryPolicy(attempts=attempts, base_delay=retry_delay)


def _echo_output(err: Console):
    def echo(line: str) -> None:
        err.print(f"[dim]  {escape(line)}[/dim]", highlight=False)
    return echo


def _error_kind(error: AccelError) -> str:
    from accel.reaper import PulumiUnavailable, ReapLocked

    if isinstance(error, UsageError):
        return "invalid-input"
    if isinstance(error, PulumiUnavailable):
        return "pulumi-unavailable"
    if isinstance(error, ReapLocked):
        return "locked"
    return "error"


def _fail(error: AccelError, json_output: bool, dry_run: bool, work_dir: Path) -> NoReturn:
    """Exit as `fail()` does; with --json, first print an error object on stdout, so a consumer of
    the report always gets one JSON document whatever went wrong."""
    if json_output:
        print(json.dumps({"error": {"kind": _error_kind(error), "message": str(error)}, "exit_code": error.exit_code,
                          "dry_run": dry_run, "work_dir": str(work_dir.resolve())}, indent=2))
    fail(error)


def _render(report, out: Console) -> None:
    title = "accel reap --dry-run (nothing changed)" if report.dry_run else "accel reap"
    table = Table(title=f"{title}: {format_timestamp(report.now)}", title_justify="left")
    # Names and the two one-word columns never break mid-word (a piped table is 80 columns wide): they
    # take the width they need and the detail, which is prose, wraps at spaces in what is left.
    widest = max((len(o.stack) for o in report.outcomes), default=5)
    table.add_column("stack", no_wrap=True, min_width=min(widest, 40), overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("reason", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for outcome in report.outcomes:
        style = _STATUS_STYLE.get(outcome.status, "")
        detail = outcome.detail
        if outcome.attempts > 1:
            detail += f" (after {outcome.attempts} attempts)"
        if outcome.errors:
            detail += "\n" + "\n".join(f"- {e}" for e in outcome.errors)
        table.add_row(escape(outcome.stack), f"[{style}]{outcome.status}[/{style}]" if style else outcome.status,
                      outcome.reason.value if outcome.reason else "-", escape(detail))
    if not report.outcomes:
        out.print(f"{title}: no stacks in this project")
        return
    out.print(table)
    if report.left:
        out.print(f"[bold red]left behind:[/bold red] {', '.join(o.stack for o in report.left)}")


def reap_command(
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the decisions; destroy and remove nothing."),
    now: str | None = typer.Option(None, "--now", metavar="ISO8601",
                                   help="Decide as if it were this time, e.g. 2026-11-22T18:00:00Z."),
    work_dir: Path = typer.Option(Path("."), "--work-dir", metavar="DIR",
                                  help="The Pulumi project directory (holds Pulumi.yaml)."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout."),
    attempts: int = typer.Option(DEFAULT_ATTEMPTS, "--attempts", min=1, max=100, metavar="N",
                                 help="Destroy attempts per stack."),
    retry_delay: float = typer.Option(DEFAULT_RETRY_DELAY, "--retry-delay", min=0.0, max=MAX_RETRY_DELAY,
                                      metavar="SECONDS", help="First wait before a retry; doubles each time."),
    busy_limit: str = typer.Option("6h", "--busy-limit", metavar="DURATION",
                                   help="How long past its expiry a stack may stay locked by an update before "
                                        "the run fails, e.g. 90m, 6h."),
) -> None:
    """Destroy ephemeral stacks whose TTL or expiry has passed, then remove them; data is retained.

    Exits 1 naming every stack it left behind: a destroy that failed, a stack refused to protect
    data, or one it could not decide about (unreadable tags or state, busy past --busy-limit).
    """
    from accel import reaper

    err = Console(stderr=True)
    try:
        moment = parse_timestamp(now) if now is not None else None
    except LifecycleError as error:
        _fail(UsageError(f"--now: {error}"), json_output, dry_run, work_dir)
    try:
        busy: timedelta = parse_ttl(busy_limit, "duration")
    except LifecycleError as error:
        _fail(UsageError(f"--busy-limit: {error}"), json_output, dry_run, work_dir)
    try:
        project = _project_dir(work_dir)
        with reaper.reap_lock(reaper.default_lock_path(project)):
            workspace = reaper.open_workspace(project)
            with err.status("reaping expired stacks" if not dry_run else "deciding (dry run)"), \
                    _StopAfterCurrentStack(err) as stop:
                report = reaper.reap(
                    workspace, now=moment, dry_run=dry_run, retry=_retry(attempts, retry_delay), busy_limit=busy,
                    log=lambda line: err.print(escape(line), highlight=False),
                    on_output=_echo_output(err), interrupted=stop.signal_name,
                )
    except AccelError as error:
        _fail(error, json_output, dry_run, work_dir)
    if json_output:
        print(json.dumps(report.to_json(), indent=2))
    else:
        _render(report, Console())
    # A run stopped by a signal fails even when the stack in hand finished: it did not do all it would have.
    raise typer.Exit(report.exit_code or (1 if stop.signal_name() else 0))


class _SignalHandlers:
    """While inside `with`, SIGINT/SIGTERM/SIGHUP go to `_handle`; the previous handlers come back after."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous: dict

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        raise NotImplementedError

    def __enter__(self):
        self.previous = {sig: signal.signal(sig, self._handle) for sig in self.SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


class _ChildSignals(_SignalHandlers):
    """Forward SIGINT/SIGTERM/SIGHUP to the command's process group; a second one kills it.

    Installed before the command starts, so a signal in between is held and delivered once it has.
    """

    def __init__(self, err: Console) -> None:
        self.err = err
        self.child: subprocess.Popen | None = None
        self.received: list[int] = []
        self.previous = {}

    def _forward(self, signum: int) -> None:
        forward = signum if len(self.received) == 1 else signal.SIGKILL
        self.err.print(f"accel: got {signal.Signals(signum).name}; sending {signal.Signals(forward).name} to "
                       "the command, then tearing the stack down")
        try:
            os.killpg(self.child.pid, forward)
        except ProcessLookupError:
            pass

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.received.append(signum)
        if self.child is not None:
            self._forward(signum)

    def started(self, child: subprocess.Popen) -> None:
        self.child = child
        if self.received:
            self._forward(self.received[-1])


class _ShieldTeardown(_SignalHandlers):
    """While the stack is being destroyed, a signal to accel is noted, not obeyed."""

    def __init__(self, err: Console) -> None:
        self.err = err
        self.previous = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.err.print(f"accel: got {signal.Signals(signum).name} during teardown; finishing the destroy first")


class _StopAfterCurrentStack(_SignalHandlers):
    """The reaper's signals: the first finishes the stack in hand, reports the rest as not reached and
    prints the report (GitHub Actions sends SIGINT, then SIGTERM, on a cancel or a timeout); a second
    stops at once, with the stack in hand reported as failed. Either way the report is printed."""

    def __init__(self, err: Console) -> None:
        self.err = err
        self.previous = {}
        self.received: list[str] = []

    def signal_name(self) -> str | None:
        return self.received[0] if self.received else None

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        from accel.reaper import ReapInterrupted

        name = signal.Signals(signum).name
        self.received.append(name)
        if len(self.received) == 1:
            self.err.print(f"accel: got {name}; finishing the stack in hand, then reporting (again to stop now)")
            return
        raise ReapInterrupted(name)


class CommandCannotStart(UsageError):
    """The command to run is not there or cannot be executed: nothing ran, nothing is torn down."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def check_command(command: list[str]) -> str:
    """The executable COMMAND would start, or CommandCannotStart (127 not found, 126 not executable).

    Looked up as exec would: a name with a slash is a path, anything else is searched on PATH.
    """
    name = command[0]
    if os.sep in name:
        if not os.path.exists(name):
            raise CommandCannotStart(f"{name}: command not found (no such file)", EXIT_NOT_FOUND)
        if os.path.isdir(name) or not os.access(name, os.X_OK):
            raise CommandCannotStart(f"{name}: not executable; run it through its interpreter "
                                     f"(e.g. `python {name}`) or `chmod +x` it", EXIT_CANNOT_RUN)
        return name
    found = shutil.which(name)
    if found is None:
        hint = f"; to run a script in this directory use `python {name}` or `./{name}`" if os.path.exists(name) \
            else ""
        raise CommandCannotStart(f"{name}: command not found on PATH{hint}", EXIT_NOT_FOUND)
    return found


def _run_command(command: list[str], err: Console) -> int:
    """Run the command in its own process group; its exit code (128+N when killed by signal N).

    Raises CommandCannotStart when the process could not be started at all (e.g. a script whose
    interpreter is missing): the command never ran, so the stack was never handed to it.
    """
    with _ChildSignals(err) as signals:
        try:
            child = subprocess.Popen(command, process_group=0)
        except FileNotFoundError as error:
            raise CommandCannotStart(f"{command[0]}: could not start ({error.strerror}; a script's "
                                     "#! interpreter may be missing)", EXIT_NOT_FOUND) from None
        except OSError as error:
            raise CommandCannotStart(f"{command[0]}: could not start ({error.strerror})", EXIT_CANNOT_RUN) from None
        signals.started(child)
        code = child.wait()
    return 128 - code if code < 0 else code


def destroy_after_run_command(
    stack: str = typer.Option(..., "-s", "--stack", metavar="STACK", autocompletion=complete_stack,
                              help="The stack to destroy when the command exits."),
    command: list[str] = typer.Argument(..., metavar="COMMAND", help="The training command to run."),
    work_dir: Path = typer.Option(Path("."), "--work-dir", metavar="DIR",
                                  help="The Pulumi project directory (holds Pulumi.yaml)."),
    remove: bool = typer.Option(False, "--remove", help="Also remove the stack from the backend after the destroy."),
    attempts: int = typer.Option(DEFAULT_ATTEMPTS, "--attempts", min=1, max=100, metavar="N", help="Destroy attempts."),
    retry_delay: float = typer.Option(DEFAULT_RETRY_DELAY, "--retry-delay", min=0.0, max=MAX_RETRY_DELAY,
                                      metavar="SECONDS", help="First wait before a retry; doubles each time."),
) -> None:
    """Run COMMAND, then destroy the stack's compute however it ended; retained data stays.

    Example: accel destroy-after-run -s spot-run -- python train.py --steps 1000

    Exits with the command's exit code (128+N if signal N ended it), or 1 if the command succeeded but the teardown did not.
    A command that cannot start (127 not found, 126 not executable) exits at once and destroys nothing.
    """
    from accel import reaper

    err = Console(stderr=True)
    left_alone = f"; nothing ran and stack {stack!r} was left as it is"
    try:
        # Check before the run, not after: a typo in the command or the stack, or an unsafe stack, must
        # neither cost a training run's worth of compute nor destroy a cluster that is waiting for the run.
        # The stack's name first: a name Pulumi would refuse is an input error, whatever is installed.
        from accel.stack.stack_names import check_stack_reference

        check_stack_reference(stack)
        check_command(command)
        project = _project_dir(work_dir)
        workspace = reaper.open_workspace(project)
        if stack not in {s.name for s in workspace.list_stacks()}:
            raise UsageError(f"-s/--stack: no stack named {stack!r} in this project's backend")
        blockers = reaper.check_state(workspace, stack)
        if blockers:
            raise AccelError(f"stack {stack!r} cannot be torn down safely:\n" + "\n".join(f"- {b}" for b in blockers))
    except CommandCannotStart as error:
        error.args = (f"{error}{left_alone}",)
        fail(error)
    except AccelError as error:
        fail(error)
    except Exception as error:  # a CLI failure while checking: say so, run nothing
        fail(AccelError(f"could not inspect stack {stack!r}: {reaper._brief(error)}"))

    try:
        code = _run_command(command, err)
    except CommandCannotStart as error:
        error.args = (f"{error}{left_alone}",)
        fail(error)
    err.print(f"accel: command exited with {code}; destroying stack {escape(stack)} (data is retained)")
    with _ShieldTeardown(err):
        outcome = reaper.teardown(
            workspace, stack, remove=remove, retry=_retry(attempts, retry_delay),
            log=lambda line: err.print(escape(line), highlight=False),
            on_output=_echo_output(err), reason=f"command exited with {code}",
        )
    if outcome.status in ("destroyed", "gone"):
        err.print(f"accel: stack {escape(stack)} {outcome.status}: {escape(outcome.detail)}")
        raise typer.Exit(code)
    err.print(f"[bold red]accel: teardown of {escape(stack)} {outcome.status}[/bold red]: {escape(outcome.detail)}")
    for line in outcome.errors:
        err.print(f"  - {escape(line)}")
    raise typer.Exit(code or 1)


def register(app: typer.Typer) -> None:
    app.command("reap")(reap_command)
    app.command(
        "destroy-after-run",
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    )(destroy_after_run_command)
