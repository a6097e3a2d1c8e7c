"""Read a review's input files into typed models, or say exactly what is wrong with them.

Every failure is a UsageError (exit 2) that names the file and the JSON path, so a CI log
shows which of the three inputs broke and where, without a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from accel.base.errors import UsageError
from accel.base.json_limits import MAX_BYTES, check_json_bounds, describe_number_error, unique_keys
from accel.base.safe_files import read_text
from accel.base.model import describe_validation_error
from accel.review.plan_json import PlanReport
from accel.review.preview_json import PreviewDigest

PREVIEW_KEYS = ("steps", "changeSummary")
PLAN_KEYS = ("resources",)


def read_json(path: Path) -> Any:
    text = read_text(path, "JSON file", max_bytes=MAX_BYTES)
    if not text.strip():
        raise UsageError(f"{path}: empty file, expected a JSON object")
    check_json_bounds(text, str(path))
    try:
        return json.loads(text, object_pairs_hook=unique_keys)
    except RecursionError:
        raise UsageError(f"{path}: JSON nested too deep to read") from None
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        if error.pos >= len(text.rstrip()) or _left_open(text):
            lines = text.count("\n") + 1
            raise UsageError(f"{path}: the JSON stops before the document is complete (truncated? "
                             f"{len(text):,} characters, {lines:,} lines; first problem at {where}: "
                             f"{error.msg})") from None
        if error.msg == "Extra data" and _is_event_stream(text):
            raise UsageError(f"{path}: one JSON engine event per line, not the preview document; run "
                             f"`pulumi preview --json` without PULUMI_ENABLE_STREAMING_JSON_PREVIEW") from None
        raise UsageError(f"{path}: not valid JSON at {where}: {error.msg}") from None
    except ValueError as error:  # Python's integer-string limit: a 5,000-digit literal
        raise UsageError(f"{path}: {describe_number_error(error) or error}") from None


def _is_event_stream(text: str) -> bool:
    try:
        return all("sequence" in json.loads(line) for line in text.splitlines() if line.strip())
    except (json.JSONDecodeError, TypeError):
        return False


def _left_open(text: str) -> bool:
    """True when a string, object or array is still open at the end: the file was cut short."""
    open_brackets: list[str] = []
    in_string, escaped = False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            open_brackets.append("]" if ch == "[" else "}")
        elif ch in "]}":
            if not open_brackets or open_brackets.pop() != ch:
                return False  # mismatched: malformed, not cut short
    return in_string or bool(open_brackets)


def _validate(model: type[BaseModel], data: Any, path: Path) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise UsageError(describe_validation_error(error, str(path), model)) from None


def load_input(path: Path) -> PreviewDigest | PlanReport:
    """PREVIEW.json: `pulumi preview --json` output, or `accel plan --json` output (told apart by shape)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a JSON object, got {type(data).__name__}")
    if any(key in data for key in PLAN_KEYS) and not any(key in data for key in PREVIEW_KEYS):
        return _validate(PlanReport, data, path)
    if any(key in data for key in PREVIEW_KEYS):
        return _validate(PreviewDigest, data, path)
    raise UsageError(
        f"{path}: neither `pulumi preview --json` output (no 'steps' or 'changeSummary') "
        f"nor `accel plan --json` output (no 'resources'); top-level keys: {', '.join(sorted(data)) or 'none'}"
    )


def load_plan(path: Path) -> PlanReport:
    data = read_json(path)
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected the JSON object of `accel plan --json`, got {type(data).__name__}")
    if "steps" in data and "resources" not in data:
        raise UsageError(f"{path}: this is `pulumi preview --json` output; --plan and --base-plan take "
                         f"`accel plan --json` output")
    return _validate(PlanReport, data, path)
