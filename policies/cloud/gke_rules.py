"""GKE's node-pool rules on COMPACT placement and Dynamic Workload Scheduler capacity, how long an upgrade pause (a
maintenance exclusion) may last, and how soon GKE may upgrade a new cluster's nodes on its own (the default cluster
disruption budget), from gke_rules.yaml.

One function answers "would GKE reject this pool?" for the planner, the components and the
guardrail alike, so the three can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
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
class UpgradePauseRules:
    scope: str
    source: str
    support_months_by_channel: dict[str, int]


@dataclass(frozen=True)
class DisruptionBudget:
    patch_hours: float      # GKE's default least time between automatic patch upgrades, and after creation
    minor_days: float
    source: str


@dataclass(frozen=True)
class GkeRules:
    as_of: str
    source: str
    compact_placement: CompactPlacementRules
    upgrade_pause: UpgradePauseRules
    disruption_budget: DisruptionBudget


@lru_cache(maxsize=None)
def load_gke_rules(path: Path = RULES_FILE) -> GkeRules:
    data = parse_yaml(read_text(path, "GKE rules table"))
    compact = data["compact_placement"]
    return GkeRules(as_of=str(data["as_of"]), source=str(data["source"]), compact_placement=CompactPlacementRules(
        queued_provisioning_allowed_for_tpu_only=bool(compact["queued_provisioning_allowed_for_tpu_only"]),
        flex_start_machine_series=tuple(compact["flex_start_machine_series"])),
        upgrade_pause=UpgradePauseRules(scope=str(data["upgrade_pause"]["scope"]),
                                        source=str(data["upgrade_pause"]["source"]),
                                        support_months_by_channel={str(k): int(v) for k, v in
                                                                   data["upgrade_pause"]["support_months_by_channel"].items()}),
        disruption_budget=DisruptionBudget(patch_hours=float(data["disruption_budget"]["patch_hours"]),
                                           minor_days=float(data["disruption_budget"]["minor_days"]),
                                           source=str(data["disruption_budget"]["source"])))


def run_outlasts_first_upgrade(run_hours: float | None) -> bool:
    """Whether an automatic node upgrade can reach a run ending `run_hours` after its cluster was created: GKE
    upgrades a new cluster's control plane, and after it the nodes, no sooner than the default patch disruption
    budget (gke_rules.yaml disruption_budget). None (not known when the run ends): it can."""
    return run_hours is None or run_hours > load_gke_rules().disruption_budget.patch_hours


def _months_after(moment: datetime, months: int) -> datetime:
    """`moment` plus whole calendar months (the day clamped to the shorter month's last day)."""
    index = moment.month - 1 + months
    year, month = moment.year + index // 12, index % 12 + 1
    day = moment.day
    while True:
        try:
            return moment.replace(year=year, month=month, day=day)
        except ValueError:
            day -= 1


def upgrade_pause_problem(start: datetime, end: datetime, now: datetime, channel: str = "REGULAR") -> str | None:
    """Why GKE refuses this upgrade pause on a cluster of `channel`, or None if it may accept it.

    The pause is a NO_MINOR_OR_NODE_UPGRADES exclusion: it may last until the end of support of the cluster's
    minor version and no longer, and that version (one GKE offers today on this channel) is supported at most
    the channel's months from today.
    """
    if start.tzinfo is None or end.tzinfo is None:
        return "start and end need a time zone (write them in UTC, like 2026-12-01T00:00:00Z)"
    if end <= start:
        return f"end ({end.isoformat()}) must be after start ({start.isoformat()})"
    rules = load_gke_rules().upgrade_pause
    months = rules.support_months_by_channel.get(channel)
    if months is None:
        return None
    latest = _months_after(now.astimezone(end.tzinfo), months)
    if end > latest + timedelta(days=1):
        return (f"end ({end.date().isoformat()}) is more than {months} months from today ({now.date().isoformat()}); "
                f"GKE ends a {rules.scope} maintenance exclusion at the end of support of the cluster's minor "
                f"version, at most {months} months away on the {channel} channel, so it refuses a later end: "
                f"end the pause by {latest.date().isoformat()} (source: {rules.source})")
    return None


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
