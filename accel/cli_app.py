"""The typer application behind `accel`: help (`-h`, `--help`), shell completion, usage errors.

accel/cli.py is the entry point; it loads this module (and typer) for every run except a plain
`accel choose` (accel/commands/choose_options.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from accel.cli import COMMAND_MODULES, package_version


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


def _register_commands(module_names: Iterable[str] = COMMAND_MODULES) -> None:
    """Add these command modules' commands to `app`; safe to call more than once (tests do)."""
    for module_name in module_names:
        module = importlib.import_module(module_name)
        already = len(app.registered_commands)
        registered = {info.name for info in app.registered_commands}
        module.register(app)
        added = app.registered_commands[already:]
        # A second call registers the same commands again; keep the first registration only.
        app.registered_commands[already:] = [info for info in added if info.name not in registered]
    for info in app.registered_commands:
        if info.cls in (None, TyperCommand):  # typer fills in its own class when a module names none
            info.cls = AccelCommand


