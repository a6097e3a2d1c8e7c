"""The candidates of one search, the first step of selection (candidates -> sizing -> estimate -> choose ->
explain): the workload's resolved limits and per-offering model caches (SearchContext), the hard constraints
that rule an offering out whatever its size or price (hard_filter), the prices an offering is sized at
(price_groups, spot_modes), one sized configuration (Candidate), and how a candidate becomes an Option and an
Estimate."""

from __future__ import annotations

from datetime import date
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence, TypeVar

from accel.base.model import assembled_in_order
from accel.policies import hardware
from accel.policies.catalog.model import Accelerator, Catalog, NodeLimit, Offering, Price
from accel.policies.selection.choice import OBJECTIVES
from accel.policies.estimator.activations import SequenceFit, sequence_fit_of
from accel.policies.hardware import shapes
from accel.policies.estimator.estimate import (
    Evaluation,
    InferenceModel,
    Resolved,
    TrainingModel,
    assumption_list,
    batch_chip_limit,
    batch_sequences,
    deadline_hours,
    distributed_optimizer_state,
    global_batch,
    min_chips_for_memory,
    resolve,
    training_flops,
)
from accel.policies.cloud.booking import Booking
from accel.policies.cloud.mode_prices import listed_prices, queued_prices
from accel.policies.selection.capacity import Obtaining, obtaining
from accel.policies.selection.ladders import Size, largest_slice_chips, tpu_sizes
from accel.policies.estimator.slice_sequence import SLICE_LAYOUT, slice_sequence_fit_of
from accel.policies.selection.replica_fleet import training_size
from accel.policies.parallelism import ShardedState
from accel.policies.plan import TOKENS_UNPRICED, Estimate, Option
from accel.policies.selection.commitments import commitment_source, committed_groups
from accel.policies.cloud.capacity_modes import QUEUED_PROVISIONING
from accel.policies.selection.serving_capacity import refusal as serving_refusal, service_outlives
from accel.policies.workload import XLA_FRAMEWORKS, WorkloadFieldError, WorkloadSpec, framework_label

if TYPE_CHECKING:  # the reservation rules load only when a run declares reservations (~2 ms of a plain choose)
    from accel.policies.cloud.reservations import DeclaredReservation

K = TypeVar("K")
V = TypeVar("V")


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
    reserved: DeclaredReservation | None = None   # sized on this declared reservation (on-demand beyond it)
    booking: Booking | None = None   # bought through a booked mode (Capacity Blocks, calendar mode)
    queue: str | None = None   # bought through this queued mode of an on-demand offering ("flex-start")

    @property
    def provisioning(self) -> str:
        """The capacity type the candidate is bought through (the Option's and the Plan's `provisioning`)."""
        return capacity_type(self.spot, self.reserved, self.queue, self.booking, self.offering)

    @property
    def family(self) -> str:
        return self.offering.family


def fleet_hourly(chips: int, hosts: int, chip: Price, host: Price | None,
                 reserved: DeclaredReservation | None = None) -> float:
    """$/h of a fleet: chips and host VMs at the catalog price, or, on a declared reservation, its machines
    as the declaration bills them and any overflow beyond its count at that catalog (on-demand) price."""
    on_demand = chips * chip.usd + hosts * (host.usd if host else 0.0)
    if reserved is None:
        return on_demand
    from accel.policies.cloud.reservations import reserved_hourly

    return reserved_hourly(reserved, hosts, on_demand / hosts)


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
    batch_chips: int = 0          # most chips the global batch keeps busy (training)
    batch_why: str = ""
    pinned_chips: int | None = None   # a hardware pin's fleet: the most a long sequence's replica may take
    training_models: dict[tuple, TrainingModel] = field(default_factory=dict)
    mfu_caches: dict[str, dict[tuple[int, int], float]] = field(default_factory=dict)   # by accelerator
    inference_models: dict[tuple, InferenceModel] = field(default_factory=dict)
    memory_chips: dict[str, int] = field(default_factory=dict)
    sharded_states: dict[str, ShardedState | None] = field(default_factory=dict)   # by accelerator
    hours_cache: dict[tuple, dict[tuple[int, int, int], float]] = field(default_factory=dict)   # by model_key
    reservations: Sequence[DeclaredReservation] = ()   # the stack's (accel choose --reservations)
    obtain: Obtaining | None = None   # the capacity model (selection.capacity); set by search_context
    # A fleet's run on its capacity mode does not depend on the price either: shared by every region.
    timing_cache: dict[tuple, dict[tuple[int, int, int], Any]] = field(default_factory=dict)
    ladders: dict[tuple[str, int], Any] = field(default_factory=dict)        # GPU size ladders by (offering, nodes)
    price_free: dict[tuple, Any] = field(default_factory=dict)   # what sizing works out without a price
    domains: dict[tuple[str, str], Any] = field(default_factory=dict)   # own NVLink domain entry by (chip, machine)
    domain_units: dict[str, int] = field(default_factory=dict)   # nodes of a placed NVLink domain by machine
    trained_sizes: dict[tuple[str, Size], Size] = field(default_factory=dict)   # by (machine type, fleet)
    gpu_batch_chips: dict[str, int] = field(default_factory=dict)   # training_batch_chips by GPU machine type
    sequence_fits: dict[tuple[str, int | None], SequenceFit | None] = field(default_factory=dict)   # sequence_key
    slice_fits: dict[tuple[str, int], SequenceFit] = field(default_factory=dict)   # by TPU machine type and slice
    # The layout's (context, pipeline) arguments (policies/parallelism.py training_degrees), by machine type.
    sequence_degrees: dict[tuple[str, int | None], tuple[int, int]] = field(default_factory=dict)
    # Per GPU ladder (its id: ladders live as long as the search), chip and memory floor: the nodes each size trains
    # on and the first size of its plateau (policies/selection/sizing.py).
    plateaus: dict[tuple[int, str, int], tuple[dict[int, int], dict[int, int]]] = field(default_factory=dict)

    def accelerator(self, offering: Offering) -> Accelerator:
        return self.catalog.accelerators[offering.accelerator]

    def model_key(self, offering: Offering, spot: bool) -> tuple[str, str, bool, hardware.MachineDomain | None]:
        """What the offering's training model (and the run hours and spot timings worked out from it) is shared
        by: its chip, cloud and capacity type, and its machine's own NVLink domain entry where the hardware table
        states one (None: the chip's), the one thing of the machine the model reads (a mixture of experts'
        all-to-all and the entry it cites; a2-megagpu-16g's 16 A100 against the 8 of A100's other machines)."""
        # Kept per machine type: a search asks ~60,000 times on a large catalog (every size of every region).
        where = (offering.accelerator, offering.machine_type)
        if where not in self.domains:
            fabric = hardware.current().collective_fabrics.get(offering.accelerator)
            self.domains[where] = fabric.machine_domain(offering.machine_type) if fabric is not None else None
        return offering.accelerator, offering.cloud, spot, self.domains[where]

    def training_model(self, offering: Offering, spot: bool) -> TrainingModel:
        return _memo(self.training_models, self.model_key(offering, spot), lambda: TrainingModel(
            self.spec, self.resolved, self.catalog, self.accelerator(offering), offering.cloud, spot,
            self.mfu_caches.setdefault(offering.accelerator, {}), offering.machine_type))

    def inference_model(self, offering: Offering) -> InferenceModel:
        """The serving model of the offering's chip on its machine (whose own scale-out bandwidth the pipeline
        hand-offs ride, where the hardware table states one): shared by the offerings of one such entry."""
        key = self.model_key(offering, False)
        return _memo(self.inference_models, (key[0], key[3]),
                     lambda: InferenceModel(self.spec, self.resolved, self.accelerator(offering),
                                            machine_type=offering.machine_type))

    def min_memory_chips(self, offering: Offering) -> int:
        return _memo(self.memory_chips, offering.accelerator,
                     lambda: min_chips_for_memory(self.spec, self.resolved, self.accelerator(offering)))

    def sharded_state(self, offering: Offering) -> ShardedState | None:
        """The training state as the job's distributed optimizer holds it, what a GPU fleet's layout is sized by: a
        PyTorch training run on GPUs (Megatron-LM with --use-distributed-optimizer, accel/job/megatron_run.py); None
        for a TPU, serving or another framework's job (the whole state per replica, min_memory_chips)."""
        if offering.accelerator not in self.sharded_states:
            gpu_megatron = (self.spec.kind != "inference" and self.spec.framework == "pytorch"
                            and offering.family == "gpu")
            self.sharded_states[offering.accelerator] = (
                distributed_optimizer_state(self.spec, self.resolved, self.accelerator(offering)) if gpu_megatron
                else None)
        return self.sharded_states[offering.accelerator]

    def sequence_fit(self, offering: Offering) -> SequenceFit | None:
        """How one training sequence's activations sit beside the state on this offering's GPUs or TPU slices, and
        the tensor and context parallelism they need (policies/estimator/activations.py, slice_sequence.py); None
        for serving."""
        key = self.sequence_key(offering)
        if key in self.sequence_fits:
            return self.sequence_fits[key]
        fit = None
        generation = shapes.GENERATION_BY_ACCELERATOR.get(offering.accelerator)
        if self.spec.kind != "inference" and generation is not None:
            # Each slice holds the state and the sequence on its own (a multislice is data parallel across them):
            # the slices the ladder offers within the workload's bound, tensor parallelism within one host.
            limit = self.node_limit(offering)
            hosts = limit.value if limit else None
            # Only single slices are tried: the ladder stops at the largest one, so a max_chips far past any fleet
            # (10**29 is valid input) never lays out the multislices up to it.
            bound = min(self.pinned_chips or self.max_chips, largest_slice_chips(generation.name, hosts))
            slices = [s.chips for s in tpu_sizes(generation.name, bound, self.min_memory_chips(offering), hosts)
                      if s.slices == 1]
            fit = slice_sequence_fit_of(self.spec, self.resolved, self.catalog.defaults, self.accelerator(offering),
                                        self.min_memory_chips(offering), slices, offering.chips_per_host)
        elif self.spec.kind != "inference":
            # The layout is chosen among the replicas the workload's fleet may hold (a pinned fleet, else max_chips),
            # where one fits. Not the offering's own largest fleet: the fit must stay one per machine's chip, node and
            # NVLink domain, as the run hours and spot timings shared by SearchContext.model_key assume.
            bound = self.pinned_chips or self.max_chips
            fit = sequence_fit_of(self.spec, self.resolved, self.catalog.defaults, self.accelerator(offering),
                                  self.min_memory_chips(offering), offering.chips_per_host, self.domain_unit(offering),
                                  offering.machine_type, bound)
        self.sequence_fits[key] = fit
        # The context-parallel and pipeline arguments of the layout (policies/parallelism.py training_degrees): 0
        # where the state alone sets them, else the degree and depth the sequence needs; read for every fleet timed.
        changed = fit is not None and fit.changes_layout and fit.fits
        self.sequence_degrees[key] = ((fit.context, fit.pipeline if fit.deepened else 0) if fit is not None and changed
                                      else (0, 0))
        return fit

    def sequence_key(self, offering: Offering) -> tuple[str, int | None]:
        """What an offering's sequence fit is kept by: its machine type and, on a TPU generation, its node-pool limit
        (an offering's own max_nodes, which an overlay may set per offering, bounds the slices the fit tries)."""
        limit = self.node_limit(offering) if shapes.GENERATION_BY_ACCELERATOR.get(offering.accelerator) else None
        return offering.machine_type, limit.value if limit else None

    def sequence_layout_degrees(self, offering: Offering) -> tuple[int, int]:
        """The (context, pipeline) arguments of the layout (policies/parallelism.py training_degrees) on this
        offering: (0, 0) where the state alone sets it."""
        key = self.sequence_key(offering)
        degree = self.sequence_degrees.get(key)
        if degree is None:
            self.sequence_fit(offering)
            degree = self.sequence_degrees[key]
        return degree

    def slice_fit_at(self, offering: Offering, size: Size) -> SequenceFit:
        """A TPU fleet's own layout for one sequence: the least ICI split that fits beside the state's FSDP share of
        one of its slices (a larger slice than the floor's may need none; policies/estimator/slice_sequence.py)."""
        key = (offering.machine_type, size.chips // size.slices)
        fit = self.slice_fits.get(key)
        if fit is None:
            fit = self.slice_fits[key] = slice_sequence_fit_of(
                self.spec, self.resolved, self.catalog.defaults, self.accelerator(offering),
                self.min_memory_chips(offering), [size.chips // size.slices], offering.chips_per_host)
        return fit

    def sequence_detail(self, offering: Offering, size: Size | None = None) -> dict[str, float | int | str]:
        """What an estimate records of the sequence's activations: nothing where they stay within the headroom
        and leave the layout as the state sets it. On a TPU fleet (`size`), the layout its own slices need."""
        fit = self.sequence_fit(offering)
        if fit is not None and fit.slice_chips and size is not None and fit.fits:
            fit = self.slice_fit_at(offering, size)
        if fit is None or not (fit.past_headroom or fit.changes_layout):
            return {}
        detail: dict[str, float | int | str] = {"sequence_activations": fit.why()}
        if fit.context > 1:
            detail["context_exchange"] = fit.exchange
        if fit.changes_layout and fit.fits:
            detail["context_parallel"] = fit.context
            if fit.deepened:   # the layout's pipeline floor (policies/parallelism.py training_degrees `pipeline`)
                detail["pipeline_parallel"] = fit.pipeline
            detail["chips_per_sequence"] = self.long_sequence_chips(fit)
            # A TPU slice's ICI degree (the job's MaxText flags), or a GPU tensor group widened short of the node
            # (policies/parallelism.py training_degrees `tensor`; one taking the whole node is its default).
            if fit.slice_chips or fit.widened and fit.tensor < offering.chips_per_host * fit.tensor_nodes:
                detail["tensor_parallel"] = fit.tensor
            if fit.slice_chips:   # a TPU slice: the slice the state and sequence need
                detail["sequence_slice_chips"] = fit.slice_chips
                detail["context_layout"] = SLICE_LAYOUT
        return detail

    def long_sequence_chips(self, fit: SequenceFit) -> int:
        """GPUs sharing one sequence under a long sequence's layout: its tensor x context-parallel group (the
        layout's own, not the size rule's figure for the usual lengths: on a 4-GPU node the rule's 8 would count
        twice the GPUs TP4 x CP holds)."""
        return fit.tensor * max(1, fit.context)

    def long_sequence_batch_chips(self, fit: SequenceFit) -> int:
        """Most chips the global batch keeps busy under a long sequence's layout: its sequences x the tensor x
        context-parallel GPUs that share each one (a pipeline's stages take whole sequences as micro-batches, as
        the rule for short ones counts: Llama 3 405B at 131,072 tokens, 128 sequences x TP8 x CP16 = 16,384)."""
        tokens, _ = global_batch(self.spec, self.catalog.defaults)
        return batch_sequences(self.spec, tokens) * self.long_sequence_chips(fit)

    def long_sequence_batch_why(self, fit: SequenceFit) -> str:
        """Why the global batch stops a long sequence's fleet growing (long_sequence_batch_chips), in figures."""
        tokens, _ = global_batch(self.spec, self.catalog.defaults)
        sequences = batch_sequences(self.spec, tokens)
        unit = "chips" if fit.slice_chips else "GPUs"
        group = (f"TP{fit.tensor} x CP{fit.context} {unit} of its context-parallel group" if fit.context > 1 else
                 f"TP{fit.tensor} {unit} of its tensor-parallel group")
        return (f"a global batch of {tokens / 1e6:,.3g}M tokens is {sequences:,} sequence(s) of "
                f"{self.spec.model.sequence_length:,} tokens, each shared by the {group}: more than "
                f"{self.long_sequence_batch_chips(fit):,} chips would idle "
                "(set training.global_batch_tokens to change it)")

    def domain_unit(self, offering: Offering) -> int:
        """Nodes of one NVLink domain placed as a unit (HardwareFacts.nvlink_domain_unit_nodes: the machine's, or an
        inventory's labelled clique), the span the layout's tensor groups and the run's timed nodes follow."""
        unit = self.domain_units.get(offering.machine_type)
        if unit is None:
            unit = self.domain_units[offering.machine_type] = hardware.current().nvlink_domain_unit_nodes(
                offering.machine_type, offering.nvlink_clique_nodes)
        return unit

    def trained_size(self, offering: Offering, size: Size) -> Size:
        """The part of a training fleet its run is timed on: a GPU fleet's whole-replica nodes, the Plan's layout
        (policies/selection/replica_fleet.py); a TPU fleet whole."""
        # Asked ~10^6 times on a large catalog (every size the searches probe, in every region): kept per machine
        # type and fleet (the machine type carries the chip and its placed NVLink domain, the layout's inputs).
        key = (offering.machine_type, size)
        trained = self.trained_sizes.get(key)
        if trained is None:
            unit = self.domain_units.get(offering.machine_type)
            if unit is None:
                unit = self.domain_unit(offering)
            # A searched fleet trains on the GPUs the global batch keeps busy. A pin is timed on all its replicas, as
            # before: the pinned 405B stacks reproduce Llama 3's 16,384 H100, which the defaults' batch (16M tokens,
            # 1,953 sequences, where Llama 3 ran 2,048) and a long sequence's least context-parallel degree (CP8, where
            # Llama 3 widened to CP16 to feed them) would leave 5% and 56% idle.
            batch = 0
            if self.pinned_chips is None and size.topology is None:   # a TPU slice trains whole
                batch = self.gpu_batch_chips.get(offering.machine_type, -1)
                if batch < 0:
                    batch = self.gpu_batch_chips[offering.machine_type] = self.training_batch_chips(offering)
            trained = self.trained_sizes[key] = training_size(size, self.min_memory_chips(offering), unit,
                                                              *self.sequence_layout_degrees(offering), batch,
                                                              self.sharded_state(offering))
        return trained

    def batch_idle_detail(self, offering: Offering, size: Size) -> dict[str, float | int | str]:
        """What a training estimate records of a GPU fleet whose GPUs the global batch keeps only partly busy (not
        the layout's whole replicas: trained_size): details.busy_chips, the GPUs that train (the Plan's data-parallel
        degree follows it, policies/plan.py plan_parallelism), and details.batch_idle, how many idle and are paid
        for, why (the batch's figures and source) and the training.global_batch_tokens that would keep all busy.
        Empty for a fleet the batch fills and for a TPU fleet (a slice trains whole)."""
        if size.topology is not None or self.spec.kind == "inference":
            return {}
        whole = training_size(size, self.min_memory_chips(offering), self.domain_unit(offering),
                              *self.sequence_layout_degrees(offering), state=self.sharded_state(offering))
        busy = self.trained_size(offering, size).chips
        if busy >= whole.chips:
            return {}
        fit = self.sequence_fit(offering)
        long = fit is not None and fit.changes_layout and fit.fits
        why = self.long_sequence_batch_why(fit) if long and fit is not None else self.batch_why
        tokens, _ = global_batch(self.spec, self.catalog.defaults)
        per_sequence = max(1, self.training_batch_chips(offering) // batch_sequences(self.spec, tokens))
        # The batch that would feed every GPU of the fleet's whole replicas (past them nodes idle whatever the batch).
        filled = -(-whole.chips // per_sequence) * self.spec.model.sequence_length
        target = (f"all {whole.chips:,}" if whole.chips == size.chips else
                  f"the {whole.chips:,} of its whole replicas")
        return {"busy_chips": busy,
                "batch_idle": f"{busy:,} of the {size.chips:,} GPUs train, {size.chips - busy:,} idle and paid for "
                              f"(whole nodes of {size.chips_per_host}): {why}; training.global_batch_tokens "
                              f"{filled:,} would keep {target} busy"}

    def training_batch_chips(self, offering: Offering) -> int:
        """Most chips the global batch keeps busy on this offering: the size rule's (sequences x chips per sequence,
        batch_chips), or under a long sequence's layout its own (long_sequence_batch_chips; on a TPU slice never
        below the rule's, which already shares each sequence over more chips)."""
        fit = self.sequence_fit(offering)
        if fit is None or not (fit.changes_layout and fit.fits):
            return self.batch_chips
        chips = self.long_sequence_batch_chips(fit)
        return max(self.batch_chips, chips) if fit.slice_chips else chips

    def fleet_cap(self, offering: Offering) -> int:
        return min(self.max_chips, offering.max_chips or self.max_chips)

    def fleet_cap_constraint(self, offering: Offering) -> str:
        """Which limit fleet_cap is, as a refusal names it: 'max_chips' (the workload's), or 'offering_chips' where
        the offering holds fewer chips (a cluster inventory's count): raising max_chips would not move it."""
        return "offering_chips" if offering.max_chips is not None and offering.max_chips < self.max_chips \
            else "max_chips"

    def node_limit(self, offering: Offering) -> NodeLimit | None:
        """The offering's most nodes per node pool when it applies to this workload (training or serving)."""
        return node_limit(offering, self.spec.kind != "inference")


def _memo(cache: dict[K, V], key: K, compute: Callable[[], V]) -> V:
    """cache[key], computed once: the search asks for the same model or memory fit for every size and price."""
    if key not in cache:
        cache[key] = compute()
    return cache[key]


def node_limit(offering: Offering, training: bool) -> NodeLimit | None:
    """The offering's node-pool limit (catalog `max_nodes`) if it applies to training or serving fleets."""
    limit = offering.max_nodes
    return limit if limit is not None and limit.applies(training) else None


def node_limit_words(offering: Offering, limit: NodeLimit) -> str:
    """'GKE compact placement allows at most 150 nodes (1200 GPUs) of a3-ultragpu-8g in one pool'; for a GPU
    fleet, which is several such pools (docs/scale.md), also the most the cluster holds."""
    if offering.family == "tpu":
        return f"{limit.name} allows at most {limit.value} hosts per slice"
    words = (f"{limit.name} allows at most {limit.value} nodes ({limit.value * offering.chips_per_host} GPUs) of "
             f"{offering.machine_type} in one pool")
    fleet = limit.fleet_max_nodes
    if fleet is not None:
        words += (f", and one cluster holds at most {fleet} such nodes ({fleet * offering.chips_per_host} GPUs"
                  + (f": {limit.max_pools} pools" if limit.max_pools and fleet == limit.value * limit.max_pools
                     else "") + ")")
    return words


def gpu_fleet_max_nodes(limit: NodeLimit | None) -> int | None:
    """The most nodes a GPU fleet may have under this pool limit: it is split into pools of at most
    `limit.value` nodes, so only the cluster's limits (pools or nodes per cluster) bound it."""
    return None if limit is None else limit.fleet_max_nodes


def node_limit_violation(offering: Offering, hosts: int, slices: int, training: bool) -> str | None:
    """Why a fleet of `hosts` nodes in `slices` slices cannot be built on this offering, or None when it can
    (a TPU multislice is one pool per slice; a GPU fleet is as many pools as the limit needs)."""
    limit = node_limit(offering, training)
    if limit is None:
        return None
    if offering.family == "tpu":
        per_pool = hosts // slices
        if per_pool <= limit.value:
            return None
        return f"{per_pool} nodes in one pool: {node_limit_words(offering, limit)} ({limit.source})"
    fleet = gpu_fleet_max_nodes(limit)
    if fleet is None or hosts <= fleet:
        return None
    return f"{hosts} nodes in one cluster: {node_limit_words(offering, limit)} ({limit.source})"


def search_context(spec: WorkloadSpec, catalog: Catalog, objective: str,
                   reservations: Sequence[DeclaredReservation] = ()) -> SearchContext:
    """The context of one search; ValueError on an unknown objective."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    resolved = resolve(spec, catalog.defaults)
    deadline_h, given = deadline_hours(spec, resolved)
    max_chips = spec.constraints.max_chips or int(resolved["max_fleet_chips"])
    batch_chips, batch_why = (batch_chip_limit(spec, resolved, catalog.defaults) if spec.kind != "inference"
                              else (max_chips, ""))
    return SearchContext(spec, catalog, objective, resolved, deadline_h, given, spec.constraints.budget_usd, max_chips,
                         batch_chips, batch_why, reservations=tuple(reservations), obtain=obtaining(spec))


def price_groups(ctx: SearchContext, offering: Offering, spot: bool) -> list[tuple[list[str], Price, Price | None]]:
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


def reserved_groups(ctx: SearchContext, offering: Offering
                    ) -> list[tuple[DeclaredReservation, list[str], Price, Price | None]]:
    """(reservation, [its region], on-demand chip price, host price) for each declared reservation of the
    offering's machine type in a region it is offered in and the workload allows: sized apart from on-demand,
    priced as the declaration bills it."""
    if ctx.spec.constraints.spot == "required":
        return []
    allowed = ctx.spec.constraints.regions
    groups = []
    for reservation in ctx.reservations:
        if not reservation.holds_capacity or reservation.machineType != offering.machine_type:
            continue
        from accel.policies.cloud.reservations import region_of_reservation

        region = region_of_reservation(reservation, offering.regions)
        if region is None or (allowed and region not in allowed):
            continue
        prices = offering.prices(region, False)
        if prices is not None:
            groups.append((reservation, [region], *prices))
    return groups


def served_within_window(ctx: SearchContext, groups: list, reasons: list[tuple[str, str]]) -> list:
    """The reserved groups a service can run its inference.hours on: a declared Capacity Block ends (its node group
    is scaled in before the window closes), so a service longer than its usable window is not sized on it, as a
    queued mode's is not beyond its longest request (serving_capacity); `reasons` gets why. A training run longer
    than a block is timed as not finishing on it instead (sizing.py)."""
    if ctx.spec.kind != "inference" or ctx.spec.inference is None:
        return groups
    kept = []
    for group in groups:
        block = group[0].block_hours(ctx.spec.inference.hours)
        if block is not None and block[1] is not None:
            usable = group[0].window.usable_hours
            reasons.append(("capacity", f"a service of {ctx.spec.inference.hours:,g} h (inference.hours): {block[1]}"
                                        f", or inference.hours at most {usable:,g}"))
        else:
            kept.append(group)
    return kept


def spot_modes(spec: WorkloadSpec) -> tuple[bool, ...]:
    """The capacity types to size an offering at: on-demand (False) and/or spot (True), per constraints.spot.

    A service with a latency target keeps an on-demand floor: one spot reclaim wave can take every spot node of
    a zone at once (docs/capacity.md), so with spot merely allowed it is served on demand, and on spot only when
    the workload says `spot: required`. (A floor of on-demand nodes under a spot burst pool is not built yet.)"""
    if spec.kind == "inference" and spec.constraints.spot == "allowed":
        return (False,)
    return {"allowed": (False, True), "required": (True,), "never": (False,)}[spec.constraints.spot]


@dataclass
class SearchResult:
    """What ruling out and sizing every offering found, for ranking and for the explanations: each feasible
    pick (and the sizes shown beside it) with its rank key and region, and, for the rest, why not."""

    ranked: list[tuple[tuple, Candidate, str]] = field(default_factory=list)   # (rank key, candidate, region)
    rejected: list[dict] = field(default_factory=list)   # {"offering", "reasons"}: NoFeasibleOption's rejected
    eliminations: dict[str, list[str]] = field(default_factory=dict)   # constraint -> offerings it ruled out
    hard_reasons: dict[str, tuple[str, str]] = field(default_factory=dict)   # offering -> (constraint, reason)
    near: list[tuple[float, Candidate, str]] = field(default_factory=list)   # (overshoot, candidate, what it misses)
    family_reasons: dict[str, list[str]] = field(default_factory=lambda: {"gpu": [], "tpu": []})
    offering_reasons: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    shown_only: set[int] = field(default_factory=set)   # ids of the alternatives: sizes shown for the trade-off
    # --objective time: (place in the ranking, finish hours) of the fastest run the tolerance is measured from,
    # and the finish hours of the pick (choose._cheapest_near_the_fastest); None under the cost objective
    time_reference: tuple[int, float, float] | None = None


class PricePoint(NamedTuple):
    """One price an offering is sized at: the capacity type, the allowed regions that share the price (in
    preference order), the chip and host prices, and the declared reservation it bills against (None: the
    market price)."""

    spot: bool
    regions: list[str]
    chip: Price
    host: Price | None
    reserved: DeclaredReservation | None = None
    booking: Booking | None = None   # bought through this booked mode, at its price (or on-demand list: upper)
    # On demand, only fleets within the pool one zone is expected to supply (selection.choose: the supplied pick
    # beside an on-demand best past the pool).
    within_pool: bool = False
    # Bought through this queued mode ("flex-start") although the offering's own provisioning is on-demand, at
    # the mode's price (policies/cloud/mode_prices.py).
    queue: str | None = None


def capacity_type(spot: bool, reserved: DeclaredReservation | None, queue: str | None, booking: Booking | None,
                  offering: Offering) -> str:
    """What a fleet is bought through, from its price point: spot, then a declared reservation or commitment, a
    queued mode, a booked mode, else the offering's own (a price point carries at most one of queue and booking)."""
    if spot:
        return "spot"
    if reserved is not None:
        return reserved.provisioning
    if queue is not None:
        return queue
    return booking.provisioning if booking is not None else offering.provisioning


def queued_pricer(ctx: SearchContext, offering: Offering, provisioning: str
                  ) -> Callable[[Price, Price | None], tuple[Price, Price | None] | None]:
    """A function from the offering's on-demand (chip, host) prices to its prices through a queued mode
    (flex-start, queued), or to None when the mode has no factor for its machine type
    (policies/cloud/mode_prices.py); the mode is looked up once per offering, not per region."""
    mode = ctx.obtain.mode_for(offering, provisioning) if ctx.obtain is not None else None
    if mode is None or ctx.obtain is None:
        return _no_queued_price
    table, mode_id, machine_type = ctx.obtain.table, mode.id, offering.machine_type
    return lambda chip, host: queued_prices(table, mode_id, machine_type, chip, host)


def _no_queued_price(chip: Price, host: Price | None) -> None:
    return None


def queued_or_listed(ctx: SearchContext, offering: Offering, provisioning: str
                     ) -> Callable[[Price, Price | None], tuple[Price, Price | None]]:
    """What an offering planned through a queued mode (A3 Ultra, A4, TPU7x on flex-start) is billed at, searched or
    pinned (policies/selection/pin.py) alike: the mode's price where the table has its factor; without one (A4,
    TPU7x) the on-demand figure, its source saying it is an upper bound of it (mode_prices.listed_prices)."""
    priced = queued_pricer(ctx, offering, provisioning)
    mode = ctx.obtain.mode_for(offering, provisioning) if ctx.obtain is not None else None
    if mode is None or ctx.obtain is None:
        return lambda chip, host: priced(chip, host) or (chip, host)
    table, mode_id, machine_type = ctx.obtain.table, mode.id, offering.machine_type
    return lambda chip, host: priced(chip, host) or listed_prices(table, mode_id, machine_type, chip, host)


def queued_groups(ctx: SearchContext, offering: Offering, on_demand: list[tuple[list[str], Price, Price | None]]
                  ) -> list[PricePoint]:
    """Flex-start price points of an on-demand GCP GPU offering the mode is sold for (capacity_modes.yaml
    applicability), at the mode's factor of each on-demand group's price. Only where the table has a factor for
    the machine type: at the on-demand price the mode can only wait and chain legs for nothing. A service only
    within the mode's longest request (policies/selection/serving_capacity.py: one request, every node removed
    when it ends; a longer service is never queued); not when spot is required."""
    if (ctx.obtain is None or ctx.spec.constraints.spot == "required"
            or offering.cloud != "gcp" or offering.family != "gpu" or offering.provisioning != "on-demand"
            or ctx.obtain.queue(offering, "flex-start") is None
            or service_outlives(ctx.spec, ctx.obtain.mode_for(offering, "flex-start")) is not None):
        return []
    points = []
    priced = queued_pricer(ctx, offering, "flex-start")
    for regions, chip, host in on_demand:
        prices = priced(chip, host)
        if prices is not None:
            points.append(PricePoint(False, regions, prices[0], prices[1], queue="flex-start"))
    return points


def booked_groups(ctx: SearchContext, offering: Offering, on_demand: list[tuple[list[str], Price, Price | None]]
                  ) -> list[PricePoint]:
    """The booked modes' price points of a training offering (Capacity Blocks, calendar mode): Capacity Blocks
    at their sourced per-instance rate in each region that has one (regions without one are not offered: no
    price is invented); calendar mode at the on-demand list price of each group, since no calendar-mode rate was
    found (docs/capacity.md): the option says its price is an upper bound."""
    if ctx.obtain is None or ctx.spec.kind == "inference" or ctx.spec.constraints.spot == "required":
        return []
    points: list[PricePoint] = []
    for booking in ctx.obtain.bookings(offering):
        if booking.lead_hours >= ctx.deadline_h:
            continue   # the lead time alone fills the deadline: nothing booked can finish in it
        if not booking.instance_usd:
            if booking.id == "aws-capacity-block":
                continue
            points.extend(PricePoint(False, regions, chip, host, booking=booking) for regions, chip, host in on_demand)
            continue
        groups: dict[float, list[str]] = {}
        for regions, _, _ in on_demand:
            for region in regions:
                if region in booking.instance_usd:
                    groups.setdefault(booking.instance_usd[region][0], []).append(region)
        for usd, regions in groups.items():
            source, _, as_of = booking.instance_usd[regions[0]][1].rpartition(", as of ")
            # From the validated capacity-mode table, so assembled without validation (model_construct), as the
            # search's other output: a warm choose builds no validator (tests/test_cli_startup.py).
            chip = Price.model_construct(usd=float(usd / offering.chips_per_host),
                                         source=f"{source} (Capacity Block rate per instance-hour ${usd:,.3f})",
                                         as_of=date.fromisoformat(as_of.strip()[:10]))
            points.append(PricePoint(False, regions, chip, None, booking=booking))
    return points


def unheld_groups(ctx: SearchContext, offering: Offering, groups: list[tuple[list[str], Price, Price | None]]
                  ) -> list[tuple[list[str], Price, Price | None]]:
    """The price groups less the regions where a declared reservation holds the offering's machine type
    (reservations.holding). A fleet there runs on the reservation (use_reservation puts it on it, as a pin is timed
    on it): the reservation's own point sizes it (reserved_groups), so a queued mode is not sized there, whose legs,
    re-queued start-ups and price the fleet would not have."""
    if not ctx.reservations:
        return groups
    from accel.policies.cloud.reservations import holding

    kept = []
    for regions, chip, host in groups:
        free = [region for region in regions if holding(ctx.reservations, offering.machine_type, region) is None]
        if free:
            kept.append((free, chip, host))
    return kept


def price_points(ctx: SearchContext, offering: Offering) -> tuple[list[PricePoint], list[tuple[str, str]]]:
    """Every price point of the offering, in the order they are sized: each capacity type's region groups
    (spot_modes, price_groups), then the stack's reservations of its machine type (reserved_groups), sized
    apart, priced as declared and preferred on a tie. With them, (constraint, reason) when spot is wanted
    but not offered in the allowed regions."""
    points: list[PricePoint] = []
    reasons: list[tuple[str, str]] = []
    if offering.reserved_only:
        # A4X (reservations) and p6e-gb200 (UltraServer Capacity Blocks) are never sold on demand or as spot:
        # only the capacity the stack declares is sized, and without it the offering says what to declare.
        held = served_within_window(ctx, reserved_groups(ctx, offering), reasons)
        if not held and not reasons:
            kind = "Capacity Blocks" if offering.provisioning == "capacity-block" else "reservations"
            reasons.append(("capacity", f"{offering.machine_type} is sold only through {kind}: declare yours in "
                                        f"accel:reservations (kind {offering.provisioning}) or accel choose "
                                        "--reservations FILE to consider it"))
        points.extend(PricePoint(False, regions, chip, host, h) for h, regions, chip, host in held)
        return points, reasons
    for spot in spot_modes(ctx.spec):
        groups = price_groups(ctx, offering, spot)
        if not groups and spot:
            reasons.append(("spot", "no spot capacity in the allowed regions"))
        if not spot and offering.provisioning in QUEUED_PROVISIONING:
            # A service longer than the mode's longest request is not served through it (serving_capacity).
            refused = serving_refusal(ctx.spec, offering, ctx.obtain.mode_for(offering, offering.provisioning)
                                      if ctx.obtain is not None else None)
            if refused is not None:
                reasons.append(("capacity", refused))
                continue
            priced = queued_or_listed(ctx, offering, offering.provisioning)
            points.extend(PricePoint(False, regions, *priced(chip, host))
                          for regions, chip, host in unheld_groups(ctx, offering, groups))
        else:
            points.extend(PricePoint(spot, regions, chip, host) for regions, chip, host in groups)
        if not spot:
            points.extend(queued_groups(ctx, offering, unheld_groups(ctx, offering, groups)))
            points.extend(booked_groups(ctx, offering, groups))
    points.extend(PricePoint(False, regions, chip, host, held) for held, regions, chip, host in
                  served_within_window(ctx, reserved_groups(ctx, offering), reasons))
    points.extend(PricePoint(False, regions, chip, host, held) for held, regions, chip, host in committed_groups(ctx, offering))
    return points, reasons


def to_option(candidate: Candidate, region: str, ranked_after: str | None = None,
              memo: OptionMemo | None = None) -> Option:
    """The candidate in one of its regions, as the OPTION of the JSON contract (rounded: see _hours).
    `ranked_after`: why the ranking puts it after the chosen option whatever its figures (selection.ranked_after).
    `memo`: what the options built so far share with this one (to_options), else worked out here.

    Built without validation (`model_construct`): every value is worked out here from the validated catalog
    and the search's own arithmetic, typed as the fields are (the rounding helpers return floats), so
    validating it again would only spend the first use of Option building its validator (~10 ms of a
    choose). Options read from a user's file (a pinned plan) are still validated (Plan.model_validate)."""
    e, o = candidate.evaluation, candidate.offering
    chip, host, reserved = candidate.chip_price, candidate.host_price, candidate.reserved
    memo = memo or OptionMemo()
    values = memo.fleet(candidate).copy()   # in Option's field order: assembled_in_order stores it as it is
    values["region"] = region
    values["hourly_usd"] = _hourly(e.hourly_usd)
    values["total_usd"] = round(e.total_usd, 2)
    values["zone"] = (reserved and reserved.zone) or o.regions[region].zones[0]
    values["price_estimate"] = bool((chip is not None and chip.estimate) or (host is not None and host.estimate))
    values["price_source"] = _option_source(candidate) if reserved is not None else memo.source(chip)
    values["ranked_after"] = ranked_after
    if "usd_per_million_tokens" in e.detail:   # a serving fleet's price per token, from its sizing (the chosen's and
        # every option's alike: plan.serving_token_prices)
        values["usd_per_million_tokens"] = e.detail["usd_per_million_tokens"]
        values["usd_per_million_tokens_at_target"] = e.detail["usd_per_million_tokens_at_target"]
    elif TOKENS_UNPRICED in e.detail:   # on a reservation already paid for: why no price is stated instead
        values[TOKENS_UNPRICED] = e.detail[TOKENS_UNPRICED]
    return assembled_in_order(Option, values)


class OptionMemo:
    """What to_option works out alike for many options of one search: a search at 100x the catalog makes ~50,000
    options, most of them one fleet (offering, size, capacity type, MFU, goodput and run time) in regions priced
    apart, each region's price from one of a few sources. Keyed on everything each value is worked out from (the
    offering and size by identity: the memo lives for one list of options, to_options, while its candidates hold
    them), so nothing in it outlives the search that made it."""

    __slots__ = ("_fleets", "_sources")

    def __init__(self) -> None:
        self._fleets: dict[tuple, dict[str, Any]] = {}
        self._sources: dict[tuple[str, date], str] = {}

    def fleet(self, candidate: Candidate) -> dict[str, Any]:
        """Every field of the candidate's option that its region and price do not decide, the others None, in
        Option's field order (to_option fills them in a copy)."""
        e, s, o = candidate.evaluation, candidate.size, candidate.offering
        provisioning = capacity_type(candidate.spot, candidate.reserved, candidate.queue, candidate.booking, o)
        key = (id(o), id(s), provisioning, e.mfu, e.goodput, e.hours)
        values = self._fleets.get(key)
        if values is None:
            values = self._fleets[key] = {
                "cloud": o.cloud, "region": None, "accelerator": o.accelerator, "family": o.family,
                "chips": s.chips, "hosts": s.hosts, "slices": s.slices, "topology": s.topology,
                "machine_type": s.machine_type, "hourly_usd": None, "hours": _hours(e.hours), "total_usd": None,
                "mfu": _fraction(e.mfu), "offering": o.id, "zone": None, "chips_per_host": s.chips_per_host,
                "provisioning": provisioning, "goodput": _fraction(e.goodput), "price_estimate": None,
                "price_source": None, "ranked_after": None, "usd_per_million_tokens": None,
                "usd_per_million_tokens_at_target": None, TOKENS_UNPRICED: None}
        return values

    def source(self, price: Price) -> str:
        """_option_source of a candidate on no declared reservation or commitment: the chip price's source and date."""
        key = (price.source, price.as_of)
        words = self._sources.get(key)
        if words is None:
            words = self._sources[key] = _price_source(price)
        return words


def to_options(ranked: Sequence[tuple[Candidate, str, str | None]]) -> list[Option]:
    """to_option for each (candidate, region, ranked_after), in order, with one OptionMemo."""
    memo = OptionMemo()
    return [to_option(candidate, region, why, memo) for candidate, region, why in ranked]


def _option_source(candidate: Candidate) -> str:
    source = _price_source(candidate.chip_price)
    if candidate.reserved is not None and not candidate.reserved.holds_capacity:
        return commitment_source(source, candidate.reserved)
    return source


def _price_source(price: Price) -> str:
    return f"{price.source.split(':', 1)[0]} ({price.as_of})"


# total_usd is the unrounded total to the cent; hourly_usd and hours keep enough digits that
# round(hourly_usd * hours, 2) gives it back within a cent, for a short run (0.17 h at $54.76/h) as for
# a 90-day one ($2,765/h for 670 h): rounding either to the cent or to 0.01 h would drift by dollars.
def _hourly(usd: float) -> float:
    """Fleet $/h to a millionth of a dollar (catalog prices have at most six decimals per chip)."""
    return round(usd, 6)


def _hours(hours: float) -> float:
    """Run hours to twelve significant digits, never zero (the contract's hours are positive)."""
    return float(f"{hours:.12g}") or 1e-9


def _fraction(value: float) -> float:
    """A share in (0, 1], four significant digits (tiny serving utilisations stay above zero)."""
    return min(1.0, max(1e-6, float(f"{value:.4g}")))


def zone_spread_words(price: Price) -> str:
    """' (median of 6 zones, $1.78-$6.88/chip-h)' for a price observed zone by zone (AWS spot), else ''.

    Said next to the figure because one region's spot price is a spread, not a single number: the fleet may
    land in a zone far from the median."""
    spread = price.zone_range
    if spread is None:
        return ""
    count = len(price.by_zone or {})
    if count == 1:
        return " (observed in 1 zone only)"
    return f" (median of {count} zones, ${spread[0]:,.4g}-${spread[1]:,.4g}/chip-h)"


def estimate_for(ctx: SearchContext, candidate: Candidate, option: Option) -> Estimate:
    """The estimate behind the chosen option: FLOPs, memory fit, prices and every assumption with its source."""
    spec = ctx.spec
    accelerator = ctx.accelerator(candidate.offering)
    e = candidate.evaluation
    price_text = f"${candidate.chip_price.usd:,.4g}/chip-h" + zone_spread_words(candidate.chip_price)
    price_source = f"{candidate.chip_price.source} (as of {candidate.chip_price.as_of})"
    if candidate.host_price is not None:
        price_text += f" + ${candidate.host_price.usd:,.4g}/host-h"
        price_source += f"; host: {candidate.host_price.source} (as of {candidate.host_price.as_of})"
    if any(price is not None and price.estimate for price in (candidate.chip_price, candidate.host_price)):
        # Said next to the figure so nobody reads a rule-derived regional price as a list price.
        price_text += f" (estimate for {option.region}: not read off a price list; its source says how it was derived)"
    detail = dict(e.detail)
    detail["price"] = price_text
    sharded = ctx.sharded_state(candidate.offering)
    if sharded is not None:
        # What the Plan's training layout is sized by (policies/plan.py plan_parallelism), as the search laid it out.
        detail["replicated_state_gpus"], detail["sharded_state_gpus"] = sharded
    if candidate.reserved is not None:
        from accel.policies.cloud.reservations import reserved_words

        on_demand = fleet_hourly(option.chips, option.hosts, candidate.chip_price, candidate.host_price)
        detail["reserved"] = reserved_words(candidate.reserved, option.hosts, on_demand / option.hosts)
        price_source += (f"; reserved capacity: accel:reservations {candidate.reserved.name!r}"
                         if candidate.reserved.holds_capacity else f"; commitment: {candidate.reserved.what()}")
    # A mixture of experts' factor is listed as the search's own model worked it out, not worked out again.
    moe = ctx.training_model(candidate.offering, candidate.spot).moe if spec.kind != "inference" else None
    assumptions = assumption_list(spec, ctx.resolved, ctx.catalog, accelerator, candidate.offering.cloud,
                                  candidate.spot, option.chips, option.slices, price_source, detail, moe,
                                  candidate.offering.machine_type)
    if spec.kind == "inference":
        assert spec.inference is not None
        flops = ctx.inference_model(candidate.offering).step_flops_per_sequence * spec.inference.tokens_per_second
    else:
        flops = training_flops(spec, ctx.catalog.defaults)
    # Not validated again, as to_option: the figures are the option's and the search's (float() gives the
    # type validation would have given an integral FLOP count).
    return Estimate.model_construct(
        flops=float(flops), min_chips_for_memory=ctx.min_memory_chips(candidate.offering), hours=option.hours,
        hourly_usd=option.hourly_usd, total_usd=option.total_usd, mfu=option.mfu, goodput=option.goodput,
        assumptions=assumptions, details={k: v for k, v in detail.items()})


def hard_filter(spec: WorkloadSpec, offering: Offering) -> tuple[str, str] | None:
    """(constraint, reason) when the offering can never serve this workload, else None."""
    constraints = spec.constraints
    if offering.cloud not in constraints.clouds:
        return "clouds", f"cloud {offering.cloud} is not in constraints.clouds ({', '.join(constraints.clouds)})"
    if offering.family == "tpu":
        if constraints.custom_cuda_kernels:
            return "framework", "custom CUDA kernels need NVIDIA GPUs; TPUs run only what XLA compiles"
        if spec.framework not in XLA_FRAMEWORKS:
            return "framework", (f"{framework_label(spec)} runs on TPUs only through XLA "
                                 f"(use jax, tensorflow or pytorch-xla)")
        generation = hardware.current().generation_of_chip(offering.accelerator)
        if generation is not None and generation.frameworks and spec.framework not in generation.frameworks:
            return "framework", (f"TPU {generation.name} runs {' and '.join(generation.frameworks)}, not "
                                 f"{framework_label(spec)} ({generation.source.split(',')[0]})")
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


def check_regions(regions: Sequence[str] | None, offerings: Sequence[Offering], field: str) -> None:
    """A region that no offering has is a typo, not a constraint: WorkloadFieldError (exit 2) naming the field,
    the nearest known region and every known one."""
    known = sorted({region for offering in offerings for region in offering.regions})
    unknown = [region for region in regions or [] if region not in known]
    if not unknown:
        return
    import difflib  # only the message about an unknown region needs it

    problems = []
    for region in unknown:
        hint = difflib.get_close_matches(region, known, n=1, cutoff=0.6)
        problems.append(f"{region!r} is in no catalog offering" + (f" (did you mean {hint[0]!r}?)" if hint else ""))
    raise WorkloadFieldError(field, f"{'; '.join(problems)}; known regions: {', '.join(known)}")
