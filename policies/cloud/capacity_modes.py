"""The capacity modes: how an offering's machines are obtained (on-demand, spot, flex-start, queued,
calendar-mode and specific reservations, Capacity Blocks, ODCRs, commitments, negotiated), each with its
limits, the machine types it applies to, and the obtainability parameters of the model in
`policies/cloud/obtainability.py`. One data file, policies/cloud/capacity_modes.yaml; every figure in it
names a source id, or is an estimate whose text states its rule (docs/capacity.md).

The applicability is keyed by machine type (fnmatch patterns, first match wins) and the obtainability
classes by accelerator id (patterns too), so a machine type or chip another change adds to the catalog
gets its modes and its parameters without an edit here.
"""

# No `from __future__ import annotations` in a module of pydantic models: pydantic would compile each field's
# annotation string when its class is defined, ~3 ms of every `accel choose` (docs/choose.md, "Start-up").

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import Field, model_validator

from accel.base.model import StrictModel
from accel.policies.cloud.applicability import matches as _matches, row_covers

MODES_FILE = Path(__file__).resolve().parent / "capacity_modes.yaml"
POLICIES_DIR = Path(__file__).resolve().parent.parent  # the code that reads and checks the table (cache key)



ModeKind = Literal["pay-as-you-go", "preemptible", "queued", "scheduled", "held", "commitment", "negotiated"]
ModeProvisioning = Literal["on-demand", "spot", "flex-start", "queued", "reservation", "capacity-block"]
# The modes that provision through GKE's Dynamic Workload Scheduler queue: a request waits for capacity and runs at
# most the mode's max_duration_hours (gke-flex-start, gke-queued-provisioning). Stated once; the search, its
# timing and the serving rule (policies/selection/serving_capacity.py) read it.
QUEUED_PROVISIONING: tuple[ModeProvisioning, ...] = ("flex-start", "queued")
SourceKind = Literal["primary", "observation", "third-party", "estimate"]
ObtainClass = Literal["frontier-gpu", "prior-gpu", "serving-gpu", "tpu"]


class ModeSource(StrictModel):
    kind: SourceKind
    page: str = Field(min_length=3)
    as_of: str = Field(min_length=4)
    says: str = Field(min_length=3)


class Sourced(StrictModel):
    """A figure with its source: a source id of the file, or text starting with 'estimate:' that states the
    rule the figure was derived by. `estimate` is derived, never written."""

    value: float = Field(ge=0)
    source: str = Field(min_length=3)
    estimate: bool = False

    @property
    def words(self) -> str:
        return f"{self.value:g} ({'estimate' if self.estimate else self.source})"


class ModeLimits(StrictModel):
    cancellable: bool
    source: str
    min_duration_hours: float | None = Field(None, gt=0)
    max_duration_hours: float | None = Field(None, gt=0)
    duration_grid: Literal["any", "capacity-block"] = "any"
    max_hosts_per_request: int | None = Field(None, gt=0)
    max_chips_per_request: int | None = Field(None, gt=0)
    hosts_per_request: list[int] | None = None
    max_hosts_total: int | None = Field(None, gt=0)
    unit_hosts: list[int] | None = None
    booking_horizon_days: float | None = Field(None, gt=0)
    zones: list[str] | None = None


class ModePrice(StrictModel):
    """A price the catalog has no column for: a factor of the machine's on-demand price, or per-region
    instance-hour figures, with their source. `same_as` borrows another mode's."""

    source: str | None = None
    rule: str | None = None
    same_as: str | None = None
    factor_by_machine: dict[str, float] | None = None
    instance_usd: dict[str, dict[str, float]] | None = None


class CapacityMode(StrictModel):
    id: str = ""
    cloud: Literal["gcp", "aws", "kubernetes"]
    kind: ModeKind
    provisioning: ModeProvisioning
    limits: ModeLimits
    price: ModePrice | None = None
    risk: str = Field(min_length=3)


class Applicability(StrictModel):
    machine: str = Field(min_length=1, description="A machine type or fnmatch pattern")
    sold_as: Literal["ultraservers"] | None = Field(
        None, description="Covers only machines the hardware table sells as whole UltraServers (ultraserver_types)")
    modes: list[str] = Field(min_length=1)
    excluded: dict[str, str] = Field(default_factory=dict)

    def covers(self, machine_type: str) -> bool:
        """The row's pattern matches the machine type and, for `sold_as: ultraservers`, the hardware table sells
        it only as UltraServers (applicability.row_covers, the one rule)."""
        return row_covers(self.machine, self.sold_as, machine_type)


class SpotParams(StrictModel):
    pool_hosts: Sourced
    obtain_hosts_per_hour: Sourced
    waves_per_week: Sourced
    wave_fraction: Sourced
    drains_per_week: Sourced
    drain_pool_fraction: Sourced
    drain_hours: Sourced


class PoolParams(StrictModel):
    pool_hosts: Sourced


class QueueParams(StrictModel):
    expected_wait_hours: Sourced
    max_hosts: Sourced


class LeadParams(StrictModel):
    lead_days: Sourced


class Obtainability(StrictModel):
    confidence: Sourced
    spot: dict[ObtainClass, SpotParams]
    on_demand: dict[ObtainClass, PoolParams] = Field(alias="on-demand")
    flex_start: dict[ObtainClass, QueueParams] = Field(alias="flex-start")
    queued: dict[ObtainClass, QueueParams]
    capacity_block: dict[ObtainClass, LeadParams] = Field(alias="capacity-block")
    calendar: dict[ObtainClass, LeadParams]
    negotiated: dict[Literal["all"], LeadParams]


class ModeTable(StrictModel):
    as_of: str
    sources: dict[str, ModeSource]
    classes: dict[ObtainClass, list[str]]
    modes: dict[str, CapacityMode]
    applicability: dict[Literal["gcp", "aws", "kubernetes"], list[Applicability]]
    obtainability: Obtainability

    @model_validator(mode="before")
    @classmethod
    def _mark(cls, data: Any) -> Any:
        """Name each mode by its key, and mark every figure whose source is an estimate (an 'estimate:' text
        or a source id of kind estimate) before validation, so `estimate` is derived, never written."""
        if not isinstance(data, dict):
            return data
        sources = data.get("sources") or {}
        estimates = {key for key, value in sources.items() if isinstance(value, dict) and value.get("kind") == "estimate"}

        def mark(node: Any) -> Any:
            if isinstance(node, dict):
                if "value" in node and "source" in node and "estimate" in node:
                    raise ValueError(f"'estimate' is derived from the source, not written (at {node!r})")
                if "value" in node and isinstance(node.get("source"), str):
                    source = node["source"]
                    return {**node, "estimate": source.lower().startswith("estimate") or source in estimates}
                return {key: mark(value) for key, value in node.items()}
            return node

        data = dict(data)
        data["obtainability"] = mark(data.get("obtainability"))
        data["modes"] = {key: {**value, "id": key} if isinstance(value, dict) else value
                         for key, value in (data.get("modes") or {}).items()}
        return data

    @model_validator(mode="after")
    def _references(self) -> "ModeTable":
        """Every source a figure cites exists; every mode an applicability row names exists."""
        known = set(self.sources)
        for mode in self.modes.values():
            for cited in (mode.limits.source, mode.price.source if mode.price else None):
                if cited is not None and cited not in known:
                    raise ValueError(f"mode {mode.id}: source {cited!r} is not one of the file's sources")
            if mode.price and mode.price.same_as and mode.price.same_as not in self.modes:
                raise ValueError(f"mode {mode.id}: price same_as {mode.price.same_as!r} is not a mode")
        for cloud, rows in self.applicability.items():
            for row in rows:
                for mode_id in (*row.modes, *row.excluded):
                    if mode_id not in self.modes:
                        raise ValueError(f"applicability {cloud} {row.machine}: unknown mode {mode_id!r}")
                    if self.modes[mode_id].cloud != cloud:
                        raise ValueError(f"applicability {cloud} {row.machine}: {mode_id} is a "
                                         f"{self.modes[mode_id].cloud} mode")
        for figure in _figures(self.obtainability):
            if not figure.estimate and figure.source not in known:
                raise ValueError(f"obtainability figure {figure.value:g} cites {figure.source!r}: neither a source "
                                 "id of the file nor an 'estimate:' with its rule")
        return self

    # ---------------------------------------------------------------- look-ups
    def obtain_class(self, accelerator: str) -> ObtainClass | None:
        """The obtainability class of an accelerator id, by the first pattern that matches."""
        for name, patterns in self.classes.items():
            if any(_matches(accelerator, pattern) for pattern in patterns):
                return name
        return None

    def applicable(self, cloud: str, machine_type: str) -> Applicability | None:
        """The applicability row of a machine type (first matching pattern), or None when none matches."""
        for row in self.applicability.get(cloud, []):  # type: ignore[call-overload]
            if row.covers(machine_type):
                return row
        return None

    def modes_for(self, cloud: str, machine_type: str) -> list[CapacityMode]:
        row = self.applicable(cloud, machine_type)
        return [] if row is None else [self.modes[mode_id] for mode_id in row.modes]

    def mode_for(self, cloud: str, machine_type: str, provisioning: str, held: bool = False) -> CapacityMode | None:
        """The applicable mode that builds `provisioning` on this machine: self-service before negotiated, or, for
        capacity the stack already holds (`held`: a declared reservation), the held mode first (calendar mode
        also provisions a reservation, but a reservation in hand was not booked through it)."""
        matches = [mode for mode in self.modes_for(cloud, machine_type) if mode.provisioning == provisioning]
        if held:
            matches.sort(key=lambda mode: mode.kind != "held")
        else:
            matches.sort(key=lambda mode: mode.kind in ("negotiated", "held", "commitment"))
        return matches[0] if matches else None

    @staticmethod
    def chains_legs(mode: CapacityMode | None) -> bool:
        """Whether a run on this mode is chained in legs with a queue between them: only the queued modes
        (flex-start, queued provisioning), whose requests end; a held reservation has no legs and no queue."""
        return mode is not None and mode.kind != "held" and mode.provisioning in QUEUED_PROVISIONING

    def source_words(self, source: str) -> str:
        known = self.sources.get(source)
        return f"{source}: {known.page}, as of {known.as_of}" if known else source

    def price_factor(self, mode_id: str, machine_type: str) -> tuple[float, str, str] | None:
        """(factor of the on-demand price, source id, 'source: page, as of date') at which `mode_id` sells this
        machine type, following `same_as` (queued provisioning borrows flex-start's); None when the table has no
        factor for the machine (the mode is then priced as the catalog's on-demand figure, docs/capacity.md)."""
        mode = self.modes.get(mode_id)
        seen: set[str] = set()
        while mode is not None and mode.price is not None and mode.price.same_as and mode.id not in seen:
            seen.add(mode.id)
            mode = self.modes.get(mode.price.same_as)
        price = mode.price if mode is not None else None
        if price is None or not price.factor_by_machine or machine_type not in price.factor_by_machine:
            return None
        assert price.source is not None
        return price.factor_by_machine[machine_type], price.source, self.source_words(price.source)

    def cb_instance_usd(self, machine_type: str, region: str) -> tuple[float, str] | None:
        """(Capacity Block $/instance-hour, 'source, as of') for a machine type in a region, when observed."""
        for mode_id in ("aws-capacity-block", "aws-capacity-block-ultraserver"):
            price = self.modes[mode_id].price
            if price and price.instance_usd and region in price.instance_usd.get(machine_type, {}):
                assert price.source is not None
                return price.instance_usd[machine_type][region], self.source_words(price.source)
        return None


def _figures(node: Any):
    if isinstance(node, Sourced):
        yield node
    elif isinstance(node, StrictModel):
        for name in type(node).model_fields:
            yield from _figures(getattr(node, name))
    elif isinstance(node, Mapping):
        for value in node.values():
            yield from _figures(value)


@lru_cache(maxsize=4)
def load_modes(path: Path = MODES_FILE) -> ModeTable:
    """The mode table in `path`, validated once and then kept in the user's derived-data cache while the file
    and the policies code are unchanged: a run reads the pickle back and never builds the table's validators
    (~15% of a warm `accel choose`'s CPU; accel.base.derived_cache)."""
    from accel.base.derived_cache import cached

    def validated() -> ModeTable:
        from accel.base.yaml_files import read_yaml_file  # PyYAML only on a cache miss (~10 ms of a warm choose)

        return ModeTable.model_validate(read_yaml_file(path, "capacity modes"))

    return cached("capacity-modes", [path], validated, code=[POLICIES_DIR])


def parse_modes(data: Mapping[str, Any]) -> ModeTable:
    """A mode table from already-read data (tests mutate the bundled file's data)."""
    return ModeTable.model_validate(dict(data))
