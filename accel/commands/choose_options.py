"""The options of `accel choose`, declared once, and the quick parser a plain run uses.

`accel choose WORKLOAD.yaml [options]` is the command people run most and wait on. Its typer command
(accel/commands/choose.py) is what `--help`, `-h`, shell completion and every usage error go through;
typer and its per-option pydantic adapters cost a run ~10-15% of its CPU (docs/choose.md, "Start-up").
A plain run, one whose arguments are only the plain forms below, is parsed here from the same
declarations and runs the same code; anything else falls back to typer, so errors, help and completion
are typer's own. The plain forms, each read as click reads it: one WORKLOAD argument; `--json`;
`--option VALUE` or `--option=VALUE` for the others, each at most once, with a value that is neither
empty nor starts with `-`; and `--`, after which every argument is an argument. (argparse did this before: it loaded ~4 ms of
imports, regular expressions and translation lookups to read the same seven options.)
tests/test_choose_options.py checks that the typer command is built from these declarations exactly
and that both parse the same arguments to the same values.
"""

# No `from __future__ import annotations`: typing.NamedTuple would compile each field's annotation string when
# ChooseOption is defined, ~0.8 ms of every `accel choose`.

import os
from pathlib import Path
from typing import Any, NamedTuple, Sequence


class ChooseOption(NamedTuple):
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
_BY_FLAG = {flag: option for option in OPTIONS for flag in option.flags}


def plain_run(args: Sequence[str]) -> dict[str, Any] | None:
    """The command's keyword arguments for `accel choose ARGS`, or None when typer must handle the run
    (help, completion, and anything that is not one of the plain forms: typer reports it in its words)."""
    if os.environ.get(COMPLETION_VARIABLE) or _TYPER_ONLY.intersection(args):
        return None
    values: dict[str, Any] = {option.dest: option.default for option in OPTIONS if option.flags}
    given: set[str] = set()
    positional: list[str] = []
    tokens = iter(args)
    for token in tokens:
        if token == "--":
            positional.extend(tokens)
            break
        if not token.startswith("-") or token == "-":
            positional.append(token)
            continue
        flag, equals, value = token.partition("=")
        option = _BY_FLAG.get(flag)
        if option is None or option.dest in given:
            return None  # an unknown option, a short-option cluster or one given twice
        given.add(option.dest)
        if option.kind is bool:
            if equals:
                return None  # `--json=yes`: click refuses a value for a flag
            values[option.dest] = True
            continue
        if not equals:
            value = next(tokens, "")
        if not value or value.startswith("-"):
            return None  # missing, empty, or a value click might read as an option
        values[option.dest] = Path(value) if option.kind is Path else value
    if len(positional) != 1:
        return None  # a missing or an extra argument
    (argument,) = [option for option in OPTIONS if not option.flags]
    return {argument.dest: positional[0], **values}
