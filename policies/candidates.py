"""The state of one search: the workload's resolved limits and per-offering model caches (SearchContext),
one sized configuration (Candidate), and how a candidate becomes an Option and an Estimate."""

from __future__ import annotations

from dataclasses import dataclass, field

from policies.catalog.model import Accelerator, Catalog, Offering, Price
from policies.choice import OBJECTIVES
from policies.estimate import (
    Evaluation,
    InferenceModel,
    Resolved,
    TrainingModel,
    assumption_list,
    deadline_hours,
    min_chips_for_memory,
    resolve,
    training_flops,
)
from policies.plan import Estimate, Option
from policies.sizes import Size
from policies.workload import WorkloadSpec


@dataclass
class Candidate:
    """One sized configuration of an offering at one price (shared by `regions`), with its estimate."""

    offering: Offering
    regions: list[str]
    spot: bool
    size: Size
    evaluation: Evaluation
    chip_price: Price
    host_price: Price | None

    @property
    def family(self) -> str:
        return self.offering.family


@dataclass
class SearchContext:
    """One search's workload, resolved limits and caches (models and memory fits per accelerator)."""

    spec: WorkloadSpec
    catalog: Catalog
    objective: str
    resolved: Resolved
    deadline_h: float
    deadline_given: bool
    budget: float | None
    max_chips: int
    training_models: dict[tuple[str, str, bool], TrainingModel] = field(default_factory=dict)
    inference_models: dict[str, InferenceModel] = field(default_factory=dict)
    memory_chips: dict[str, int] = field(default_factory=dict)
    hours_cache: dict[tuple[str, bool], dict[int, float]] = field(default_factory=dict)

    def accelerator(self, offering: Offering) -> Accelerator:
        return self.catalog.accelerators[offering.accelerator]

    def training_model(self, offering: Offering, spot: bool) -> TrainingModel:
        key = (offering.accelerator, offering.cloud, spot)
        model = self.training_models.get(key)
        if model is None:
            model = TrainingModel(self.spec, self.resolved, self.catalog.defaults, self.accelerator(offering),
                                  offering.cloud, spot)
            self.training_models[key] = model
        return model

    def inference_model(self, offering: Offering) -> InferenceModel:
        model = self.inference_models.get(offering.accelerator)
        if model is None:
            model = InferenceModel(self.spec, self.resolved, self.accelerator(offering))
            self.inference_models[offering.accelerator] = model
        return model

    def min_memory_chips(self, offering: Offering) -> int:
        chips = self.memory_chips.get(offering.accelerator)
        if chips is None:
            chips = min_chips_for_memory(self.spec, self.resolved, self.accelerator(offering))
            self.memory_chips[offering.accelerator] = chips
        return chips

    def fleet_cap(self, offering: Offering) -> int:
        return min(self.max_chips, offering.max_chips or self.max_chips)


def search_context(spec: WorkloadSpec, catalog: Catalog, objective: str) -> SearchContext:
    """The context of one search; ValueError on an unknown objective."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    resolved = resolve(spec, catalog.defaults)
    deadline_h, given = deadline_hours(spec, resolved)
    max_chips = spec.constraints.max_chips or int(resolved["max_fleet_chips"])
    return SearchContext(spec, catalog, objective, resolved, deadline_h, given, spec.constraints.budget_usd, max_chips)


def to_option(candidate: Candidate, region: str) -> Option:
    """The candidate in one of its regions, as the OPTION of the JSON contract (rounded)."""
    e, s, o = candidate.evaluation, candidate.size, candidate.offering
    return Option(
        cloud=o.cloud, region=region, accelerator=o.accelerator, family=o.family,  # type: ignore[arg-type]
        chips=s.chips, hosts=s.hosts, slices=s.slices, topology=s.topology, machine_type=s.machine_type,
        spot=candidate.spot, hourly_usd=round(e.hourly_usd, 2), hours=round(e.hours, 2) or 0.01,
        total_usd=round(e.total_usd, 2), mfu=_fraction(e.mfu),
        offering=o.id, zone=o.regions[region].zones[0], chips_per_host=s.chips_per_host,
        provisioning="spot" if candidate.spot else o.provisioning, goodput=_fraction(e.goodput),
    )


def _fraction(value: float) -> float:
    """A share in (0, 1], four significant digits (tiny serving utilisations stay above zero)."""
    return min(1.0, max(1e-6, float(f"{value:.4g}")))


def estimate_for(ctx: SearchContext, candidate: Candidate, option: Option) -> Estimate:
    """The estimate behind the chosen option: FLOPs, memory fit, prices and every assumption with its source."""
    spec = ctx.spec
    accelerator = ctx.accelerator(candidate.offering)
    e = candidate.evaluation
    price_text = f"${candidate.chip_price.usd:,.4g}/chip-h"
    price_source = f"{candidate.chip_price.source} (as of {candidate.chip_price.as_of})"
    if candidate.host_price is not None:
        price_text += f" + ${candidate.host_price.usd:,.4g}/host-h"
        price_source += f"; host: {candidate.host_price.source} (as of {candidate.host_price.as_of})"
    detail = dict(e.detail)
    detail["price"] = price_text
    assumptions = assumption_list(spec, ctx.resolved, ctx.catalog.defaults, accelerator, candidate.offering.cloud,
                                  candidate.spot, option.chips, option.slices, price_source, detail)
    if spec.kind == "inference":
        assert spec.inference is not None
        flops = ctx.inference_model(candidate.offering).step_flops_per_sequence * spec.inference.tokens_per_second
    else:
        flops = training_flops(spec)
    return Estimate(flops=flops, min_chips_for_memory=ctx.min_memory_chips(candidate.offering), hours=option.hours,
                    hourly_usd=option.hourly_usd, total_usd=option.total_usd, mfu=option.mfu, goodput=option.goodput,
                    assumptions=assumptions, details={k: v for k, v in detail.items()})
