"""`accel review`: one pull-request comment with the changes, the hardware, the cost and the guardrails.

inputs (loading, preview_json, plan_json) → stack_match → changes → summary.build_review (a pure
Review) → render.render (Markdown within GitHub's comment limit).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from accel.base.errors import UsageError
from accel.review.event_log import read_event_log
from accel.review.loading import load_input, load_plan
from accel.review.model import Review
from accel.review.render import DEFAULT_BUDGET, render
from accel.review.stack_match import mismatch
from accel.review.summary import build_review

__all__ = ["Review", "build_review", "load_review", "render", "review_files"]

MISMATCH_FLAG = "--allow-stack-mismatch"


def load_review(preview: Path, plan: Path | None = None, base_plan: Path | None = None, *,
                allow_stack_mismatch: bool = False, event_log: Path | None = None) -> Review:
    """Read the inputs and build the review. Raises UsageError on bad input, and on inputs of
    different stacks unless `allow_stack_mismatch`; then the review carries the mismatch as a warning.
    `event_log` is `pulumi preview --event-log` output: the guardrail section shows the pack's own run."""
    digest = load_input(preview)
    head = load_plan(plan) if plan is not None else None
    base = load_plan(base_plan) if base_plan is not None else None
    pack_run = read_event_log(event_log) if event_log is not None else None
    problem = mismatch(preview, digest, plan, head, base_plan, base)
    if problem and not allow_stack_mismatch:
        raise UsageError(f"{problem}; a review compares one stack (pass {MISMATCH_FLAG} to render them "
                         "together anyway)")
    review = build_review(digest, head, base, pack_run)
    if problem:
        warning = (f"{problem[0].upper()}{problem[1:]}. The changes, the hardware and cost, and the before "
                   "column may each describe a different stack.")
        review = dataclasses.replace(review, warnings=(*review.warnings, warning))
    return review


def review_files(preview: Path, plan: Path | None = None, base_plan: Path | None = None,
                 budget: int = DEFAULT_BUDGET, *, allow_stack_mismatch: bool = False,
                 event_log: Path | None = None) -> str:
    """Read the inputs, build the review, return the comment. Raises UsageError on bad input."""
    return render(load_review(preview, plan, base_plan, allow_stack_mismatch=allow_stack_mismatch,
                              event_log=event_log), budget)
