"""The strict base model, human quantities as pydantic types, and validation errors in words.

`describe_validation_error` turns a pydantic ValidationError into one line per problem that
names the file, the field path, what is wrong and, for an unknown key, what was meant.
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from accel.base.units import parse_quantity


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default.

    `defer_build`: pydantic builds a model's validator when the model is first used, not when its
    class is defined; a run of `accel choose` defines some forty models and validates a third of
    them (a catalog read from the derived-data cache validates none of its models again).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


Quantity = Annotated[float, BeforeValidator(parse_quantity)]
PositiveQuantity = Annotated[Quantity, Field(gt=0)]


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
        raw = problem["loc"]
        # Drop pydantic's validator tags (function-after[...]) from the path, but never the unknown
        # key of an extra_forbidden error: that is the user's own key, whatever it is called.
        last = len(raw) - 1 if problem["type"] == "extra_forbidden" else None
        location = tuple(p for i, p in enumerate(raw)
                         if i == last or not (isinstance(p, str) and p.startswith("function-")))
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
