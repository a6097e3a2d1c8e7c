"""GKE's node-pool rules on COMPACT placement and Dynamic Workload Scheduler capacity, from gke_rules.yaml.

One function answers "would GKE reject this pool?" for the planner, the components and the
guardrail alike, so the three can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from accel.base.safe_files import read_text

from accel.base.yaml_files import parse_yaml  # libyaml, duplicate keys refused

RULES_FILE = Path(__file__).with_name("gke_rules.yaml")


# Plain dataclasses, not pydantic: the guardrail pack imports this and must start without pydantic.
@dataclass(frozen=True)
class CompactPlacementRules:
    queued_provisioning_allowed_for_tpu_only: bool
    flex_start_machine_series: tuple[str, ...]


@dataclass(frozen=True)
class GkeRules:
    as_of: str
    source: str
    compact_placement: CompactPlacementRules


@lru_cache(maxsize=None)
def load_gke_rules(path: Path = RULES_FILE) -> GkeRules:
    data = parse_yaml(read_text(path, "GKE rules table"))
    compact = data["compact_placement"]
    return GkeRules(as_of=str(data["as_of"]), source=str(data["source"]), compact_placement=CompactPlacementRules(
        queued_provisioning_allowed_for_tpu_only=bool(compact["queued_provisioning_allowed_for_tpu_only"]),
        flex_start_machine_series=tuple(compact["flex_start_machine_series"])))


def compact_placement_problem(machine_type: str, provisioning: str, *, tpu: bool = False) -> str | None:
    """Why GKE rejects COMPACT placement for this pool's machine and capacity, or None if it accepts it.

    `provisioning` is the Plan's capacity mode (on-demand, spot, reservation, flex-start, queued).
    Queued pools also run on flex-start VMs, so both rules apply to them.
    """
    rules = load_gke_rules()
    compact = rules.compact_placement
    if tpu:
        return None
    if provisioning == "queued" and compact.queued_provisioning_allowed_for_tpu_only:
        return (f"GKE rejects COMPACT placement on a queued-provisioning GPU pool ({machine_type}); only TPU pools "
                f"may combine them (source: {rules.source})")
    if provisioning in ("flex-start", "queued") and not machine_type.startswith(
            tuple(f"{series}-" for series in compact.flex_start_machine_series)):
        series = ", ".join(compact.flex_start_machine_series)
        return (f"GKE supports COMPACT placement with flex-start only on {series} machines, not {machine_type} "
                f"(source: {rules.source})")
    return None
