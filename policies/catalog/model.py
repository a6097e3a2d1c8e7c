"""Typed catalog: accelerators, offerings with dated prices, and the estimator's defaults.

Everything here is validated once at load time so selection can trust it: a price is positive,
finite, not a placeholder and names its source and as-of date; spot never costs more than
on-demand; a TPU host size divides every multi-host slice.
"""

# No `from __future__ import annotations` in a module of pydantic models: pydantic would compile each field's
# annotation string when its class is defined, ~3 ms of every `accel choose` (docs/choose.md, "Start-up").

import math
from datetime import date, timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from accel.policies import hardware

from accel.policies.hardware import shapes
from accel.policies.plan import GpuFabric, Provisioning
from accel.base.model import StrictModel
from accel.policies.workload import AcceleratorId, Cloud


def _read_by_today(day: date) -> date:
    """An as-of date is when a figure was read: never a day still to come (one day's grace for time zones)."""
    today = date.today()
    if day > today + timedelta(days=1):
        raise ValueError(f"{day.isoformat()} is in the future (today is {today.isoformat()}): an as_of date says when "
                         "the figure was read, so write the day you read it")
    return day


# The date a price, source or catalog was read (refused when still to come).
AsOfDate = Annotated[date, AfterValidator(_read_by_today)]

# Values public price feeds use for "unknown"; a real price is never exactly one of these.
SENTINEL_PRICES: frozenset[float] = frozenset({700.0, 999.0, 9999.0, 99999.0, 999999.0, 1e6, 1e9})
MAX_CHIP_HOUR_USD = 150.0     # above this a "per chip-hour" price is really a per-instance price
MAX_HOST_HOUR_USD = 500.0


class Source(StrictModel):
    title: str = Field(min_length=3)
    # Where a user checks the figure: a public page (https://...) or, for an overlay, the user's own file.
    page: str = Field(min_length=3)
    as_of: AsOfDate

    @property
    def is_estimate(self) -> bool:
        """A source whose title starts with "estimate" gives figures derived by a stated rule, not a price list."""
        return self.title.lower().startswith("estimate")


_ZONE_KEYS = ("zone_usd", "zone_instance_usd")


class Price(StrictModel):
    """A price in USD with where it came from. `usd` is per chip-hour unless the field says otherwise.

    A price observed zone by zone (AWS spot varies by Availability Zone) is given as `zone_usd` (per chip-hour)
    or `zone_instance_usd` (per instance-hour), a mapping of zone to price; the region's price `usd` is then the
    median over its zones, and `by_zone` keeps every zone's figure so the spread can be shown."""

    usd: float
    source: str = Field(min_length=3)
    as_of: AsOfDate
    # True when the figure is not read off a price list but derived by a rule the source states (its title
    # starts with "estimate"): `accel choose` says so next to a chosen price.
    estimate: bool = False
    by_zone: dict[str, float] | None = Field(None, description="Observed price per zone, per chip-hour; usd is "
                                                                 "their median")

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        context = info.context or {}
        given = [key for key in ("usd", "instance_usd", *_ZONE_KEYS) if key in data]
        if len(given) > 1:
            raise ValueError(f"give one of usd (per chip-hour), instance_usd (per instance-hour), zone_usd or "
                             f"zone_instance_usd (per zone), not {' and '.join(given)}")
        per_host = context.get("chips_per_host")
        if "instance_usd" in data or "zone_instance_usd" in data:
            if not per_host:
                raise ValueError("an instance price needs the offering's chips_per_host to become a per-chip price")
        if "instance_usd" in data:
            instance = data.pop("instance_usd")
            _check_amount(instance)
            data["usd"] = float(instance) / per_host
        for key in _ZONE_KEYS:
            if key in data:
                data["by_zone"] = _zone_prices(data.pop(key), key, per_host if key == "zone_instance_usd" else 1)
                from statistics import median  # only a catalog being validated (a warm run reads it validated)

                data["usd"] = median(data["by_zone"].values())
        source = data.get("source")
        known = (context.get("sources") or {}).get(source) if isinstance(source, str) else None
        if known is not None:
            data["source"] = f"{source}: {known.title}, {known.page}"
            data.setdefault("as_of", known.as_of)
            if known.is_estimate and data.get("estimate") is False:
                raise ValueError(f"price source {source!r} is an estimate ({known.title[:60]}...): a figure derived "
                                 "by a rule cannot be marked estimate: false; cite a price list instead")
            data["estimate"] = bool(data.get("estimate")) or known.is_estimate
        elif "as_of" not in data or data["as_of"] is None:
            sources = ", ".join(sorted(context.get("sources") or {})) or "none defined"
            raise ValueError(f"price source {source!r} is not a known source id ({sources}); "
                             "give an as_of date with it")
        return data

    @field_validator("usd", mode="before")
    @classmethod
    def _amount(cls, value: Any) -> Any:
        _check_amount(value)
        return value

    @property
    def zone_range(self) -> tuple[float, float] | None:
        """(cheapest, dearest) zone figure per chip-hour, or None for a price not observed by zone."""
        if not self.by_zone:
            return None
        return min(self.by_zone.values()), max(self.by_zone.values())


def _zone_prices(value: Any, key: str, divisor: int) -> dict[str, float]:
    """Per-chip prices by zone from `zone_usd` / `zone_instance_usd`, each checked like any price."""
    if not isinstance(value, dict) or not value:
        raise ValueError(f"{key} maps each zone to its price, e.g. {{use1-az1: 14.25, use1-az2: 47.21}}; "
                         f"got {value!r}")
    prices = {}
    for zone, amount in value.items():
        if not isinstance(zone, str) or not zone:
            raise ValueError(f"{key}: zone {zone!r} is not a zone name")
        try:
            _check_amount(amount)
        except ValueError as error:
            raise ValueError(f"{key}.{zone}: {error}") from None
        prices[zone] = float(amount) / divisor
    return prices


def _check_amount(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"a price must be a number of US dollars, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"a price must be a positive number of US dollars, got {value!r}")
    if float(value) in SENTINEL_PRICES:
        raise ValueError(f"{value!r} is a placeholder (sentinel) value that price feeds use for "
                         "'unknown', not a real price")


class Accelerator(StrictModel):
    id: AcceleratorId
    family: Literal["gpu", "tpu"]
    generation: str | None = None           # TPU generation name, checked against the hardware table
    peak_bf16_tflops: float = Field(gt=0, description="Dense (no sparsity) peak bf16 TFLOP/s per chip")
    peak_fp8_tflops: float | None = Field(None, gt=0)
    hbm_gb: float = Field(gt=0, description="Accelerator memory per chip, decimal GB")
    hbm_gbps: float = Field(gt=0, description="Memory bandwidth per chip, GB/s")
    cores_per_chip: int = Field(1, ge=1, le=2)
    mfu_class: str
    source: str = Field(min_length=3)

    @model_validator(mode="after")
    def _tpu_has_generation(self) -> "Accelerator":
        if self.family == "tpu":
            if self.generation is None:
                raise ValueError(f"TPU accelerator {self.id!r} needs a generation (v4, v5e, v5p, v6e)")
            expected = shapes.generation(self.generation).accelerator
            if expected != self.id:
                raise ValueError(f"generation {self.generation!r} is {expected}, not {self.id!r}")
        elif self.generation is not None:
            raise ValueError(f"GPU accelerator {self.id!r} has no TPU generation")
        return self

    @property
    def hbm_bytes(self) -> float:
        return self.hbm_gb * 1e9


_REGION_PRICES = ("on_demand", "spot")


class RegionInfo(StrictModel):
    """Where an offering is sold and what it costs there. Every region carries its own on-demand and spot
    price (spot: null where spot is not sold), so no region silently inherits another's figure; the host VM
    prices are given where the cloud bills the host apart from the accelerators (Google Cloud A2/A3/G2)."""

    zones: list[str] = Field(min_length=1, description="Zones of the region that have the accelerator")
    on_demand: Price
    spot: Price | None
    host_on_demand: Price | None = None
    host_spot: Price | None = None

    @model_validator(mode="before")
    @classmethod
    def _own_prices(cls, data: Any) -> Any:
        if isinstance(data, dict):
            missing = [name for name in _REGION_PRICES if name not in data]
            if missing:
                raise ValueError(f"no {' or '.join(missing)} price of its own: every region carries its own on-demand "
                                 "and spot price (write spot: null where spot is not sold)")
            if data.get("on_demand") is None:
                raise ValueError("on_demand is null: every offered region needs an on-demand price")
        return data


class NodeLimit(StrictModel):
    """The most nodes one node pool / node group of this offering can hold, and why.

    A GPU fleet is one pool, so this caps the fleet; a TPU multislice is one pool per slice, so it caps
    the hosts of one slice. `applies_to: training` limits only multi-node training pools (e.g. GKE compact
    placement, which only tightly coupled training asks for); `all` limits serving fleets too. `adjustable`
    marks a quota that can be raised (EKS nodes per managed node group), as opposed to a fixed limit."""

    value: int = Field(gt=0)
    name: str = Field(min_length=3, description="What sets the limit, e.g. 'GKE compact placement'")
    applies_to: Literal["training", "all"] = "all"
    adjustable: bool = Field(False, description="A quota that can be raised (then give the offering your own "
                                                "max_nodes), not a fixed limit of the service")
    source: str = Field(min_length=3)
    max_pools: int | None = Field(None, gt=0, description="Most pools of this kind in one cluster (EKS managed "
                                                          "node groups per cluster), when there is such a limit")
    cluster_max_nodes: int | None = Field(None, gt=0, description="Most nodes in one cluster, when limited")

    def applies(self, training: bool) -> bool:
        return training or self.applies_to == "all"

    @property
    def fleet_max_nodes(self) -> int | None:
        """The most nodes a GPU fleet of such pools reaches in one cluster (None: no known cluster limit)."""
        caps = [cap for cap in (self.value * self.max_pools if self.max_pools else None, self.cluster_max_nodes)
                if cap is not None]
        return min(caps) if caps else None


class Offering(StrictModel):
    """One machine type (or TPU generation) on one cloud, priced per chip-hour."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    cloud: Cloud
    accelerator: AcceleratorId
    machine_type: str = Field(min_length=1, description="For TPUs: the multi-host GKE machine type")
    chips_per_host: int = Field(gt=0, le=16)
    regions: dict[str, RegionInfo] = Field(min_length=1, description="Where it is sold, each with its own prices")
    path: str = Field("gke-gpu-node-pool", description="How it is provisioned, e.g. gke-tpu-node-pool")
    provisioning: Provisioning = "on-demand"
    reservation: str | None = None
    max_chips: int | None = Field(None, gt=0, description="Capacity ceiling (reservation, quota, inventory)")
    training_max_nodes: int | None = Field(None, gt=0)
    max_nodes: NodeLimit | None = Field(None, description="Most nodes in one node pool / node group, with its source")
    guest_accelerator: str | None = None
    fabric: GpuFabric = "none"
    extra_networks: int = Field(0, ge=0)
    efa_interfaces: int = Field(0, ge=0)
    local_ssd_count: int = Field(0, ge=0)
    spot_alternates: list[str] = Field(default_factory=list)
    notes: str | None = None
    nvlink_clique_nodes: int | None = Field(
        None, gt=1, description="Nodes of one NVLink clique the nodes are labelled with (an existing cluster's "
        "inventory with nvlink_clique_label: HardwareFacts.inventory_clique_nodes; UltraServer Capacity Blocks that "
        "say their type: policies/cloud/reservations.py declared_clique_nodes), the unit a tensor-parallel group may "
        "span nodes within; None: the machine type's placement unit in the hardware table")

    @model_validator(mode="after")
    def _consistent(self) -> "Offering":
        generation = shapes.GENERATION_BY_ACCELERATOR.get(self.accelerator)
        if generation is not None:
            if self.cloud == "aws":
                raise ValueError(f"TPUs ({self.accelerator}) exist only on Google Cloud or an inventory cluster")
            bad = [t for t in shapes.valid_topologies(generation.name)
                   if shapes.topology_chips(t) > 8 and shapes.topology_chips(t) % self.chips_per_host]
            if bad:
                raise ValueError(f"chips_per_host {self.chips_per_host} does not divide the TPU {generation.name} "
                                 f"multi-host slices (e.g. {bad[0]} = {shapes.topology_chips(bad[0])} chips); "
                                 "multi-host TPU VMs have 4 chips")
        billed_hosts = {region for region, info in self.regions.items() if info.host_on_demand is not None}
        if billed_hosts and billed_hosts != set(self.regions):
            region = sorted(set(self.regions) - billed_hosts)[0]
            raise ValueError(f"region {region} has no host_on_demand price while {sorted(billed_hosts)[0]} bills the "
                             "host VM apart: give every region its host prices")
        for region, info in self.regions.items():
            on_demand, spot, host_on_demand, host_spot = info.on_demand, info.spot, info.host_on_demand, info.host_spot
            where = f" in {region}"
            if on_demand.usd > MAX_CHIP_HOUR_USD:
                raise ValueError(f"on-demand price ${on_demand.usd:g} per chip-hour{where} is implausible; "
                                 "a per-instance price belongs in instance_usd")
            if spot is not None and spot.usd > on_demand.usd:
                raise ValueError(f"spot price ${spot.usd:g} is above the on-demand price ${on_demand.usd:g}"
                                 f" per chip-hour{where}")
            for host in (host_on_demand, host_spot):
                if host is not None and host.usd > MAX_HOST_HOUR_USD:
                    raise ValueError(f"host price ${host.usd:g} per hour{where} is implausible")
            if host_spot is not None and host_on_demand is not None and host_spot.usd > host_on_demand.usd:
                raise ValueError(f"host spot price ${host_spot.usd:g} is above the host on-demand price "
                                 f"${host_on_demand.usd:g}{where}")
            if spot is not None and host_on_demand is not None and host_spot is None:
                raise ValueError(f"spot capacity{where} needs a host_spot price: the host VM is billed apart")
        if self.fabric == "efa" and (self.cloud != "aws" or self.efa_interfaces == 0):
            raise ValueError("fabric efa is AWS-only and needs efa_interfaces > 0")
        if hardware.current().fabrics[self.fabric].cloud == "gcp" and (self.cloud != "gcp" or not self.extra_networks):
            raise ValueError(f"fabric {self.fabric} is Google Cloud-only and needs extra_networks > 0")
        # provisioning 'reservation' (or 'capacity-block') without a name: the machine is sold only as reserved
        # capacity (A4X: reservations; p6e-gb200: UltraServer Capacity Blocks), so only a declared reservation of
        # it (accel:reservations) is sized (selection.candidates.price_points); its prices stand for that capacity.
        if self.reservation and self.provisioning not in ("reservation", "capacity-block"):
            raise ValueError(f"a reservation name needs provisioning 'reservation' or 'capacity-block', "
                             f"not {self.provisioning!r}")
        if self.provisioning == "spot":
            raise ValueError("provisioning 'spot' is chosen per option; give the offering a spot price instead")
        return self

    @property
    def family(self) -> str:
        return hardware.current().chips[self.accelerator].family

    @property
    def unpriced(self) -> bool:
        """No price list carries it: every figure of every region is an estimate by rule (TPU7x, A4, A4X)."""
        return all(price is None or price.estimate for info in self.regions.values()
                   for price in (info.on_demand, info.spot, info.host_on_demand, info.host_spot))

    @property
    def reserved_only(self) -> bool:
        """Sold only as reserved capacity the buyer declares (no named reservation of its own)."""
        return self.provisioning in ("reservation", "capacity-block") and not self.reservation

    def has_spot(self, region: str | None = None) -> bool:
        regions = [region] if region else list(self.regions)
        return any(self.regions[r].spot is not None for r in regions)

    def prices(self, region: str, spot: bool) -> tuple[Price, Price | None] | None:
        """(chip price, host price or None) in a region, or None when that capacity type is not sold there."""
        info = self.regions[region]
        if spot:
            return None if info.spot is None else (info.spot, info.host_spot)
        return info.on_demand, info.host_on_demand


class AssumptionValue(StrictModel):
    value: float = Field(ge=0)
    source: str = Field(min_length=3)


class KvCacheWidth(AssumptionValue):
    """The K (or V) width per token and layer of a model no architecture row describes, and the KV heads it is
    (whole heads: the width divides by them). A serving replica stores at least one whole KV head per tensor-parallel
    rank (policies/estimator/estimate.py InferenceModel.kv_copies), so past that many ranks the count sets the
    copies."""

    heads: int = Field(gt=0)

    @model_validator(mode="after")
    def _whole_heads(self) -> "KvCacheWidth":
        if self.value % self.heads:
            raise ValueError(f"kv_cache_width: {self.value:g} values do not split into {self.heads} whole heads")
        return self


class MfuClass(StrictModel):
    """A family of accelerators sharing an MFU intercept (policies/estimator/calibration.py). A class with published runs
    is calibrated on them; one without (`relative_to`) runs at `factor` times another class's MFU."""

    description: str = Field(min_length=3)
    relative_to: str | None = None
    factor: float | None = Field(None, gt=0, le=1)
    source: str = Field(min_length=3)

    @model_validator(mode="after")
    def _fallback_is_complete(self) -> "MfuClass":
        if (self.relative_to is None) != (self.factor is None):
            raise ValueError("give relative_to and factor together (an uncalibrated class) or neither")
        return self


class MfuModelSettings(StrictModel):
    """How the MFU model is fitted on the published runs (policies/estimator/calibration.py)."""

    accelerator_ridge: AssumptionValue
    slope_ridge: AssumptionValue
    max_mfu: AssumptionValue
    same_as: dict[AcceleratorId, AcceleratorId] = Field(default_factory=dict)
    same_as_source: str = Field(min_length=3)


class SizeRule(StrictModel):
    """A default for models up to a size (None: any larger model), with where it comes from."""

    up_to_parameters: float | None = Field(None, gt=0)
    value: float = Field(gt=0)
    source: str = Field(min_length=3)


def _rules_cover_every_size(rules: list[SizeRule]) -> list[SizeRule]:
    bounds = [r.up_to_parameters for r in rules]
    if bounds[-1] is not None or any(b is None for b in bounds[:-1]):
        raise ValueError("the last rule (only) has no up_to_parameters: it covers every larger model")
    if bounds[:-1] != sorted(bounds[:-1]):  # type: ignore[type-var]
        raise ValueError("rules go from the smallest models up")
    return rules


def rule_for(rules: list[SizeRule], parameters: float) -> SizeRule:
    """The first rule whose size bound holds `parameters` (the last rule holds every size)."""
    return next(r for r in rules if r.up_to_parameters is None or parameters <= r.up_to_parameters)


class DistributedOptimizerBytes(StrictModel):
    """Bytes of training state per parameter under a distributed optimizer: `replicated` held whole by every
    data-parallel replica (weights and gradients), `sharded` split over the d replicas (master weights and optimizer
    moments): replicated + sharded / d per parameter of a replica."""

    replicated_bytes_per_parameter: float = Field(gt=0)
    sharded_bytes_per_parameter: float = Field(ge=0)
    source: str = Field(min_length=3)


class TrainingDefaults(StrictModel):
    bytes_per_parameter: AssumptionValue
    distributed_optimizer: DistributedOptimizerBytes
    activation_headroom: AssumptionValue
    hbm_usable_fraction: AssumptionValue
    goodput: AssumptionValue
    checkpoint_interval_minutes: AssumptionValue
    restart_minutes: AssumptionValue
    default_deadline_days: AssumptionValue
    max_fleet_chips: AssumptionValue
    fp8_speedup: AssumptionValue
    fp32_slowdown: AssumptionValue
    provisioning_minutes: AssumptionValue
    image_pull_minutes: AssumptionValue
    compile_minutes: AssumptionValue
    checkpoint_write_gbps_per_host: AssumptionValue
    time_objective_tolerance: AssumptionValue
    dcn_gradient_bytes_per_parameter: AssumptionValue
    dcn_overlap: AssumptionValue
    spot_deadline_slack: AssumptionValue
    global_batch_tokens_by_size: list[SizeRule] = Field(min_length=1)
    chips_per_sequence_by_size: list[SizeRule] = Field(min_length=1)

    _batch_rules = field_validator("global_batch_tokens_by_size", "chips_per_sequence_by_size")(
        classmethod(lambda cls, rules: _rules_cover_every_size(rules)))


class ServingPrecision(StrictModel):
    bytes_per_parameter: float = Field(gt=0)
    kv_bytes_per_value: float = Field(gt=0)
    needs_fp8: bool = Field(description="Only on chips with fp8 tensor cores; elsewhere served at bf16")
    experts_need_checkpoint_on: list[Literal["gpu", "tpu"]] = Field(
        default_factory=list, description="Families whose serving engine quantizes no bf16 checkpoint's routed "
        "experts to this precision as it loads: there a mixture of experts is served at bf16 unless its weights are "
        "already in this precision")
    experts_source: str | None = None
    quality: str = Field(min_length=3)
    source: str = Field(min_length=3)


class AllreduceLatency(StrictModel):
    """Published latency of one small tensor-parallel all-reduce, per serving engine (its all-reduce kernel) and
    tensor-parallel degree: (message bytes, microseconds) points, read between points by linear interpolation.
    Applies to the accelerators of `mfu_classes` (the fabric it was measured on)."""

    mfu_classes: list[str] = Field(min_length=1)
    engines: dict[str, dict[int, list[tuple[float, float]]]] = Field(min_length=1)
    source: str = Field(min_length=3)

    @model_validator(mode="after")
    def _points_ascend(self) -> "AllreduceLatency":
        for engine, by_chips in self.engines.items():
            for chips, points in by_chips.items():
                sizes = [size for size, _ in points]
                if chips < 2 or not points or sizes != sorted(sizes) or min(t for _, t in points) <= 0:
                    raise ValueError(f"allreduce_latency_us.engines.{engine}.{chips}: at least 2 chips and "
                                     "(bytes, microseconds) points in ascending bytes, every time > 0")
        return self

    def microseconds(self, engine: str, chips: int, message_bytes: float) -> float:
        """Latency of one all-reduce of `message_bytes` over `chips`: the table of the smallest measured degree
        at or above `chips` (the largest past it), clamped at the table's ends (a message larger than the last
        point takes at least its time; the bandwidth beyond is not charged)."""
        by_chips = self.engines[engine]
        degrees = sorted(by_chips)
        degree = next((d for d in degrees if d >= chips), degrees[-1])
        points = by_chips[degree]
        if message_bytes <= points[0][0]:
            return points[0][1]
        for (size_lo, time_lo), (size_hi, time_hi) in zip(points, points[1:]):
            if message_bytes <= size_hi:
                return time_lo + (time_hi - time_lo) * (message_bytes - size_lo) / (size_hi - size_lo)
        return points[-1][1]


class IciAllreduce(StrictModel):
    """A tensor-parallel TPU replica's all-reduce over ICI, where no measured latency table exists: the latency of
    one hop between neighbouring chips and the source of the latency-and-bandwidth rule
    (policies/estimator/fabric_allreduce.py); the link bandwidth is the hardware table's ([collective_fabrics])."""

    hop_latency_us: AssumptionValue
    rule_source: str = Field(min_length=3)

    @model_validator(mode="after")
    def _hops_cost_time(self) -> "IciAllreduce":
        if self.hop_latency_us.value <= 0:
            raise ValueError("inference.ici_allreduce.hop_latency_us: a hop over ICI takes time (> 0); at 0 a small "
                             "all-reduce would be free")
        return self


class PcieProtocolCost(StrictModel):
    """One NCCL protocol's cost on PCIe: base latency, latency per ring step and the share of the link it moves."""

    name: str = Field(min_length=1)
    base_us: float = Field(gt=0)
    step_us: float = Field(gt=0)
    bandwidth_share: float = Field(gt=0, le=1)


class PcieAllreduce(StrictModel):
    """A tensor-parallel all-reduce over PCIe (NCCL's ring, by NCCL's own cost model): its protocols' costs and the
    link's bus bandwidth, for the accelerators of `mfu_classes` (policies/estimator/fabric_allreduce.py)."""

    mfu_classes: list[str] = Field(min_length=1)
    protocols: list[PcieProtocolCost] = Field(min_length=1)
    link_gbytes_per_s: float = Field(gt=0)
    source: str = Field(min_length=3)


class ServingEngine(StrictModel):
    """Per-step costs of one serving engine that the roofline lacks."""

    step_overhead_ms: AssumptionValue   # host work between two decode steps, not hidden under the GPU's


class PipelineServing(StrictModel):
    """A GPU serving replica over whole nodes: the engine's rule (tensor parallel in the node, a pipeline stage per
    node), how many micro-batches its pipeline keeps in flight, and what a stage hands the next over the network."""

    rule_source: str = Field(min_length=3)
    batches_in_flight_source: str = Field(min_length=3)
    activation_tensors: AssumptionValue     # tokens x hidden tensors a stage hands the next
    # Each tensor-parallel rank sends its 1/TP share of them to its peer (the next stage all-gathers in the node),
    # rather than each rank the whole (activation_tensors' source says which the engine does).
    split_over_tensor_ranks: bool
    hop_latency_us: AssumptionValue         # one stage-to-stage hand-off's latency over the scale-out network


class InferenceDefaults(StrictModel):
    precisions: dict[Literal["bf16", "fp16", "fp8", "int8"], ServingPrecision]
    engines: dict[str, ServingEngine] = Field(min_length=1)
    default_engine: str
    default_engine_source: str = Field(min_length=3)
    allreduces_per_layer: AssumptionValue
    hidden_width_rule: AssumptionValue
    allreduce_latency_us: AllreduceLatency
    ici_allreduce: IciAllreduce
    pcie_allreduce: PcieAllreduce

    @model_validator(mode="after")
    def _engines_known(self) -> "InferenceDefaults":
        known = set(self.engines)
        if self.default_engine not in known or not set(self.allreduce_latency_us.engines) <= known:
            raise ValueError(f"inference.default_engine and allreduce_latency_us.engines must name engines of "
                             f"inference.engines ({', '.join(sorted(known))})")
        missing = known - set(self.allreduce_latency_us.engines)
        if missing:
            raise ValueError(f"inference.allreduce_latency_us.engines lacks {', '.join(sorted(missing))}")
        both = set(self.allreduce_latency_us.mfu_classes) & set(self.pcie_allreduce.mfu_classes)
        if both:
            raise ValueError(f"inference: {', '.join(sorted(both))} in both allreduce_latency_us.mfu_classes and "
                             "pcie_allreduce.mfu_classes; an accelerator's all-reduce is costed one way")
        return self
    prefill_efficiency: AssumptionValue
    kv_cache_layers_per_cube_root: AssumptionValue
    kv_cache_width: KvCacheWidth
    hbm_bandwidth_efficiency: AssumptionValue
    compute_efficiency: AssumptionValue
    latency_p99_factor: AssumptionValue
    prompt_tokens_per_output_token: AssumptionValue
    replica_scaling_per_doubling: AssumptionValue
    min_replicas: AssumptionValue
    spot_serving_headroom: AssumptionValue
    max_replica_chips: AssumptionValue
    pipeline_serving: PipelineServing


class FilesystemOffer(StrictModel):
    """A managed parallel filesystem, priced at the throughput tier the components build.

    Lustre filesystems are billed per GiB-month at a price set by their throughput tier (MB/s per TiB):
    `prices_per_gib_month` lists the tiers' prices and `throughput_mbps_per_tib` names the one the
    component builds (Managed Lustre 1000, FSx for Lustre PERSISTENT_2 250), so the plan prices what is
    built. `price_per_gib_month: {..}` is shorthand for the built tier's price (an overlay's override).
    Valid sizes: `min_capacity_gib`, then every multiple of `step_gib` above it (FSx for Lustre
    PERSISTENT_2: 1200, 2400, 4800, ...; Managed Lustre: multiples of its tier's step). `capacity_rule`
    says where that rule comes from."""

    kind: Literal["managed-lustre", "fsx-lustre", "filestore"]
    throughput_mbps_per_tib: int = Field(gt=0, description="The throughput tier the component builds, MB/s per TiB")
    deployment: str | None = Field(None, min_length=1, description="The tier's deployment type, e.g. PERSISTENT_2 SSD")
    prices_per_gib_month: dict[int, Price] = Field(min_length=1, description="Price per GiB-month by throughput tier")
    min_capacity_gib: int = Field(gt=0)
    step_gib: int = Field(gt=0)
    capacity_rule: str | None = Field(None, min_length=3, description="Where the size rule comes from")

    @model_validator(mode="before")
    @classmethod
    def _built_tier_shorthand(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "price_per_gib_month" not in data:
            return data
        data = dict(data)
        price = data.pop("price_per_gib_month")
        tier = data.get("throughput_mbps_per_tib")
        if not isinstance(tier, int) or isinstance(tier, bool):
            raise ValueError("price_per_gib_month is the built tier's price: give throughput_mbps_per_tib with it")
        tiers = dict(data.get("prices_per_gib_month") or {})
        tiers[tier] = price
        data["prices_per_gib_month"] = tiers
        return data

    @model_validator(mode="after")
    def _sizes_are_steps(self) -> "FilesystemOffer":
        if self.min_capacity_gib > self.step_gib and self.min_capacity_gib % self.step_gib:
            raise ValueError(f"min_capacity_gib {self.min_capacity_gib} is above step_gib {self.step_gib} but not "
                             f"a multiple of it: sizes are the minimum, then multiples of the step")
        if self.throughput_mbps_per_tib not in self.prices_per_gib_month:
            priced = ", ".join(str(t) for t in sorted(self.prices_per_gib_month))
            raise ValueError(f"throughput_mbps_per_tib {self.throughput_mbps_per_tib} (the tier that is built) has no "
                             f"entry in prices_per_gib_month (priced tiers: {priced})")
        return self

    @property
    def price_per_gib_month(self) -> Price:
        """The price of the tier that is built."""
        return self.prices_per_gib_month[self.throughput_mbps_per_tib]

    @property
    def tier(self) -> str:
        """The built tier, as a plan names it: 'PERSISTENT_2 SSD 250 MB/s per TiB tier', '1000 MB/s per TiB tier'."""
        rate = f"{self.throughput_mbps_per_tib} MB/s per TiB tier"
        return f"{self.deployment} {rate}" if self.deployment else rate

    def capacity_gib(self, wanted_gib: float) -> int:
        """The smallest valid size holding `wanted_gib`: the minimum, else the next multiple of the step."""
        if wanted_gib <= self.min_capacity_gib:
            return self.min_capacity_gib
        return math.ceil(wanted_gib / self.step_gib) * self.step_gib


class StorageDefaults(StrictModel):
    filesystem_min_hosts: AssumptionValue
    filesystem_max_cost_fraction: AssumptionValue
    checkpoints_kept: AssumptionValue
    checkpoint_bytes_per_parameter: AssumptionValue
    filesystems: dict[Cloud, FilesystemOffer] = Field(default_factory=dict)


class Defaults(StrictModel):
    training: TrainingDefaults
    mfu_classes: dict[str, MfuClass] = Field(min_length=1)
    mfu_model: MfuModelSettings
    preemptions_per_host_day: dict[Cloud, AssumptionValue]
    inference: InferenceDefaults
    storage: StorageDefaults


class Catalog(StrictModel):
    version: str = Field(min_length=1)
    as_of: AsOfDate
    sources: dict[str, Source] = Field(default_factory=dict)
    accelerators: dict[str, Accelerator] = Field(min_length=1)
    offerings: tuple[Offering, ...] = Field(min_length=1)
    defaults: Defaults

    @model_validator(mode="after")
    def _references_resolve(self) -> "Catalog":
        seen: set[str] = set()
        for offering in self.offerings:
            if offering.id in seen:
                raise ValueError(f"offering id {offering.id!r} appears twice")
            seen.add(offering.id)
            if offering.accelerator not in self.accelerators:
                raise ValueError(f"offering {offering.id!r} uses accelerator {offering.accelerator!r}, "
                                 f"which the catalog does not describe")
        for accelerator in self.accelerators.values():
            if accelerator.mfu_class not in self.defaults.mfu_classes:
                raise ValueError(f"accelerator {accelerator.id!r} has mfu_class {accelerator.mfu_class!r}; "
                                 f"known: {', '.join(sorted(self.defaults.mfu_classes))}")
        for cloud in {o.cloud for o in self.offerings}:
            if cloud not in self.defaults.preemptions_per_host_day:
                raise ValueError(f"assumptions have no preemptions_per_host_day for cloud {cloud!r}")
        return self

    def offering(self, offering_id: str) -> Offering:
        for offering in self.offerings:
            if offering.id == offering_id:
                return offering
        raise KeyError(offering_id)

    def accelerator(self, accelerator_id: str) -> Accelerator:
        return self.accelerators[accelerator_id]
