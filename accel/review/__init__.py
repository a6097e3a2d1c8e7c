"""`accel review`: one pull-request comment with the changes, the hardware, the cost and the guardrails.

inputs (loading, preview_json, plan_json) → changes → summary.build_review (a pure Review)
→ render.render (Markdown within GitHub's comment limit).
"""

from __future__ import annotations

from pathlib import Path

from accel.review.loading import load_input, load_plan
from accel.review.model import Review
from accel.review.render import DEFAULT_BUDGET, render
from accel.review.summary import build_review

__all__ = ["Review", "build_review", "render", "review_files"]


def review_files(preview: Path, plan: Path | None = None, base_plan: Path | None = None,
                 budget: int = DEFAULT_BUDGET) -> str:
    """Read the inputs, build the review, return the comment. Raises UsageError on bad input."""
    digest = load_input(preview)
    head = load_plan(plan) if plan is not None else None
    base = load_plan(base_plan) if base_plan is not None else None
    return render(build_review(digest, head, base), budget)
