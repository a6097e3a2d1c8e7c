"""The capacity modes' hard limits and the machine types a mode is not sold for, read from capacity_modes.yaml
as plain data: the guardrail pack imports this and must start without pydantic (the typed table is
capacity_modes.py; both read the one file)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from accel.base.yaml_files import parse_yaml
from accel.policies.cloud.applicability import row_covers

MODES_FILE = Path(__file__).with_name("capacity_modes.yaml")


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return parse_yaml(MODES_FILE.read_text())


def limit(mode: str, key: str) -> Any:
    """A mode's limit (`max_duration_hours`, `max_hosts_per_request`, ...), None when it has none."""
    return _data()["modes"][mode]["limits"].get(key)


def source(mode: str) -> str:
    """'aws-cb-purchase (https://...)': where the mode's limits come from."""
    key = _data()["modes"][mode]["limits"]["source"]
    return f"{key} ({_data()['sources'][key]['page']})"


def excluded(cloud: str, machine_type: str, mode: str) -> str | None:
    """Why `mode` is not sold for this machine type (the applicability row's `excluded`), or None."""
    for row in _data()["applicability"].get(cloud, []):
        if row_covers(row["machine"], row.get("sold_as"), machine_type):
            return (row.get("excluded") or {}).get(mode)
    return None
