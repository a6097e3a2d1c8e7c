"""One ResourceChange per resource, whatever the input: preview steps, a plan, or two plans.

A replacement can arrive as one logical `replace` step or, with `--show-replacement-steps`,
as `create-replacement` + `replace` + `delete-replaced` for the same URN: all of them merge
into one change whose action is `replace`. Ops this code does not know keep their own name
as the action, so they are shown rather than dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from accel.review.plan_json import PlanReport, PlanResource
from accel.review.preview_json import PreviewDigest, PreviewStep, split_urn

STACK_TYPE = "pulumi:pulumi:Stack"

# Raw engine op -> the action a reviewer reads.
ACTION_OF_OP = {
    "create": "create",
    "update": "update",
    "delete": "delete",
    "replace": "replace",
    "create-replacement": "replace",
    "delete-replaced": "replace",
    "same": "same",
    "read": "read",
    "read-replacement": "read",
    "refresh": "refresh",
    "import": "import",
    "import-replacement": "import",
    "discard": "discard",
    "discard-replaced": "discard",
    "remove-pending-replace": "delete",
}
# Display order of actions, most consequential first; unknown ops sort just before `same`.
ACTION_ORDER = ("replace", "delete", "create", "update", "import", "read", "refresh", "discard")


def action_rank(action: str) -> int:
    if action in ACTION_ORDER:
        return ACTION_ORDER.index(action)
    return len(ACTION_ORDER) + (1 if action == "same" else 0)


def is_known_action(action: str) -> bool:
    return action in ACTION_ORDER or action == "same"


@dataclass
class ResourceChange:
    urn: str
    type: str
    name: str
    action: str
    ops: list[str]
    custom: bool = True
    parent: str | None = None
    old_inputs: dict[str, Any] | None = None
    new_inputs: dict[str, Any] | None = None
    protect: bool = False
    retain_on_delete: bool = False
    diff_reasons: list[str] = field(default_factory=list)
    replace_reasons: list[str] = field(default_factory=list)
    detailed_diff: dict[str, str] = field(default_factory=dict)

    @property
    def inputs(self) -> dict[str, Any]:
        """The inputs that describe the resource: new ones, or the old ones of a delete."""
        return self.new_inputs if self.new_inputs is not None else (self.old_inputs or {})


def _component_parent(parent: str | None) -> str | None:
    """The parent URN, or None when the parent is the root stack (as in `accel plan --json`)."""
    if not parent or parent.count("::") < 3 or split_urn(parent)[2] == STACK_TYPE:
        return None
    return parent


def _add_step(change: ResourceChange, step: PreviewStep) -> None:
    change.ops.append(step.op)
    action = ACTION_OF_OP.get(step.op, step.op)
    if action_rank(action) < action_rank(change.action):
        change.action = action
    if step.old_state is not None and change.old_inputs is None:
        change.old_inputs = dict(step.old_state.inputs)
    if step.new_state is not None and step.op != "delete-replaced":
        change.new_inputs = dict(step.new_state.inputs)
    state = step.new_state or step.old_state
    if state is not None:
        change.custom = state.custom
        change.parent = _component_parent(state.parent) or change.parent
        change.protect = change.protect or state.protect
        change.retain_on_delete = change.retain_on_delete or state.retain_on_delete
    for reason in step.diff_reasons:
        if reason not in change.diff_reasons:
            change.diff_reasons.append(reason)
    for reason in step.replace_reasons:
        if reason not in change.replace_reasons:
            change.replace_reasons.append(reason)
    for path, diff in step.detailed_diff.items():
        change.detailed_diff[path] = diff.kind


def changes_from_preview(digest: PreviewDigest) -> list[ResourceChange]:
    """One change per URN in step order; the root stack is left out."""
    by_urn: dict[str, ResourceChange] = {}
    for step in digest.steps:
        _, _, type_token, name = split_urn(step.urn)
        if type_token == STACK_TYPE:
            continue
        change = by_urn.get(step.urn)
        if change is None:
            state = step.new_state or step.old_state
            change = ResourceChange(urn=step.urn, type=(state.type if state and state.type else type_token),
                                    name=name, action="same", ops=[])
            by_urn[step.urn] = change
        _add_step(change, step)
    return list(by_urn.values())


def _infer_custom(type_token: str) -> bool:
    """Provider resources have a module with a slash (gcp:container/nodePool:NodePool) or are providers."""
    parts = type_token.split(":")
    return type_token.startswith("pulumi:providers:") or (len(parts) == 3 and "/" in parts[1])


def _resource_urn(stack: str, resource: PlanResource) -> str:
    return resource.urn or f"urn:pulumi:{stack}::accel::{resource.type}::{resource.name}"


def _planned(stack: str, resource: PlanResource, action: str) -> ResourceChange:
    custom = resource.custom if resource.custom is not None else _infer_custom(resource.type)
    inputs = dict(resource.inputs)
    return ResourceChange(
        urn=_resource_urn(stack, resource), type=resource.type, name=resource.name, action=action,
        ops=[action], custom=custom, parent=resource.parent,
        old_inputs=inputs if action == "delete" else None,
        new_inputs=None if action == "delete" else inputs,
        protect=resource.protect, retain_on_delete=resource.retain_on_delete,
    )


def changes_from_plan(report: PlanReport) -> list[ResourceChange]:
    """Everything an offline plan declares, as creates."""
    return [_planned(report.stack, resource, "create") for resource in report.resources]


def changes_between_plans(base: PlanReport, head: PlanReport) -> list[ResourceChange]:
    """Creates, updates and deletes between two offline plans, matched by type and name.

    Without a provider there is no diff engine, so an update here may still turn out to be
    a replacement under `pulumi preview`.
    """
    def key(resource: PlanResource) -> tuple[str, str]:
        return resource.type, resource.name

    old = {key(r): r for r in base.resources}
    changes: list[ResourceChange] = []
    for resource in head.resources:
        before = old.pop(key(resource), None)
        if before is None:
            changes.append(_planned(head.stack, resource, "create"))
            continue
        change = _planned(head.stack, resource, "same")
        if before.inputs != resource.inputs:
            change.action = "update"
            change.ops = ["update"]
            change.old_inputs = dict(before.inputs)
            change.diff_reasons = sorted(k for k in set(before.inputs) | set(resource.inputs)
                                         if before.inputs.get(k) != resource.inputs.get(k))
        changes.append(change)
    changes.extend(_planned(base.stack, resource, "delete") for resource in old.values())
    return changes
