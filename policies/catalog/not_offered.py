"""Machine types accel knows and does not offer (not_offered.yaml beside this module), and why.

Read only on an error path (a declared reservation or a hardware pin naming a machine no offering sells), so
PyYAML is imported there, never on a warm `choose`."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from accel.base.errors import UsageError

TABLE = Path(__file__).resolve().parent / "not_offered.yaml"
_FIELDS = {"series", "cloud", "accelerator", "why", "see", "source"}


class NotOfferedTableError(UsageError):
    """not_offered.yaml is malformed."""


@cache
def table(path: Path = TABLE) -> dict[str, dict[str, str]]:
    """machine type -> its row; every row has exactly the fields above, each a non-empty string."""
    from accel.base.yaml_files import read_yaml_file

    data: Any = read_yaml_file(path, "not-offered table", error=NotOfferedTableError)
    if not isinstance(data, dict):
        raise NotOfferedTableError(f"{path}: a mapping of machine type to row is expected")
    for machine_type, row in data.items():
        fields = set(row) if isinstance(row, dict) else set()
        if fields != _FIELDS or not all(isinstance(row[key], str) and row[key] for key in _FIELDS):
            raise NotOfferedTableError(f"{path}: {machine_type!r} needs exactly {', '.join(sorted(_FIELDS))}, "
                                       "each a non-empty string")
    return data


def why_not_offered(machine_type: str, path: Path = TABLE) -> str | None:
    """The sentence saying why accel does not offer `machine_type`, or None for a machine it does not know."""
    row = table(path).get(machine_type)
    if row is None:
        return None
    return (f"{machine_type!r} is {row['series']} ({row['accelerator']} on {row['cloud']}), which accel does not "
            f"offer: {row['why']} ({row['see']})")


def offered_anyway(offered_machine_types: Iterable[str], path: Path = TABLE) -> list[str]:
    """Machine types both sold by an offering and listed as not offered: a row left behind when its offering came."""
    return sorted(set(offered_machine_types) & set(table(path)))
