"""The `accel` command line. Each command lives in its own module under accel/commands/."""

from __future__ import annotations

import importlib
from importlib import metadata

import typer
from typer.core import TyperCommand, TyperGroup

# Order is the order of `accel --help`.
COMMAND_MODULES = (
    "accel.commands.choose",
    "accel.commands.plan",
    "accel.commands.job",
    "accel.commands.review",
    "accel.commands.reap",
)


def _without_flag_types(command: TyperCommand | TyperGroup, ctx: typer.Context) -> None:
    """Typer's help gives every option a type column, so flags read `--json <bool>`; a flag takes no value."""
    for param in command.get_params(ctx):
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""


class AccelCommand(TyperCommand):
    def format_help(self, ctx, formatter) -> None:
        _without_flag_types(self, ctx)
        return super().format_help(ctx, formatter)


class AccelGroup(TyperGroup):
    def format_help(self, ctx, formatter) -> None:
        _without_flag_types(self, ctx)
        return super().format_help(ctx, formatter)


app = typer.Typer(
    name="accel",
    help="Choose, plan, review and reap training clusters on TPUs and GPUs.",
    cls=AccelGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def package_version() -> str:
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
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_show_version,
                                 help="Show the version and exit."),
) -> None:
    """Choose, plan, review and reap training clusters on TPUs and GPUs."""


def _register_commands() -> None:
    """Add every command module's commands to `app`; safe to call more than once (tests do)."""
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:  # command not written yet
                continue
            raise
        already = len(app.registered_commands)
        registered = {info.callback for info in app.registered_commands}
        module.register(app)
        added = app.registered_commands[already:]
        # A second call registers the same callbacks again; keep the first registration only.
        app.registered_commands[already:] = [info for info in added if info.callback not in registered]
    for info in app.registered_commands:
        if info.cls in (None, TyperCommand):  # typer fills in its own class when a module names none
            info.cls = AccelCommand


def main() -> None:
    _register_commands()
    app()


if __name__ == "__main__":
    main()
