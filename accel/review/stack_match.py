"""Do the review's inputs describe one stack? A plan of another stack renders its hardware and cost
as if they were this one's, and a base plan of another stack shows every resource deleted and created.

`pulumi preview --json` names no stack, but every step's URN does (`urn:pulumi:<stack>::<project>::...`);
`accel plan --json` has a `stack` key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from accel.review.plan_json import PlanReport
from accel.review.preview_json import PreviewDigest, split_urn


@dataclass(frozen=True)
class StackOfInput:
    role: str                   # how the user passed it: the file name, `--plan FILE`, `--base-plan FILE`
    stacks: tuple[str, ...]     # empty when the input names no stack (a preview with no steps)
    how: str                    # where the name came from, when that is not obvious


def stacks_of(document: PreviewDigest | PlanReport) -> tuple[tuple[str, ...], str]:
    """(the stack names an input names, sorted, and where they come from)."""
    if isinstance(document, PlanReport):
        return (document.stack,), ""
    return tuple(sorted({split_urn(step.urn)[0] for step in document.steps})), "from its URNs"


def describe(item: StackOfInput) -> str:
    names = " and ".join(f"'{name}'" for name in item.stacks)
    plural = "stacks" if len(item.stacks) > 1 else "stack"
    return f"{item.role} is {plural} {names}" + (f" ({item.how})" if item.how else "")


def mismatch(preview: Path, digest: PreviewDigest | PlanReport, plan: Path | None, head: PlanReport | None,
             base_plan: Path | None, base: PlanReport | None) -> str | None:
    """One sentence naming each input's stack when they are not all the same stack, else None."""
    inputs = [StackOfInput(str(preview), *stacks_of(digest))]
    if head is not None and plan is not None:
        inputs.append(StackOfInput(f"--plan {plan}", *stacks_of(head)))
    if base is not None and base_plan is not None:
        inputs.append(StackOfInput(f"--base-plan {base_plan}", *stacks_of(base)))
    named = [item for item in inputs if item.stacks]
    if len({name for item in named for name in item.stacks}) <= 1:
        return None
    return "inputs of different stacks: " + ", ".join(describe(item) for item in named)
