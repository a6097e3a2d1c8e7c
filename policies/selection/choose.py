"""Hardware selection, the pipeline end to end: candidates -> sizing -> estimate -> choose -> explain -> Plan.

For each offering (machine type or TPU generation on a cloud) that passes the hard constraints, each allowed
region price and each capacity type (spot / on-demand) (selection.candidates), the engine finds the best
fleet size on the offering's size ladder (selection.sizing over selection.ladders, timed and priced by
estimator.estimate), ranks every feasible configuration by the objective and chooses (here: `choose`,
`choose_plan`), and explains the choice (selection.explain). A hardware pin skips the search
(selection.pin); selection.plan_builder turns the Choice into the Plan. The entry points callers use are
the names in __all__.

`accel.policies.choose` is this module's function `choose` (exported lazily). This module lives one
level down, in `accel.policies.selection`, so importing it sets `selection`, never `choose`, on
`accel.policies`: the function is not replaced by its module.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal, Sequence

from accel.policies.selection.capacity import beyond_supply, booked_why, capacity_lines, queued_why
from accel.policies.selection.rescale import ratio_key, rescaled
from accel.policies.selection.candidates import (
    Candidate,
    SearchContext,
    SearchResult,
    check_regions,
    estimate_for,
    hard_filter,
    price_points,
    search_context,
    to_option,
    to_options,
)
from accel.policies.catalog.model import Catalog, Offering
from accel.policies.cloud.capacity_modes import QUEUED_PROVISIONING
from accel.policies.selection.choice import OBJECTIVES, Choice, NoFeasibleOption, Objective, catalog_ref
from accel.policies.selection.explain import (
    accelerator_name, describe, explain_choice, explain_infeasible, nearest_miss)
from accel.base.collector import collector_paused
from accel.base.units import hours_text as duration, money
from accel.policies.selection.pin import choose_pinned, plan_from_pin
from accel.policies.selection.ranked_after import ranked_after_lines, ranked_after_reasons
from accel.policies.plan import Option, Plan
from accel.policies.selection.plan_builder import make_plan
from accel.policies.selection.sizing import SizingOutcome, size_offering
from accel.policies.workload import WorkloadFieldError, WorkloadSpec, int8_checkpoint_missing

if TYPE_CHECKING:  # the reservation rules load only when a run declares reservations
    from accel.policies.cloud.reservations import DeclaredReservation

__all__ = [
    "OBJECTIVES", "Choice", "NoFeasibleOption", "Objective", "accelerator_name", "choose", "choose_plan",
    "make_plan", "plan_from_pin",
]


# Off only in benchmarks/bench_choose.py, which prints the search with and without it in one run.
SHARE_SIZING_ACROSS_REGIONS = True


def _rank_key(objective: str, candidate: Candidate, region_rank: int, unpriced: bool, unsupplied: bool = False
              ) -> tuple:
    """`unpriced`: the offering's Offering.unpriced, worked out once per offering by the caller (it reads every
    region's prices: once per ranked option it made a search quadratic in the regions); `unsupplied`: an
    on-demand fleet past the pool one zone is expected to supply (the caller's `unsupplied`)."""
    e = candidate.evaluation
    latency = float(e.detail.get("p99_ms_per_token", 0.0))
    # A booked fleet finishes after its lead time and its run (capacity_wall_hours), not after the window it pays;
    # a flex-start or queued one after its legs and the queue waits before them (waits are not billed).
    waits = candidate.booking is not None or candidate.provisioning in QUEUED_PROVISIONING
    hours = float(e.detail.get("capacity_wall_hours", e.hours)) if waits else e.hours
    # The total to twelve significant digits (as rescale.ratio_key): a region's figures scaled from another's
    # (selection.rescale) differ from sizing it alone by float noise, which must not break a tie (two Capacity
    # Block fleets billed the same instance-days) the other way round.
    total = float(f"{e.total_usd:.12g}")
    primary = (total, hours, latency) if objective == "cost" else (
        (latency, total) if "p99_ms_per_token" in e.detail else (hours, total))
    # An offering no price list carries (every figure an estimate by rule) ranks after the priced ones: a choice
    # is never made on a figure derived by a rule when a listed price meets the workload (its options are still
    # shown, marked estimate, and the rationale says what it would cost). A declared reservation is the user's.
    on_estimate = unpriced and candidate.reserved is None
    # An on-demand fleet past the pool one zone is expected to supply (`unsupplied`: priced at list as an upper
    # bound, obtaining it takes a reservation) ranks after every fleet a mode is expected to supply: its cost to
    # finish in time is not known, so a cheaper-looking figure must not beat a fleet one can book or obtain
    # (docs/capacity.md). It is still chosen, labelled, when nothing else meets the workload.
    # On equal figures a reserved option comes first: its capacity is held, on-demand capacity may not be there.
    return (on_estimate, unsupplied, *primary, candidate.reserved is None, candidate.offering.id, region_rank,
            candidate.spot, candidate.booking is not None)


def _dominated(offering: Offering, point, supplied_on_demand: bool) -> bool:
    """A booked point priced at the on-demand list (calendar mode: no rate of its own) cannot beat the on-demand
    fleet of the same regions when a zone is expected to supply that fleet (`supplied_on_demand`): each booked size
    costs at least its on-demand run (the whole window at the same rate) and finishes later (its lead), so it is
    not sized."""
    return not point.booking.instance_usd and offering.provisioning == "on-demand" and supplied_on_demand


def unsupplied(ctx: SearchContext, candidate: Candidate) -> bool:
    """An on-demand candidate past the pool one zone is expected to supply (selection.capacity.beyond_supply)."""
    return ctx.obtain is not None and beyond_supply(ctx.obtain, candidate.offering, candidate.provisioning,
                                                    candidate.size.hosts)


def _cheapest_near_the_fastest(ranked: list[tuple[tuple, Candidate, str]], tolerance: float,
                               shown_only: set[int]) -> tuple[list, tuple[int, float, float]]:
    """`--objective time` across offerings as sizing applies it within one (time_objective_tolerance): a run
    within the tolerance of the fastest is as good as the fastest, more speed past it is bought at full price.
    So the offerings' picks within it come first, cheapest first, then the rest by run time (`ranked` is
    sorted by run time). `shown_only`: the ids of the smaller sizes sizing adds to show the trade-off, which
    are not picks (each is slower than its own offering's pick by more than the tolerance). Also returns the
    place in the new order of the best class's fastest run, its finish hours and the pick's: what the rationale
    compares."""
    # Offerings priced only by estimate (the key's first element) stay after the listed ones, as by cost, and so
    # do on-demand fleets past what a zone is expected to supply (the second). When no option is both listed and
    # supplied, the best of those classes (ranked[0]'s, as by cost) is measured alone: a faster fleet of a worse
    # class must not be taken for being within the tolerance of a slower one.
    best_class = ranked[0][0][:2]
    best = [item for item in ranked if item[0][:2] == best_class]
    after = [item for item in ranked if item[0][:2] != best_class]
    fastest = best[0][0][2]   # the run time in the time objective's key
    near = [item for item in best if id(item[1]) not in shown_only and item[0][2] <= fastest * (1.0 + tolerance)]
    near.sort(key=lambda item: (item[1].evaluation.total_usd, item[0]))
    taken = {id(item) for item in near}
    order = near + [item for item in best if id(item) not in taken] + after
    fastest_at = next(i for i, item in enumerate(order) if item is best[0])
    return order, (fastest_at, fastest, order[0][0][2])


def eliminating(spec: WorkloadSpec, reasons: Sequence[tuple[str, str]]) -> list[str]:
    """The constraints an infeasible offering's reasons name, once each, in order. Under `spot: allowed` (spot or
    on demand), an offering without spot capacity was sized on demand too: that missing spot eliminated nothing
    (the spot: allowed line would send the user to a field whose change moves nothing), so the other reasons say
    why. Under `spot: required` it is the reason, and stays."""
    constraints = list(dict.fromkeys(c for c, _ in reasons))
    if spec.constraints.spot == "allowed" and "spot" in constraints and len(constraints) > 1:
        constraints.remove("spot")
    return constraints


def search(ctx: SearchContext, offerings: Sequence[Offering]) -> SearchResult:
    """Every offering ruled out (hard_filter) or sized at each of its price points (price_points,
    size_offering); each pick ranked by the objective, in every region of its price group."""
    spec, objective = ctx.spec, ctx.objective
    found = SearchResult()
    region_order = {o.id: {r: i for i, r in enumerate(spec.constraints.regions or o.regions)} for o in offerings}
    for offering in offerings:
        hard = hard_filter(spec, offering)
        if hard is not None:
            constraint, reason = hard
            found.rejected.append({"offering": offering.id, "reasons": [reason]})
            found.eliminations.setdefault(constraint, []).append(offering.id)
            found.hard_reasons[offering.id] = hard
            found.family_reasons[offering.family].append(reason)
            continue
        points, reasons = price_points(ctx, offering)
        feasible = False
        unpriced = offering.unpriced
        # Regions whose prices differ by a factor share one sizing on the cost objective (selection.rescale).
        sized: dict[tuple[bool, str, bool, str | None, float], tuple[SizingOutcome, float]] = {}
        reuse = SHARE_SIZING_ACROSS_REGIONS and objective == "cost" and spec.kind != "inference"
        # Regions whose on-demand best is a fleet a zone supplies (only the flag is kept: an outcome holds its
        # whole sizing through closest_at, and a search keeps none it does not need).
        supplied_on_demand: dict[tuple[str, ...], bool] = {}
        near: list[tuple[float, Candidate, str]] = []   # this offering's near misses: its closest, if none fits

        def sized_at(point) -> SizingOutcome:
            key = ((point.spot, point.booking.id if point.booking else "", point.within_pool, point.queue,
                    ratio_key(point.chip, point.host)) if reuse and point.reserved is None else None)
            reference = sized.get(key) if key is not None else None
            outcome = (rescaled(reference[0], point.chip.usd / reference[1], point.regions, point.chip,
                                point.host, ctx.budget) if reference is not None else None)
            if outcome is None:
                # Not a multiple of the reference (a budget cuts its ladder elsewhere): sized at this price, reusing
                # what the reference's sizing worked out without a price (SizingOutcome.reprice).
                outcome = (reference[0].reprice(point.regions, point.chip, point.host)
                           if reference is not None and reference[0].reprice is not None else
                           size_offering(ctx, offering, point))
                if key is not None and key not in sized:
                    sized[key] = (outcome, point.chip.usd)
            return outcome

        for point in points:
            if point.booking is not None and _dominated(offering, point,
                                                        supplied_on_demand.get(tuple(point.regions), False)):
                continue
            outcome = sized_at(point)
            outcomes = [outcome]
            if not point.spot and point.booking is None and point.reserved is None and point.queue is None:
                past = outcome.best is not None and unsupplied(ctx, outcome.best)
                supplied_on_demand[tuple(point.regions)] = outcome.best is not None and not past
                if past:
                    # The best on-demand fleet is past what a zone is expected to supply: the best one within it
                    # is a pick of its own, ranked with the fleets a mode can supply (_rank_key).
                    within = sized_at(point._replace(within_pool=True))
                    if within.best is not None:
                        outcomes.insert(0, SizingOutcome(best=within.best))
            found.near.extend(outcome.near)
            near.extend(outcome.near)
            if outcome.best is None:
                reasons.extend(outcome.reasons)
                continue
            feasible = True
            order = region_order[offering.id]
            for outcome in outcomes:
                past_pool = unsupplied(ctx, outcome.best)
                for region in point.regions:
                    found.ranked.append((_rank_key(objective, outcome.best, order.get(region, len(order)), unpriced,
                                                   past_pool), outcome.best, region))
                first = point.regions[0]
                for alternative in outcome.alternatives:
                    found.ranked.append((_rank_key(objective, alternative, order.get(first, len(order)), unpriced,
                                                   unsupplied(ctx, alternative)), alternative, first))
                    found.shown_only.add(id(alternative))
        found.offering_reasons[offering.id] = reasons
        if not feasible:
            unique = _merge_capacity_reasons([reason for _, reason in reasons])
            found.rejected.append({"offering": offering.id, "reasons": unique, **closest_miss(near)})
            for constraint in eliminating(spec, reasons):
                found.eliminations.setdefault(constraint, []).append(offering.id)
            found.family_reasons[offering.family].extend(unique)
    return found


def closest_miss(near: list[tuple[float, Candidate, str]]) -> dict[str, Option]:
    """{"closest": OPTION} of an offering that nothing fits: its near miss that overshoots its constraints least
    (the cheaper on a tie), priced as an option is ($/h, total, and a serving fleet's price per million tokens), so
    the refusal lets a user weigh what it misses against what it would cost; {} when it kept none (ruled out before
    a fleet was priced). The `rejected` entry's optional key (Choice.to_json dumps it); chosen by nearest_miss."""
    nearest = nearest_miss(near)
    if nearest is None:
        return {}
    candidate = nearest[1]
    return {"closest": to_option(candidate, candidate.regions[0])}


def choose(spec: WorkloadSpec, catalog: Catalog, objective: Literal["cost", "time"] = "cost",
           extra_offerings: Sequence[Offering] = (), reservations: Sequence[DeclaredReservation] = ()) -> Choice:
    """Pick the hardware for a workload. A hardware pin skips the search and estimates the pin.

    `reservations` (the stack's accel:reservations) are sized as capacity of their own: their machines at the
    price they declare (committed, or $0 when already paid), any overflow beyond their count at on-demand.

    Raises NoFeasibleOption (exit 3) with the eliminations and the closest option when nothing fits, and
    WorkloadFieldError (exit 2; the caller adds the file) for a region that no offering has.

    Reads top to bottom as the pipeline: search (rule offerings out, size the rest at each price point: a
    SearchResult), rank, explain (explain_choice, or explain_infeasible when nothing fits: both read what the
    search found), estimate, and the Choice.
    """
    unloadable = (int8_checkpoint_missing(spec.inference.precision, spec.model.checkpoint)
                  if spec.inference is not None else None)
    if unloadable is not None:
        # Refused before sizing: a search would size 1-byte weights the serving job then refuses to load.
        raise WorkloadFieldError("inference.precision", unloadable)
    if spec.hardware is not None:
        # A declared reservation of the pinned machine times the fleet as held (as `accel plan` does with a stack's).
        return choose_pinned(spec, catalog, objective, extra_offerings, reservations)
    # The search builds many objects and no cycles: the collector would walk the whole heap for nothing.
    with collector_paused():
        return _search_and_choose(spec, catalog, objective, extra_offerings, reservations)


def _search_and_choose(spec: WorkloadSpec, catalog: Catalog, objective: Literal["cost", "time"],
                       extra_offerings: Sequence[Offering], reservations: Sequence[DeclaredReservation]) -> Choice:
    offerings = list(catalog.offerings) + list(extra_offerings)
    check_regions(spec.constraints.regions, offerings, "constraints.regions")
    ctx = search_context(spec, catalog, objective, reservations)
    found = search(ctx, offerings)
    ranked = found.ranked
    if not ranked:
        notes = []
        if "kubernetes" in spec.constraints.clouds and not any(o.cloud == "kubernetes" for o in offerings):
            notes.append("kubernetes: no offerings; the kubernetes cloud offers only the chips of an existing "
                         "cluster's inventory (accel:cluster with its inventory in a stack file, e.g. "
                         "`accel plan -s STACK`); a workload file alone has none")
        if spec.kind == "inference":
            from accel.policies.selection.serving_remedies import serving_remedies  # only a refused service reads it

            notes.extend(serving_remedies(ctx, found, lambda lower: _search_and_choose(
                lower, catalog, objective, extra_offerings, reservations)))
        raise explain_infeasible(ctx, found, notes)

    ranked.sort(key=lambda item: item[0])
    if objective == "time" and spec.kind != "inference":
        ranked, found.time_reference = _cheapest_near_the_fastest(ranked, ctx.resolved["time_objective_tolerance"],
                                                                  found.shown_only)
    options = to_options([(candidate, region, why)
                          for (_, candidate, region), why in zip(ranked, ranked_after_reasons(ctx.obtain, ranked))])
    _, best, _ = ranked[0]
    chosen = options[0]
    estimate = estimate_for(ctx, best, chosen)
    rationale = explain_choice(ctx, found, options, best)
    rationale.extend(reservation_lines(ctx, ranked, options))
    if ctx.obtain is not None:
        rationale.extend(capacity_lines(ctx.obtain, best, chosen,
                                        spec.constraints.spot if spec.kind == "inference" else None,
                                        booked_why(ctx.obtain, best, ranked)
                                        or queued_why(best, ranked, spec.kind == "inference")))
    rationale.extend(ranked_after_lines(objective, spec.kind, ranked, options))
    rationale.extend(estimate_lines(ranked, options))
    closest_infeasible = []
    for family in ("tpu", "gpu"):
        if any(o.family == family for o in options):
            continue
        nearest = nearest_miss(found.near, family)
        if nearest is not None:
            candidate = nearest[1]
            closest_infeasible.append(to_option(candidate, candidate.regions[0]))
    return Choice(chosen=chosen, options=options, rejected=found.rejected, rationale=rationale, estimate=estimate,
                  objective=objective, workload=spec, catalog=catalog_ref(catalog), chosen_offering=best.offering,
                  closest_infeasible=closest_infeasible,
                  option_details=[dict(candidate.evaluation.detail) for _, candidate, _ in ranked],
                  reservation=best.reserved.name if best.reserved and best.reserved.holds_capacity else None)


def estimate_lines(ranked: list[tuple[tuple, Candidate, str]], options: list) -> list[str]:
    """Say so when an offering priced only by estimate would have beaten the chosen option on its figures."""
    chosen_key = ranked[0][0]
    if chosen_key[0]:
        return [f"Price: the chosen option is priced by estimate ({describe(options[0])}): no price list carries "
                "this offering; its source says the rule. Check it against your quote before building."]
    for (key, candidate, _), option in zip(ranked, options):
        if key[0] and key[1:] < chosen_key[1:]:
            return [f"Price: {describe(option)} would cost {money(option.total_usd)} in {duration(option.hours)}, "
                    f"but that is an estimate by rule (no price list carries {candidate.offering.id}), so it ranks "
                    "after the listed prices; give your quote in a catalog overlay (--catalog) to weigh it."]
    return []


def reservation_lines(ctx, ranked: list[tuple[tuple, Candidate, str]], options: list) -> list[str]:
    """What the declared reservations cost and whether the choice is on one: its price (committed, or $0
    marginal), the overflow at on-demand when the fleet is bigger, or why an on-demand option beat it.
    "Declared", not "the stack's": they come from a stack's accel:reservations or from
    `accel choose --reservations FILE`, which may be no stack at all."""
    if not ctx.reservations:
        return []
    best = ranked[0][1]
    if best.reserved is not None and best.reserved.holds_capacity:
        return [f"Capacity: {ctx.spec.name} runs on the declared {best.reserved.kind} {best.reserved.name!r}; "
                f"{estimate_detail(ctx, best, options[0])['reserved']}."]
    lines = []
    for reservation in ctx.reservations:
        rank = next((i for i, (_, c, _) in enumerate(ranked) if c.reserved is reservation), None)
        if not reservation.holds_capacity:
            lines.append(commitment_line(ctx, ranked, options, reservation, rank))
            continue
        if rank is None:
            lines.append(f"Capacity: the declared reservation {reservation.name!r} ({reservation.count} x "
                         f"{reservation.machineType} in {reservation.zone}) gave no feasible option (machine type, "
                         "region or constraints rule it out).")
        else:
            option = options[rank]
            lines.append(f"Capacity: the declared reservation {reservation.name!r} ranks #{rank + 1}: "
                         f"{estimate_detail(ctx, ranked[rank][1], option)['reserved']}; total "
                         f"${option.total_usd:,.2f} against ${options[0].total_usd:,.2f} for the chosen option.")
    return lines


def commitment_line(ctx, ranked, options, commitment, rank: int | None) -> str:
    """A declared commitment: that it prices the chosen option (and how), ranks lower, or covers nothing."""
    if rank is None:
        scope = {"compute": "any EC2 instance", "ec2-instance": "its instance family in its region",
                 None: "its machine type in its region"}[commitment.plan]
        return (f"Price: the declared {commitment.what()} priced no option: it covers on-demand usage of {scope} "
                "(never spot, flex-start or Capacity Blocks), and no feasible option was one.")
    words = estimate_detail(ctx, ranked[rank][1], options[rank])["reserved"]
    if rank == 0:
        from accel.policies.cloud.capacity_modes import load_modes
        from accel.policies.cloud.commitments import MODE_OF

        return (f"Price: the declared commitment was used: {words}; total ${options[0].total_usd:,.2f}. "
                f"Capacity mode {MODE_OF[commitment.kind]}: {load_modes().modes[MODE_OF[commitment.kind]].risk}.")
    return (f"Price: the declared commitment prices option #{rank + 1}: {words}; total "
            f"${options[rank].total_usd:,.2f} against ${options[0].total_usd:,.2f} for the chosen option.")


def estimate_detail(ctx, candidate: Candidate, option) -> dict:
    return estimate_for(ctx, candidate, option).details


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


def choose_plan(spec: WorkloadSpec, catalog: Catalog, objective: Literal["cost", "time"] = "cost",
                extra_offerings: Sequence[Offering] = (), reservations: Sequence[DeclaredReservation] = ()) -> Plan:
    """choose() then make_plan(): the one call a stack program needs when no plan is pinned."""
    return make_plan(spec, choose(spec, catalog, objective, extra_offerings, reservations), catalog)
