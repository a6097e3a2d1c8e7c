"""One error root: every exception class accel defines derives from AccelError, so the stack program
(`__main__.py`) and the commands catch one class and print a message instead of a traceback."""

import ast
from pathlib import Path

import pytest

from accel.base.errors import AccelError, UsageError

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [p for d in ("accel", "policies", "components") for p in (ROOT / d).rglob("*.py") if ".venv" not in p.parts]
BUILTIN_ERRORS = {"Exception", "ValueError", "TypeError", "KeyError", "RuntimeError", "LookupError", "OSError"}
# Raised inside PyYAML's loader and turned into a UsageError by accel.base.yaml_files.read_yaml_file.
PARSER_ERRORS = {"DuplicateKeyError", "YamlBoundsError"}


def base_names(node: ast.ClassDef) -> list[str]:
    return [b.id if isinstance(b, ast.Name) else b.attr for b in node.bases if isinstance(b, (ast.Name, ast.Attribute))]


def exception_classes() -> dict[str, list[str]]:
    """Every class accel defines that is an exception (its bases reach a built-in one), by name -> bases."""
    classes = {node.name: base_names(node) for path in SOURCES for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, ast.ClassDef)}
    classes.update({"AccelError": ["Exception"]})

    def is_exception(name: str, seen: frozenset = frozenset()) -> bool:
        if name in BUILTIN_ERRORS or name.endswith("YAMLError") or name.endswith("ConstructorError"):
            return True
        return name not in seen and any(is_exception(b, seen | {name}) for b in classes.get(name, []))

    return {name: bases for name, bases in classes.items() if is_exception(name)}


def derives_from_accel_error(name: str, classes: dict[str, list[str]]) -> bool:
    return name == "AccelError" or any(derives_from_accel_error(b, classes) for b in classes.get(name, []))


def test_every_exception_accel_defines_derives_from_accel_error():
    classes = exception_classes()
    assert {"ShapeError", "HardwareFactsError", "PlanMigrationError", "PolicyConfigError", "UnitError"} <= set(classes)
    strays = sorted(name for name in classes if name not in PARSER_ERRORS and not derives_from_accel_error(name, classes))
    assert not strays, f"exceptions outside AccelError: {strays}"


def test_the_check_sees_a_stray_exception():
    classes = {**exception_classes(), "StrayError": ["ValueError"]}
    assert not derives_from_accel_error("StrayError", classes)


@pytest.mark.parametrize("module, name", [
    ("accel.policies.hardware.shapes", "ShapeError"),
    ("accel.policies.plan_migration", "PlanMigrationError"),
    ("accel.policies.guardrails.offline", "PolicyConfigError"),
    ("accel.base.units", "UnitError"),
])
def test_input_errors_are_usage_errors_and_still_value_errors(module, name):
    """Exit 2 as every input error; still ValueErrors, which pydantic turns into a ValidationError
    when one is raised inside a validator, and which callers outside accel may catch."""
    import importlib

    error = getattr(importlib.import_module(module), name)
    assert issubclass(error, UsageError) and issubclass(error, ValueError)


def test_a_broken_hardware_table_is_an_accel_error():
    from accel.policies.hardware import HardwareFactsError

    assert issubclass(HardwareFactsError, AccelError) and issubclass(HardwareFactsError, ValueError)


def test_the_lifecycle_error_is_the_unit_error():
    from accel.base.units import UnitError
    from accel.policies.lifecycle import LifecycleError

    assert LifecycleError is UnitError
