"""Reading a user's YAML (or JSON) file: one way, with errors that name the file and the spot.

Workload files, stack files, catalog overlays and policy configs all come through here, so a
missing file, a directory, an unreadable file, a syntax error or a duplicate key reads the same
everywhere.

PyYAML's libyaml parser (`CSafeLoader`) is used when PyYAML was built with it (several times
faster on the large catalog and stack files), else the pure-Python `SafeLoader`; both build the
same safe types. YAML 1.1 lets a later duplicate key silently replace the earlier one; a user who
writes `ttl` twice meant one of them, so a duplicate is refused naming the key and both lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from accel.base.errors import UsageError

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MERGE_TAG = "tag:yaml.org,2002:merge"


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping names the same key twice; `problem_mark` is the second occurrence."""


class StrictSafeLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """The safe loader, refusing duplicate keys in a mapping (merge keys `<<` may still override)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue  # the base constructor reports unhashable keys itself
                line = key_node.start_mark.line + 1
                if key in first_line:
                    raise DuplicateKeyError(
                        None, None,
                        f"duplicate key {key!r} (first on line {first_line[key]}, again on line {line}); "
                        "YAML would silently keep only the last one, so remove one",
                        key_node.start_mark)
                first_line[key] = line
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str) -> Any:
    """Parse YAML text with the strict safe loader; raises yaml.YAMLError (DuplicateKeyError included)."""
    return yaml.load(text, Loader=StrictSafeLoader)  # noqa: S506 (a SafeLoader subclass)


def describe_yaml_error(problem: yaml.YAMLError) -> str:
    """'at line 3, column 1: <what>' from a PyYAML error, as a person reads it."""
    mark = getattr(problem, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    detail = getattr(problem, "problem", None) or str(problem).splitlines()[0]
    return f"{where}: {detail}"


def read_yaml_file(path: Path, what: str, *, error: type[UsageError] = UsageError, shown: str | None = None) -> Any:
    """Parse `path`; raise `error` (exit 2) naming `shown` (default: the path) on any failure.

    `what` names the file's role in messages, e.g. "workload file" or "stack file".
    """
    shown = shown or str(path)
    if path.is_dir():
        raise error(f"{shown}: is a directory; expected a {what}")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{shown}: no such {what}") from None
    except (PermissionError, UnicodeDecodeError) as problem:
        raise error(f"{shown}: cannot read the {what} ({problem.__class__.__name__})") from None
    try:
        return parse_yaml(text)
    except DuplicateKeyError as problem:
        raise error(f"{shown}: {problem.problem}") from None
    except yaml.YAMLError as problem:
        raise error(f"{shown}: not valid YAML{describe_yaml_error(problem)}") from None
    except RecursionError:
        raise error(f"{shown}: not valid YAML: nested too deeply") from None
    except ValueError as problem:  # a scalar that resolves to a type but not a value, e.g. 2026-02-30
        raise error(f"{shown}: not valid YAML: {problem}") from None
