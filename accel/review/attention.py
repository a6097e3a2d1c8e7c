"""Replacements and deletions, ordered by what they cost a reviewer to miss.

Data first (a deleted or replaced bucket, filesystem or disk loses what it holds unless it
is retained), then compute (a replaced node pool stops the jobs on it and has to get its
TPU/GPU capacity again), then everything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accel.policies.data_classes import classify
from accel.review.changes import ResourceChange
from accel.review.model import AttentionItem, PropertyChange
from accel.review.property_paths import MISSING, get_path, leaf_changes, show_value

ATTENTION_ACTIONS = ("replace", "delete")
# Whether a type can hold data is the reaper's classification (accel.policies.data_classes):
# known storage is "data", and so is a type accel does not know (it may hold data).
COMPUTE_MODULES = frozenset({
    "container/nodePool", "container/cluster", "tpu/v2Vm", "tpu/v2QueuedResource", "tpu/node",
    "eks/nodeGroup", "eks/cluster", "ec2/instance", "autoscaling/group", "compute/instance",
    "compute/instanceGroupManager", "compute/regionInstanceGroupManager",
})
CATEGORY_ORDER = ("data", "compute", "other")
MAX_PROPERTY_LINES = 6


def _module_and_class(type_token: str) -> tuple[str, str]:
    parts = type_token.split(":")
    if len(parts) != 3:
        return "", parts[-1]
    return parts[1], parts[2]


def category(type_token: str, inputs: Mapping[str, Any] | None = None) -> str:
    module, _ = _module_and_class(type_token)
    kind, _why = classify(type_token, inputs)
    if kind == "data":
        return "data"
    if module in COMPUTE_MODULES:
        return "compute"
    return "data" if kind == "unknown" else "other"


def _data_warnings(change: ResourceChange) -> list[str]:
    warnings: list[str] = []
    kind, why = classify(change.type, change.old_inputs or change.new_inputs)
    if kind == "unknown":
        warnings.append(f"{why}: treated as data (the reaper keeps a stack holding it)")
    if change.protect:
        warnings.append("`protect` is set: `pulumi up` will refuse to delete it until the flag is removed")
    if change.retain_on_delete:
        if change.action == "replace":
            warnings.append("a new, empty one is created; the old one leaves the stack but stays in the cloud "
                            "with its data (`retainOnDelete`)")
        else:
            warnings.append("leaves the stack but stays in the cloud with its data (`retainOnDelete`)")
        return warnings
    force_destroy = (change.old_inputs or {}).get("forceDestroy")
    if force_destroy is True:
        warnings.append("🛑 its data is destroyed: `forceDestroy` is on, so it is emptied and deleted")
    else:
        warnings.append("🛑 its data is destroyed with it (no `retainOnDelete`)"
                        + ("; `forceDestroy` is off, so the delete fails while it still holds objects"
                           if force_destroy is False else ""))
    if change.action == "replace":
        warnings.append("the replacement starts empty")
    return warnings


def _compute_warnings(change: ResourceChange) -> list[str]:
    module, _ = _module_and_class(change.type)
    if module.endswith("/cluster"):
        return ["the whole Kubernetes cluster is recreated: every workload on it stops"]
    if change.action == "replace":
        return ["recreated: jobs running on it stop, and its accelerator capacity is released and requested "
                "again (it may not be available)"]
    return ["its accelerator capacity is released"]


def _property_changes(change: ResourceChange) -> list[PropertyChange]:
    old, new = change.old_inputs or {}, change.new_inputs or {}
    lines: list[PropertyChange] = []
    if change.detailed_diff:
        ordered = sorted(change.detailed_diff.items(), key=lambda item: (not item[1].endswith("-replace"), item[0]))
        for path, kind in ordered:
            lines.append(PropertyChange(path, show_value(get_path(old, path)), show_value(get_path(new, path)),
                                        kind.endswith("-replace")))
    else:
        keys = change.replace_reasons or change.diff_reasons
        for key in keys:
            for path, before, after in leaf_changes(old.get(key, MISSING), new.get(key, MISSING), key):
                lines.append(PropertyChange(path, show_value(before), show_value(after),
                                            key in change.replace_reasons))
    return lines[:MAX_PROPERTY_LINES]


def attention_item(change: ResourceChange) -> AttentionItem:
    kind = category(change.type, change.old_inputs or change.new_inputs)
    if kind == "data":
        warnings = _data_warnings(change)
    elif kind == "compute":
        warnings = _compute_warnings(change)
    else:
        warnings = ["`protect` is set: `pulumi up` will refuse until the flag is removed"] if change.protect else []
    changes = _property_changes(change) if change.action == "replace" else []
    return AttentionItem(change.action, change.type, change.name, kind, tuple(change.replace_reasons),
                         tuple(changes), tuple(warnings))


def attention_items(changes: list[ResourceChange]) -> list[AttentionItem]:
    items = [attention_item(c) for c in changes if c.action in ATTENTION_ACTIONS]
    return sorted(items, key=lambda i: (CATEGORY_ORDER.index(i.category), ATTENTION_ACTIONS.index(i.action),
                                        i.type, i.name))
