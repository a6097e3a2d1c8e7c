"""Mappings written out with their unset entries left out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def without_none(mapping: Mapping[K, V | None]) -> dict[K, V]:
    """The entries whose value is set, in the mapping's order: an optional field that is None is left out of
    what is written (a Kubernetes object, a config read by another parser, a table row), not written as null."""
    return {key: value for key, value in mapping.items() if value is not None}
