"""A stack's configuration as the Pulumi CLI would hand it to the program, read without the CLI.

The CLI merges the `config:` defaults of Pulumi.yaml with the stack file
(`<stackConfigDir>/Pulumi.<stack>.yaml`), namespaces every key, and gives the program a map of
strings: objects and arrays JSON-encoded, booleans as `true`/`false`. Under the mock engine
nobody does that, so `load_stack_config` does, for `pulumi.runtime.set_all_config`. Secrets
(`secure:` values, encrypted with a key we do not have) become a placeholder.

The program itself validates the `accel:` keys it receives in accel/stack/settings.py.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from accel.base.errors import UsageError
from accel.base.safe_files import is_directory
from accel.base.yaml_files import read_yaml_file

PROJECT_FILE = "Pulumi.yaml"
SECRET_PLACEHOLDER = "[secret]"
# Namespaces a stack file may use besides the project's own: Pulumi itself and the providers the program builds
# (accel/stack/provider_config.py reads or refuses each of their keys). No other provider is built (pyproject.toml
# depends on no pulumi-random, pulumi-tls or pulumi-command), so a `random:*` / `tls:*` / `command:*` key would reach
# nothing: it is an unknown namespace like any other.
KNOWN_NAMESPACES = frozenset({"pulumi", "gcp", "aws", "kubernetes"})
# Top-level keys of a stack file (the CLI's project-stack schema).
STACK_FILE_KEYS = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")
# Keys of a typed declaration under Pulumi.yaml `config:`.
DECLARATION_KEYS = ("type", "description", "default", "value", "secret", "items")
DECLARED_TYPES = ("string", "integer", "boolean", "array")
# What the Pulumi CLI accepts as a stack name (the last part of org/project/stack).
STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")
STACK_NAME_RULE = "a stack name is 1 to 100 letters, digits, '-', '_' or '.'"


def display_path(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):  # outside the cwd; a symlink loop (RuntimeError in 3.11)
        return str(path)


def _read_yaml(path: Path) -> Any:
    return read_yaml_file(path, "stack file" if path.name != PROJECT_FILE else "project file",
                          shown=display_path(path))


@dataclass(frozen=True)
class ProjectFile:
    path: Path
    name: str
    main_dir: Path = field(metadata={"doc": "Directory holding __main__.py (Pulumi.yaml `main:`)"})
    stack_config_dir: Path
    declarations: dict[str, Any]

    @property
    def main_file(self) -> Path:
        return self.main_dir / "__main__.py"


def find_project_dir(start: Path) -> Path:
    """The nearest directory at or above `start` holding Pulumi.yaml, as the CLI looks for it."""
    start = Path(start).resolve()
    if start.exists() and not start.is_dir():  # `-C README.md` would otherwise plan the project around the file
        raise UsageError(f"{display_path(start)}: not a directory; --cwd names the project directory (the one "
                         "holding Pulumi.yaml)")
    for directory in (start, *start.parents):
        if (directory / PROJECT_FILE).is_file():
            return directory
    raise UsageError(f"{display_path(start)}: no {PROJECT_FILE} here or in any parent directory; "
                     "run from the project or pass --cwd")


def load_project(project_dir: Path) -> ProjectFile:
    path = Path(project_dir) / PROJECT_FILE
    shown = display_path(path)
    data = _read_yaml(path)
    if not isinstance(data, Mapping):
        raise UsageError(f"{shown}: expected a mapping with at least 'name' and 'runtime'")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        problem = "missing" if name in (None, "") else f"expected the project's name as text, got {name!r}"
        raise UsageError(f"{shown}: name: {problem}; the project name namespaces every config key")
    declarations = data.get("config") or {}
    if not isinstance(declarations, Mapping):
        raise UsageError(f"{shown}: config: expected a mapping of keys to defaults or declarations")
    main = data.get("main")
    return ProjectFile(
        path=path,
        name=name,
        main_dir=(Path(project_dir) / main) if isinstance(main, str) else Path(project_dir),
        stack_config_dir=Path(project_dir) / str(data.get("stackConfigDir") or "."),
        declarations=dict(declarations),
    )


def stack_file_path(project: ProjectFile, stack: str) -> Path:
    return project.stack_config_dir / f"Pulumi.{stack}.yaml"


def check_stack_name(stack: str, option: str = "-s/--stack") -> str:
    """`stack` if the CLI would take it as a stack name; a UsageError naming `option` saying why not otherwise.

    The name becomes part of a file path, so a separator or `..` must never reach it.
    """
    if STACK_NAME.fullmatch(stack) and ".." not in stack and stack != ".":
        return stack
    message = f"{option}: {stack!r} is not a stack name: {STACK_NAME_RULE}"
    if ("/" in stack or "\\" in stack) and option != "-s/--stack":
        message += "; it holds a path separator"
    elif "/" in stack or "\\" in stack:
        message += "; it holds a path separator (use --config FILE for a stack file elsewhere"
        parts = stack.split("/")
        if len(parts) in (2, 3) and all(STACK_NAME.fullmatch(part) and ".." not in part for part in parts):
            message += f"; for a qualified name like org/project/stack give only the stack: -s {parts[-1]}"
        message += ")"
    elif ".." in stack or stack == ".":
        message += "; it may not be '.' or hold '..'"
    raise UsageError(message)


def available_stacks(project: ProjectFile) -> list[str]:
    """The stacks that have a file in the project's stack config directory, sorted."""
    directory = project.stack_config_dir
    if not directory.is_dir():
        return []
    return sorted(stack_name_from_path(path) for path in directory.glob("Pulumi.*.yaml") if path.is_file())


def _missing_stack(project: ProjectFile, stack: str, stack_file: Path) -> UsageError:
    known = available_stacks(project)
    message = f"{display_path(stack_file)}: file not found: no stack {stack!r} in this project"
    hint = difflib.get_close_matches(stack, known, n=1, cutoff=0.6)
    if hint:
        message += f"; did you mean {hint[0]!r}?"
    if known:
        message += f"\navailable stacks: {', '.join(known)}"
    else:
        message += f"\nno stack files (Pulumi.<stack>.yaml) in {display_path(project.stack_config_dir)}"
    return UsageError(message)


def stack_name_from_path(path: Path) -> str:
    """`stacks/Pulumi.llama-70b-tpu.yaml` -> `llama-70b-tpu`; any other file name -> its stem."""
    name = Path(path).name
    if name.startswith("Pulumi.") and name.endswith((".yaml", ".yml")):
        return name[len("Pulumi."):].rsplit(".", 1)[0]
    return Path(path).stem


def encode_value(value: Any) -> str:
    """What the CLI hands the program for one config value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), default=str)


def _is_secure(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == {"secure"}


def _replace_secrets(value: Any) -> tuple[Any, bool]:
    """(value with every `secure:` leaf replaced by the placeholder, whether any was found)."""
    if _is_secure(value):
        return SECRET_PLACEHOLDER, True
    if isinstance(value, Mapping):
        found = False
        result = {}
        for key, item in value.items():
            result[key], item_found = _replace_secrets(item)
            found = found or item_found
        return result, found
    if isinstance(value, list):
        pairs = [_replace_secrets(item) for item in value]
        return [p[0] for p in pairs], any(p[1] for p in pairs)
    return value, False


def _split_key(key: Any, source: str, project: str, *, bare_allowed: bool) -> str:
    """The fully qualified key; rejects namespaces that belong to nobody here."""
    if not isinstance(key, str) or not key:
        raise UsageError(f"{source}: config: key {key!r} is not a string")
    if ":" not in key:
        if bare_allowed:
            return f"{project}:{key}"
        raise UsageError(f"{source}: {key}: stack file keys are namespaced; write '{project}:{key}'")
    namespace, name = key.split(":", 1)
    if not name:
        raise UsageError(f"{source}: {key}: key has a namespace but no name")
    if namespace != project and namespace not in KNOWN_NAMESPACES:
        allowed = sorted({project, *KNOWN_NAMESPACES})
        hint = difflib.get_close_matches(namespace, allowed, n=1)
        reason = f"unknown namespace {namespace!r}"
        reason += (f"; did you mean '{hint[0]}:{name}'?" if hint else
                   f" (no provider of the stack reads it); use one of: {', '.join(allowed)}")
        raise UsageError(f"{source}: {key}: {reason}")
    return key


_TYPE_CHECKS = {
    "string": lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
}


@dataclass(frozen=True)
class Declaration:
    key: str
    type: str | None
    default: Any
    has_default: bool
    secret: bool


def _declarations(project: ProjectFile) -> dict[str, Declaration]:
    source = display_path(project.path)
    result: dict[str, Declaration] = {}
    for raw_key, spec in project.declarations.items():
        key = _split_key(raw_key, source, project.name, bare_allowed=True)
        if isinstance(spec, Mapping) and not _is_secure(spec):
            unknown = sorted(set(spec) - set(DECLARATION_KEYS))
            if unknown:
                raise UsageError(f"{source}: config.{raw_key}: unknown key {unknown[0]!r}; "
                                 f"a declaration takes {', '.join(DECLARATION_KEYS)}")
            declared_type = spec.get("type")
            if declared_type is not None and declared_type not in DECLARED_TYPES:
                raise UsageError(f"{source}: config.{raw_key}.type: {declared_type!r} is not one of "
                                 f"{', '.join(DECLARED_TYPES)}")
            has_default = "default" in spec or "value" in spec
            default = spec.get("value", spec.get("default"))
            if has_default and declared_type and default is not None and not _TYPE_CHECKS[declared_type](default):
                raise UsageError(f"{source}: config.{raw_key}.default: {default!r} is not of type {declared_type}")
            result[key] = Declaration(key, declared_type, default, has_default, bool(spec.get("secret")))
        else:
            result[key] = Declaration(key, None, spec, True, False)
    return result


@dataclass(frozen=True)
class StackConfig:
    """The merged, namespaced configuration of one stack."""

    project: str
    stack: str
    stack_file: Path
    values: dict[str, str]
    secret_keys: tuple[str, ...] = ()
    decoded: dict[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return display_path(self.stack_file)


def load_stack_config(project_dir: Path, stack: str | None = None, config_path: Path | None = None) -> StackConfig:
    """Merge Pulumi.yaml defaults with the stack file, as `pulumi preview -s STACK` would.

    `config_path` names the stack file directly (the stack name is read from it unless
    `stack` is given too); otherwise the file is `<stackConfigDir>/Pulumi.<stack>.yaml`.
    """
    project = load_project(project_dir)
    if config_path is not None:
        stack_file = Path(config_path)
        if is_directory(stack_file):
            example = display_path(stack_file_path(project, "<stack>"))
            raise UsageError(f"{display_path(stack_file)}: is a directory; --config takes a stack file "
                             f"such as {example} (or use -s STACK)")
        stack = stack or stack_name_from_path(stack_file)
    elif stack:
        stack_file = stack_file_path(project, check_stack_name(stack))
        if not stack_file.exists():
            raise _missing_stack(project, stack, stack_file)
    else:
        raise UsageError("no stack given: pass -s STACK or --config FILE")
    source = display_path(stack_file)

    data = _read_yaml(stack_file)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise UsageError(f"{source}: expected a mapping with a 'config:' section")
    for key in data:
        if key not in STACK_FILE_KEYS:
            hint = difflib.get_close_matches(str(key), STACK_FILE_KEYS, n=1)
            suffix = f"; did you mean {hint[0]!r}?" if hint else f"; allowed: {', '.join(STACK_FILE_KEYS)}"
            raise UsageError(f"{source}: {key}: unknown top-level key{suffix}")
    stack_values = data.get("config") or {}
    if not isinstance(stack_values, Mapping):
        raise UsageError(f"{source}: config: expected a mapping of '{project.name}:key: value'")

    declarations = _declarations(project)
    merged: dict[str, Any] = {}
    secret_keys: set[str] = set()
    for key, declaration in declarations.items():
        if declaration.has_default and declaration.default is not None:
            merged[key] = declaration.default
        if declaration.secret:
            secret_keys.add(key)
    for raw_key, value in stack_values.items():
        key = _split_key(raw_key, source, project.name, bare_allowed=False)
        declaration = declarations.get(key)
        if declaration and declaration.type and value is not None and not _is_secure(value) \
                and not _TYPE_CHECKS[declaration.type](value):
            raise UsageError(f"{source}: {key}: {value!r} is not of type {declaration.type} "
                             f"(declared in {display_path(project.path)})")
        if value is None:
            continue
        merged[key] = value

    for key, declaration in declarations.items():
        if key not in merged and declaration.type and not declaration.has_default:
            raise UsageError(f"{source}: {key}: required by {display_path(project.path)} (no default) but not set")

    values: dict[str, str] = {}
    decoded: dict[str, Any] = {}
    for key, value in merged.items():
        plain, had_secret = _replace_secrets(value)
        if had_secret:
            secret_keys.add(key)
        decoded[key] = plain
        values[key] = encode_value(plain)
    return StackConfig(project=project.name, stack=stack, stack_file=stack_file, values=values,
                       secret_keys=tuple(sorted(secret_keys)), decoded=decoded)
