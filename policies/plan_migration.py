"""Pinned plans of schema 1 (written before 2026-05) read as schema 2, building the same resources.

Schema 1 stored the capacity type twice (`capacity.spot` and `capacity.provisioning`, the same pair
on `chosen`) and no accelerator on the pools. Users committed such plans to their stack files
(`accel:plan`), so `Plan` upgrades them on load instead of refusing them. The upgrade works on the
plain document (dicts), before validation, so every check of schema 2 still applies afterwards.

How schema 1's two capacity fields become the one `provisioning` field of schema 2:
- `spot: true` with provisioning `on-demand` or `spot` -> `spot` (the reading the GCP components
  of schema 1 built; AWS rejected the pair, so no AWS stack can have built anything else);
- `spot: true` with any other provisioning -> an error naming both values (every cloud refused it);
- `spot: false` (or absent) -> provisioning unchanged.
See docs/contracts.md, "Plan schema 2".
"""

from __future__ import annotations

from typing import Any

from accel.base.errors import UsageError

SCHEMA_VERSION = 2
_SPOT_COMPATIBLE = (None, "on-demand", "spot")


class PlanMigrationError(UsageError, ValueError):
    """A schema-1 plan that no component could ever have built. A ValueError too: it is raised
    while a pinned plan validates."""


def capacity_type(spot: Any, provisioning: Any, where: str) -> Any:
    """Schema 1's (spot, provisioning) pair as schema 2's one capacity type."""
    if spot is True:
        if provisioning not in _SPOT_COMPATIBLE:
            raise PlanMigrationError(
                f"{where}.spot is true but {where}.provisioning is {provisioning!r}: spot capacity cannot "
                f"also be {provisioning}; schema 2 keeps one capacity type in {where}.provisioning "
                "(on-demand, spot, reservation, flex-start, queued or capacity-block)")
        return "spot"
    return provisioning if provisioning is not None else "on-demand"


def upgrade_capacity(section: Any, where: str) -> Any:
    """A schema-1 `capacity` or `chosen` mapping with its `spot` folded into `provisioning`."""
    if not isinstance(section, dict) or "spot" not in section:
        return section
    upgraded = {key: value for key, value in section.items() if key != "spot"}
    upgraded["provisioning"] = capacity_type(section["spot"], section.get("provisioning"), where)
    return upgraded


def upgrade_schema_1(document: dict[str, Any]) -> dict[str, Any]:
    """The schema-2 form of a schema-1 plan document (a new dict; the input is not changed)."""
    upgraded = dict(document)
    upgraded["schema_version"] = SCHEMA_VERSION
    chosen = upgraded.get("chosen")
    if isinstance(chosen, dict):
        upgraded["chosen"] = upgrade_capacity(chosen, "chosen")
    if "capacity" in upgraded:
        upgraded["capacity"] = upgrade_capacity(upgraded["capacity"], "capacity")
    accelerator = chosen.get("accelerator") if isinstance(chosen, dict) else None
    for pool in ("tpu", "gpu"):
        section = upgraded.get(pool)
        if isinstance(section, dict) and "accelerator" not in section and accelerator is not None:
            # Schema 1's pools carried no accelerator; components read it from `chosen`.
            upgraded[pool] = {"accelerator": accelerator, **section}
    return upgraded
