"""The strict base model, human quantities as pydantic types, and validation errors in words.

`describe_validation_error` turns a pydantic ValidationError into one line per problem that
names the file, the field path, what is wrong and, for an unknown key, what was meant.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from accel.base.units import parse_quantity


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default.

    `defer_build`: pydantic builds a model's validator when the model is first used, not when its
    class is defined; a run of `accel choose` defines some forty models and validates a third of
    them (a catalog read from the derived-data cache validates none of its models again).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


M = TypeVar("M", bound=BaseModel)


def revalidated(model: M) -> M:
    """`model` validated in full, however it was built: its dump (Python values, nothing lost to JSON) read
    back, so every field's type, bound and validator runs (a model assembled with `model_construct`, as
    `accel choose` assembles its plan from values it computed, skipped them). A bad value raises pydantic's
    ValidationError. Components check what they are given this way at their boundary."""
    return type(model).model_validate(model.model_dump())


_PLAIN: dict[type, tuple[str, ...] | None] = {}
_ALL_SET: dict[type, set[str]] = {}   # every field name of a model: the fields set of its assembled instances


def _plain_fields(cls: type[BaseModel]) -> tuple[str, ...] | None:
    """The model's field names when `model_construct` does nothing for it but store them (no alias, no
    validation alias, no post-init, not a root model, extra not 'allow'); else None."""
    if cls not in _PLAIN:
        fields = cls.__pydantic_fields__
        plain = (not cls.__pydantic_post_init__ and not cls.__pydantic_root_model__
                 and cls.model_config.get("extra") != "allow"
                 and all(f.alias is None and f.validation_alias is None for f in fields.values()))
        _PLAIN[cls] = tuple(fields) if plain else None
        _ALL_SET[cls] = set(fields)
    return _PLAIN[cls]


def assembled(cls: type[M], **values: Any) -> M:
    """`cls.model_construct(**values)` for a search that assembles tens of thousands of options from values it
    computed: when `values` names every field of a plain model (no aliases or post-init), the instance is stored
    the way model_construct stores it (the fields in declaration order, all of them set, no extra or private
    values) without its per-field walk; anything else goes through model_construct itself.
    tests/test_plans_built_without_validation.py checks the two agree."""
    names = _plain_fields(cls)
    if names is None or len(values) != len(names):
        return cls.model_construct(**values)
    try:
        ordered = {name: values[name] for name in names}
    except KeyError:
        return cls.model_construct(**values)
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", ordered)
    object.__setattr__(model, "__pydantic_fields_set__", set(names))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


def assembled_in_order(cls: type[M], values: dict[str, Any]) -> M:
    """`assembled(cls, **values)` for `values` written in the model's field order (a dict literal naming every
    field of a plain model in declaration order): that dict is stored as the instance's own, without the call's
    keyword dict or the reordering copy (a search at 100x the catalog assembles ~50,000 options). Values in any
    other order, or not every field, go through assembled(), so the instance is the same either way
    (tests/test_plans_built_without_validation.py)."""
    names = _plain_fields(cls)
    if names is None or tuple(values) != names:
        return assembled(cls, **values)
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", values)
    # Every field is set, so the instances of a frozen model share one set of every field name: pydantic copies a
    # model's set before it changes it (model_copy) and only ever adds a field name to it (already in). One set
    # instead of one each: an object fewer per option for the cyclic collector to walk after a search.
    object.__setattr__(model, "__pydantic_fields_set__",
                       _ALL_SET[cls] if cls.model_config.get("frozen") else set(names))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


Quantity = Annotated[float, BeforeValidator(parse_quantity)]
PositiveQuantity = Annotated[Quantity, Field(gt=0)]


def _strip_optional(annotation: Any) -> Any:
    """`X | None` -> X; a union of several types keeps its first model (the one a hint can name)."""
    if get_origin(annotation) in (Union, UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        models = [a for a in members if isinstance(a, type) and issubclass(a, BaseModel)]
        return members[0] if len(members) == 1 else (models[0] if models else annotation)
    return annotation


def _step(annotation: Any, part: Any) -> Any:
    """The type one step (a field name, a list index, a mapping key) inside `annotation`, or None."""
    annotation = _strip_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(str(part))
        return field.annotation if field is not None else None
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (list, tuple, set, frozenset, Sequence) and isinstance(part, int) and args:
        return args[0]
    if origin in (dict, Mapping) and len(args) == 2:
        return args[1]
    return None


def _allowed_keys(model: Any, path: tuple[Any, ...]) -> list[str]:
    """The field names valid at `path` inside `model` (a model, or a list or mapping of them), for hints."""
    current = model
    for part in path:
        current = _step(current, part)
    current = _strip_optional(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _location(problem: Any) -> tuple[Any, ...]:
    """The problem's path, without pydantic's validator tags (function-after[...]) but never dropping the
    unknown key of an extra_forbidden error: that is the user's own key, whatever it is called."""
    raw = problem["loc"]
    last = len(raw) - 1 if problem["type"] == "extra_forbidden" else None
    return tuple(p for i, p in enumerate(raw) if i == last or not (isinstance(p, str) and p.startswith("function-")))


def _key_hint(model: Any, location: tuple[Any, ...]) -> str | None:
    """The allowed key an unknown key (the last part of `location`) most likely meant, or None."""
    import difflib  # only a message needs it (a run with valid input never loads it)

    hint = difflib.get_close_matches(str(location[-1]), _allowed_keys(model, location[:-1]), n=1)
    return hint[0] if hint else None


def describe_validation_error(error: ValidationError, source: str, model: Any = None,
                              prefix: tuple[Any, ...] = (), path_prefix: str = "") -> str:
    """One line per problem: `source: field.path: what is wrong (value ...)`.

    `model` is what was validated (a model class, or e.g. `list[Model]`): it supplies the keys an unknown
    key is compared with. A required key reported missing because the user misspelt it is said once, as
    the unknown key and its hint, not also as 'Field required'.
    """
    import difflib

    problems = [(problem, _location(problem)) for problem in error.errors()]
    misspelt = {location[:-1] + (hint,) for problem, location in problems
                if problem["type"] == "extra_forbidden" and (hint := _key_hint(model, location)) is not None}
    lines = []
    for problem, location in problems:
        if problem["type"] == "missing" and location in misspelt:
            continue
        path = path_prefix + (".".join(str(p) for p in prefix + location) or "(top level)")
        if problem["type"] == "extra_forbidden":
            key = str(location[-1])
            hint = _key_hint(model, location)
            allowed = _allowed_keys(model, location[:-1])
            message = f"unknown key {key!r}"
            if hint:
                message += f"; did you mean {hint!r}?"
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
