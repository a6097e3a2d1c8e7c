"""Reading a user's YAML (or JSON) file: one way, with errors that name the file and the spot.

Workload files, stack files, catalog overlays and policy configs all come through here, so a
missing file, a directory, an unreadable file, a syntax error or a duplicate key reads the same
everywhere.

PyYAML's libyaml parser (`CSafeLoader`) is used when PyYAML was built with it (several times
faster on the large catalog and stack files), else the pure-Python `SafeLoader`; both build the
same safe types. YAML 1.1 lets a later duplicate key silently replace the earlier one; a user who
writes `ttl` twice meant one of them, so a duplicate is refused naming the key and both lines.

Bounds, checked on the parser's event stream before anything is built (so no recursion and no
expansion happens first): a file larger than MAX_BYTES, nesting deeper than MAX_DEPTH (the JSON
bound, accel/base/json_limits.py), and a document whose aliases expand to more than MAX_NODES
nodes. PyYAML builds an alias as a shared reference, so a "billion laughs" document (nine anchors
each aliasing the previous one nine times) loads in microseconds, then every walk over it (pydantic
validation, JSON output, a deep copy) visits 9**9 nodes; counting each alias as the size of the
node it names refuses it up front. Real files are far below every bound: the bundled catalog's
largest file is 14 kB, ~1,200 nodes, 6 levels deep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from accel.base.errors import UsageError
from accel.base.json_limits import MAX_DEPTH

MAX_BYTES = 16 * 1024 * 1024  # a stack file or catalog overlay is kilobytes; 1,000x headroom
MAX_NODES = 1_000_000         # scalars and collections after alias expansion

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


class YamlBoundsError(yaml.YAMLError):
    """The document is larger, deeper or expands to more nodes than accel reads."""


_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def _where(event: yaml.Event) -> str:
    mark = event.start_mark
    return f"line {mark.line + 1}" if mark is not None else "the document"


def check_yaml_bounds(text: str, *, max_bytes: int | None = None, max_depth: int = MAX_DEPTH,
                      max_nodes: int = MAX_NODES) -> None:
    """YamlBoundsError when the text is too large, nested too deep, or its aliases expand too far.

    Walks the parser's events (no document is built): each open collection is a frame
    [anchor, node count at its start, tallest child]; an anchor remembers its subtree's node count
    and height, and an alias counts as that subtree, where it stands."""
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    size = len(text.encode("utf-8")) if len(text) * 4 > max_bytes else len(text)
    if size > max_bytes:
        raise YamlBoundsError(f"{size:,} bytes; accel reads YAML files of at most {max_bytes:,} bytes")
    frames: list[list[Any]] = []
    anchors: dict[str, tuple[int, int]] = {}
    nodes = 0
    for event in yaml.parse(text, Loader=_BaseLoader):
        height = None
        if isinstance(event, _OPEN):
            nodes += 1
            frames.append([event.anchor, nodes, 0])
            if len(frames) > max_depth:
                raise YamlBoundsError(f"nested more than {max_depth} levels deep at {_where(event)}; accel reads "
                                      f"YAML nested at most {max_depth} levels")
        elif isinstance(event, _CLOSE):
            anchor, start, tallest = frames.pop()
            height = tallest + 1
            if anchor:
                anchors[anchor] = (nodes - start + 1, height)
        elif isinstance(event, yaml.ScalarEvent):
            nodes += 1
            if event.anchor:
                anchors[event.anchor] = (1, 0)
        elif isinstance(event, yaml.AliasEvent):
            count, height = anchors.get(event.anchor, (1, 0))  # an unknown alias: the loader reports it
            nodes += count
            if len(frames) + height > max_depth:
                raise YamlBoundsError(f"alias *{event.anchor} at {_where(event)} nests the document more than "
                                      f"{max_depth} levels deep; accel reads YAML nested at most {max_depth} levels")
        if height is not None and frames:
            frames[-1][2] = max(frames[-1][2], height)
        if nodes > max_nodes:
            raise YamlBoundsError(f"its aliases expand to more than {max_nodes:,} nodes by {_where(event)} (an alias "
                                  f"bomb?); accel reads YAML documents of at most {max_nodes:,} nodes, aliases "
                                  "counted as what they repeat")


def parse_yaml(text: str, *, all_documents: bool = False) -> Any:
    """Parse YAML text with the strict safe loader, within accel's bounds; raises yaml.YAMLError
    (DuplicateKeyError and YamlBoundsError included). `all_documents`: a list of every document of a
    multi-document stream (Kubernetes manifests), empty ones left out."""
    check_yaml_bounds(text)
    if all_documents:
        return [d for d in yaml.load_all(text, Loader=StrictSafeLoader) if d is not None]  # noqa: S506
    return yaml.load(text, Loader=StrictSafeLoader)  # noqa: S506 (a SafeLoader subclass)


def describe_yaml_error(problem: yaml.YAMLError) -> str:
    """'at line 3, column 1: <what>' from a PyYAML error, as a person reads it."""
    mark = getattr(problem, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    detail = getattr(problem, "problem", None) or str(problem).splitlines()[0]
    return f"{where}: {detail}"


def read_yaml_file(path: Path, what: str, *, error: type[UsageError] = UsageError, shown: str | None = None,
                   all_documents: bool = False) -> Any:
    """Parse `path`; raise `error` (exit 2) naming `shown` (default: the path) on any failure.

    `what` names the file's role in messages, e.g. "workload file" or "stack file"; `all_documents`
    reads a multi-document stream as a list (parse_yaml).
    """
    from accel.base.safe_files import read_text

    shown = shown or str(path)
    text = read_text(path, what, max_bytes=MAX_BYTES, error=error, shown=shown)
    try:
        return parse_yaml(text, all_documents=all_documents)
    except DuplicateKeyError as problem:
        raise error(f"{shown}: {problem.problem}") from None
    except YamlBoundsError as problem:
        raise error(f"{shown}: {problem}") from None
    except yaml.YAMLError as problem:
        raise error(f"{shown}: not valid YAML{describe_yaml_error(problem)}") from None
    except ValueError as problem:  # a scalar that resolves to a type but not a value, e.g. 2026-02-30
        from accel.base.json_limits import describe_number_error  # Python's own limit on an integer's digits

        raise error(f"{shown}: not valid YAML: {describe_number_error(problem) or problem}") from None
