"""The `accel` command line. Each command lives in its own module under accel/commands/.

A run imports only the module of the command it runs (`accel choose` never loads the review or
the reaper); `accel --help` and an unknown command import them all.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Iterable, Sequence

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

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


def _without_flag_types(command: TyperCommand | TyperGroup, ctx: typer.Context) -> None:
    """Typer's help gives every option a type column, so flags read `--json <bool>`; a flag takes no value.
    An argument named by its metavar (`WORKLOAD.yaml`) says what it is: no `<str>` beside it, and no
    braces around it in the usage line (`{WORKLOAD.yaml}` reads as a set of choices)."""
    for param in command.get_params(ctx):
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        if isinstance(param, TyperArgument) and param.metavar:
            param.display_type_rich = lambda ctx: None  # type: ignore[method-assign]
            name = param.metavar + ("..." if param.nargs != 1 else "")
            param._usage_display_name = lambda name=name, required=param.required: (  # type: ignore[method-assign]
                name if required else f"[{name}]")


class AccelCommand(TyperCommand):
    def format_help(self, ctx, formatter) -> None:
        _without_flag_types(self, ctx)
        return super().format_help(ctx, formatter)


class AccelGroup(TyperGroup):
    def format_help(self, ctx, formatter) -> None:
        _without_flag_types(self, ctx)
        return super().format_help(ctx, formatter)


SUMMARY = ("Choose TPUs or GPUs for a workload, plan its stack offline, write its job, review a change, "
           "and reap or destroy-after-run ephemeral clusters.")

app = typer.Typer(
    name="accel",
    help=SUMMARY,
    cls=AccelGroup,
    # Bare `accel` prints the help and exits 0 (_root): asking what the tool does is not an error.
    # click's no_args_is_help would exit 2.
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command's context
    add_completion=True,  # `accel --install-completion` for bash, zsh, fish and PowerShell
    pretty_exceptions_enable=False,
)


def package_version() -> str:
    from importlib import metadata  # ~0.1 s of imports that only --version needs

    try:
        return metadata.version("accel")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _show_version(value: bool) -> None:
    if value:
        print(f"accel {package_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_show_version,
                                 help="Show the version and exit."),
) -> None:
    if ctx.invoked_subcommand is None and not ctx.resilient_parsing:
        typer.echo(ctx.get_help(), nl=False)
        raise typer.Exit(0)


def modules_for(argv: Sequence[str]) -> tuple[str, ...]:
    """The command modules a run with these arguments needs: its command's, or all of them
    (help, --version, a mistyped command: typer then lists every command). The root takes no
    option but --help and --version, so a command is always the first argument."""
    if argv and argv[0] in COMMANDS:
        return (COMMANDS[argv[0]],)
    return COMMAND_MODULES


def _register_commands(module_names: Iterable[str] = COMMAND_MODULES) -> None:
    """Add these command modules' commands to `app`; safe to call more than once (tests do)."""
    for module_name in module_names:
        module = importlib.import_module(module_name)
        already = len(app.registered_commands)
        registered = {info.callback for info in app.registered_commands}
        module.register(app)
        added = app.registered_commands[already:]
        # A second call registers the same callbacks again; keep the first registration only.
        app.registered_commands[already:] = [info for info in added if info.callback not in registered]
    for info in app.registered_commands:
        if info.cls in (None, TyperCommand):  # typer fills in its own class when a module names none
            info.cls = AccelCommand


def prepare_process(argv: Sequence[str]) -> None:
    """Settings of the one-shot process for the command these arguments run (see WITHOUT_COLLECTOR
    and WITHOUT_PYDANTIC_PLUGINS); arguments without a command change nothing."""
    command = argv[0] if argv else None
    if command in WITHOUT_COLLECTOR:
        gc.disable()
    if command in WITHOUT_PYDANTIC_PLUGINS:
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def main() -> None:
    prepare_process(sys.argv[1:])
    _register_commands(modules_for(sys.argv[1:]))
    app()


if __name__ == "__main__":
    main()
