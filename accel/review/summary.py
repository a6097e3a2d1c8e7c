"""Inputs → Review: a pure function over the parsed preview and plans, no I/O, no Markdown."""

from __future__ import annotations

from accel.review import attention, comparison, component_graph, guardrails
from accel.review.changes import (
    ACTION_OF_OP,
    ResourceChange,
    action_rank,
    changes_between_plans,
    changes_from_plan,
    changes_from_preview,
    is_known_action,
)
from accel.review.event_log import PackRun
from accel.review.model import Headline, ResourceLine, Review, TypeGroup
from accel.review.plan_json import PlanReport
from accel.review.preview_cost import preview_cost
from accel.review.preview_json import PreviewDigest, split_urn


def _counts(changes: list[ResourceChange]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for change in changes:
        if change.action != "same":
            counts[change.action] = counts.get(change.action, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (action_rank(kv[0]), kv[0])))


def _stack_and_project(preview: PreviewDigest | PlanReport, head: PlanReport | None) -> tuple[str | None, str | None]:
    if isinstance(preview, PreviewDigest) and preview.steps:
        stack, project, _, _ = split_urn(preview.steps[0].urn)
        return stack, project
    if isinstance(preview, PlanReport):
        return preview.stack, None
    return (head.stack if head is not None else None), None


def _parent_name(urn: str | None) -> str | None:
    if not urn:
        return None
    try:
        return split_urn(urn)[3]
    except ValueError:
        return None


def _note(change: ResourceChange) -> str:
    parts = []
    if change.replace_reasons:
        parts.append("replaced for " + ", ".join(change.replace_reasons))
    elif change.action == "update" and change.diff_reasons:
        parts.append("changes " + ", ".join(change.diff_reasons))
    if change.protect:
        parts.append("protect")
    if change.retain_on_delete:
        parts.append("retainOnDelete")
    if not is_known_action(change.action):
        parts.append("unrecognised op")
    return "; ".join(parts)


def groups(changes: list[ResourceChange]) -> tuple[TypeGroup, ...]:
    by_type: dict[str, list[ResourceChange]] = {}
    for change in changes:
        by_type.setdefault(change.type, []).append(change)
    result = []
    for type_token in sorted(by_type):
        members = sorted(by_type[type_token], key=lambda c: (action_rank(c.action), c.name))
        result.append(TypeGroup(type_token, tuple(
            ResourceLine(c.name, c.action, tuple(c.ops), _parent_name(c.parent), _note(c)) for c in members)))
    return tuple(result)


def _changes(preview: PreviewDigest | PlanReport, base: PlanReport | None) -> tuple[list[ResourceChange], str]:
    if isinstance(preview, PreviewDigest):
        return changes_from_preview(preview), "preview"
    if base is not None:
        return changes_between_plans(base, preview), "plan-diff"
    return changes_from_plan(preview), "plan"


def _with_unchanged(changes: list[ResourceChange], head: PlanReport | None) -> list[ResourceChange]:
    """The changes plus the plan's untouched resources: the whole cluster's shape for the diagram.

    A preview lists only what changes, so without the plan a changed node pool's component would
    float with no parent; the plan knows every component and parent.
    """
    if head is None:
        return changes
    seen = {c.urn for c in changes}
    unchanged = [c for c in changes_from_plan(head) if c.urn not in seen]
    for change in unchanged:
        change.action, change.ops = "same", ["same"]
    return changes + unchanged


SOURCE_NOTES = {
    "plan": "Changes come from `accel plan --json` alone (no `pulumi preview`): every resource is shown as a "
            "create.",
    "plan-diff": "Changes come from comparing two offline plans, not from `pulumi preview`: an update listed "
                 "here may still turn out to be a replacement.",
}


def build_review(preview: PreviewDigest | PlanReport, head: PlanReport | None = None,
                 base: PlanReport | None = None, pack_run: PackRun | None = None) -> Review:
    """The whole review. `preview` is the preview digest, or a plan standing in for one; `pack_run` the
    guardrail pack's own results from the preview's event log, when given."""
    if head is None and isinstance(preview, PlanReport):
        head = preview
    changes, source = _changes(preview, base)
    stack, project = _stack_and_project(preview, head)
    counts = _counts(changes)
    unchanged = sum(1 for c in changes if c.action == "same")
    maybe_corrupt = False
    policy_findings, diagnostics = [], []
    if isinstance(preview, PreviewDigest):
        unchanged = preview.change_summary.get("same", unchanged)
        maybe_corrupt = preview.maybe_corrupt
        policy_findings, diagnostics = guardrails.split_diagnostics(list(preview.diagnostics))
    notes = [SOURCE_NOTES[source]] if source in SOURCE_NOTES else []
    unknown_ops = sorted({op for c in changes for op in c.ops if op not in ACTION_OF_OP})
    if unknown_ops:
        notes.append("Ops this version of accel does not know, shown as they are: "
                     + ", ".join(f"`{op}`" for op in unknown_ops) + ".")
    return Review(
        headline=Headline(stack, project, source, counts, unchanged, maybe_corrupt),
        attention=tuple(attention.attention_items(changes)),
        hardware=comparison.hardware(head, base, changes),
        cost=(preview_cost(changes, head, base) if isinstance(preview, PreviewDigest) else comparison.cost(head, base)),
        guardrails=guardrails.guardrails(head, base, policy_findings, pack_run),
        components=component_graph.component_graph(_with_unchanged(changes, head)),
        groups=groups(changes),
        diagnostics=tuple(diagnostics),
        notes=tuple(notes),
    )

