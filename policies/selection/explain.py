"""Explanations: the rationale of a choice, the nothing-feasible message, and the labels they use
(accelerator and cloud names, money, durations, option descriptions)."""

from __future__ import annotations

import math

from accel.base.units import hours_text as duration, money, money_pair, plural
from accel.policies import hardware
from accel.policies.hardware import shapes
from accel.policies.selection.candidates import Candidate, SearchContext, SearchResult, to_option
from accel.policies.cloud.booking import BOOKED_MODES
from accel.policies.selection.choice import NoFeasibleOption, catalog_ref
from accel.policies.estimator.estimate import (
    training_flops,
    training_memory_bytes,
    whole_run_blind_spread,
    whole_run_spread,
)
from accel.policies.plan import Option
from accel.policies.selection.tradeoffs import time_words
from accel.policies.selection.pools import MAX_SLICES
from accel.policies.workload import XLA_FRAMEWORKS, framework_label



def accelerator_name(accelerator: str) -> str:
    """The chip's name users are shown ('H100', 'TPU v6e'), from the hardware facts table."""
    return hardware.current().chip_names.get(accelerator, accelerator)


def __getattr__(name: str):
    if name == "ACCELERATOR_NAMES":  # chip id -> name, kept for importers of the old table
        return hardware.current().chip_names
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


CLOUD_NAMES = {"gcp": "Google Cloud", "aws": "AWS", "kubernetes": "the inventory cluster"}


def _capacity_word(option: Option) -> str:
    """How the option's capacity is obtained, in a label's words: 'spot', 'flex-start', 'reserved'..."""
    return "spot" if option.spot else {"reservation": "reserved", "capacity-block": "capacity block",
                                       "flex-start": "flex-start", "queued": "queued"}.get(option.provisioning,
                                                                                          "on-demand")


def describe(option: Option) -> str:
    """Short human label: 'TPU v6e on-demand, 4 x v6e-256 (16x16), gcp us-east5'."""
    name = accelerator_name(option.accelerator)
    capacity = _capacity_word(option)
    if option.topology:
        generation = shapes.GENERATION_BY_ACCELERATOR[option.accelerator]
        per_slice = option.chips // option.slices
        vm_type = shapes.tpu_vm_type(generation.name, per_slice)
        layout = (f"{option.slices} x {vm_type} ({option.topology})" if option.slices > 1
                  else f"{vm_type} ({option.topology}, {plural(option.chips, 'chip')})")
    else:
        layout = f"{option.hosts} x {option.machine_type} ({plural(option.chips, 'GPU')})"
    # An estimated price is said wherever the option is, so nobody reads a rule-derived figure as a list price.
    return f"{name} {capacity}, {layout}, {option.cloud} {option.region}" + (
        " (price: estimate)" if option.price_estimate else "")


def _short_label(option: Option) -> str:
    """'H100 on-demand on AWS': the accelerator, capacity type and cloud, for a comparison sentence."""
    name = accelerator_name(option.accelerator)
    capacity = _capacity_word(option)  # a flex-start H200 rival was called 'on-demand' here
    where = CLOUD_NAMES.get(option.cloud, option.cloud)
    return f"{name} {capacity} on {where}"


def _percent(a: float, b: float) -> float:
    return (1.0 - a / b) * 100.0 if b > 0 else 0.0


def how_wrong(ctx: SearchContext, chosen: Option) -> list[str]:
    """'How wrong this may be' for a training run's time and cost (none for serving, or when the workload fixes
    its goodput or MFU): the leave-one-out range of the published whole runs and, beside it, the range published
    runs outside the table showed when estimated blind (out of sample)."""
    spec = ctx.spec
    uncertainty = whole_run_spread(spec, ctx.resolved, ctx.catalog) if spec.kind != "inference" else None
    if uncertainty is None:
        return []

    def scaled(spread) -> str:
        return (f"{duration(chosen.hours * spread.low)} to {duration(chosen.hours * spread.high)}, "
                f"{money(chosen.total_usd * spread.low)} to {money(chosen.total_usd * spread.high)}")
    blind = whole_run_blind_spread(spec, ctx.resolved, ctx.catalog)
    outside = f"; {blind.blind_text()}: {scaled(blind)}" if blind is not None else ""
    return [f"How wrong this may be: {scaled(uncertainty)}: {uncertainty.text()}{outside}; a team unlike "
            "those that published them can fall outside it (docs/choose.md)."]


def explain_choice(ctx: SearchContext, found: SearchResult, options: list[Option], best: Candidate) -> list[str]:
    """The 'why' lines of a choice: what was chosen and against which limits, the best option of the other
    family (or why it has none), the framework, spot against on-demand, how the fleet was sized, the runner-up.
    `options` are the ranked options, the chosen one first; `best` is the candidate it was made from.

    Why it is long: each section answers one question a reader asks, in the order the rationale prints them,
    and each reads the same results of the search (the ranked options, and in `found` the near misses and the
    reasons by family and by offering); split apart, every piece would take all of them again. It only
    returns lines."""
    spec = ctx.spec
    chosen = options[0]
    lines: list[str] = []
    constraints = spec.constraints
    limits = []
    if spec.kind != "inference":
        limits.append(f"the {ctx.deadline_h / 24:g}-day deadline" if ctx.deadline_given
                      else f"the default {ctx.deadline_h / 24:g}-day limit (no deadline set)")
    if ctx.budget is not None:
        limits.append(f"the {money(ctx.budget)} budget")
    # The fastest run the time objective measured its tolerance from: among the fleets it ranks on listed prices
    # and expected supply (a faster one priced by rule or past a zone's supply ranks after, as by cost).
    reference = found.time_reference if spec.kind != "inference" else None
    near_fastest = ctx.objective == "time" and reference is not None and reference[0] != 0
    tolerance = ctx.resolved["time_objective_tolerance"]
    goal = ("cheapest option" if ctx.objective == "cost" else
            "lowest-latency option" if spec.kind == "inference" else
            f"cheapest option within {tolerance:.0%} of the fastest run" if near_fastest else "fastest option")
    meets = f" that meets {' and '.join(limits)}" if limits else ""
    if spec.kind == "inference":
        summary = (f"{describe(chosen)}: {money(chosen.hourly_usd)}/h, {money(chosen.total_usd)} over "
                   f"{chosen.hours:g} h of service")
    else:
        summary = (f"{describe(chosen)}: {duration(chosen.hours)}, {money(chosen.total_usd)} "
                   f"({money(chosen.hourly_usd)}/h) at {chosen.mfu:.0%} step MFU x {chosen.goodput:.2f} whole-run "
                   f"goodput{' (spot losses included)' if chosen.spot else ''}")
    lines.append(f"Chosen: {summary}; the {goal}{meets}.")
    lines.extend(how_wrong(ctx, chosen))
    if near_fastest:
        fastest = options[reference[0]]
        sooner = reference[2] - reference[1]
        lines.append(f"The fastest option, {describe(fastest)}, would finish {duration(sooner)} "
                     f"({sooner / reference[2]:.1%}) sooner for {money(fastest.total_usd - chosen.total_usd)} more "
                     f"({fastest.total_usd / chosen.total_usd - 1:.0%}): within {tolerance:.0%} of the fastest run, "
                     f"the cheapest is taken, as when sizing one fleet (time_objective_tolerance).")

    other = "gpu" if chosen.family == "tpu" else "tpu"
    other_name = other.upper()
    rival = next((o for o in options if o.family == other), None)
    head = f"{accelerator_name(chosen.accelerator)} {_capacity_word(chosen)}"
    if rival is not None:
        layout = describe(rival).split(", ", 1)[1]
        rival_terms = (f"{money(rival.hourly_usd)}/h" if spec.kind == "inference"
                       else f"{duration(rival.hours)}, {money(rival.total_usd)}")
        if ctx.objective == "cost" or spec.kind == "inference":
            saving = _percent(chosen.total_usd, rival.total_usd)
            compare = f"{saving:.0f}% cheaper than" if saving >= 0.5 else (
                "as cheap as" if saving > -0.5 else f"{-saving:.0f}% dearer than")
            if ctx.objective == "time" and spec.kind == "inference":
                compare = f"lower latency than (and {compare})"
            lines.append(f"{head}: {compare} the best {other_name} option, {_short_label(rival)} ({layout}: {rival_terms})"
                         + (f", and meets {limits[0]}." if limits and spec.kind != "inference" else "."))
        else:
            faster = _percent(chosen.hours, rival.hours)
            # Options within the time tolerance can differ by a fraction of a percent: say it, not "0% faster".
            digits = 0 if abs(faster) >= 0.5 else 1
            speed = (f"{abs(faster):.{digits}f}% {'faster' if faster > 0 else 'slower'} than" if round(faster, 1)
                     else "as fast as")
            saving = _percent(chosen.total_usd, rival.total_usd)
            price = (f", {saving:.0f}% cheaper" if saving >= 0.5 else f", {-saving:.0f}% dearer" if saving <= -0.5 else "")
            lines.append(f"{head}: {speed} the best {other_name} option, {_short_label(rival)} "
                         f"({layout}: {rival_terms}){price}, within budget.")
    else:
        excluded = [r for oid, (c, r) in found.hard_reasons.items() if c in ("framework", "portability")
                    and ctx.catalog and _family_of(ctx, oid) == other]
        closest = sorted((n for n in found.near if n[1].family == other), key=lambda n: n[0])
        if excluded:
            pass   # the framework / portability line below says why
        elif closest:
            candidate = closest[0][1]
            option = to_option(candidate, candidate.regions[0])
            misses = _missed_limits(ctx, option, candidate.evaluation.detail, candidate.offering.max_chips)
            if spec.kind == "inference":
                terms = f"would cost {money(option.hourly_usd)}/h"
            else:
                judged, said = judged_hours(ctx, option, candidate.evaluation.detail)
                terms = f"would take {duration(judged)}{said} and cost {money(option.total_usd)}"
            saving = _percent(chosen.total_usd, option.total_usd)
            speed = time_words(chosen, option) if spec.kind != "inference" and option.hours > 0 else None
            if ctx.objective == "time" and speed is not None:
                versus = f"; {head} is {speed} and meets every constraint"
            elif saving >= 0.5:
                versus = f"; {head} is {saving:.0f}% cheaper and meets every constraint"
            else:
                versus = f"; {head} meets every constraint"
            lines.append(f"No {other_name} option is feasible: the closest, {describe(option)}, {terms} "
                         f"({misses}){versus}.")
        elif found.family_reasons.get(other):
            lines.append(f"No {other_name} option is feasible: {found.family_reasons[other][0]}.")

    framework = framework_label(spec)
    framework = framework[0].upper() + framework[1:]
    if constraints.custom_cuda_kernels:
        lines.append(f"{framework} with custom CUDA kernels: NVIDIA GPUs only, so every TPU offering "
                     f"was rejected for that reason, whatever its price.")
    elif constraints.portability:
        lines.append("Portability required: GPUs only (the same images run on any cloud or on-prem); "
                     "TPUs are Google Cloud only.")
    elif spec.framework in XLA_FRAMEWORKS:
        fit = "TPUs run it natively" if chosen.family == "tpu" else "it runs on GPUs too (XLA:GPU)"
        lines.append(f"{framework} compiles through XLA: {fit}; both families were considered.")
    else:
        lines.append(f"{framework} runs eagerly on CUDA: GPUs; TPUs would need pytorch-xla.")

    same = [o for o in options[1:] if o.offering == chosen.offering and o.spot != chosen.spot]
    if chosen.spot:
        detail = best.evaluation.detail
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
        spot_reasons = [r.removeprefix("spot: ") for c, r in found.offering_reasons.get(chosen.offering, [])
                        if r.startswith("spot: ")]
        if same:
            lines.append(f"{'Reserved' if chosen.provisioning in ('reservation', 'capacity-block') else 'On-demand'}"
                         f" over spot: spot here would cost {money(same[0].total_usd)} "
                         f"and take {duration(same[0].hours)}.")
        elif spot_reasons:
            lines.append(f"On-demand over spot: a synchronous job restarts whenever any host is preempted, and on "
                         f"spot {spot_reasons[0]}.")
    elif constraints.spot == "never":
        lines.append("Spot disallowed by the workload (spot: never).")

    detail = best.evaluation.detail
    if spec.kind == "inference":
        assert spec.inference is not None
        stages = int(detail.get("pipeline_stages", 1) or 1)
        # A replica of pipeline stages: its nodes, the engine's layout over them and its micro-batches in flight.
        pipeline = ("" if stages == 1 else
                    f" ({stages} nodes: {int(detail['replica_chips']) // stages}-GPU tensor parallel in each node, "
                    f"{stages} pipeline stages over the scale-out network, since the weights and one sequence's KV "
                    f"cache outgrow one node)")
        batch = (f"batch {detail['batch_per_replica']} each" if stages == 1 else
                 f"{detail['batch_per_replica']} sequences each in {stages} micro-batches")
        lines.append(f"Sized for {spec.inference.tokens_per_second:,.0f} tok/s at p99 <= {spec.inference.p99_latency_ms:g} ms/token: "
                     f"{plural(int(detail.get('target_replicas', detail['replicas'])), 'replica')} of "
                     f"{plural(int(detail['replica_chips']), 'chip')}"
                     f"{pipeline}, {batch} at ~{detail['p99_ms_per_token']} ms/token p99 "
                     f"({detail['bound']}-bound), {detail['tokens_per_second_per_replica']:,} tok/s per replica.")
        if "packed_nodes" in detail:
            lines.append(_fleet_rounding_line(detail, chosen.hosts, chosen.hourly_usd, spec.inference.tokens_per_second,
                                              chosen.chips_per_host))
    else:
        state = training_memory_bytes(spec, ctx.resolved) / 1e12
        need, smallest = int(detail["min_chips_for_memory"]), int(detail.get("smallest_fit_chips", chosen.chips))
        memory = (f"{state:,.2f} TB of weights, gradients, optimizer state and activations need at least "
                  f"{plural(need, 'chip')} (the smallest {'slice' if chosen.family == 'tpu' else 'set of whole nodes'} "
                  f"holding them: {plural(smallest, 'chip')})")
        flops = training_flops(spec, ctx.catalog.defaults)
        busy = detail.get("busy_chips")   # a fleet of whole nodes past the global batch's busy chips
        work = (f"{f'{int(busy):,} of the ' if busy else ''}{plural(chosen.chips, 'chip')} "
                f"{'runs' if chosen.chips == 1 and not busy else 'run'} {flops:.2e} FLOPs in {duration(chosen.hours)}")
        if ctx.objective == "time":
            more = detail.get("more_chips")
            lines.append(f"Sized for speed: {memory}; {work}" + (f"; {more}." if more else
                                                                  ", the fastest fleet within the limits."))
        elif "deadline_fit_chips" in detail:
            fit_chips = int(detail["deadline_fit_chips"])
            saved = float(detail["deadline_fit_usd"]) - chosen.total_usd
            lines.append(f"Sized by cost: {memory}; {plural(fit_chips, 'chip')} would meet {limits[0]}, but each "
                         f"larger fleet up to this one costs less in all (what a run pays whatever its size, start-up "
                         f"and checkpoint stalls, shrinks faster than the fleet grows): {work}, "
                         f"{money(saved, cents=saved < 100)} less than {plural(fit_chips, 'chip')}.")
        elif chosen.chips <= smallest:
            lines.append(f"Sized by memory: {memory}; the smallest such fleet already meets {limits[0]}: {work}.")
        elif chosen.total_usd == 0:
            lines.append(f"Sized by the reservation: {memory}; the reservation is already paid for, so its "
                         f"fastest fleet costs nothing more: {work}.")
        else:
            lines.append(f"Sized by {limits[0]}: {memory}, but finishing in time takes more: {work}.")
        lines.extend(sequence_words(detail))
        if detail.get("batch_idle"):
            lines.append(f"Global batch: {detail['batch_idle']}.")
    runner = next((o for o in options[1:] if o.offering != chosen.offering or o.spot != chosen.spot), None)
    if runner is not None:
        delta = (runner.total_usd / chosen.total_usd - 1) * 100 if chosen.total_usd else 0.0
        terms = (f"{money(runner.hourly_usd)}/h" if spec.kind == "inference"
                 else f"{duration(runner.hours)}")
        versus = f"{delta:+.0f}%" if chosen.total_usd else "the chosen costs nothing more"
        lines.append(f"Runner-up: {describe(runner)} at {money(runner.total_usd)} ({versus}), {terms}.")
    return lines


def _family_of(ctx: SearchContext, offering_id: str) -> str:
    try:
        return ctx.catalog.offering(offering_id).family
    except KeyError:
        return "gpu"


def max_chips_label(ctx: SearchContext) -> str:
    """'max_chips 512', or, when the workload set none, that the limit is the default and how to raise it."""
    if ctx.spec.constraints.max_chips is not None:
        return f"max_chips {ctx.max_chips}"
    return f"max_chips {ctx.max_chips} (the default; set constraints.max_chips to raise it)"


def judged_hours(ctx: SearchContext, option: Option, detail: dict | None) -> tuple[float, str]:
    """(the hours a deadline is judged by, how to say them): the capacity mode's wall-clock where it has one (spot,
    flex-start at the confidence quantile; a booked mode's lead time, then the run), else the run's hours."""
    wall = (detail or {}).get("capacity_wall_hours")
    if wall is None:
        return option.hours, ""
    if (detail or {}).get("capacity_mode") in BOOKED_MODES:
        return float(wall), " wall-clock (the lead time, then the run)"
    quantile = f" at P{ctx.obtain.confidence * 100:g}" if ctx.obtain is not None else ""
    return float(wall), f" wall-clock{quantile}"


def _missed_limits(ctx: SearchContext, option: Option, detail: dict | None = None,
                   offering_chips: int | None = None) -> str:
    """Which limits an infeasible option misses, and by how much; `offering_chips`: the most its offering holds
    (a cluster inventory's count), where it has a ceiling of its own."""
    misses = []
    spec = ctx.spec
    judged, _ = judged_hours(ctx, option, detail)
    if spec.kind != "inference" and judged > ctx.deadline_h:
        misses.append(f"misses the {ctx.deadline_h / 24:g}-day {'deadline' if ctx.deadline_given else 'limit'} by "
                      f"{duration(judged - ctx.deadline_h)}")
    p99 = float((detail or {}).get("p99_ms_per_token", 0))
    if spec.inference is not None and p99 > spec.inference.p99_latency_ms:
        misses.append(f"p99 ~{p99:g} ms/token even at batch {(detail or {}).get('batch_per_replica', 1)}, over the "
                      f"{spec.inference.p99_latency_ms:g} ms bound")
    if ctx.budget is not None and option.total_usd > ctx.budget:
        # The option's cost is stated beside this phrase; the overrun is what it adds.
        _, budget = money_pair(option.total_usd, ctx.budget)
        misses.append(f"over the {budget} budget by {money(option.total_usd - ctx.budget)}")
    if option.chips > ctx.max_chips:
        default = ", the default: set constraints.max_chips to raise it" if spec.constraints.max_chips is None else ""
        misses.append(f"needs {option.chips:,} chips > max_chips {ctx.max_chips}{default}")
    elif offering_chips is not None and option.chips > offering_chips:
        misses.append(f"needs {option.chips:,} chips > the {offering_chips:,} {option.offering} holds")
    if option.slices > MAX_SLICES:
        misses.append(f"needs {option.slices} slices > the {MAX_SLICES} one TPU fleet declares")
    return " and ".join(misses) or "meets the limits it was measured against"


def nearest_miss(near: list[tuple[float, Candidate, str]], family: str | None = None
                 ) -> tuple[float, Candidate, str] | None:
    """The near miss (overshoot, candidate, what stopped it) that overshoots its constraints least, the cheaper on a
    tie, then by offering and region; of one family when given. The one rule for the closest fleet a refusal names
    (explain_infeasible), each family's closest_infeasible and each rejected offering's `closest` (selection.choose);
    None when none was priced (an infinite overshoot: nothing was sized)."""
    finite = [n for n in near if math.isfinite(n[0]) and (family is None or n[1].family == family)]
    return min(finite, key=lambda n: (n[0], n[1].evaluation.total_usd, n[1].offering.id, n[1].regions[0]),
               default=None)


def explain_infeasible(ctx: SearchContext, found: SearchResult, notes: list[str] | None = None) -> NoFeasibleOption:
    """The error for a search with no feasible option: which constraint eliminated which offerings, and the
    closest option with what it misses. `notes` are extra lines (e.g. why a cloud offers nothing)."""
    eliminations = found.eliminations
    spec = ctx.spec
    constraints = spec.constraints
    labels = {
        "clouds": f"clouds ({', '.join(constraints.clouds)})",
        "regions": f"regions ({', '.join(constraints.regions or [])})",
        "accelerators": f"accelerators ({', '.join(constraints.accelerators or [])})",
        "framework": ("custom CUDA kernels" if constraints.custom_cuda_kernels else framework_label(spec)),
        "portability": "portability",
        "spot": f"spot: {constraints.spot}",
        "memory": "memory fit",
        "max_chips": max_chips_label(ctx),
        "offering_chips": "the chips an offering holds (a cluster inventory's count)",
        "global_batch": "global batch (training.global_batch_tokens)",
        "max_nodes": "node-pool limits (catalog max_nodes)",
        "max_slices": f"slices one TPU fleet declares (at most {MAX_SLICES}, a node pool each)",
        "deadline": (f"deadline {ctx.deadline_h / 24:g} days" if ctx.deadline_given
                     else f"default limit {ctx.deadline_h / 24:g} days"),
        "budget": f"budget {money(ctx.budget or 0)}",
        "latency": (f"p99 latency {spec.inference.p99_latency_ms:g} ms" if spec.inference else "latency"),
    }
    lines = [f"nothing feasible for workload {spec.name!r}:"]
    for constraint, offerings in eliminations.items():
        lines.append(f"  {labels.get(constraint, constraint)} eliminated {len(offerings)}: {', '.join(offerings)}")
        if constraint == "capacity":
            # "capacity" alone says nothing of why (sold only through reservations, a mode's limits): each one's own.
            lines.extend(f"    {offering}: {reason}" for offering, reason in _first_reasons(found, "capacity"))
    lines.extend(f"  {note}" for note in notes or [])
    closest_option: Option | None = None
    misses = ""
    nearest = nearest_miss(found.near)
    if nearest is not None:
        candidate = nearest[1]
        closest_option = to_option(candidate, candidate.regions[0])
        misses = _missed_limits(ctx, closest_option, candidate.evaluation.detail, candidate.offering.max_chips)
        if nearest[2]:   # what stopped it growing, as its sizing said (the spot pool: selection.spot_cap)
            misses += f"; {nearest[2]}"
        elif closest_option.offering in eliminations.get("max_chips", ()) and closest_option.chips <= ctx.max_chips:
            misses += f"; {max_chips_label(ctx)} stopped it growing"
        elif (spec.kind != "inference" and closest_option.hours > ctx.deadline_h
              and (batch := _batch_bound(ctx, candidate))[0] < ctx.max_chips
              and closest_option.chips + batch[2] > batch[0]):
            # The deadline is missed because the global batch capped the fleet, not for want of chips.
            misses += f"; the global batch stopped it growing, not the deadline: {batch[1]}"
        judged, said = judged_hours(ctx, closest_option, candidate.evaluation.detail)
        terms = (f"{money(closest_option.hourly_usd)}/h, {money(closest_option.total_usd)} over "
                 f"{closest_option.hours:g} h{_per_token(closest_option)}" if spec.kind == "inference"
                 else f"{duration(judged)}{said}, {money(closest_option.total_usd)}")
        lines.append(f"closest: {describe(closest_option)}: {terms} ({misses})")
    else:
        lines.append("closest: none (every offering was eliminated before it could be sized)")
    return NoFeasibleOption("\n".join(lines), eliminations, closest_option, misses, found.rejected, spec,
                            catalog_ref(ctx.catalog))


def _per_token(option: Option) -> str:
    """', $0.93 per million tokens at the target' for a serving near miss priced per token (plan.serving_token_prices),
    else '' (a fleet on a reservation already paid for states none)."""
    at_target = option.usd_per_million_tokens_at_target
    return "" if at_target is None else f", {money(at_target, cents=True)} per million tokens at the target"


def _first_reasons(found: SearchResult, constraint: str) -> list[tuple[str, str]]:
    """(offering, its first reason) for each offering `constraint` eliminated, as the refusal's `rejected` holds them."""
    eliminated = set(found.eliminations.get(constraint, ()))
    return [(r["offering"], r["reasons"][0]) for r in found.rejected if r["offering"] in eliminated and r["reasons"]]


def _batch_bound(ctx: SearchContext, candidate: Candidate) -> tuple[int, str, int]:
    """(most chips the global batch keeps busy, why, the step to the next larger fleet) for the candidate's sizing:
    a long sequence's layout has its own bound (TP x CP GPUs per sequence, SearchContext.long_sequence_batch_chips)
    and grows by whole replicas (the nodes past them would idle); the usual lengths the size rule's, by a node."""
    fit = ctx.sequence_fit(candidate.offering) if "context_parallel" in candidate.evaluation.detail else None
    if fit is None:
        return ctx.batch_chips, ctx.batch_why, candidate.offering.chips_per_host
    if fit.slice_chips and ctx.batch_chips >= ctx.long_sequence_batch_chips(fit):   # a TPU slice: never below the rule
        return ctx.batch_chips, ctx.batch_why, fit.replica_gpus
    return ctx.long_sequence_batch_chips(fit), ctx.long_sequence_batch_why(fit), fit.replica_gpus


def sequence_words(detail: dict[str, float | int | str]) -> list[str]:
    """The rationale's line on a long sequence: the context-parallel degree its activations need and why
    (policies/estimator/activations.py); none where they stay within the headroom."""
    sequence = detail.get("sequence_activations")
    if not sequence:
        return []
    exchange = detail.get("context_exchange")
    return [f"Sequence: {sequence}" + (f"; {exchange}." if exchange else ".")]


def _fleet_rounding_line(detail: dict, nodes: int, hourly_usd: float, target: float, chips_per_host: int) -> str:
    """Why a GPU serving fleet holds more nodes than its replicas packed tightly, and what that costs per hour
    (selection/replicas.py fleet_rounding): the minimum's replicas each on its own node, the cloud's placement unit;
    where the units paid for run more replicas than the target needs (ladders.filled_replicas), what they serve and
    at what price per token."""
    packed = int(detail["packed_nodes"])
    why = []
    if "spread_nodes" in detail:
        why.append(f"the {detail['spread_nodes']} replicas the minimum keeps (assumptions.yaml inference.min_replicas: "
                   f"to survive a node failure or a rolling update) each on its own node, so one node lost is not "
                   f"the whole service")
    if "node_step" in detail:
        why.append(f"the machine is placed in whole units of {detail['node_step']} nodes (an A4X pool is whole "
                   f"18-tray NVLink domains, a p6e-gb200 one whole UltraServers)")
    head = f"Fleet: {plural(nodes, 'node')}, not the {plural(packed, 'node')} the replicas pack into: {'; '.join(why)}"
    if "target_replicas" not in detail:
        extra = hourly_usd * (nodes - packed) / nodes
        return f"{head}; the {plural(nodes - packed, 'node')} past the packing cost {money(extra, cents=True)}/h."
    replicas, served = int(detail["replicas"]), float(detail["tokens_per_second"])
    busy = min(nodes, -(-replicas * int(detail["replica_chips"]) // chips_per_host))
    idle = (f"; {plural(nodes - busy, 'node')} no whole replica fits stay idle "
            f"({money(hourly_usd * (nodes - busy) / nodes, cents=True)}/h)" if busy < nodes else "")
    units = nodes // int(detail.get("node_step", nodes) or nodes)
    paid = "the paid unit runs" if units == 1 else f"the {units} paid units run"
    # On a reservation already paid for no price per token is stated (plan.serving_token_prices): none is quoted.
    priced = ("" if "usd_per_million_tokens" not in detail else
              f", {money(float(detail['usd_per_million_tokens']), cents=True)} per million tokens served flat out "
              f"({money(float(detail['usd_per_million_tokens_at_target']), cents=True)} at the target)")
    return (f"{head}; {paid} {replicas} replicas, not the {detail['target_replicas']} the target needs: "
            f"{served:,.0f} tok/s, {served / target:,.1f}x the {target:,.0f} tok/s target{priced}{idle}.")
