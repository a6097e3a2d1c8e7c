"""Assemble the comment and keep it under GitHub's limit by summarising, never by cutting.

GitHub rejects comment bodies over 65,536 characters. The renderer tries the most detailed
layout first and steps down (resource list, then the replacements section) until the whole
comment fits the budget, measured in UTF-8 bytes so it holds however GitHub counts.
"""

from __future__ import annotations

from accel.review import markdown, markdown_lists
from accel.review.model import Review

GITHUB_COMMENT_LIMIT = 65_536
DEFAULT_BUDGET = 60_000
# A floor against slips like `--max-chars 600` for 60,000. What the tersest layout needs depends on the
# review (a few kB usually, about 11 kB with every list at its cap), so `accel review` checks the
# rendered size against the budget and exits 2 when even the tersest layout is over it.
MIN_BUDGET = 2_000
# (resource list level, changed rows listed at level 1, replacements level, tight caps), most detailed
# first. The last is the bound: every list in it is capped at a few dozen rows of capped width.
LAYOUTS = ((0, 0, 0, False), (1, 400, 0, False), (1, 200, 0, False), (1, 100, 0, False), (2, 0, 0, False),
           (2, 0, 1, False), (3, 0, 1, False), (3, 0, 2, False), (3, 0, 3, True))


def size(comment: str) -> int:
    return len(comment.encode("utf-8"))


def _compose(review: Review, resources_level: int, changed_rows: int, attention_level: int, tight: bool) -> str:
    sections = [
        markdown.headline(review),
        markdown_lists.attention(review, attention_level),
        markdown.hardware(review, tight),
        markdown.cost(review),
        markdown.guardrails(review, tight),
        markdown.diagnostics(review, tight),
        markdown.components(review),
        markdown_lists.resources(review, resources_level, changed_rows),
        markdown.notes(review),
    ]
    return "\n\n".join(s for s in sections if s) + "\n"


def render(review: Review, budget: int = DEFAULT_BUDGET) -> str:
    """The comment's Markdown: the most detailed layout within `budget` bytes."""
    comment = ""
    for layout in LAYOUTS:
        comment = _compose(review, *layout)
        if size(comment) <= budget:
            return comment
    return comment  # the tersest layout, over budget: the caller decides (accel review exits 2)
