"""The options of `accel choose`, declared once, and the quick parser a plain run uses.

`accel choose WORKLOAD.yaml [options]` is the command people run most and wait on. Its typer command
(accel/commands/choose.py) is what `--help`, `-h`, shell completion and every usage error go through;
typer and its per-option pydantic adapters cost a run ~10-15% of its CPU (docs/choose.md, "Start-up").
A plain run, one whose arguments parse cleanly and ask for neither help nor completion, is parsed here
with argparse from the same declarations and runs the same code; anything else (or anything argparse
and click might read differently) falls back to typer, so errors, help and completion are typer's own.
tests/test_choose_options.py checks that the typer command is built from these declarations exactly.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from accel.base.errors import UsageError


@dataclass(frozen=True)
class ChooseOption:
    dest: str               # the parameter name of the command
    flags: tuple[str, ...]  # () for the positional argument
    help: str
    metavar: str | None = None
    default: Any = None
    kind: type = str        # str, bool (a flag) or Path


OPTIONS: tuple[ChooseOption, ...] = (
    ChooseOption("workload", (), "Workload spec (see docs/choose.md)", metavar="WORKLOAD.yaml"),
    ChooseOption("as_json", ("--json",), "Print the choice as JSON on stdout", default=False, kind=bool),
    ChooseOption("objective", ("--objective",), "cost: cheapest that meets the deadline; time: fastest within budget",
                 metavar="cost|time", default="cost"),
    ChooseOption("catalog", ("--catalog",), "Catalog overlay (YAML/CSV) or directory: negotiated prices, reservations",
                 metavar="FILE", kind=Path),
    ChooseOption("plot", ("--plot",), "Write a time-vs-cost chart of the options (.png or .svg)", metavar="FILE",
                 kind=Path),
    ChooseOption("write_stack", ("--write-stack",), "Pin the workload and plan into stacks/Pulumi.NAME.yaml",
                 metavar="NAME"),
    ChooseOption("reservations", ("--reservations",),
                 "Reservations and commitments (Savings Plans, CUDs) you hold, priced as they say and preferred: a "
                 "stack file's accel:reservations or a YAML list of them", metavar="FILE", kind=Path),
)
BY_DEST = {option.dest: option for option in OPTIONS}

# Arguments after which the quick parser steps aside for typer: help, and typer's own root options.
_TYPER_ONLY = {"-h", "--help", "--install-completion", "--show-completion"}
COMPLETION_VARIABLE = "_ACCEL_COMPLETE"  # set by the shell completion scripts typer installs


class _NotPlain(UsageError):
    """argparse found something it would report: typer reports it instead, in its own words (never
    escapes plain_run; a UsageError like every input error, so the one-root rule holds)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise _NotPlain(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="accel choose", add_help=False, allow_abbrev=False)  # click takes no abbreviations
    for option in OPTIONS:
        if not option.flags:
            parser.add_argument(option.dest)
        elif option.kind is bool:
            parser.add_argument(*option.flags, dest=option.dest, action="store_true", default=option.default)
        else:
            parser.add_argument(*option.flags, dest=option.dest, default=option.default)
    return parser


def plain_run(args: Sequence[str]) -> dict[str, Any] | None:
    """The command's keyword arguments for `accel choose ARGS`, or None when typer must handle the run."""
    if os.environ.get(COMPLETION_VARIABLE) or _TYPER_ONLY.intersection(args):
        return None
    if any(a.startswith("-") and a != "-" and not a.startswith("--") for a in args):
        return None  # short-option clusters: none are declared; let typer name the unknown one
    try:
        parsed = vars(_parser().parse_args(list(args)))
    except _NotPlain:
        return None
    for option in OPTIONS:
        value = parsed[option.dest]
        if option.kind is Path and value is not None:
            parsed[option.dest] = Path(value)
    return parsed
