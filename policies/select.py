"""Hardware selection: enumerate -> filter -> size -> rank -> explain -> Plan.

For each offering (machine type or TPU generation on a cloud), each allowed region price and
each capacity type (spot / on-demand), the engine finds the best fleet size on the offering's
size ladder (whole GPU nodes; valid TPU slices, then identical multislices beyond the largest
slice). The search is exact and logarithmic because the estimator's curves are monotone:
cost grows with fleet size (MFU falls, spot losses grow), and run time falls and then, for spot
fleets, rises again (more hosts, more preemptions). So:
- cost objective: the smallest size that fits in memory and meets the deadline (binary search),
- time objective: the fastest size within the budget (the run-time minimum, clipped by budget).
Serving sizes replicas instead: every replica size is tried, replicas cover the tokens/s target.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Literal, Sequence

from accel.errors import NothingFeasible
from policies import shapes
from policies.catalog.model import Accelerator, Catalog, Offering, Price
from policies.estimate import (
    Evaluation,
    InferenceModel,
    Replica,
    Resolved,
    TrainingModel,
    assumption_list,
    deadline_hours,
    filesystem_plan,
    min_chips_for_memory,
    resolve,
    training_flops,
    training_memory_bytes,
)
from policies.plan import (
    Capacity,
    CatalogRef,
    Estimate,
    GpuPool,
    Option,
    Plan,
    TpuPool,
)
from policies.workload import XLA_FRAMEWORKS, WorkloadSpec

Objective = Literal["cost", "time"]
OBJECTIVES: tuple[str, ...] = ("cost", "time")

ACCELERATOR_NAMES = {
    "tpu-v4": "TPU v4", "tpu-v5e": "TPU v5e", "tpu-v5p": "TPU v5p", "tpu-v6e": "TPU v6e",
    "a100-40gb": "A100 40GB", "a100-80gb": "A100 80GB", "h100-80gb": "H100", "h200-141gb": "H200",
    "l4": "L4", "a10g": "A10G", "l40s": "L40S",
}
CLOUD_NAMES = {"gcp": "Google Cloud", "aws": "AWS", "kubernetes": "the inventory cluster"}


# ----------------------------------------------------------------------------- results

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

    def to_json(self) -> dict:
        """The DESIGN.md `accel choose --json` object (plus the chosen estimate)."""
        return {
            "catalog": self.catalog.model_dump(mode="json"),
            "workload": self.workload.model_dump(mode="json"),
            "chosen": self.chosen.model_dump(mode="json"),
            "options": [option.model_dump(mode="json") for option in self.options],
            "rejected": self.rejected,
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
            "rejected": self.rejected,
            "rationale": [str(self)],
            "eliminations": self.eliminations,
            "closest": self.closest.model_dump(mode="json") if self.closest else None,
        }


# ----------------------------------------------------------------------------- sizes

@dataclass(frozen=True)
class Size:
    chips: int
    hosts: int
    slices: int
    topology: str | None
    machine_type: str
    chips_per_host: int


class GpuLadder:
    """1..max_nodes whole nodes; index i is i+1 nodes. Nothing is materialized."""

    def __init__(self, offering: Offering, max_nodes: int) -> None:
        self.per_node = offering.chips_per_host
        self.machine_type = offering.machine_type
        self.count = max(0, max_nodes)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> Size:
        nodes = index + 1
        return Size(nodes * self.per_node, nodes, 1, None, self.machine_type, self.per_node)

    def first_at_least(self, chips: int) -> int:
        return max(0, math.ceil(chips / self.per_node) - 1)


class TpuLadder:
    def __init__(self, sizes: tuple[Size, ...]) -> None:
        self.sizes = sizes
        self.chips = [s.chips for s in sizes]

    def __len__(self) -> int:
        return len(self.sizes)

    def __getitem__(self, index: int) -> Size:
        return self.sizes[index]

    def first_at_least(self, chips: int) -> int:
        return bisect.bisect_left(self.chips, chips)


@lru_cache(maxsize=None)
def tpu_sizes(generation: str, cap: int) -> tuple[Size, ...]:
    """Every fleet size of a TPU generation up to `cap` chips, smallest first: one slice per valid
    topology (the most cubic per chip count), then, past the largest slice, identical multislices
    of slices at least half the largest (fewest slices per total)."""
    gen = shapes.generation(generation)
    topologies = shapes.valid_topologies(gen.name)

    def size(topology: str, slices: int) -> Size:
        return Size(shapes.topology_chips(topology) * slices, shapes.hosts_per_slice(gen.name, topology) * slices,
                    slices, topology, shapes.machine_type(gen.name, topology), shapes.chips_per_host(gen.name, topology))

    singles: dict[int, str] = {}
    for topology in topologies:
        singles.setdefault(shapes.topology_chips(topology), topology)
    largest = max(singles)
    sizes = [size(t, 1) for c, t in sorted(singles.items()) if c <= cap]
    multi: dict[int, tuple[int, str]] = {}
    for chips, topology in sorted(singles.items(), reverse=True):
        if chips * 2 < largest:   # multislice is built from pod-scale slices
            continue
        for slices in range(2, cap // chips + 1):
            total = chips * slices
            if total > largest and (total not in multi or slices < multi[total][0]):
                multi[total] = (slices, topology)
    sizes += [size(t, s) for _, (s, t) in sorted(multi.items())]
    return tuple(sizes)


def replica_sizes(offering: Offering, max_replica_chips: int) -> list[Size]:
    """Sizes one serving replica can take: a power-of-two share of a GPU node, or one TPU slice."""
    generation = shapes.GENERATION_BY_ACCELERATOR.get(offering.accelerator)
    if generation is None:
        counts = [n for n in (1, 2, 4, 8, 16) if n <= offering.chips_per_host and offering.chips_per_host % n == 0
                  and n <= max_replica_chips]
        return [Size(n, 1, 1, None, offering.machine_type, offering.chips_per_host) for n in counts]
    return [s for s in tpu_sizes(generation.name, max(1, max_replica_chips)) if s.slices == 1]


# ----------------------------------------------------------------------------- search helpers

def _first_true(lo: int, hi: int, predicate: Callable[[int], bool]) -> int:
    """Smallest i in [lo, hi] with predicate(i), for a predicate that flips once False -> True; hi+1 if none."""
    while lo <= hi:
        mid = (lo + hi) // 2
        if predicate(mid):
            hi = mid - 1
        else:
            lo = mid + 1
    return lo


def _last_true(lo: int, hi: int, predicate: Callable[[int], bool]) -> int:
    """Largest i in [lo, hi] with predicate(i), for a predicate that flips once True -> False; lo-1 if none."""
    while lo <= hi:
        mid = (lo + hi) // 2
        if predicate(mid):
            lo = mid + 1
        else:
            hi = mid - 1
    return hi


def _money(usd: float) -> str:
    if usd >= 1e6:
        return f"${usd / 1e6:,.2f}M"
    if usd >= 1e4:
        return f"${usd / 1e3:,.1f}k"
    return f"${usd:,.2f}" if usd < 100 else f"${usd:,.0f}"


def _duration(hours: float) -> str:
    if not math.isfinite(hours):
        return "forever (preemptions stall it)"
    if hours >= 48:
        return f"{hours / 24:.1f} days"
    return f"{hours:.1f} h"


# ----------------------------------------------------------------------------- candidates

@dataclass
class _Candidate:
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
class _Context:
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


def _hard_filter(spec: WorkloadSpec, offering: Offering) -> tuple[str, str] | None:
    """(constraint, reason) when the offering can never serve this workload, else None."""
    constraints = spec.constraints
    if offering.cloud not in constraints.clouds:
        return "clouds", f"cloud {offering.cloud} is not in constraints.clouds ({', '.join(constraints.clouds)})"
    if offering.family == "tpu":
        if constraints.custom_cuda_kernels:
            return "framework", "custom CUDA kernels need NVIDIA GPUs; TPUs run only what XLA compiles"
        if spec.framework not in XLA_FRAMEWORKS:
            return "framework", (f"framework {spec.framework} runs on TPUs only through XLA "
                                 f"(use jax, tensorflow or pytorch-xla)")
        if constraints.portability:
            return "portability", "portability is required and TPUs exist only on Google Cloud"
    if constraints.accelerators is not None and offering.accelerator not in constraints.accelerators:
        return "accelerators", (f"{offering.accelerator} is not in constraints.accelerators "
                                f"({', '.join(constraints.accelerators)})")
    if constraints.regions is not None and not set(offering.regions) & set(constraints.regions):
        return "regions", (f"offered only in {', '.join(offering.regions)}; constraints.regions allows "
                           f"{', '.join(constraints.regions)}")
    if constraints.spot == "required" and not offering.has_spot():
        return "spot", "spot is required and this offering has no spot capacity"
    return None


def _price_groups(ctx: _Context, offering: Offering, spot: bool) -> list[tuple[list[str], Price, Price | None]]:
    """Allowed regions grouped by identical prices, in preference order (the workload's region order, else
    the catalog's), so the numbers are computed once per distinct price."""
    allowed = ctx.spec.constraints.regions
    regions = [r for r in (allowed or offering.regions) if r in offering.regions]
    groups: dict[tuple[float, float], tuple[list[str], Price, Price | None]] = {}
    for region in regions:
        prices = offering.prices(region, spot)
        if prices is None:
            continue
        chip, host = prices
        key = (chip.usd, host.usd if host else 0.0)
        if key in groups:
            groups[key][0].append(region)
        else:
            groups[key] = ([region], chip, host)
    return list(groups.values())


def _spot_modes(spec: WorkloadSpec) -> tuple[bool, ...]:
    return {"allowed": (False, True), "required": (True,), "never": (False,)}[spec.constraints.spot]


@dataclass
class _Outcome:
    best: _Candidate | None = None
    alternatives: list[_Candidate] = field(default_factory=list)   # other sizes that also meet every constraint
    reasons: list[tuple[str, str]] = field(default_factory=list)   # (constraint, reason)
    near: list[tuple[float, _Candidate, str]] = field(default_factory=list)   # (overshoot, candidate, what it misses)


def _size_training(ctx: _Context, offering: Offering, spot: bool, regions: list[str], chip: Price,
                   host: Price | None, outcome: _Outcome) -> None:
    spec = ctx.spec
    model = ctx.training_model(offering, spot)
    cap = ctx.fleet_cap(offering)
    generation = shapes.GENERATION_BY_ACCELERATOR.get(offering.accelerator)
    if generation is not None:
        ladder: GpuLadder | TpuLadder = TpuLadder(tpu_sizes(generation.name, cap))
    else:
        max_nodes = cap // offering.chips_per_host
        if offering.training_max_nodes:
            max_nodes = min(max_nodes, offering.training_max_nodes)
        ladder = GpuLadder(offering, max_nodes)
    capacity = "spot" if spot else "on-demand"
    if len(ladder) == 0:
        outcome.reasons.append(("max_chips", f"{capacity}: max_chips {cap} is below one node of "
                                             f"{offering.chips_per_host} GPUs"))
        return
    need = ctx.min_memory_chips(offering)
    lo, hi = ladder.first_at_least(need), len(ladder) - 1
    if lo > hi:
        state = training_memory_bytes(spec, ctx.resolved) / 1e12
        biggest = ladder[hi].chips
        if offering.training_max_nodes and biggest < cap - offering.chips_per_host:
            limit = (f"{offering.machine_type} is a single-node type for training "
                     f"({biggest} chip{'s' if biggest != 1 else ''})")
            constraint = "memory"
        else:
            limit = f"max_chips allows {biggest}"
            constraint = "max_chips"
        outcome.reasons.append((constraint, f"{capacity}: {state:,.2f} TB of training state needs at least "
                                            f"{need} chips; {limit}"))
        return
    chip_usd, host_usd = chip.usd, (host.usd if host else 0.0)
    cache: dict[int, tuple[float, float]] = {}
    # Run time does not depend on the price: regions priced differently share it.
    shared_hours = ctx.hours_cache.setdefault((offering.id, spot), {})

    def hours_cost(i: int) -> tuple[float, float]:
        hit = cache.get(i)
        if hit is None:
            s = ladder[i]
            hours = shared_hours.get(i)
            if hours is None:
                hours = shared_hours[i] = model.hours(s.chips, s.hosts, s.slices)
            hit = cache[i] = (hours, hours * (s.chips * chip_usd + s.hosts * host_usd))
        return hit

    def hours(i: int) -> float:
        return hours_cost(i)[0]

    def cost(i: int) -> float:
        return hours_cost(i)[1]

    fastest = _first_true(lo, hi - 1, lambda i: hours(i + 1) >= hours(i))
    budget = ctx.budget
    within_budget = _last_true(lo, hi, lambda i: cost(i) <= budget) if budget is not None else hi
    deadline = ctx.deadline_h
    days = deadline / 24
    deadline_words = f"the {days:g}-day deadline" if ctx.deadline_given else f"the default {days:g}-day limit"

    def candidate(i: int) -> _Candidate:
        s = ladder[i]
        h, total = hours_cost(i)
        hosts_loss = 1.0 - model.productivity(s.hosts)
        detail: dict[str, float | int | str] = {"min_chips_for_memory": need, "smallest_fit_chips": ladder[lo].chips}
        if spot:
            detail["spot_time_lost"] = round(hosts_loss, 4)
        evaluation = Evaluation(hours=h, hourly_usd=s.chips * chip_usd + s.hosts * host_usd, total_usd=total,
                                mfu=model.mfu(s.chips, s.slices),
                                goodput=model.goodput * max(model.productivity(s.hosts), 1e-6), detail=detail)
        return _Candidate(offering, regions, spot, s, evaluation, chip, host)

    def keep_closest() -> None:
        """When this group has nothing feasible, keep its closest size for the explanation: the smallest
        product of overshoot factors (time over the deadline x cost over the budget) among a few sizes."""
        def overshoot(i: int) -> float:
            h, c = hours_cost(i)
            return math.log(max(1.0, h / deadline)) + (math.log(max(1.0, c / budget)) if budget else 0.0)

        probes = {lo, fastest, _first_true(lo, fastest, lambda i: hours(i) <= deadline)}
        if budget is not None:
            probes.add(_last_true(lo, hi, lambda i: cost(i) <= budget))
        step = max(1, (fastest - lo) // 8)
        probes.update(range(lo, fastest + 1, step))
        scored = [(overshoot(i), cost(i), i) for i in probes if lo <= i <= hi and math.isfinite(hours(i))]
        if scored:
            score, _, i = min(scored)
            outcome.near.append((score, candidate(i), ""))

    best = _pick_training_size(ctx, outcome, ladder, lo, fastest, within_budget, hours, cost, deadline, budget,
                               deadline_words, capacity)
    if best is None:
        keep_closest()
        return
    outcome.best = candidate(best)
    # A few other sizes that also meet every constraint show the trade-off: larger and faster when the
    # objective is cost, smaller and cheaper when it is time.
    factors = (1.5, 2.0, 3.0) if ctx.objective == "cost" else (1 / 1.5, 1 / 2.0, 1 / 3.0)
    seen = {best}
    for factor in factors:
        i = ladder.first_at_least(math.ceil(ladder[best].chips * factor))
        if i in seen or not lo <= i <= hi:
            continue
        seen.add(i)
        h, c = hours_cost(i)
        if h <= deadline and (budget is None or c <= budget) and (
                h < hours(best) if ctx.objective == "cost" else c < cost(best)):
            outcome.alternatives.append(candidate(i))


def _pick_training_size(ctx: _Context, outcome: _Outcome, ladder: GpuLadder | TpuLadder, lo: int, fastest: int,
                        within_budget: int, hours: Callable[[int], float], cost: Callable[[int], float],
                        deadline: float, budget: float | None, deadline_words: str, capacity: str) -> int | None:
    """The ladder index the objective picks, or None after recording why nothing fits."""
    if within_budget < lo:
        outcome.reasons.append(("budget", f"{capacity}: the smallest fleet that holds the model ({ladder[lo].chips} "
                                          f"chips) costs {_money(cost(lo))}, over the {_money(budget or 0)} budget"))
        return None
    if ctx.objective == "time":
        best = min(fastest, within_budget)
        if hours(best) > deadline:
            what = "the fastest fleet within budget" if within_budget < fastest else "the fastest fleet"
            outcome.reasons.append(("deadline", f"{capacity}: {what} ({ladder[best].chips} chips) takes "
                                                f"{_duration(hours(best))}, past {deadline_words}"))
            return None
    else:
        if hours(fastest) > deadline:
            outcome.reasons.append(("deadline", f"{capacity}: even the fastest fleet ({ladder[fastest].chips} chips) "
                                                f"takes {_duration(hours(fastest))}, past {deadline_words}"))
            return None
        best = _first_true(lo, fastest, lambda i: hours(i) <= deadline)
        if best > within_budget:
            outcome.reasons.append(("budget", f"{capacity}: meeting {deadline_words} takes {ladder[best].chips} chips "
                                              f"costing {_money(cost(best))}, over the {_money(budget or 0)} budget"))
            return None
    return best


def _size_inference(ctx: _Context, offering: Offering, spot: bool, regions: list[str], chip: Price,
                    host: Price | None, outcome: _Outcome) -> None:
    spec = ctx.spec
    assert spec.inference is not None
    model = ctx.inference_model(offering)
    accelerator = ctx.accelerator(offering)
    resolved = ctx.resolved
    cap = ctx.fleet_cap(offering)
    capacity = "spot" if spot else "on-demand"
    headroom = 1.0 + (resolved["inference_spot_serving_headroom"] if spot else 0.0)
    target = spec.inference.tokens_per_second
    chip_usd, host_usd = chip.usd, (host.usd if host else 0.0)
    why_not: list[str] = []
    feasible: list[tuple[tuple, _Candidate]] = []
    for size in replica_sizes(offering, int(resolved["max_replica_chips"])):
        replica, reason = model.replica(size.chips)
        if replica is None:
            why_not.append(f"{size.chips}-chip replica: {reason}")
            continue
        replicas = max(model.min_replicas, math.ceil(target * headroom / replica.tokens_per_second))
        if size.topology is None:
            nodes = math.ceil(replicas * size.chips / offering.chips_per_host)
            fleet = Size(nodes * offering.chips_per_host, nodes, 1, None, offering.machine_type,
                         offering.chips_per_host)
        else:
            fleet = Size(size.chips * replicas, size.hosts * replicas, replicas, size.topology,
                         size.machine_type, size.chips_per_host)
        hourly = fleet.chips * chip_usd + fleet.hosts * host_usd
        hours = spec.inference.hours
        latency_ms = replica.step_seconds * resolved["inference_latency_p99_factor"] * 1000
        utilisation = min(1.0, max(1e-6, model.step_flops_per_sequence * target / (fleet.chips * accelerator.peak_bf16_tflops * 1e12)))
        detail: dict[str, float | int | str] = {
            "replica_chips": size.chips, "replicas": replicas, "batch_per_replica": replica.batch,
            "p99_ms_per_token": round(latency_ms, 1), "tokens_per_second_per_replica": round(replica.tokens_per_second, 1),
            "bound": replica.bound, "min_chips_for_memory": ctx.min_memory_chips(offering),
        }
        evaluation = Evaluation(hours=hours, hourly_usd=hourly, total_usd=hourly * hours, mfu=utilisation,
                                goodput=1.0, detail=detail)
        cand = _Candidate(offering, regions, spot, fleet, evaluation, chip, host)
        over_cap = fleet.chips > cap
        over_budget = ctx.budget is not None and evaluation.total_usd > ctx.budget
        overshoot = (math.log(max(1.0, fleet.chips / cap))
                     + (math.log(max(1.0, evaluation.total_usd / ctx.budget)) if ctx.budget else 0.0))
        outcome.near.append((overshoot, cand, ""))
        if over_cap:
            why_not.append(f"{size.chips}-chip replicas: {replicas} of them need {fleet.chips} chips > max {cap}")
            continue
        if over_budget:
            why_not.append(f"{size.chips}-chip replicas: {_money(evaluation.total_usd)} over the "
                           f"{_money(ctx.budget or 0)} budget")
            continue
        key = ((latency_ms, evaluation.total_usd) if ctx.objective == "time" else (evaluation.total_usd, latency_ms))
        feasible.append((key, cand))
    if feasible:
        feasible.sort(key=lambda item: (item[0], item[1].size.chips))
        outcome.best = feasible[0][1]
        outcome.alternatives = [cand for _, cand in feasible[1:4]]
        return
    if not why_not:
        outcome.reasons.append(("memory", f"{capacity}: no replica size available"))
        return
    if all(w.endswith("weights do not fit") for w in why_not):
        largest = max(s.chips for s in replica_sizes(offering, int(resolved["max_replica_chips"])))
        outcome.reasons.append(("memory", f"{capacity}: {model.weight_bytes / 1e9:,.0f} GB of weights do not fit in the "
                                          f"largest replica here ({largest} x {accelerator.hbm_gb:g} GB)"))
        return
    why_not = [w for w in why_not if not w.endswith("weights do not fit")]
    constraint = ("budget" if any("budget" in w for w in why_not) else
                  "max_chips" if any("> max" in w for w in why_not) else
                  "latency" if any("decode step" in w for w in why_not) else "memory")
    outcome.reasons.append((constraint, f"{capacity}: " + "; ".join(why_not[:3])))


# ----------------------------------------------------------------------------- options and ranking

def _rank_key(objective: str, candidate: _Candidate, region_rank: int) -> tuple:
    e = candidate.evaluation
    latency = float(e.detail.get("p99_ms_per_token", 0.0))
    primary = (e.total_usd, e.hours, latency) if objective == "cost" else (
        (latency, e.total_usd) if "p99_ms_per_token" in e.detail else (e.hours, e.total_usd))
    return (*primary, candidate.offering.id, region_rank, candidate.spot)


def _option(candidate: _Candidate, region: str) -> Option:
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


def describe(option: Option) -> str:
    """Short human label: 'TPU v6e on-demand, 4 x v6e-256 (16x16), gcp us-east5'."""
    name = ACCELERATOR_NAMES.get(option.accelerator, option.accelerator)
    capacity = "spot" if option.spot else ("reserved" if option.provisioning == "reservation" else "on-demand")
    if option.topology:
        generation = shapes.GENERATION_BY_ACCELERATOR[option.accelerator]
        per_slice = option.chips // option.slices
        vm_type = shapes.tpu_vm_type(generation.name, per_slice)
        layout = (f"{option.slices} x {vm_type} ({option.topology})" if option.slices > 1
                  else f"{vm_type} ({option.topology}, {option.chips} chips)")
    else:
        layout = f"{option.hosts} x {option.machine_type} ({option.chips} GPUs)"
    return f"{name} {capacity}, {layout}, {option.cloud} {option.region}"


def _short(option: Option) -> str:
    name = ACCELERATOR_NAMES.get(option.accelerator, option.accelerator)
    capacity = "spot" if option.spot else "on-demand"
    where = CLOUD_NAMES.get(option.cloud, option.cloud)
    return f"{name} {capacity} on {where}"


# ----------------------------------------------------------------------------- the public API

def _context(spec: WorkloadSpec, catalog: Catalog, objective: str) -> _Context:
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    resolved = resolve(spec, catalog.defaults)
    deadline_h, given = deadline_hours(spec, resolved)
    max_chips = spec.constraints.max_chips or int(resolved["max_fleet_chips"])
    return _Context(spec, catalog, objective, resolved, deadline_h, given, spec.constraints.budget_usd, max_chips)


def _catalog_ref(catalog: Catalog) -> CatalogRef:
    return CatalogRef(version=catalog.version, as_of=catalog.as_of.isoformat())


def choose(spec: WorkloadSpec, catalog: Catalog, objective: Literal["cost", "time"] = "cost",
           extra_offerings: Sequence[Offering] = ()) -> Choice:
    """Pick the hardware for a workload. A hardware pin skips the search and estimates the pin.

    Raises NoFeasibleOption (exit 3) with the eliminations and the closest option when nothing fits.
    """
    if spec.hardware is not None:
        return _choose_pinned(spec, catalog, objective, extra_offerings)
    ctx = _context(spec, catalog, objective)
    offerings = list(catalog.offerings) + list(extra_offerings)
    region_order = {o.id: {r: i for i, r in enumerate(spec.constraints.regions or o.regions)} for o in offerings}
    ranked: list[tuple[tuple, _Candidate, str]] = []
    rejected: list[dict] = []
    eliminations: dict[str, list[str]] = {}
    hard_reasons: dict[str, tuple[str, str]] = {}
    near: list[tuple[float, _Candidate, str]] = []
    family_reasons: dict[str, list[str]] = {"gpu": [], "tpu": []}
    offering_reasons: dict[str, list[tuple[str, str]]] = {}
    sizer = _size_inference if spec.kind == "inference" else _size_training

    for offering in offerings:
        hard = _hard_filter(spec, offering)
        if hard is not None:
            constraint, reason = hard
            rejected.append({"offering": offering.id, "reasons": [reason]})
            eliminations.setdefault(constraint, []).append(offering.id)
            hard_reasons[offering.id] = hard
            family_reasons[offering.family].append(reason)
            continue
        reasons: list[tuple[str, str]] = []
        found = False
        for spot in _spot_modes(spec):
            groups = _price_groups(ctx, offering, spot)
            if not groups and spot:
                reasons.append(("spot", "no spot capacity in the allowed regions"))
            for regions, chip, host in groups:
                outcome = _Outcome()
                sizer(ctx, offering, spot, regions, chip, host, outcome)
                near.extend(outcome.near)
                if outcome.best is None:
                    reasons.extend(outcome.reasons)
                    continue
                found = True
                order = region_order[offering.id]
                for region in regions:
                    key = _rank_key(objective, outcome.best, order.get(region, len(order)))
                    ranked.append((key, outcome.best, region))
                for alternative in outcome.alternatives:
                    key = _rank_key(objective, alternative, order.get(regions[0], len(order)))
                    ranked.append((key, alternative, regions[0]))
        offering_reasons[offering.id] = reasons
        if not found:
            unique = _merge_capacity_reasons([reason for _, reason in reasons])
            rejected.append({"offering": offering.id, "reasons": unique})
            for constraint in dict.fromkeys(c for c, _ in reasons):
                eliminations.setdefault(constraint, []).append(offering.id)
            family_reasons[offering.family].extend(unique)

    if not ranked:
        raise _nothing_feasible(ctx, eliminations, near, rejected)

    ranked.sort(key=lambda item: item[0])
    options = [_option(candidate, region) for _, candidate, region in ranked]
    best_key, best, best_region = ranked[0]
    chosen = options[0]
    estimate = _estimate(ctx, best, chosen)
    rationale = _rationale(ctx, options, ranked, family_reasons, near, hard_reasons, offering_reasons)
    closest_infeasible = []
    for family in ("tpu", "gpu"):
        if any(o.family == family for o in options):
            continue
        in_family = sorted((n for n in near if n[1].family == family and math.isfinite(n[0])),
                           key=lambda n: (n[0], n[1].evaluation.total_usd, n[1].offering.id))
        if in_family:
            candidate = in_family[0][1]
            closest_infeasible.append(_option(candidate, candidate.regions[0]))
    return Choice(chosen=chosen, options=options, rejected=rejected, rationale=rationale, estimate=estimate,
                  objective=objective, workload=spec, catalog=_catalog_ref(catalog), chosen_offering=best.offering,
                  closest_infeasible=closest_infeasible,
                  option_details=[dict(candidate.evaluation.detail) for _, candidate, _ in ranked])


def _merge_capacity_reasons(reasons: list[str]) -> list[str]:
    """'on-demand: X' and 'spot: X' become 'on-demand and spot: X'; order and other reasons kept."""
    by_text: dict[str, list[str]] = {}
    for reason in reasons:
        capacity, sep, text = reason.partition(": ")
        if sep and capacity in ("on-demand", "spot"):
            by_text.setdefault(text, []).append(capacity)
        else:
            by_text.setdefault(reason, [])
    merged = []
    for text, capacities in by_text.items():
        capacities = list(dict.fromkeys(capacities))
        merged.append(f"{' and '.join(capacities)}: {text}" if capacities else text)
    return merged


def _estimate(ctx: _Context, candidate: _Candidate, option: Option) -> Estimate:
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


def _percent(a: float, b: float) -> float:
    return (1.0 - a / b) * 100.0 if b > 0 else 0.0


def _rationale(ctx: _Context, options: list[Option], ranked: list, family_reasons: dict[str, list[str]],
               near: list[tuple[float, _Candidate, str]], hard_reasons: dict[str, tuple[str, str]],
               offering_reasons: dict[str, list[tuple[str, str]]]) -> list[str]:
    spec = ctx.spec
    chosen = options[0]
    lines: list[str] = []
    constraints = spec.constraints
    limits = []
    if spec.kind != "inference":
        limits.append(f"the {ctx.deadline_h / 24:g}-day deadline" if ctx.deadline_given
                      else f"the default {ctx.deadline_h / 24:g}-day limit (no deadline set)")
    if ctx.budget is not None:
        limits.append(f"the {_money(ctx.budget)} budget")
    goal = ("cheapest option" if ctx.objective == "cost" else
            "lowest-latency option" if spec.kind == "inference" else "fastest option")
    meets = f" that meets {' and '.join(limits)}" if limits else ""
    if spec.kind == "inference":
        summary = (f"{describe(chosen)}: {_money(chosen.hourly_usd)}/h, {_money(chosen.total_usd)} over "
                   f"{chosen.hours:g} h of service")
    else:
        summary = (f"{describe(chosen)}: {_duration(chosen.hours)}, {_money(chosen.total_usd)} "
                   f"({_money(chosen.hourly_usd)}/h) at {chosen.mfu:.0%} MFU")
    lines.append(f"Chosen: {summary}; the {goal}{meets}.")

    other = "gpu" if chosen.family == "tpu" else "tpu"
    other_name = other.upper()
    rival = next((o for o in options if o.family == other), None)
    head = f"{ACCELERATOR_NAMES[chosen.accelerator]} {'spot' if chosen.spot else 'on-demand'}"
    if rival is not None:
        layout = describe(rival).split(", ", 1)[1]
        rival_terms = (f"{_money(rival.hourly_usd)}/h" if spec.kind == "inference"
                       else f"{_duration(rival.hours)}, {_money(rival.total_usd)}")
        if ctx.objective == "cost" or spec.kind == "inference":
            saving = _percent(chosen.total_usd, rival.total_usd)
            compare = f"{saving:.0f}% cheaper than" if saving >= 0.5 else (
                "as cheap as" if saving > -0.5 else f"{-saving:.0f}% dearer than")
            if ctx.objective == "time" and spec.kind == "inference":
                compare = f"lower latency than (and {compare})"
            lines.append(f"{head}: {compare} the best {other_name} option, {_short(rival)} ({layout}: {rival_terms})"
                         + (f", and meets {limits[0]}." if limits and spec.kind != "inference" else "."))
        else:
            faster = _percent(chosen.hours, rival.hours)
            lines.append(f"{head}: {faster:.0f}% faster than the best {other_name} option, {_short(rival)} "
                         f"({layout}: {rival_terms}), within budget.")
    else:
        excluded = [r for oid, (c, r) in hard_reasons.items() if c in ("framework", "portability")
                    and ctx.catalog and _family_of(ctx, oid) == other]
        closest = sorted((n for n in near if n[1].family == other), key=lambda n: n[0])
        if excluded:
            pass   # the framework / portability line below says why
        elif closest:
            candidate = closest[0][1]
            option = _option(candidate, candidate.regions[0])
            misses = _misses(ctx, option)
            if spec.kind == "inference":
                terms = f"would cost {_money(option.hourly_usd)}/h"
            else:
                terms = f"would take {_duration(option.hours)} and cost {_money(option.total_usd)}"
            saving = _percent(chosen.total_usd, option.total_usd)
            if ctx.objective == "time" and spec.kind != "inference" and chosen.hours > 0:
                versus = f"; {head} is {option.hours / chosen.hours:.1f}x faster and meets every constraint"
            elif saving >= 0.5:
                versus = f"; {head} is {saving:.0f}% cheaper and meets every constraint"
            else:
                versus = f"; {head} meets every constraint"
            lines.append(f"No {other_name} option is feasible: the closest, {describe(option)}, {terms} "
                         f"({misses}){versus}.")
        elif family_reasons.get(other):
            lines.append(f"No {other_name} option is feasible: {family_reasons[other][0]}.")

    if constraints.custom_cuda_kernels:
        lines.append(f"Framework {spec.framework} with custom CUDA kernels: NVIDIA GPUs only, so every TPU offering "
                     f"was rejected for that reason, whatever its price.")
    elif constraints.portability:
        lines.append("Portability required: GPUs only (the same images run on any cloud or on-prem); "
                     "TPUs are Google Cloud only.")
    elif spec.framework in XLA_FRAMEWORKS:
        fit = "TPUs run it natively" if chosen.family == "tpu" else "it runs on GPUs too (XLA:GPU)"
        lines.append(f"Framework {spec.framework} compiles through XLA: {fit}; both families were considered.")
    else:
        lines.append(f"Framework {spec.framework} (eager, CUDA): GPUs; TPUs would need pytorch-xla.")

    same = [o for o in options[1:] if o.offering == chosen.offering and o.spot != chosen.spot]
    if chosen.spot:
        detail = ranked[0][1].evaluation.detail
        lost = detail.get("spot_time_lost")
        hosts = f"{chosen.hosts} host" + ("s" if chosen.hosts != 1 else "")
        extra = f"; preemptions at {hosts} cost ~{float(lost):.1%} of wall-clock" if lost else ""
        if same:
            lines.append(f"Spot: {_percent(chosen.total_usd, same[0].total_usd):.0f}% cheaper than on-demand for the "
                         f"same hardware{extra}; checkpoints every "
                         f"{ctx.resolved['checkpoint_interval_minutes']:g} min bound the lost work."
                         if spec.kind != "inference" else
                         f"Spot: {_percent(chosen.total_usd, same[0].total_usd):.0f}% cheaper than on-demand, with "
                         f"{ctx.resolved['inference_spot_serving_headroom']:.0%} extra replicas to ride out preemptions.")
        else:
            lines.append(f"Spot capacity{extra}.")
    elif constraints.spot == "allowed" and spec.kind != "inference":
        spot_reasons = [r.removeprefix("spot: ") for c, r in offering_reasons.get(chosen.offering, [])
                        if r.startswith("spot: ")]
        if same:
            lines.append(f"On-demand over spot: spot here would cost {_money(same[0].total_usd)} "
                         f"and take {_duration(same[0].hours)}.")
        elif spot_reasons:
            lines.append(f"On-demand over spot: a synchronous job restarts whenever any host is preempted, and on "
                         f"spot {spot_reasons[0]}.")
    elif constraints.spot == "never":
        lines.append("Spot disallowed by the workload (spot: never).")

    detail = ranked[0][1].evaluation.detail
    if spec.kind == "inference":
        assert spec.inference is not None
        lines.append(f"Sized for {spec.inference.tokens_per_second:,.0f} tok/s at p99 <= {spec.inference.p99_latency_ms:g} ms/token: "
                     f"{detail['replicas']} replica(s) of {detail['replica_chips']} chip(s), batch "
                     f"{detail['batch_per_replica']} each at ~{detail['p99_ms_per_token']} ms/token p99 "
                     f"({detail['bound']}-bound), {detail['tokens_per_second_per_replica']:,} tok/s per replica.")
    else:
        state = training_memory_bytes(spec, ctx.resolved) / 1e12
        need, smallest = int(detail["min_chips_for_memory"]), int(detail.get("smallest_fit_chips", chosen.chips))
        memory = (f"{state:,.2f} TB of weights, gradients, optimizer state and activations need at least {need} chips "
                  f"(the smallest {'slice' if chosen.family == 'tpu' else 'set of whole nodes'} holding them: "
                  f"{smallest} chips)")
        work = f"{chosen.chips} chips run {training_flops(spec):.2e} FLOPs in {_duration(chosen.hours)}"
        if ctx.objective == "time":
            lines.append(f"Sized for speed: {memory}; {work}, the fastest fleet within the limits.")
        elif chosen.chips <= smallest:
            lines.append(f"Sized by memory: {memory}; the smallest such fleet already meets {limits[0]}: {work}.")
        else:
            lines.append(f"Sized by {limits[0]}: {memory}, but finishing in time takes more: {work}.")
    runner = next((o for o in options[1:] if o.offering != chosen.offering or o.spot != chosen.spot), None)
    if runner is not None:
        delta = (runner.total_usd / chosen.total_usd - 1) * 100 if chosen.total_usd else 0.0
        terms = (f"{_money(runner.hourly_usd)}/h" if spec.kind == "inference"
                 else f"{_duration(runner.hours)}")
        lines.append(f"Runner-up: {describe(runner)} at {_money(runner.total_usd)} ({delta:+.0f}%), {terms}.")
    return lines


def _family_of(ctx: _Context, offering_id: str) -> str:
    try:
        return ctx.catalog.offering(offering_id).family
    except KeyError:
        return "gpu"


def _misses(ctx: _Context, option: Option) -> str:
    misses = []
    if ctx.spec.kind != "inference" and option.hours > ctx.deadline_h:
        misses.append(f"misses the {ctx.deadline_h / 24:g}-day {'deadline' if ctx.deadline_given else 'limit'} by "
                      f"{_duration(option.hours - ctx.deadline_h)}")
    if ctx.budget is not None and option.total_usd > ctx.budget:
        misses.append(f"over the {_money(ctx.budget)} budget by {_money(option.total_usd - ctx.budget)}")
    if option.chips > ctx.max_chips:
        misses.append(f"needs {option.chips} chips > max_chips {ctx.max_chips}")
    return " and ".join(misses) or "meets the limits it was measured against"


def _nothing_feasible(ctx: _Context, eliminations: dict[str, list[str]], near: list[tuple[float, _Candidate, str]],
                      rejected: list[dict]) -> NoFeasibleOption:
    spec = ctx.spec
    labels = {
        "clouds": f"clouds {spec.constraints.clouds}",
        "regions": f"regions {spec.constraints.regions}",
        "framework": ("custom CUDA kernels" if spec.constraints.custom_cuda_kernels else f"framework {spec.framework}"),
        "portability": "portability",
        "spot": f"spot: {spec.constraints.spot}",
        "memory": "memory fit",
        "max_chips": f"max_chips {ctx.max_chips}",
        "deadline": (f"deadline {ctx.deadline_h / 24:g} days" if ctx.deadline_given
                     else f"default limit {ctx.deadline_h / 24:g} days"),
        "budget": f"budget {_money(ctx.budget or 0)}",
        "latency": (f"p99 latency {spec.inference.p99_latency_ms:g} ms" if spec.inference else "latency"),
    }
    lines = [f"nothing feasible for workload {spec.name!r}:"]
    for constraint, offerings in eliminations.items():
        lines.append(f"  {labels.get(constraint, constraint)} eliminated {len(offerings)}: {', '.join(offerings)}")
    closest_option: Option | None = None
    misses = ""
    finite = [n for n in near if math.isfinite(n[0])]
    if finite:
        finite.sort(key=lambda n: (n[0], n[1].evaluation.total_usd, n[1].offering.id))
        candidate = finite[0][1]
        closest_option = _option(candidate, candidate.regions[0])
        misses = _misses(ctx, closest_option)
        lines.append(f"closest: {describe(closest_option)}: {_duration(closest_option.hours)}, "
                     f"{_money(closest_option.total_usd)} ({misses})")
    else:
        lines.append("closest: none (no offering passes the hard constraints)")
    return NoFeasibleOption("\n".join(lines), eliminations, closest_option, misses, rejected, spec, _catalog_ref(ctx.catalog))


# ----------------------------------------------------------------------------- pinned hardware

def _choose_pinned(spec: WorkloadSpec, catalog: Catalog, objective: str, extra_offerings: Sequence[Offering]) -> Choice:
    pin = spec.hardware
    assert pin is not None
    ctx = _context(spec, catalog, objective)
    clouds = [pin.cloud] if pin.cloud else list(spec.constraints.clouds)
    offerings = [o for o in list(catalog.offerings) + list(extra_offerings)
                 if o.accelerator == pin.accelerator and o.cloud in clouds]
    generation = shapes.GENERATION_BY_ACCELERATOR.get(pin.accelerator)
    if pin.machine_type:
        if generation is not None:
            offerings = [o for o in offerings if pin.machine_type in
                         {o.machine_type, *generation.single_host_machine_types.values()}]
        else:
            offerings = [o for o in offerings if o.machine_type == pin.machine_type]
    if pin.region:
        offerings = [o for o in offerings if pin.region in o.regions]
    where = f"{pin.accelerator} on {', '.join(clouds)}" + (f" in {pin.region}" if pin.region else "") + (
        f" as {pin.machine_type}" if pin.machine_type else "")
    ref = _catalog_ref(catalog)
    if not offerings:
        known = sorted({f"{o.id} ({', '.join(o.regions)})" for o in catalog.offerings if o.accelerator == pin.accelerator})
        raise NoFeasibleOption(f"hardware pin: the catalog has no offering of {where}; offerings of "
                               f"{pin.accelerator}: {'; '.join(known) or 'none'}",
                               {"hardware": [pin.accelerator]}, None, workload=spec, catalog=ref)
    hard = _hard_filter(spec.model_copy(update={"constraints": spec.constraints.model_copy(
        update={"clouds": clouds, "regions": None})}), offerings[0])
    if hard is not None and hard[0] in ("framework", "portability"):
        raise NoFeasibleOption(f"hardware pin {pin.accelerator}: {hard[1]}", {hard[0]: [o.id for o in offerings]},
                               None, workload=spec, catalog=ref)
    spot = pin.spot if pin.spot is not None else spec.constraints.spot == "required"
    if generation is not None:
        if pin.topology:
            try:
                shapes.check_topology(generation.name, pin.topology)
            except shapes.ShapeError as error:
                raise NoFeasibleOption(f"hardware pin: {error}", {"hardware": [pin.accelerator]}, None,
                                       workload=spec, catalog=ref) from None
            topology, slices = pin.topology, pin.slices or max(1, math.ceil(pin.chips / shapes.topology_chips(pin.topology)))
        elif pin.slices:
            topology = shapes.smallest_topology(generation.name, math.ceil(pin.chips / pin.slices))
            slices = pin.slices
        else:
            topology, slices = shapes.slice_layout(generation.name, pin.chips)
    candidates: list[tuple[tuple, _Candidate, str]] = []
    notes: list[str] = []
    for offering in offerings:
        regions = [pin.region] if pin.region else list(offering.regions)
        for region in regions:
            prices = offering.prices(region, spot)
            if prices is None:
                notes.append(f"{offering.id} has no {'spot' if spot else 'on-demand'} price in {region}")
                continue
            chip, host = prices
            if generation is not None:
                size = Size(shapes.topology_chips(topology) * slices, shapes.hosts_per_slice(generation.name, topology) * slices,
                            slices, topology, shapes.machine_type(generation.name, topology),
                            shapes.chips_per_host(generation.name, topology))
            else:
                nodes = math.ceil(pin.chips / offering.chips_per_host)
                size = Size(nodes * offering.chips_per_host, nodes, 1, None, offering.machine_type, offering.chips_per_host)
            candidate = _evaluate_pin(ctx, offering, spot, region, chip, host, size)
            if candidate is None:
                continue
            candidates.append(((candidate.evaluation.total_usd, offering.id, list(offering.regions).index(region)),
                               candidate, region))
    if not candidates:
        raise NoFeasibleOption(f"hardware pin: no {'spot' if spot else 'on-demand'} price for {where}"
                               + (f" ({'; '.join(notes[:3])})" if notes else ""),
                               {"spot": [o.id for o in offerings]}, None, workload=spec, catalog=ref)
    candidates.sort(key=lambda item: item[0])
    _, best, region = candidates[0]
    option = _option(best, region)
    need = ctx.min_memory_chips(best.offering)
    replica_need = best.evaluation.detail.get("unservable")
    if spec.kind != "inference" and option.chips < need:
        raise NoFeasibleOption(f"hardware pin: {option.chips} x {pin.accelerator} cannot hold the training state "
                               f"({training_memory_bytes(spec, ctx.resolved) / 1e12:,.2f} TB needs at least {need} chips)",
                               {"memory": [best.offering.id]}, option, "does not fit in memory", workload=spec, catalog=ref)
    if replica_need:
        raise NoFeasibleOption(f"hardware pin: {option.chips} x {pin.accelerator} cannot serve the model: {replica_need}",
                               {"memory": [best.offering.id]}, option, str(replica_need), workload=spec, catalog=ref)
    rationale = [f"Pinned: {describe(option)} (hardware pin; no search). "
                 f"{'Runs ' + _duration(option.hours) if spec.kind != 'inference' else 'Serves'} at "
                 f"{_money(option.hourly_usd)}/h, {_money(option.total_usd)} in total."]
    if option.chips != pin.chips:
        unit = "whole nodes" if generation is None else f"valid TPU {generation.name} slices"
        rationale.append(f"{pin.chips} chips rounded up to {option.chips} ({unit}).")
    if pin.tpu_type:
        rationale.append(f"{pin.tpu_type} is {pin.chips} chips ({generation.name if generation else ''} type names "
                         f"{'count TensorCores, two per chip' if generation and generation.cores_per_chip == 2 else 'count chips'}).")
    if spec.kind != "inference" and option.hours > ctx.deadline_h:
        rationale.append(f"Warning: misses the {ctx.deadline_h / 24:g}-day "
                         f"{'deadline' if ctx.deadline_given else 'default limit'} ({_duration(option.hours)}).")
    if ctx.budget is not None and option.total_usd > ctx.budget:
        rationale.append(f"Warning: {_money(option.total_usd)} is over the {_money(ctx.budget)} budget.")
    if spec.kind == "inference":
        detail = best.evaluation.detail
        served = float(detail.get("tokens_per_second", 0))
        assert spec.inference is not None
        if served < spec.inference.tokens_per_second:
            rationale.append(f"Warning: serves ~{served:,.0f} tok/s, below the {spec.inference.tokens_per_second:,.0f} "
                             f"tok/s target.")
        rationale.append(f"{detail['replicas']} replica(s) of {detail['replica_chips']} chip(s), batch "
                         f"{detail['batch_per_replica']} at ~{detail['p99_ms_per_token']} ms/token p99.")
    estimate = _estimate(ctx, best, option)
    return Choice(chosen=option, options=[option], rejected=[], rationale=rationale, estimate=estimate,
                  objective=objective, workload=spec, catalog=ref, chosen_offering=best.offering, pinned=True)


def _evaluate_pin(ctx: _Context, offering: Offering, spot: bool, region: str, chip: Price, host: Price | None,
                  size: Size) -> _Candidate | None:
    spec = ctx.spec
    chip_usd, host_usd = chip.usd, (host.usd if host else 0.0)
    hourly = size.chips * chip_usd + size.hosts * host_usd
    if spec.kind != "inference":
        model = ctx.training_model(offering, spot)
        hours = model.hours(size.chips, size.hosts, size.slices)
        if not math.isfinite(hours):
            hours = 1e9
        detail: dict[str, float | int | str] = {"min_chips_for_memory": ctx.min_memory_chips(offering)}
        if spot:
            detail["spot_time_lost"] = round(1.0 - model.productivity(size.hosts), 4)
        evaluation = Evaluation(hours=hours, hourly_usd=hourly, total_usd=hours * hourly,
                                mfu=model.mfu(size.chips, size.slices),
                                goodput=model.goodput * max(model.productivity(size.hosts), 1e-6), detail=detail)
        return _Candidate(offering, [region], spot, size, evaluation, chip, host)
    assert spec.inference is not None
    model_i = ctx.inference_model(offering)
    accelerator = ctx.accelerator(offering)
    if size.topology is not None:
        options = [(shapes.topology_chips(size.topology), size.slices)]
    else:
        options = [(r.chips, size.chips // r.chips) for r in replica_sizes(offering, int(ctx.resolved["max_replica_chips"]))]
    best: tuple[float, Replica, int] | None = None
    reason = "no replica size"
    for replica_chips, replicas in options:
        replica, why = model_i.replica(replica_chips)
        if replica is None:
            reason = f"{replica_chips}-chip replica: {why}"
            continue
        served = replica.tokens_per_second * replicas
        if best is None or served > best[0]:
            best = (served, replica, replicas)
    hours = spec.inference.hours
    if best is None:
        detail = {"unservable": reason, "min_chips_for_memory": ctx.min_memory_chips(offering)}
        evaluation = Evaluation(hours=hours, hourly_usd=hourly, total_usd=hourly * hours, mfu=1e-6, goodput=1.0,
                                detail=detail)
        return _Candidate(offering, [region], spot, size, evaluation, chip, host)
    served, replica, replicas = best
    latency_ms = replica.step_seconds * ctx.resolved["inference_latency_p99_factor"] * 1000
    used = min(served, spec.inference.tokens_per_second)
    detail = {"replica_chips": replica.chips, "replicas": replicas, "batch_per_replica": replica.batch,
              "p99_ms_per_token": round(latency_ms, 1), "tokens_per_second": round(served, 1),
              "tokens_per_second_per_replica": round(replica.tokens_per_second, 1), "bound": replica.bound,
              "min_chips_for_memory": ctx.min_memory_chips(offering)}
    utilisation = min(1.0, max(1e-6, model_i.step_flops_per_sequence * used / (size.chips * accelerator.peak_bf16_tflops * 1e12)))
    evaluation = Evaluation(hours=hours, hourly_usd=hourly, total_usd=hourly * hours, mfu=utilisation, goodput=1.0,
                            detail=detail)
    return _Candidate(offering, [region], spot, size, evaluation, chip, host)


# ----------------------------------------------------------------------------- the Plan

def make_plan(spec: WorkloadSpec, choice: Choice, catalog: Catalog) -> Plan:
    """Turn a Choice into the Plan the components build: pools, fabric, zones, capacity, storage."""
    option = choice.chosen
    offering = choice.chosen_offering
    if offering is None or offering.id != option.offering:
        offering = catalog.offering(option.offering)
    region_info = offering.regions[option.region]
    training = spec.kind != "inference"
    tpu = gpu = None
    if option.family == "tpu":
        generation = shapes.GENERATION_BY_ACCELERATOR[option.accelerator]
        assert option.topology is not None
        per_slice = shapes.topology_chips(option.topology)
        tpu = TpuPool(generation=generation.name, topology=option.topology, chips_per_slice=per_slice,  # type: ignore[arg-type]
                      slices=option.slices, machine_type=shapes.machine_type(generation.name, option.topology),
                      chips_per_host=shapes.chips_per_host(generation.name, option.topology),
                      hosts_per_slice=shapes.hosts_per_slice(generation.name, option.topology),
                      gke_accelerator=generation.gke_accelerator,
                      tpu_vm_type=shapes.tpu_vm_type(generation.name, per_slice),
                      runtime_version=generation.runtime_version)
        zones = [option.zone or region_info.zones[0]]
    else:
        multi_node_training = training and option.hosts > 1
        gpu = GpuPool(machine_type=offering.machine_type,
                      alternate_machine_types=list(offering.spot_alternates) if (option.spot and offering.cloud == "aws") else [],
                      gpus_per_node=offering.chips_per_host, nodes=option.hosts,
                      guest_accelerator=offering.guest_accelerator if offering.cloud == "gcp" else None,
                      fabric=offering.fabric, extra_networks=offering.extra_networks,
                      efa_interfaces=offering.efa_interfaces, local_ssd_count=offering.local_ssd_count,
                      compact_placement=multi_node_training)
        # Tightly coupled training lives in one zone (placement policy / cluster placement group);
        # serving spreads over every zone that has the GPU.
        zones = [option.zone or region_info.zones[0]] if training else list(region_info.zones)
    capacity = Capacity(spot=option.spot, provisioning=option.provisioning, reservation=offering.reservation)
    storage, storage_reason = filesystem_plan(spec, option.cloud, option.hosts, option.hourly_usd, catalog.defaults)
    rationale = list(choice.rationale) + [f"Storage: {storage_reason}."]
    return Plan(workload=spec, catalog=choice.catalog, chosen=option, cloud=option.cloud, region=option.region,
                zones=zones, family=option.family, tpu=tpu, gpu=gpu, capacity=capacity, storage=storage,
                estimate=choice.estimate, rationale=rationale, pinned=choice.pinned)


def plan_from_pin(spec: WorkloadSpec, catalog: Catalog, extra_offerings: Sequence[Offering] = ()) -> Plan:
    """A Plan for the workload's hardware pin, without a search. Raises ValueError without a pin."""
    if spec.hardware is None:
        raise ValueError("plan_from_pin needs a workload with a 'hardware' pin")
    return make_plan(spec, _choose_pinned(spec, catalog, "cost", extra_offerings), catalog)


def choose_plan(spec: WorkloadSpec, catalog: Catalog, objective: Literal["cost", "time"] = "cost",
                extra_offerings: Sequence[Offering] = ()) -> Plan:
    """choose() then make_plan(): the one call a stack program needs when no plan is pinned."""
    return make_plan(spec, choose(spec, catalog, objective, extra_offerings), catalog)
