"""Check captured resource inputs against the provider SDKs' own input types and against CRD schemas.

The provider SDKs describe every resource's inputs as `*Args` classes whose properties carry the
wire (camelCase) name and a type hint: nested input classes, sequences, mappings, primitives. This
walks a captured `inputs` dict along those types and reports unknown properties, wrong value
kinds and missing required properties, the mistakes the mock engine (which accepts anything)
would let through to `pulumi up`.
"""

from __future__ import annotations

import collections.abc
import importlib
import inspect
import typing
from functools import cache
from typing import Any

import pulumi
from pulumi import _types as pulumi_types

PACKAGES = {"gcp": "pulumi_gcp", "aws": "pulumi_aws", "kubernetes": "pulumi_kubernetes"}
_NONE = type(None)


@cache
def args_class(type_token: str) -> type | None:
    """`gcp:container/nodePool:NodePool` -> pulumi_gcp.container.NodePoolArgs (None: not an SDK resource)."""
    package, module_path, name = type_token.split(":")
    if package == "pulumi" and module_path == "providers":
        module = importlib.import_module(PACKAGES[name])
        return getattr(module, "ProviderArgs")
    if package not in PACKAGES:
        return None
    module_name = module_path.split("/", 1)[0].split(".", 1)[0]
    version = module_path.split("/", 1)[1] if "/" in module_path and package == "kubernetes" else None
    dotted = f"{PACKAGES[package]}.{module_name}" + (f".{version}" if version and module_name != "index" else "")
    if module_name == "index":
        dotted = PACKAGES[package]
    try:
        module = importlib.import_module(dotted)
    except ModuleNotFoundError:
        return None
    resource_class = getattr(module, name, None)
    # The resource's own module: a package may also export an input type of the same name.
    home = inspect.getmodule(resource_class) if isinstance(resource_class, type) else module
    for candidate in (f"{name}InitArgs", f"{name}Args"):  # InitArgs when an input type took the name
        found = getattr(home, candidate, None)
        if isinstance(found, type):
            return found
    return None


@cache
def properties(cls: type) -> dict[str, Any]:
    """camelCase wire name -> type hint, for an input type or resource Args class."""
    module = inspect.getmodule(cls)
    namespace: dict[str, Any] = {}
    if module is not None:
        package = importlib.import_module(module.__name__.rsplit(".", 1)[0])
        inputs = getattr(package, "_inputs", None)
        if inputs is not None:
            namespace.update(vars(inputs))
        namespace.update(vars(module))  # the class's own module names win
    # pulumi.Input[T] expands to Union[T, Awaitable[T], 'Output[T]']: resolve that forward reference too.
    namespace.setdefault("Output", pulumi.Output)
    namespace.setdefault("T", typing.TypeVar("T"))
    found = {}
    for _python, wire, prop in pulumi_types._py_properties(cls):
        try:
            hint = typing.get_type_hints(prop.fget, globalns=namespace)["return"]
        except Exception:  # noqa: BLE001 (an unresolvable hint: accept any value for it)
            hint = Any
        found[wire] = hint
    return found


@cache
def required(cls: type) -> tuple[str, ...]:
    """Wire names of the __init__ parameters without a default."""
    by_python = {python: wire for python, wire, _ in pulumi_types._py_properties(cls)}
    signature = inspect.signature(cls.__init__)
    return tuple(by_python.get(p.name, p.name) for p in signature.parameters.values()
                 if p.default is inspect.Parameter.empty and p.name not in ("self", "__self__")
                 and p.kind is p.KEYWORD_ONLY)


def _alternatives(hint: Any) -> list[Any]:
    """Flatten Input/Optional/Union/Awaitable/Output wrappers into the plain types a value may be."""
    origin = typing.get_origin(hint)
    if origin is typing.Union:
        return [alt for arg in typing.get_args(hint) for alt in _alternatives(arg)]
    if origin in (collections.abc.Awaitable,) or hint is _NONE:
        return []
    if isinstance(hint, type) and issubclass(hint, pulumi.Output):
        return []
    if origin is not None and isinstance(origin, type) and issubclass(origin, pulumi.Output):
        return []
    return [hint]


def check(value: Any, hint: Any, path: str, problems: list[str]) -> None:
    if value is None or hint is Any:
        return  # unknown during preview, or untyped
    alternatives = _alternatives(hint)
    if not alternatives or Any in alternatives:
        return
    kinds = []
    for alt in alternatives:
        origin = typing.get_origin(alt) or alt
        args = typing.get_args(alt)
        if isinstance(alt, type) and pulumi_types.is_input_type(alt):
            kinds.append("object")
            if isinstance(value, dict):
                check_object(value, alt, path, problems)
                return
        elif origin in (list, collections.abc.Sequence, typing.Sequence):
            kinds.append("list")
            if isinstance(value, list):
                for i, item in enumerate(value):
                    check(item, args[0] if args else Any, f"{path}[{i}]", problems)
                return
        elif origin in (dict, collections.abc.Mapping, typing.Mapping):
            kinds.append("map")
            if isinstance(value, dict):
                for key, item in value.items():
                    check(item, args[1] if len(args) > 1 else Any, f"{path}.{key}", problems)
                return
        elif alt is bool:
            kinds.append("bool")
            if isinstance(value, bool):
                return
        elif alt in (int, float):
            kinds.append("number")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return
        elif alt is str or (isinstance(alt, type) and issubclass(alt, str)):
            kinds.append("string")
            if isinstance(value, str):
                return
        else:
            return  # a type this walker does not model (assets, archives, resources): accept
    problems.append(f"{path}: {type(value).__name__} {value!r:.60} where the SDK expects {' or '.join(kinds)}")


def check_object(value: dict, cls: type, path: str, problems: list[str]) -> None:
    known = properties(cls)
    for key, item in value.items():
        if key not in known:
            problems.append(f"{path}.{key}: not a property of {cls.__name__} (known: {', '.join(sorted(known))})")
            continue
        check(item, known[key], f"{path}.{key}", problems)


def resource_problems(resource: dict) -> list[str] | None:
    """Problems of one captured resource against its SDK Args class; None when the SDK has no class for it."""
    cls = args_class(resource["type"])
    if cls is None:
        return None
    problems: list[str] = []
    if resource["type"].startswith("pulumi:providers:"):
        # Provider inputs travel as strings (JSON-encoded); check their names only.
        known = properties(cls)
        problems += [f"{resource['name']}.{key}: not a property of {cls.__name__}"
                     for key in resource["inputs"] if key not in known and key != "version"]
    else:
        check_object(resource["inputs"], cls, resource["name"], problems)
    for wire in required(cls):
        if wire not in resource["inputs"]:
            problems.append(f"{resource['name']}.{wire}: required by {cls.__name__}, missing")
    return problems
