"""The `accel` command line. Each command lives in its own module under accel/commands/.

A run imports only the module of the command it runs (`accel choose` never loads the review or
the reaper); `accel --help` and an unknown command import them all. The typer application is in
accel/cli_app.py (`accel.cli.app` is it): a plain `accel choose` run parses its arguments without
typer (accel/commands/choose_options.py); help, completion and usage errors always go through typer.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

# Command name -> the module whose `register(app)` adds it. Order is the order of `accel --help`.
# A new command is one line here and a `register` function in its module.
COMMANDS = {
    "choose": "accel.commands.choose",
    "plan": "accel.commands.plan",
    "job": "accel.commands.job",
    "review": "accel.commands.review",
    "reap": "accel.commands.reap",
    "destroy-after-run": "accel.commands.reap",
}
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))
# Commands that run once and exit, allocating long-lived objects and almost no garbage cycles: the
# cyclic garbage collector only costs them time and frees nothing the exit would not. A choose
# spends ~6% of its CPU in full collections while importing and building its models. A plan turns
# the collector off around the stack program itself (offline_plan.cycle_collection_paused), but a
# collector switched back on afterwards owes a collection for every allocation it missed: its
# first one, while the report renders, is a full collection over the provider SDKs' whole heap
# (~0.2 s of a TPU plan's ~5 s, identical output); so the one-shot plan never switches it on.
WITHOUT_COLLECTOR = frozenset({"choose", "plan"})
# Commands that run offline and start no other process. Before pydantic builds its first validator it
# looks up third-party pydantic plugins (observability hooks for services) by scanning the entry
# points of every installed distribution: ~30 ms of these commands' start-up, for hooks that would
# only watch accel validate its own files. They skip the lookup (pydantic's documented
# PYDANTIC_DISABLE_PLUGINS), unless the user set that variable. Commands that run Pulumi (reap,
# destroy-after-run) keep it, so the stack programs they start see the user's environment unchanged.
WITHOUT_PYDANTIC_PLUGINS = frozenset({"choose", "plan"})
# Commands whose process ends as soon as their answer is written, skipping the interpreter's teardown
# (exit_without_teardown): choose writes files only inside calls that close them (the stack file, the
# chart, the derived-data cache) and starts no thread or process.
WITHOUT_TEARDOWN = frozenset({"choose"})


def modules_for(argv: Sequence[str]) -> tuple[str, ...]:
    """The command modules a run with these arguments needs: its command's, or all of them
    (help, --version, a mistyped command: typer then lists every command). The root takes no
    option but --help and --version, so a command is always the first argument."""
    if argv and argv[0] in COMMANDS:
        return (COMMANDS[argv[0]],)
    return COMMAND_MODULES


def prepare_process(argv: Sequence[str]) -> None:
    """Settings of the one-shot process for the command these arguments run (see WITHOUT_COLLECTOR
    and WITHOUT_PYDANTIC_PLUGINS); arguments without a command change nothing."""
    command = argv[0] if argv else None
    if command in WITHOUT_COLLECTOR:
        gc.disable()
    if command in WITHOUT_PYDANTIC_PLUGINS:
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def package_version() -> str:
    from importlib import metadata  # ~0.1 s of imports that only --version needs

    try:
        return metadata.version("accel")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _plain_choose(argv: Sequence[str]) -> bool:
    """Run `accel choose` without typer when its arguments parse plainly; False when typer must run it."""
    from accel.commands.choose_options import plain_run

    arguments = plain_run(argv[1:])
    if arguments is None:
        return False
    from accel.commands.choose import main as choose

    choose(**arguments)
    return True


def exit_without_teardown(code: int) -> NoReturn:
    """End a one-shot process now that its answer is written: exit handlers run and output is flushed,
    then the process exits without the interpreter's teardown. That teardown (a full garbage collection,
    which runs even with the collector off, and clearing every module) frees memory the exit frees anyway,
    and costs `accel choose` ~40 ms of its ~0.25 s of CPU (docs/choose.md, "Start-up")."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`accel choose ... | head`): nothing more to say there
            pass
    os._exit(code)


def main() -> None:
    argv = sys.argv[1:]
    prepare_process(argv)
    command = argv[0] if argv else None
    try:
        if command == "choose" and _plain_choose(argv):
            code = 0
        else:
            from accel.cli_app import _register_commands, app

            _register_commands(modules_for(argv))
            app()
            code = 0
    except SystemExit as done:
        if command not in WITHOUT_TEARDOWN:
            raise
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        if not isinstance(done.code, (int, type(None))):
            print(done.code, file=sys.stderr)
    if command in WITHOUT_TEARDOWN:
        exit_without_teardown(code)


def __getattr__(name: str) -> Any:
    """`accel.cli.app` and the helpers beside it, loaded with typer when first asked for."""
    if name in _APP_NAMES:
        from accel import cli_app

        return getattr(cli_app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_APP_NAMES = frozenset({"app", "_register_commands", "AccelCommand", "AccelGroup", "SUMMARY"})


if __name__ == "__main__":
    main()
