"""Lazy package exports (PEP 562): `from package import Name` imports Name's module on first use.

A package's public names come from modules that import a provider SDK (pulumi_gcp, pulumi_aws,
pulumi_kubernetes) or the catalog; importing the package itself must stay cheap, and a program that
uses only Google Cloud components must never import pulumi_aws.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for a package whose name -> module map is `exports`."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals_of_package = importlib.import_module(package).__dict__
        globals_of_package[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(importlib.import_module(package).__dict__) | set(exports))

    return __getattr__, __dir__
