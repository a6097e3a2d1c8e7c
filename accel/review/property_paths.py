"""Property paths as Pulumi's detailedDiff writes them: `nodeConfig.labels["a.b/c"]`, `disks[0].size`."""

from __future__ import annotations

import json
import re
from typing import Any

from accel.review.preview_json import UNKNOWN_VALUE

# A quoted key as runs of plain characters between escapes: one repetition per character kept ~230 bytes of re's
# backtracking record per character of a key (accel/base/json_limits.py says the same of its JSON strings).
_TOKEN = re.compile(r'\.?([A-Za-z_$][\w$-]*)|\[(\d+)\]|\["([^"\\]*(?:\\.[^"\\]*)*)"\]')
MISSING = object()


def parse_path(path: str) -> list[str | int]:
    """Split a property path into keys and indexes; an unparseable rest stays one key."""
    parts: list[str | int] = []
    position = 0
    while position < len(path):
        match = _TOKEN.match(path, position)
        if not match or match.end() == position:
            parts.append(path[position:].lstrip("."))
            break
        name, index, quoted = match.groups()
        if name is not None:
            parts.append(name)
        elif index is not None:
            parts.append(int(index))
        else:
            parts.append(json.loads(f'"{quoted}"'))
        position = match.end()
    return parts


def get_path(value: Any, path: str) -> Any:
    """The value at `path`, or MISSING."""
    current = value
    for part in parse_path(path):
        if isinstance(part, int) and isinstance(current, list) and 0 <= part < len(current):
            current = current[part]
        elif isinstance(part, str) and isinstance(current, dict) and part in current:
            current = current[part]
        else:
            return MISSING
    return current


def leaf_changes(old: Any, new: Any, prefix: str = "", limit: int = 8) -> list[tuple[str, Any, Any]]:
    """(path, old, new) for each leaf that differs, depth first, at most `limit`."""
    changes: list[tuple[str, Any, Any]] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if len(changes) >= limit or a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                child = f"{path}.{key}" if path else str(key)
                walk(a.get(key, MISSING), b.get(key, MISSING), child)
            return
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{path}[{i}]")
            return
        changes.append((path, a, b))

    walk(old, new, prefix)
    return changes


def is_unknown(value: Any) -> bool:
    return value == UNKNOWN_VALUE


def show_value(value: Any, width: int = 60) -> str:
    """A short one-line rendering of a property value for a diff line."""
    if value is MISSING:
        return "(unset)"
    if is_unknown(value):
        return "(known after apply)"
    if value == "[secret]":
        return "[secret]"
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # the mock engine's protobuf round trip turns 32 into 32.0
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
