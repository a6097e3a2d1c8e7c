"""What a selection returns: the objectives, the Choice, and the NoFeasibleOption error (exit 3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from accel.base.errors import NothingFeasible
from accel.policies.catalog.model import Catalog, Offering
from accel.policies.plan import CatalogRef, Estimate, Option
from accel.policies.workload import WorkloadSpec

Objective = Literal["cost", "time"]
OBJECTIVES: tuple[str, ...] = ("cost", "time")


@dataclass(frozen=True)
class HeldCapacity:
    """A pinned fleet its evaluation put on a declared reservation (selection.pin, reservations.bill_on_reservation):
    what make_plan writes of it besides the billed option and estimate."""

    reservation: str      # its name (Capacity.reservation)
    zone: str             # the reservation's zone, the plan's one zone
    mode: str | None      # the held capacity mode (Capacity.mode): no queue, no legs
    line: str             # the rationale's last line: the reservation and how it bills the fleet
    sized: Option         # the fleet as sized at the catalog's price, whose storage share, GKE placement rule and
                          # price bound make_plan judges as before it went on the reservation


@dataclass
class Choice:
    """The outcome of a selection. `options` are the best configuration of each offering, region and
    capacity type that meets every constraint, best first; `chosen` is options[0]."""

    chosen: Option
    options: list[Option]
    rejected: list[dict]
    rationale: list[str]
    estimate: Estimate
    objective: str
    workload: WorkloadSpec
    catalog: CatalogRef
    chosen_offering: Offering
    pinned: bool = False
    closest_infeasible: list[Option] = field(default_factory=list)   # per family with no feasible option
    option_details: list[dict] = field(default_factory=list)   # estimator breakdown of each option, same order
    reservation: str | None = None   # the declared reservation the chosen option runs on (accel:reservations)
    held: HeldCapacity | None = None   # a pin's fleet on a declared reservation (selection.pin)

    def to_json(self) -> dict:
        """The `accel choose --json` object (docs/contracts.md, section 2.1)."""
        return {
            "catalog": self.catalog.model_dump(mode="json"),
            "workload": self.workload.model_dump(mode="json"),
            "chosen": self.chosen.model_dump(mode="json"),
            "options": [option.model_dump(mode="json") for option in self.options],
            "rejected": rejected_json(self.rejected),
            "rationale": self.rationale,
            "objective": self.objective,
            "estimate": self.estimate.model_dump(mode="json"),
            "closest_infeasible": [option.model_dump(mode="json") for option in self.closest_infeasible],
        }


class NoFeasibleOption(NothingFeasible):
    """Nothing meets the constraints. Carries what eliminated what and the closest option."""

    def __init__(self, message: str, eliminations: dict[str, list[str]], closest: Option | None,
                 closest_misses: str = "", rejected: list[dict] | None = None,
                 workload: WorkloadSpec | None = None, catalog: CatalogRef | None = None) -> None:
        super().__init__(message)
        self.eliminations = eliminations
        self.closest = closest
        self.closest_misses = closest_misses
        self.rejected = rejected or []
        self.workload = workload
        self.catalog = catalog

    def to_json(self) -> dict:
        return {
            "catalog": self.catalog.model_dump(mode="json") if self.catalog else None,
            "workload": self.workload.model_dump(mode="json") if self.workload else None,
            "chosen": None,
            "options": [],
            "rejected": rejected_json(self.rejected),
            "rationale": [str(self)],
            "eliminations": self.eliminations,
            "closest": self.closest.model_dump(mode="json") if self.closest else None,
        }


def rejected_json(rejected: list[dict]) -> list[dict]:
    """The `rejected` entries as JSON: {"offering", "reasons"} and, where the offering kept a near miss, "closest":
    its OPTION (selection.choose closest_miss), dumped only here so a search that prints no JSON dumps none."""
    return [{**item, "closest": item["closest"].model_dump(mode="json")} if "closest" in item else item
            for item in rejected]


def catalog_ref(catalog: Catalog) -> CatalogRef:
    """Which catalog a choice was made from."""
    return CatalogRef.model_construct(version=catalog.version, as_of=catalog.as_of.isoformat())  # from the validated catalog
