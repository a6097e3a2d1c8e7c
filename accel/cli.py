"""The `accel` command line. Each command lives in its own module under accel/commands/."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="accel",
    help="Choose, plan, review and reap training clusters on TPUs and GPUs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Order is the order of `accel --help`.
COMMAND_MODULES = (
    "accel.commands.choose",
    "accel.commands.plan",
    "accel.commands.review",
    "accel.commands.reap",
)


def _register_commands() -> None:
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:  # command not written yet
                continue
            raise
        module.register(app)


def main() -> None:
    _register_commands()
    app()


if __name__ == "__main__":
    main()
