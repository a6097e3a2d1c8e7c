"""Sizing one offering at one price: the best fleet on its size ladder, or why none fits.

Training searches the ladder exactly and logarithmically because the estimator's curves are monotone:
cost grows with fleet size (MFU falls, spot losses grow, start-up is paid by every chip; only checkpoint
stalls shrink as more hosts write in parallel, by far less), and run time falls and then, for spot fleets,
rises again (more hosts, more preemptions). The global batch caps the ladder: past its sequences (times the
chips that can share one) more chips only idle. So:
- cost objective: the smallest size that fits in memory and meets the deadline (binary search),
- time objective: the smallest size within time_objective_tolerance of the fastest within the budget (more
  chips stop helping: they would buy less than that share of the run time).
Serving sizes replicas instead: every replica size is tried, replicas cover the tokens/s target; when the p99
bound rules an offering out, its fastest replica is kept as the closest option (fastest_replica_miss).
Each step returns what it found (SizingOutcome); size_offering is the one a search calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from accel.base.units import hours_text as duration, money, money_pair, plural
from accel.policies import hardware
from accel.policies.hardware import shapes, tpu_serving
from accel.policies.cloud.booking import booked_fleet_sizes, supply_problem
from accel.policies.cloud.capacity_modes import QUEUED_PROVISIONING
from accel.policies.cloud.obtainability import spot_wall_floor
from accel.policies.selection.capacity import (
    Timing, booked_timing, mode_id, queued_service_detail, queued_timing, spot_timing)
from accel.policies.selection.candidates import (
    Candidate, PricePoint, SearchContext, capacity_type, fleet_hourly, gpu_fleet_max_nodes, node_limit_words)
from accel.policies.catalog.model import Offering, Price
from accel.policies.plan import serving_token_prices
from accel.policies.estimator.activations import SequenceFit
from accel.policies.estimator.estimate import Evaluation, training_memory_bytes
from accel.policies.selection.spot_cap import spot_cap_words
from accel.policies.selection.ladders import (
    CountLadder,
    GpuLadder,
    Size,
    TpuLadder,
    largest_slice_chips,
    serving_fleet,
    tpu_sizes,
)
from accel.policies.selection.served_sizes import left_out_words, served_replica_sizes
from accel.policies.selection.pools import MAX_SLICES


@dataclass
class SizingOutcome:
    """What sizing one offering at one price found: the best size, or why not and the nearest misses."""

    best: Candidate | None = None
    alternatives: list[Candidate] = field(default_factory=list)   # other sizes that also meet every constraint
    reasons: list[tuple[str, str]] = field(default_factory=list)   # (constraint, reason)
    near: list[tuple[float, Candidate, str]] = field(default_factory=list)   # (overshoot, candidate, what it misses)
    # When nothing fits: the smallest fleet's cost and the closest size at a price factor (selection.rescale).
    smallest_cost: float | None = None
    closest_at: Callable[[float], tuple[float, Candidate, str] | None] | None = None
    # A training sizing at another price (regions, chip, host) of the same offering, capacity type and mode: what it
    # worked out without reading a price (ladder, timings, reasons) reused, the rest worked out at that price.
    reprice: Callable[[list[str], Price, Price | None], SizingOutcome] | None = None
    # The best's details.deadline_fit_usd before it was rounded to the cent: what a region priced at a multiple
    # scales (selection.rescale), so its figure is the one sizing it alone would round.
    deadline_fit_usd: float | None = None


def size_offering(ctx: SearchContext, offering: Offering, point: PricePoint) -> SizingOutcome:
    """The offering sized at one price point for the workload's kind: its best fleet and the alternatives
    worth showing, or the reasons none fits and the nearest misses (for a serving workload ruled out by its
    p99 bound, its fastest replica among them)."""
    if ctx.spec.kind != "inference":
        return size_training(ctx, offering, point)
    outcome = size_inference(ctx, offering, point)
    if outcome.best is None:
        closest = fastest_replica_miss(ctx, offering, point, outcome)
        if closest is not None:
            outcome.near.append(closest)
    return outcome


def size_training(ctx: SearchContext, offering: Offering, point: PricePoint) -> SizingOutcome:
    """The training fleet the objective picks on this offering's size ladder at one price point.

    Why it is long: the ladder, its memory floor and its end (max_chips, the node limit, the global batch)
    decide the reasons an offering is ruled out, and each reason names the constraint and the figures that
    did it; the pick itself is _pick_training_size (binary searches over the monotone curves, see the
    module's docstring), and what is left is the candidate a pick becomes and the few other sizes shown
    for the trade-off. Split further, each piece would need the ladder, the prices and the deadline again."""
    spot, regions, chip, host, reserved = point.spot, point.regions, point.chip, point.host, point.reserved
    booking = point.booking
    pool = (ctx.obtain.figure(offering, "on-demand", "pool_hosts") if point.within_pool and ctx.obtain is not None
            else None)
    outcome = SizingOutcome()
    spec = ctx.spec
    model = ctx.training_model(offering, spot)
    need = ctx.min_memory_chips(offering)
    # A long sequence's replica (tensor x context x pipeline GPUs, policies/estimator/activations.py) is the floor
    # where it is more than the state's, and its context-parallel ranks share one sequence of the batch.
    fit = ctx.sequence_fit(offering)
    sequence_floor = fit is not None and fit.changes_layout
    floor, batch_chips = need, ctx.training_batch_chips(offering)
    if fit is not None and sequence_floor:
        floor = max(need, fit.floor_chips) if fit.fits else NO_FLEET
    # The global batch bounds data parallelism: past its chips more only idle (but the state must fit somewhere).
    # A sequence nothing holds searches the whole ladder, so that its refusal, not the batch, is what is said.
    hard_cap = ctx.fleet_cap(offering)
    busy_cap = max(batch_chips, floor if floor < NO_FLEET else hard_cap)
    cap = min(hard_cap, busy_cap)
    limit = ctx.node_limit(offering)
    generation = shapes.GENERATION_BY_ACCELERATOR.get(offering.accelerator)
    # Run time does not depend on the price: regions priced differently share it, and so do the offerings of
    # one accelerator on one cloud whose machines read the same NVLink domain entry (one training model,
    # SearchContext.model_key).
    shared_hours = ctx.hours_cache.setdefault(ctx.model_key(offering, spot), {})

    def run_hours(s: Size) -> float:
        # Timed on the nodes holding whole replicas (a GPU fleet past them keeps the rest idle); paid on every node.
        t = ctx.trained_size(offering, s)
        key = (t.chips, t.hosts, t.slices)
        hours = shared_hours.get(key)
        if hours is None:
            hours = shared_hours[key] = model.hours(t.chips, t.hosts, t.slices)
        return hours

    # node_limited: the offering's node-pool limit, not max_chips, is what ends the ladder.
    if generation is not None:
        # A long sequence's slice floor bounds a multislice's slices as the state does (each holds both).
        slice_need = floor if sequence_floor and floor < NO_FLEET else need
        sizes = tpu_sizes(generation.name, cap, slice_need, limit.value if limit else None)
        node_limited = limit is not None and len(tpu_sizes(generation.name, cap, slice_need)) > len(sizes)
        if booking is not None:   # a booked mode supplies at most its limits (policies/cloud/booking.py)
            sizes = tuple(s for s in sizes if supply_problem(booking.mode, s.hosts, s.chips, True) is None)
        if pool is not None:   # the fleets one zone is expected to supply on demand
            sizes = tuple(s for s in sizes if s.hosts <= pool[0])
        ladder: GpuLadder | TpuLadder | CountLadder = TpuLadder(_each_faster_than_the_smaller(sizes, need, run_hours))
    else:
        # Whole nodes: a chip limit (max_chips, the offering's chips) rounds down, the batch's busy chips round up to
        # the fleet of whole node steps that holds them all (a batch keeping 3 GPUs busy trains on one 8-GPU node,
        # the idle 5 paid for and said: replica_fleet.training_size); more nodes than that would only idle.
        step = hardware.current().node_step(offering.machine_type)
        max_nodes = min(hard_cap // offering.chips_per_host,
                        -(-busy_cap // (offering.chips_per_host * step)) * step)
        if offering.training_max_nodes:
            max_nodes = min(max_nodes, offering.training_max_nodes)
        # A GPU fleet is split into pools within the per-pool limit (docs/scale.md): only the cluster's
        # limits (pools or nodes per cluster) end the ladder.
        fleet_nodes = gpu_fleet_max_nodes(limit)
        node_limited = fleet_nodes is not None and fleet_nodes < max_nodes
        if fleet_nodes is not None:
            max_nodes = min(max_nodes, fleet_nodes)
        if reserved is not None and (offering.reserved_only or reserved.provisioning == "capacity-block"):
            # Nothing is sold beyond the declared block or reservation; a Capacity Block's node group holds only
            # the block's instances (reservation_problems refuses a larger one).
            max_nodes = min(max_nodes, reserved.count)
        if booking is not None and booking.max_hosts is not None:
            max_nodes = min(max_nodes, booking.max_hosts)   # a booked mode supplies at most its limits
        if pool is not None:
            max_nodes = min(max_nodes, int(pool[0]))   # the fleets one zone is expected to supply on demand
        ladder = ctx.ladders.get((offering.id, max_nodes))
        if ladder is None:
            ladder = ctx.ladders[(offering.id, max_nodes)] = GpuLadder(offering, max_nodes)
        if booking is not None and booking.mode.limits.hosts_per_request:
            # Capacity Blocks come in fixed instance counts: the ladder is the fleets they make up (full blocks and
            # at most one smaller one, a node group each: policies/cloud/booking.py).
            key = ("booked", offering.id, booking.id, max_nodes)
            ladder = ctx.ladders.get(key) or ctx.ladders.setdefault(
                key, CountLadder(offering, booked_fleet_sizes(booking.mode, max_nodes)))
    limit_words = limit_detail = ""
    if limit is not None and node_limited:
        limit_words = node_limit_words(offering, limit)
        limit_detail = f"{limit_words} ({limit.source}); larger fleets were not considered"
    capacity = ("spot" if spot else booking.words if booking is not None else point.queue if point.queue else
                offering.provisioning if offering.provisioning in QUEUED_PROVISIONING else "on-demand")
    if len(ladder) == 0 and booking is not None:
        outcome.reasons.append(("capacity", f"{capacity}: no fleet within the mode's limits"))
        return _price_free_miss(outcome)
    if len(ladder) == 0:
        outcome.reasons.append(_below_one_node(ctx, offering, cap if generation is not None else hard_cap, capacity))
        return _price_free_miss(outcome)
    lo, hi = ladder.first_at_least(floor), len(ladder) - 1
    if lo > hi and fit is not None and sequence_floor and ladder.first_at_least(need) <= hi:
        # The state fits; one sequence's activations beside it do not, on any fleet this ladder holds.
        outcome.reasons.append(("memory", f"{capacity}: " + str(sequence_refusal(fit, ladder[hi].chips, offering))))
        return _price_free_miss(outcome)
    if booking is not None and lo > hi:
        # The mode's limits, not memory or max_chips, end this ladder below the fleet that holds the model.
        smallest = -(-need // offering.chips_per_host)
        problem = supply_problem(booking.mode, smallest, need, generation is not None)
        outcome.reasons.append(("capacity", f"{capacity}: the smallest fleet that holds the model "
                                            f"({plural(need, 'chip')}) is past what the mode supplies"
                                            + (f": {problem}" if problem else "")))
        return _price_free_miss(outcome)
    if lo > hi:
        state = training_memory_bytes(spec, ctx.resolved) / 1e12
        biggest = ladder[hi].chips
        largest_slice = (largest_slice_chips(generation.name, limit.value if limit else None)
                         if generation is not None else 0)
        if generation is not None and need > largest_slice:
            if node_limited:
                why, constraint = f"{limit_words}, and each slice of a multislice holds the whole state", "max_nodes"
            else:
                why = (f"the largest TPU {generation.name} slice has {plural(largest_slice, 'chip')}, and a "
                       f"multislice does not add up: it runs data-parallel across slices, so each slice must hold "
                       f"the whole state")
                constraint = "memory"
            outcome.reasons.append((constraint, f"{capacity}: {state:,.2f} TB of training state needs at least "
                                                f"{plural(need, 'chip')} in each slice; {why}"))
            return _price_free_miss(outcome)
        if offering.training_max_nodes and biggest < cap - offering.chips_per_host and not node_limited:
            why = f"{offering.machine_type} is a single-node type for training ({plural(biggest, 'chip')})"
            constraint = "memory"
        elif node_limited:
            why, constraint = limit_words, "max_nodes"
        elif ctx.fleet_cap_constraint(offering) == "offering_chips":
            why, constraint = f"{offering.id} holds {plural(ctx.fleet_cap(offering), 'chip')}", "offering_chips"
        else:
            why, constraint = f"max_chips allows {biggest}", "max_chips"
        outcome.reasons.append((constraint, f"{capacity}: {state:,.2f} TB of training state needs at least "
                                            f"{plural(need, 'chip')}; {why}"))
        return _price_free_miss(outcome)
    # The capacity mode's verdict (selection.capacity): spot judged at the quantile of reclaim waves and drains,
    # flex-start and queued chained in legs of at most their longest request; a held reservation as estimated.
    obtain = ctx.obtain
    provisioning = capacity_type(spot, reserved, point.queue, booking, offering)
    spot_model = obtain.spot_model(offering) if obtain is not None and spot else None
    queue = (obtain.queue(offering, provisioning) if obtain is not None and provisioning in QUEUED_PROVISIONING
             else None)
    mode = (booking.id if booking is not None else
            mode_id(obtain, offering, provisioning, held=reserved is not None and reserved.holds_capacity)
            if obtain is not None else provisioning)
    # Shared by every region of the offering on this mode (a held reservation is timed as estimated); on spot by
    # every offering of the same training model and mode too (the timing reads nothing else of the offering). A
    # booked mode's run is the on-demand run (the same model and hours cache), its timing adds the lead and window.
    timings: dict[tuple[int, int, int], Timing] = ({} if reserved is not None and reserved.holds_capacity else
                                                   ctx.timing_cache.setdefault(
        (*ctx.model_key(offering, spot), mode) if spot_model is not None else (offering.id, mode), {}))

    # The spot floors worked out for sizes not yet timed: a size kept by the spot filter below is then timed, and
    # its settle loop starts from its floor, which is the loop's first step (obtainability.spot_outcome).
    floors: dict[tuple[int, int, int], float] = {}
    spot_cap = ""   # why spot stops the ladder below the offering's own end (selection.spot_cap), when it does

    block_of = getattr(reserved, "block_hours", None) if reserved is not None and reserved.holds_capacity else None

    def timing(i: int) -> Timing:
        return timing_of(ladder[i])

    def timing_of(s: Size) -> Timing:
        key = (s.chips, s.hosts, s.slices)
        hit = timings.get(key)
        if hit is None:
            hours = run_hours(s)
            if booking is not None:
                hit = booked_timing(booking, s.hosts, s.chips, hours, generation is not None)
            elif spot_model is not None and obtain is not None:
                hit = spot_timing(obtain, spot_model, s.hosts, hours, model.loss_hours, mode, floors.get(key))
            elif queue is not None and obtain is not None:
                hit = queued_timing(obtain, queue, s.hosts, hours,
                                    model.startup_hours(ctx.trained_size(offering, s).hosts), mode, provisioning)
            elif block_of is not None and (block := block_of(hours)) is not None:
                # A declared Capacity Block: paid for its whole window; a run longer than it is not offered on it.
                hit = Timing(hours, block[0], mode) if block[1] is None else Timing(math.inf, math.inf, mode, block[1])
            else:
                hit = Timing(hours, hours, mode)
            timings[key] = hit
        return hit

    def spot_floor(s: Size) -> float:
        """Under timing_of(s).wall_hours on spot: the wall already worked out, else the settled loop's first step
        (obtainability.spot_wall_floor), which skips settling the sizes that cannot be kept."""
        key = (s.chips, s.hosts, s.slices)
        known = timings.get(key)
        if known is not None:
            return known.wall_hours
        assert spot_model is not None and obtain is not None
        floor = floors[key] = spot_wall_floor(s.hosts, run_hours(s), spot_model, obtain.confidence, model.loss_hours)
        return floor

    if spot_model is not None:
        # On spot the wall-clock at the quantile is not monotone in the fleet: each extra reclaim wave counted
        # at P90 is a step. Keep the sizes the pool holds that are faster than every smaller one (as TPU
        # multislices are kept), so the searches below see a falling curve; a slower larger fleet is never picked.
        filtered_key = ("spot", offering.id, len(ladder), floor)
        cached = ctx.ladders.get(filtered_key)
        if cached is None:
            held = ladder.within_hosts(spot_model.pool_hosts)
            filtered = (TpuLadder(_each_faster_than_the_smaller(held, floor, lambda s: timing_of(s).wall_hours,
                                                                spot_floor))
                        if held and held[-1].chips >= floor else ladder)
            # Where spot, not the offering's own end, stops the ladder: said when the top is the best hope.
            words = (spot_cap_words(spec, obtain, offering, spot_model, filtered[len(filtered) - 1], held[-1],
                                    ladder[len(ladder) - 1]) if filtered is not ladder and len(filtered) else "")
            cached = ctx.ladders[filtered_key] = (filtered, words)
        ladder, spot_cap = cached
        lo, hi = ladder.first_at_least(floor), len(ladder) - 1
        if lo > hi:
            outcome.reasons.append(("capacity", f"spot: no fleet of at most {spot_model.pool_hosts:g} hosts (the spot "
                                                "pool one zone is expected to hold) that holds the model ever "
                                                "finishes through the reclaim waves (estimates; "
                                                "constraints.capacity.obtainability overrides them)"))
            return _price_free_miss(outcome)
    if (booking is not None or block_of is not None) and not math.isfinite(timing(lo).wall_hours):
        # A booked mode sells windows up to its longest, a declared Capacity Block has its own: the smaller fleets
        # whose runs are longer are not offered in it; start from the first that fits (runs shorten as the fleet
        # grows).
        first = _first_true(lo, hi, lambda i: math.isfinite(timing(i).wall_hours))
        lo = first if first <= hi else lo
    if not math.isfinite(timing(lo).wall_hours):
        # The mode cannot supply even the smallest fleet that holds the model (past its pool or its size).
        outcome.reasons.append(("capacity", f"{timing(lo).risk} for the smallest fleet that holds the model "
                                            f"({ladder[lo].hosts} hosts; constraints.capacity.obtainability "
                                            "overrides the estimates)"))
        return _price_free_miss(outcome)

    def hours(i: int) -> float:
        return timing(i).wall_hours

    # The fastest size depends on run time alone: found once per offering and mode, whatever the region's price.
    fastest_key = ("fastest", offering.id, mode, reserved is None, lo, hi)
    # A GPU fleet past whole replicas is timed as its replicas (replica_fleet): sizes that add only idle nodes make
    # a plateau of the run time whose cost rises, so the searches below judge a size by its plateau's first one.
    # Both are kept per ladder and chip (the memory floor): every region and price point asks them again.
    busy_nodes, starts = (({}, {}) if generation is not None else
                          ctx.plateaus.setdefault((id(ladder), offering.accelerator, lo), ({}, {})))

    def busy(i: int) -> int:   # the nodes size i trains on: never falls along the ladder; a TPU size trains whole
        if generation is not None:
            return i
        nodes = busy_nodes.get(i)
        if nodes is None:
            nodes = busy_nodes[i] = ctx.trained_size(offering, ladder[i]).hosts
        return nodes

    def plateau_start(i: int) -> int:
        if generation is not None:
            return i
        start = starts.get(i)
        if start is None:
            # A fleet of whole replicas is the first size of its plateau (the one before trains on fewer nodes).
            start = starts[i] = (i if busy(i) == ladder[i].hosts else
                                 _first_true(lo, i, lambda j: busy(j) >= busy(i)))
        return start

    fastest = ctx.price_free.get(fastest_key)
    if fastest is None:
        # A plateau is not where more chips stop helping; the fastest is the first size of its plateau.
        def stops_helping(i: int) -> bool:
            """Whether the next size that trains on more nodes is no faster than size i (none: True)."""
            after = _first_true(i + 1, hi, lambda j: busy(j) > busy(i))
            return after > hi or hours(after) >= hours(i)

        fastest = _first_true(lo, hi - 1, stops_helping)
        fastest = ctx.price_free[fastest_key] = plateau_start(fastest)
    budget = ctx.budget
    # A booked mode bills whole windows on its grid, so its cost is not a smooth valley along the ladder (a larger
    # fleet can fit a shorter window and cost less): its short ladder is scanned, not bisected.
    scan = booking is not None
    deadline = ctx.deadline_h
    days = deadline / 24
    deadline_words = f"the {days:g}-day deadline" if ctx.deadline_given else f"the default {days:g}-day limit"
    if spot and spot_model is None:
        # Spot keeps slack where no obtainability model applies: its loss is only expected, and capacity can
        # vanish for hours. With the model, the deadline is judged at the quantile of the reclaim events instead.
        slack = ctx.catalog.defaults.training.spot_deadline_slack.value
        deadline *= 1.0 - slack
        deadline_words += f" less the {slack:.0%} spot slack ({deadline / 24:.3g} days)"

    larger = f"; larger fleets were not considered: {limit_words}" if node_limited and generation is None else ""
    if spot_cap:   # the spot pool, not the node limit or max_chips, ended this ladder
        larger = f"; {spot_cap}"
    elif not larger and generation is None and batch_chips < hard_cap and ladder[hi].chips >= batch_chips:
        # The global batch, not a chip limit, ends this ladder: a larger fleet would train no faster.
        larger = (f"; the global batch keeps at most {plural(batch_chips, 'GPU')} busy, so larger fleets only idle "
                  "(set training.global_batch_tokens to raise it)")
    # The workload's max_chips (not the offering, the node limit or the global batch) ends a ladder whose
    # top is still the fastest: a deadline missed there is missed because of the cap, so it is named.
    capped = (not node_limited and not spot_cap and fastest == hi
              and ctx.max_chips <= min(offering.max_chips or ctx.max_chips, batch_chips))

    # Per index of the (final) ladder, what its cost is worked out from: wall-clock and billed hours, chips, hosts.
    rows: dict[int, tuple[float, float, int, int]] = {}

    def at_price(regions: list[str], chip: Price, host: Price | None) -> SizingOutcome:
        """The sizing at one price (the regions it is offered in at that price): everything above reads none,
        so a region of this offering priced otherwise is sized by this function alone (SizingOutcome.reprice)."""
        outcome = SizingOutcome()
        cache: dict[int, tuple[float, float]] = {}

        def hours_cost(i: int) -> tuple[float, float]:
            """(wall-clock hours judged against the deadline, cost of the hours billed)."""
            hit = cache.get(i)
            if hit is None:
                row = rows.get(i)
                if row is None:
                    s, t = ladder[i], timing(i)
                    row = rows[i] = (t.wall_hours, t.billed_hours, s.chips, s.hosts)
                hit = cache[i] = (row[0], row[1] * fleet_hourly(row[2], row[3], chip, host, reserved))
            return hit

        def cost(i: int) -> float:
            hit = cache.get(i)
            return (hit if hit is not None else hours_cost(i))[1]

        if budget is None:
            within_budget = hi
        elif scan:
            within_budget = max((i for i in range(lo, hi + 1) if cost(i) <= budget), default=lo - 1)
        else:
            within_budget = _last_true(lo, hi, lambda i: cost(plateau_start(i)) <= budget)

        def candidate(i: int) -> Candidate:
            s = ladder[i]
            trained = ctx.trained_size(offering, s)   # what the run is timed on (whole replicas)
            _, total = hours_cost(i)
            t = timing(i)
            h = t.billed_hours
            hosts_loss = 1.0 - model.productivity(trained.hosts)
            detail: dict[str, float | int | str] = {"min_chips_for_memory": need,
                                                    "smallest_fit_chips": ladder[lo].chips,
                                                    "batch_chip_limit": batch_chips,
                                                    "startup_hours": round(model.startup_hours(trained.hosts), 3),
                                                    **ctx.sequence_detail(offering, s)}
            detail.update(ctx.batch_idle_detail(offering, s))
            if ctx.objective == "time" and i < fastest:
                saved = h - hours(fastest)
                detail["more_chips"] = (f"more chips stop helping: the fastest fleet, "
                                        f"{plural(ladder[fastest].chips, 'chip')}"
                                        f", would finish only {duration(saved)} ({saved / h:.0%}) sooner"
                                        + f" for {money(cost(fastest))} instead of {money(total)}")
            elif ctx.objective == "time" and i == len(ladder) - 1 and batch_chips <= s.chips:
                detail["more_chips"] = "more chips stop helping: " + (
                    ctx.long_sequence_batch_why(fit) if fit is not None and sequence_floor and fit.fits
                    and batch_chips == ctx.long_sequence_batch_chips(fit) else ctx.batch_why)
            if spot:
                detail["spot_time_lost"] = round(hosts_loss, 4)
            detail["capacity_mode"] = t.mode
            if t.risk:
                detail["capacity_risk"] = t.risk
            if t.wall_hours != h:
                detail["capacity_wall_hours"] = round(t.wall_hours, 2)
            if booking is not None:   # what the stack asks the user to book (accel/stack/bookings.py)
                detail["capacity_lead_days"] = booking.lead_days
                detail["capacity_window_days"] = round(h / 24)
            if t.legs is not None:
                detail["capacity_legs"] = t.legs.legs
            if limit_detail and generation is None and i == hi:
                detail["node_limit"] = limit_detail
            evaluation = Evaluation(hours=h, hourly_usd=fleet_hourly(s.chips, s.hosts, chip, host, reserved),
                                    total_usd=total,
                                    mfu=model.mfu(trained.chips, trained.slices),
                                    goodput=model.goodput * max(model.productivity(trained.hosts), 1e-6)
                                    * min(1.0, run_hours(s) / h), detail=detail)
            return Candidate(offering, regions, spot, s, evaluation, chip, host, reserved, booking, point.queue)

        def closest(factor: float = 1.0) -> tuple[float, Candidate, str] | None:
            """When this group has nothing feasible, its closest size for the explanation: the smallest product of
            overshoot factors (time over the deadline x cost over the budget) among a few sizes, and what else it
            misses in words. `factor` prices them at that multiple of this group's prices (selection.rescale: a
            region priced alike)."""
            def scaled_cost(i: int) -> float:
                return cost(i) * factor

            def late(i: int) -> float:
                """The overshoot of the deadline (price-free)."""
                return math.log(max(1.0, hours(i) / deadline))

            def scored_at(i: int, lateness: float) -> tuple[float, float, int]:
                """(overshoot: the deadline's and the budget's, cost, index)."""
                spent = scaled_cost(i)
                return lateness + (math.log(max(1.0, spent / budget)) if budget else 0.0), spent, i

            # The sizes probed, but the budget's, and their lateness do not depend on the price: worked out once for
            # every region of the offering on this mode (not for a declared reservation, whose ladder is its own).
            free_key = ("closest", offering.id, provisioning, len(ladder), lo, hi, fastest, deadline)
            free = ctx.price_free.get(free_key) if reserved is None else None
            if free is None:
                probes = {lo, fastest, _first_true(lo, fastest, lambda i: hours(i) <= deadline)}
                step = max(1, (fastest - lo) // 8)
                probes.update(range(lo, fastest + 1, step))
                free = {i: late(i) for i in probes if lo <= i <= hi and math.isfinite(hours(i))}
                if reserved is None:
                    ctx.price_free[free_key] = free
            probed = free
            if budget is not None:
                within = _last_true(lo, hi, lambda i: scaled_cost(i) <= budget)
                if within not in free and lo <= within <= hi and math.isfinite(hours(within)):
                    probed = {**free, within: late(within)}
            scored = [scored_at(i, lateness) for i, lateness in probed.items()]
            if not scored:
                return None
            score, _, i = min(scored)
            # The top of a ladder spot stopped early is closest because spot stopped it: the refusal says so.
            return score, candidate(i), (spot_cap if i == hi and i == fastest else "")

        def keep_closest() -> None:
            # A booked fleet that misses is the same fleet as the on-demand one of this offering, later (its lead) and
            # billed for a whole window: the on-demand point keeps the closest size for the explanation.
            near = closest() if booking is None else None
            if near is not None:
                outcome.near.append(near)
            # What a region priced at a multiple of this one needs to reuse this sizing exactly (selection.rescale).
            outcome.smallest_cost = cost(lo)
            outcome.closest_at = closest if booking is None else _no_closest

        picked = _pick_training_size(ctx, ladder, lo, fastest, within_budget, hours, cost, deadline, budget,
                                     deadline_words, capacity, larger, capped, scan)
        if picked.miss is not None:
            outcome.reasons.append(picked.miss)
            keep_closest()
            return outcome
        best, on_time = picked.index, picked.on_time
        outcome.best = candidate(best)
        if on_time < best:  # the cost valley's bottom is past the smallest fleet that meets the deadline: say so
            outcome.deadline_fit_usd = cost(on_time)
            outcome.best.evaluation.detail.update({"deadline_fit_chips": ladder[on_time].chips,
                                                   "deadline_fit_usd": round(outcome.deadline_fit_usd, 2)})
        # A few other sizes that also meet every constraint show the trade-off: larger and faster when the
        # objective is cost, smaller and cheaper when it is time.
        factors = (1.5, 2.0, 3.0) if ctx.objective == "cost" else (1 / 1.5, 1 / 2.0, 1 / 3.0)
        if point.queue is not None:
            # The offering's on-demand point shows the same sizes (on demand); flex-start shows the nearest one: a
            # search at 100x the catalog builds an option for every size shown, and three per flex-start point was a
            # fifth of its options (benchmarks/bench_choose.py).
            factors = factors[:1]
        seen = {best}
        # Each probe is its plateau's first size: more nodes that would only idle make no trade-off worth showing.
        probes = [ladder.first_at_least(math.ceil(ladder[best].chips * factor)) for factor in factors]
        probes = [plateau_start(i) if lo <= i <= hi else i for i in probes]
        if reserved is not None and 0 < ladder[lo].hosts <= reserved.held_machines:
            # The whole reservation: when it is already paid for, the fastest fleet it holds costs nothing more.
            probes.append(_last_true(lo, hi, lambda i: ladder[i].hosts <= reserved.held_machines))
        for i in probes:
            if i in seen or not lo <= i <= hi:
                continue
            seen.add(i)
            h, c = hours_cost(i)
            if h <= deadline and (budget is None or c <= budget) and (
                    h < hours(best) if ctx.objective == "cost" else c < cost(best)):
                outcome.alternatives.append(candidate(i))
        return outcome

    outcome = at_price(regions, chip, host)
    outcome.reprice = at_price
    return outcome


def _price_free_miss(outcome: SizingOutcome) -> SizingOutcome:
    """A point ruled out before any price is read (no ladder, the state past what the ladder holds, a mode that
    cannot supply the smallest fleet that holds it): the same miss at every price, so a region priced at a
    multiple of this one reuses it (selection.rescale) instead of sizing again, budget or not. Such a miss keeps no
    closest size (none was priced)."""
    outcome.smallest_cost, outcome.closest_at = 0.0, _no_closest
    return outcome


def _no_closest(factor: float) -> None:
    """A booked miss keeps no closest size, at any price (keep_closest)."""
    return None


NO_FLEET = 1 << 40   # the floor of a sequence no context-parallel degree fits: past every ladder


def sequence_refusal(fit: SequenceFit, cap: int, offering: Offering) -> str | None:
    """Why a long sequence cannot train on this offering (None: it can): no context-parallel degree brings its
    activations within the GPU's memory, or the replica that does is past the most chips allowed. Names
    model.sequence_length and what would fit."""
    sequence = f"model.sequence_length {fit.sequence_length:,}"
    if not fit.fits:
        return (f"{sequence}: {fit.why()} on {offering.accelerator}; the state leaves no room for a sequence"
                if fit.longest_sequence(1) == 0 else
                f"{sequence}: {fit.why()} on {offering.accelerator}; at CP{fit.max_context} up to "
                f"{fit.longest_sequence(fit.max_context):,} tokens would fit")
    if fit.floor_chips <= cap:
        return None
    largest = 1
    while fit.tensor * fit.pipeline * largest * 2 <= cap:
        largest *= 2
    longest = fit.longest_sequence(largest) if fit.tensor * fit.pipeline <= cap else 0
    fits = (f"within {plural(cap, 'chip')} (CP{largest}) up to {longest:,} tokens would fit" if longest else
            f"{plural(cap, 'chip')} hold no TP{fit.tensor} x PP{fit.pipeline} replica")
    return (f"{sequence}: {fit.why()}, past the {plural(cap, 'chip')} allowed (max_chips or the offering's "
            f"largest fleet); {fits}, or allow {plural(fit.replica_gpus, 'chip')}")


def _each_faster_than_the_smaller(sizes: tuple[Size, ...], need: int, run_hours: Callable[[Size], float],
                                  floor: Callable[[Size], float] | None = None) -> tuple[Size, ...]:
    """The TPU sizes a search can pick, each faster than every smaller one that holds the state (`need` chips).

    A multislice of more, smaller slices can be slower than a smaller fleet of fewer, larger ones: its DCN
    all-reduce spans more slices (policies/estimator/dcn.py). Such a size costs more and runs longer, so no objective
    picks it; dropping it keeps run time falling along the ladder, which the searches below rely on.
    `floor`, when given, is a cheaper bound under run_hours: a size whose floor is already no quicker than the
    quickest smaller one is dropped without working out its run time (the same sizes are kept)."""
    kept: list[Size] = []
    quickest = math.inf
    for size in sizes:
        if size.chips < need:
            kept.append(size)
            continue
        if floor is not None and floor(size) >= quickest:
            continue
        hours = run_hours(size)
        if hours < quickest:
            kept.append(size)
            quickest = hours
    return tuple(kept)


class TrainingPick(NamedTuple):
    """What the objective picks on a training ladder: the index it picks and the smallest that meets the
    deadline on the way there; or, when nothing fits, the (constraint, reason) that rules the offering out."""

    index: int = -1
    on_time: int = -1
    miss: tuple[str, str] | None = None


def _below_one_node(ctx: SearchContext, offering: Offering, cap: int, capacity: str) -> tuple[str, str]:
    """(constraint, reason) for a ladder with no fleet: the fleet's ceiling `cap` is below one GPU node or the smallest
    TPU slice. On a TPU generation the ceiling is the global batch's chips where they are less than any chip limit (a
    short batch of long sequences): raising max_chips would change nothing, so the refusal names
    training.global_batch_tokens. (A GPU ladder reaches the node the batch keeps partly busy: its ceiling here is a
    chip limit.)"""
    generation = shapes.GENERATION_BY_ACCELERATOR.get(offering.accelerator)
    if generation is None:
        node = f"one node of {plural(offering.chips_per_host, 'GPU')}"
    else:
        smallest = min(shapes.topology_chips(t) for t in shapes.valid_topologies(generation.name))
        node = f"the smallest TPU {generation.name} slice ({plural(smallest, 'chip')})"
    if cap < ctx.fleet_cap(offering):
        return ("global_batch", f"{capacity}: the global batch keeps at most {plural(cap, 'chip')} busy, below "
                                f"{node} (set training.global_batch_tokens to raise it)")
    if ctx.fleet_cap_constraint(offering) == "offering_chips":
        return ("offering_chips", f"{capacity}: {offering.id} holds {plural(cap, 'chip')}, below {node}")
    return ("max_chips", f"{capacity}: max_chips {cap} is below {node}")


def _pick_training_size(ctx: SearchContext, ladder: GpuLadder | TpuLadder | CountLadder, lo: int, fastest: int,
                        within_budget: int, hours: Callable[[int], float], cost: Callable[[int], float],
                        deadline: float, budget: float | None, deadline_words: str, capacity: str,
                        larger: str = "", capped: bool = False, scan: bool = False) -> TrainingPick:
    """The ladder index the objective picks and the smallest index that meets the deadline on the way there
    (the same unless the cost objective went on down its cost valley), or why nothing fits.
    `larger` says why the ladder stops where it does (a node-pool limit); it is added when the top of the
    ladder was the best hope. `capped`: the workload's max_chips ends the ladder while more chips would still be faster."""
    top = len(ladder) - 1
    cap_words = (f" (the largest fleet max_chips {ctx.max_chips} allows; "
                 + ("raise constraints.max_chips)" if ctx.spec.constraints.max_chips is not None
                    else "the default: set constraints.max_chips to raise it)"))
    late = "max_chips" if capped else "deadline"
    if within_budget < lo:
        spent, allowed = money_pair(cost(lo), budget or 0)
        return TrainingPick(miss=("budget", f"{capacity}: the smallest fleet that holds the model "
                                            f"({plural(ladder[lo].chips, 'chip')}) costs {spent}, over the {allowed} budget"))
    if ctx.objective == "time":
        best = min(fastest, within_budget)
        # Diminishing returns: the smallest fleet within the tolerance of the fastest one.
        tolerance = ctx.resolved["time_objective_tolerance"]
        target = hours(best) * (1.0 + tolerance)
        best = _first_true(lo, best, lambda i: hours(i) <= target)
        if hours(best) > deadline:
            what = "the fastest fleet within budget" if within_budget < fastest else "the fastest fleet"
            at_cap = capped and best == top
            return TrainingPick(miss=("max_chips" if at_cap else "deadline",
                                      f"{capacity}: {what} ({plural(ladder[best].chips, 'chip')}"
                                      f"{cap_words if at_cap else ''}) takes {duration(hours(best))}, past {deadline_words}"
                                      + (larger if best == top else "")))
        return TrainingPick(best, best)
    else:
        if hours(fastest) > deadline:
            return TrainingPick(miss=(late, f"{capacity}: even the fastest fleet "
                                            f"({plural(ladder[fastest].chips, 'chip')}{cap_words if capped else ''}) "
                                            f"takes {duration(hours(fastest))}, past {deadline_words}"
                                            + (larger if fastest == top else "")))
        best = _first_true(lo, fastest, lambda i: hours(i) <= deadline)
        if scan:   # cost is a step function of the window (booked modes): the cheapest on-time size, by scanning
            cheapest = min(range(best, fastest + 1), key=lambda i: (cost(i), i))
            if budget is not None and cost(cheapest) > budget:
                spent, allowed = money_pair(cost(cheapest), budget)
                return TrainingPick(miss=("budget", f"{capacity}: meeting {deadline_words} takes "
                                                    f"{plural(ladder[cheapest].chips, 'chip')} costing {spent}, over "
                                                    f"the {allowed} budget"))
            return TrainingPick(cheapest, best)
        if best > within_budget:
            spent, allowed = money_pair(cost(best), budget or 0)
            return TrainingPick(miss=("budget", f"{capacity}: meeting {deadline_words} takes "
                                                f"{plural(ladder[best].chips, 'chip')} costing {spent}, over the {allowed} "
                                                f"budget"))
        # Every size from there to the fastest meets the deadline, and the cheapest of them need not be the
        # smallest: a run's cost first falls with its size while the costs a run pays whatever its size
        # (start-up, checkpoint stalls that shrink as more hosts write at once) shrink faster than the fleet
        # grows, then rises. That curve is not one valley (a ladder mixes slice shapes, node-pool splits and
        # multislice counts), so a bisection for "the next one is no cheaper" can stop on a slope: every size
        # is costed and the cheapest taken, the smallest on a tie.
        return TrainingPick(min(range(best, fastest + 1), key=cost), best)


def size_inference(ctx: SearchContext, offering: Offering, point: PricePoint) -> SizingOutcome:
    """The serving fleet the objective picks at one price point: a replica size and enough replicas for the
    tokens/s target; every replica size is tried (a short list), each kept as a near miss for the explanation.

    Why it is long: each replica size that fails is kept with its own reason (weights that do not fit, the p99
    bound, max_chips, the node limit, the budget), and the rejection line names the one that decided."""
    spot, regions, chip, host, reserved = point.spot, point.regions, point.chip, point.host, point.reserved
    outcome = SizingOutcome()
    spec = ctx.spec
    assert spec.inference is not None
    model = ctx.inference_model(offering)
    accelerator = ctx.accelerator(offering)
    provisioning = capacity_type(spot, reserved, point.queue, None, offering)
    capacity = ("spot" if spot else provisioning if provisioning in QUEUED_PROVISIONING or reserved is not None
                else "on-demand")
    # A service bought through flex-start or queued provisioning (one request within its longest: candidates
    # .price_points and queued_groups keep a longer one off it) waits in the queue before it serves and is
    # supplied at most the mode's hosts (estimates, as a training fleet on it: capacity.queued_timing).
    queue = (ctx.obtain.queue(offering, provisioning) if ctx.obtain is not None and provisioning in
             QUEUED_PROVISIONING else None)
    why_not: list[str] = []
    too_slow: list[tuple[float, int]] = []   # (decode step at batch 1, replica chips) of sizes over the p99 bound
    feasible: list[tuple[tuple, Candidate]] = []
    pipelined = False   # a replica of pipeline stages is feasible already (the fewest stages: plans go smallest first)
    hours = spec.inference.hours
    # The replicas, fleets and limits do not depend on the price: worked out once (selection.replicas).
    from accel.policies.selection.replicas import replica_plans  # serving only: a training run skips ~0.6 ms of import

    plans = replica_plans(ctx, offering, spot)
    for plan in plans:
        size, fleet = plan.size, plan.fleet
        if fleet is None:
            if plan.too_slow_step is not None:
                too_slow.append((plan.too_slow_step, size.chips))
            else:
                why_not.append(f"{size.chips}-chip replica: {plan.reason}")
            continue
        assert plan.detail is not None
        if queue is not None and fleet.hosts > queue[2]:
            why_not.append(f"{size.chips}-chip replicas: {fleet.hosts} hosts is past the {queue[2]:g} hosts "
                           f"{provisioning} is expected to supply (estimate)")
            continue
        if (reserved is not None and fleet.hosts > reserved.count
                and (offering.reserved_only or reserved.provisioning == "capacity-block")):
            # Nothing is sold past the declared reservation or block (as a training fleet: size_training's ladder).
            why_not.append(f"{size.chips}-chip replicas: {plan.replicas} of them need {fleet.hosts} nodes"
                           f"{placed_in_units(offering)}, more than the {reserved.count} of reservation "
                           f"'{reserved.name}'")
            continue
        hourly = fleet_hourly(fleet.chips, fleet.hosts, chip, host, reserved)
        detail = dict(plan.detail)
        detail.update(serving_token_prices(hourly, plan.served, spec.inference.tokens_per_second,
                                           reserved.prepaid_words(fleet.hosts) if reserved is not None else None))
        if queue is not None and ctx.obtain is not None:
            detail.update(queued_service_detail(ctx.obtain, offering, provisioning))
        evaluation = Evaluation(hours=hours, hourly_usd=hourly, total_usd=hourly * hours, mfu=plan.utilisation,
                                goodput=1.0, detail=detail)
        cand = Candidate(offering, regions, spot, fleet, evaluation, chip, host, reserved, queue=point.queue)
        over_budget = ctx.budget is not None and evaluation.total_usd > ctx.budget
        overshoot = plan.overshoot + (math.log(max(1.0, evaluation.total_usd / ctx.budget)) if ctx.budget else 0.0)
        outcome.near.append((overshoot, cand, ""))
        if plan.over_limits:
            why_not.append(plan.over_limits)
            continue
        if over_budget:
            spent, allowed = money_pair(evaluation.total_usd, ctx.budget or 0)
            why_not.append(f"{size.chips}-chip replicas: {spent} over the {allowed} budget")
            continue
        latency_ms = plan.latency_ms
        if ctx.objective == "time" and size.stages > 1 and pipelined:
            # A token crosses every stage, so more stages never decode it sooner: they only hold larger micro-batches,
            # which fill the p99 bound the same way. The fewest stages that serve are the fastest pipeline; a larger
            # one would win the time objective by the bisection's rounding alone (2 x 32 p5 nodes for 0.4 ms).
            continue
        pipelined = pipelined or size.stages > 1
        key = ((latency_ms, evaluation.total_usd) if ctx.objective == "time" else (evaluation.total_usd, latency_ms))
        feasible.append((key, cand))
    if feasible:
        feasible.sort(key=lambda item: (item[0], item[1].size.chips))
        outcome.best = feasible[0][1]
        outcome.alternatives = [cand for _, cand in feasible[1:4]]
        return outcome
    if too_slow:
        # Only the fastest replica size decides whether the p99 bound can be met: name it, not every slower one.
        step, chips = min(too_slow)
        why_not.insert(0, model.too_slow(step, f"the fastest ({chips}-chip) replica"))
    if not why_not:
        outcome.reasons.append(("memory", f"{capacity}: no replica size available{left_out_words(ctx, offering)}"))
        return outcome
    # A TPU replica is held to one host (policies/hardware/tpu_serving.py): where memory or the p99 bound rule the
    # offering out, a larger replica is what would serve, so the rejection says why there is none and what to do.
    generation = shapes.GENERATION_BY_ACCELERATOR.get(offering.accelerator)
    held = f"; {tpu_serving.why_within_hosts(generation.name)}" if generation is not None else ""
    # The sizes a named model's heads ruled out (served_sizes): a larger or faster one may be among them.
    held += left_out_words(ctx, offering)
    if all(w.endswith("weights do not fit") for w in why_not):
        largest = max(plan.size.chips for plan in plans)
        outcome.reasons.append(("memory", f"{capacity}: {model.weight_bytes / 1e9:,.0f} GB of weights do not fit in the "
                                          f"largest replica here ({largest} x {accelerator.hbm_gb:g} GB){held}"))
        return outcome
    why_not = [w for w in why_not if not w.endswith("weights do not fit")]
    constraint = ("budget" if any("budget" in w for w in why_not) else
                  ctx.fleet_cap_constraint(offering) if any("> max" in w for w in why_not) else
                  "max_nodes" if any("over the node limit" in w for w in why_not) else
                  "max_slices" if any(f"the {MAX_SLICES} one TPU fleet declares" in w for w in why_not) else
                  "capacity" if any("is expected to supply" in w or "of reservation '" in w for w in why_not) else
                  "latency" if any("decode step" in w for w in why_not) else "memory")
    outcome.reasons.append((constraint, f"{capacity}: " + "; ".join(why_not[:3])
                            + (held if constraint in ("memory", "latency") else "")))
    return outcome


def placed_in_units(offering: Offering) -> str:
    """' (whole units of N nodes, the unit the cloud places)' for a GPU machine placed in units (hardware table
    node_step: A4X 18-tray NVLink domains, p6e-gb200 UltraServers), else ''."""
    step = hardware.current().node_step(offering.machine_type)
    return f" (whole units of {step} nodes, the unit the cloud places {offering.machine_type} in)" if step > 1 else ""


def fastest_replica_miss(ctx: SearchContext, offering: Offering, point: PricePoint,
                         outcome: SizingOutcome) -> tuple[float, Candidate, str] | None:
    """When the p99 bound is what ruled an offering out (`outcome` has no near miss of its own), its fastest
    replica (at batch 1, enough replicas for the target) as the near miss to keep, else None. (The rejection
    reason itself states the p99 it compared.)"""
    spot, regions, chip, host, reserved = point.spot, point.regions, point.chip, point.host, point.reserved
    fastest = _fastest_replica(ctx, offering)
    if fastest is None or not any(constraint == "latency" for constraint, _ in outcome.reasons):
        return None
    step, size, bound = fastest
    spec = ctx.spec
    assert spec.inference is not None
    factor = ctx.resolved["inference_latency_p99_factor"]
    p99_ms = step * factor * 1000
    limit = spec.inference.p99_latency_ms
    if p99_ms <= limit or outcome.near:
        return None
    headroom = 1.0 + (ctx.resolved["inference_spot_serving_headroom"] if spot else 0.0)
    model = ctx.inference_model(offering)
    # A pipeline replica keeps one micro-batch per stage in flight: `stages` sequences at batch 1.
    replicas = max(model.min_replicas, math.ceil(spec.inference.tokens_per_second * headroom * step / size.stages))
    fleet = serving_fleet(offering, size, replicas, model.min_replicas)
    hourly = fleet_hourly(fleet.chips, fleet.hosts, chip, host, reserved)
    detail: dict[str, float | int | str] = {
        "replica_chips": size.chips, "replicas": replicas, "batch_per_replica": size.stages,
        "p99_ms_per_token": round(p99_ms, 1), "tokens_per_second_per_replica": round(size.stages / step, 1),
        "bound": bound, "min_chips_for_memory": ctx.min_memory_chips(offering)}
    if size.stages > 1:
        detail["pipeline_stages"] = size.stages
    # Priced per token as a fleet that serves is (plan.serving_token_prices), at what it serves at batch 1: a near miss
    # shown beside the chosen says what it would have cost a token, not only an hour.
    detail.update(serving_token_prices(hourly, replicas * size.stages / step, spec.inference.tokens_per_second,
                                       reserved.prepaid_words(fleet.hosts) if reserved is not None else None))
    hours = spec.inference.hours
    evaluation = Evaluation(hours=hours, hourly_usd=hourly, total_usd=hourly * hours, mfu=1e-6, goodput=1.0,
                            detail=detail)
    closest = Candidate(offering, regions, spot, fleet, evaluation, chip, host, reserved)
    return (math.log(p99_ms / limit), closest, "")


def _fastest_replica(ctx: SearchContext, offering: Offering) -> tuple[float, Size, str] | None:
    """(decode step at batch 1, replica size, bound) of the replica size with the shortest step that holds the
    weights and one sequence; None when none does. Price-free: worked out once per offering in a search."""
    key = ("fastest replica", offering.id)
    if key not in ctx.price_free:
        ctx.price_free[key] = _fastest_replica_of(ctx, offering)
    return ctx.price_free[key]


def _fastest_replica_of(ctx: SearchContext, offering: Offering) -> tuple[float, Size, str] | None:
    model = ctx.inference_model(offering)
    best: tuple[float, Size, str] | None = None
    for size in served_replica_sizes(ctx, offering):
        cache = model.sequence_kv_bytes(size.chips, size.stages) * size.stages
        if size.chips * model.usable_hbm < model.weight_bytes + cache:
            continue
        step, bound = model.step_seconds(size.chips, 1, size.stages)
        if best is None or step < best[0]:
            best = (step, size, bound)
    return best


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
