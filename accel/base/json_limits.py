"""Bounds on the JSON a user hands accel: size and nesting depth, checked before parsing.

The standard parser recurses once per nesting level, and so do the validators and renderers that
walk the result: a document nested a thousand levels deep would end in a RecursionError traceback
somewhere. Real documents are shallow (a `pulumi preview --json` of a Kubernetes CRD stays under
30 levels), so anything past MAX_DEPTH is refused up front with a message, as is a file larger than
any preview or plan accel is meant to read.
"""

from __future__ import annotations

import re
import sys

from accel.base.errors import UsageError

MAX_DEPTH = 128
MAX_BYTES = 256 * 1024 * 1024  # a 2,000-resource plan is ~10 MB; 25x headroom
# A JSON string, as the "unrolled loop" (runs of plain characters, then an escape and its run): Python's re keeps a
# backtracking record per repetition, so one repetition per character ('"(?:[^"\\]|\\.)*"') held ~150 bytes for
# every character of a string: 1.2 GB for a 10 MB resource name, past any runner's memory for the largest input.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def nesting_depth(text: str, stop_at: int | None = None) -> int:
    """The deepest nesting of objects and arrays in JSON text (strings skipped); no recursion."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_at is not None and deepest > stop_at:
                    return deepest
        else:
            depth -= 1
    return deepest


def check_json_bounds(text: str, shown: str, *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES) -> None:
    """UsageError (exit 2) naming the file when the JSON text is too large or nested too deep."""
    size = len(text.encode("utf-8")) if len(text) * 4 > max_bytes else len(text)
    if size > max_bytes:
        raise UsageError(f"{shown}: {size:,} bytes; accel reads JSON documents of at most {max_bytes:,} bytes")
    if nesting_depth(text, stop_at=max_depth) > max_depth:
        raise UsageError(f"{shown}: JSON nested more than {max_depth} levels deep; accel reads documents nested at "
                         f"most {max_depth} levels (a `pulumi preview --json` or `accel plan --json` document "
                         f"stays far below that)")


class DuplicateKey(UsageError, ValueError):
    """An object that names one key twice; json.loads would keep the last value silently. A UsageError (bad
    input, exit 2) under the one error root, and a ValueError as json.loads' hooks raise, so the readers'
    `except ValueError` adds the file or line to the message."""


def unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """`object_pairs_hook` for json.loads: the object, or DuplicateKey naming the key given twice. A JSON object
    with duplicate names is not interoperable (RFC 8259 section 4), and a hand-edited plan whose second
    `resources` replaced the first would be reviewed as something it does not say; YAML files get the same
    refusal (accel/base/yaml_files.py)."""
    document = dict(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise DuplicateKey(f"duplicate key {repeated!r} in one JSON object; a reader would silently keep only "
                           "the last one, so remove one")
    return document


def describe_number_error(error: ValueError) -> str | None:
    """The message for Python's integer-string limit ('Exceeds the limit (4300 digits) for integer
    string conversion'), which `json.loads` raises as a bare ValueError for a huge integer literal;
    None for any other ValueError."""
    if "integer string conversion" in str(error) or "digits" in str(error):
        return (f"a number with more than {sys.get_int_max_str_digits():,} digits; no field accel reads "
                "holds a number that long")
    return None
