"""`accel review PREVIEW.json [--plan PLAN.json] [--base-plan BASE.json] [--event-log EVENTS] [-o comment.md]`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from accel.base.errors import AccelError, UsageError, fail
from accel.review import MISMATCH_FLAG, load_review
from accel.review.render import DEFAULT_BUDGET, GITHUB_COMMENT_LIMIT, MIN_BUDGET, render, size


def review(
    preview: Path = typer.Argument(..., metavar="PREVIEW.json",
                                   help="`pulumi preview --json` output, or `accel plan --json` output alone"),
    plan: Optional[Path] = typer.Option(None, "--plan", metavar="PLAN.json",
                                        help="`accel plan --json` of this branch: hardware, cost, guardrails"),
    base_plan: Optional[Path] = typer.Option(None, "--base-plan", metavar="BASE.json",
                                             help="`accel plan --json` of the base branch: the 'before' column"),
    event_log: Optional[Path] = typer.Option(
        None, "--event-log", metavar="EVENTS",
        help="`pulumi preview --event-log` output: the guardrail section shows the pack's own results from the "
             "preview instead of re-deriving them offline"),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="comment.md",
                                          help="Write the comment here instead of stdout"),
    max_chars: int = typer.Option(DEFAULT_BUDGET, "--max-chars", metavar="BYTES", min=MIN_BUDGET,
                                  max=GITHUB_COMMENT_LIMIT,
                                  help="Size budget of the comment (UTF-8 bytes); sections are summarised to fit, "
                                       "and exit 2 if even the tersest comment does not"),
    allow_stack_mismatch: bool = typer.Option(
        False, MISMATCH_FLAG,
        help="Render inputs of different stacks together, with a warning, instead of exit 2"),
) -> None:
    """Render the pull-request comment: changes, hardware, $/h and $/run before → after, guardrails."""
    try:
        if output is not None:
            from accel.base.safe_files import check_not_an_input

            check_not_an_input(output, {"PREVIEW.json": preview, "--plan": plan, "--base-plan": base_plan,
                                        "--event-log": event_log}, "review comment")
        result = load_review(preview, plan, base_plan, allow_stack_mismatch=allow_stack_mismatch,
                             event_log=event_log)
        for warning in result.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        comment = render(result, max_chars)
        if size(comment) > max_chars:
            raise UsageError(f"--max-chars {max_chars:,}: the comment is {size(comment):,} bytes even at its tersest "
                             f"(every list summarised); give --max-chars {size(comment):,} or more")
        if output is None:
            sys.stdout.write(comment)
            return
        from accel.base.safe_files import write_text

        write_text(output, comment, "review comment")
        print(f"wrote {output} ({size(comment):,} bytes)", file=sys.stderr)
    except AccelError as error:
        fail(error)


def register(app: typer.Typer) -> None:
    app.command("review")(review)
