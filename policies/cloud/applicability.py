"""Which machine types an applicability row of capacity_modes.yaml covers: the one rule the typed table
(capacity_modes.Applicability.covers) and the guardrails' plain reading (mode_limits.excluded) apply. Plain code,
no YAML or pydantic: a warm `accel choose` and the guardrail pack both import it."""

from __future__ import annotations

import fnmatch


def matches(name: str, pattern: str) -> bool:
    """fnmatch.fnmatchcase(name, pattern), without compiling a regular expression for the table's usual forms, a
    plain name or a name followed by one '*' (fnmatch compiles one per pattern, ~30 us each: ~1 ms of a choose)."""
    any_tail = pattern.endswith("*")
    stem = pattern[:-1] if any_tail else pattern
    if "*" in stem or "?" in stem or "[" in stem:
        return fnmatch.fnmatchcase(name, pattern)
    return name.startswith(stem) if any_tail else name == pattern


def row_covers(machine: str, sold_as: str | None, machine_type: str) -> bool:
    """Whether an applicability row (its `machine` pattern and `sold_as`) covers the machine type: the pattern
    matches and, for a `sold_as: ultraservers` row, the hardware table sells the machine only as UltraServers (its
    ultraserver_types), so the UltraServer modes follow the table's field, not a machine's name."""
    from accel.policies import hardware

    if not matches(machine_type, machine):
        return False
    return sold_as != "ultraservers" or hardware.current().sold_only_as_ultraservers(machine_type)
