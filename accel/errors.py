"""User-facing errors: a message that names the field, the value and what is allowed.

Commands raise UsageError (exit 2), NothingFeasible (exit 3) or GuardrailFailure (exit 4);
`fail()` prints the message to stderr without a traceback and exits with the code.
"""

from __future__ import annotations

import difflib
import re
import sys
from typing import Any, NoReturn

from pydantic import BaseModel, ValidationError

EXIT_INVALID = 2
EXIT_INFEASIBLE = 3
EXIT_GUARDRAIL = 4


class AccelError(Exception):
    exit_code = 1


class UsageError(AccelError):
    """Bad input: a file, a key, a value. Exit 2."""

    exit_code = EXIT_INVALID


class NothingFeasible(AccelError):
    exit_code = EXIT_INFEASIBLE


class GuardrailFailure(AccelError):
    exit_code = EXIT_GUARDRAIL


def fail(error: AccelError) -> NoReturn:
    print(f"error: {error}", file=sys.stderr)
    raise SystemExit(error.exit_code)


def _allowed_keys(model: type[BaseModel] | None, path: tuple[Any, ...]) -> list[str]:
    """The field names valid at `path` inside `model`, for 'did you mean' hints."""
    current: Any = model
    for part in path:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = current.model_fields.get(str(part))
        if field is None:
            return []
        annotation = field.annotation
        current = next(
            (a for a in getattr(annotation, "__args__", (annotation,))
             if isinstance(a, type) and issubclass(a, BaseModel)),
            annotation,
        )
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def describe_validation_error(error: ValidationError, source: str, model: type[BaseModel] | None = None,
                              prefix: tuple[Any, ...] = (), path_prefix: str = "") -> str:
    """One line per problem: `source: field.path: what is wrong (value ...)`."""
    lines = []
    for problem in error.errors():
        location = tuple(p for p in problem["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        path = path_prefix + (".".join(str(p) for p in prefix + location) or "(top level)")
        if problem["type"] == "extra_forbidden":
            key = str(location[-1])
            allowed = _allowed_keys(model, location[:-1])
            hint = difflib.get_close_matches(key, allowed, n=1)
            message = f"unknown key {key!r}"
            if hint:
                message += f"; did you mean {hint[0]!r}?"
            elif allowed:
                message += f"; allowed keys: {', '.join(allowed)}"
        else:
            message = problem["msg"].removeprefix("Value error, ")
            if problem["type"] not in ("missing",) and "input" in problem and not isinstance(problem["input"], dict):
                message += f" (got {problem['input']!r})"
            if problem["type"] == "literal_error" and isinstance(problem.get("input"), str):
                choices = re.findall(r"'([^']*)'", str(problem.get("ctx", {}).get("expected", "")))
                hint = difflib.get_close_matches(problem["input"], choices, n=1, cutoff=0.5)
                if hint:
                    message += f"; did you mean {hint[0]!r}?"
        lines.append(f"{source}: {path}: {message}")
    return "\n".join(lines)
