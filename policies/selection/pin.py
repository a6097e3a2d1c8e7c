"""A hardware pin: estimate exactly the pinned configuration (time, cost, MFU or serving), no search."""

from __future__ import annotations

import math
from typing import Sequence

from accel.base.units import hours_text as duration, money, money_pair, plural
from accel.policies.cloud.capacity_modes import QUEUED_PROVISIONING, ModeTable
from accel.policies.selection.capacity import (
    capacity_lines, mode_id, queued_service_detail, queued_timing, spot_timing)
from accel.policies.hardware import shapes, tpu_serving
from accel.policies.selection.candidates import (
    Candidate,
    SearchContext,
    check_regions,
    estimate_for,
    hard_filter,
    node_limit,
    node_limit_violation,
    node_limit_words,
    queued_or_listed,
    search_context,
    to_option,
)
from accel.policies.catalog.model import Catalog, Offering, Price
from accel.policies.selection.choice import Choice, HeldCapacity, NoFeasibleOption, catalog_ref
from accel.policies.estimator.estimate import (
    Evaluation,
    Replica,
    min_chips_for_memory,
    slice_holds_training_state,
    training_memory_bytes,
)
from accel.policies.selection.explain import describe, how_wrong, sequence_words
from accel.policies import hardware
from accel.policies.selection.ladders import (
    GpuLadder, Size, largest_slice_chips, replicas_held, tpu_fleet, tpu_layout)
from accel.policies.selection.pools import MAX_SLICES, planned_tpu_pool
from accel.policies.plan import Estimate, Option, Plan, serving_token_prices
from accel.policies.selection.plan_builder import make_plan
from accel.policies.selection.served_sizes import engine_refusal, served_replica_sizes
from accel.policies.selection.serving_capacity import refusal as serving_refusal
from accel.policies.selection.sizing import sequence_refusal
from accel.policies.workload import WorkloadFieldError, WorkloadSpec, pin_provisioning_conflict, pin_spot_conflict



def _check_machine_type(machine_type: str, accelerator: str, offerings: Sequence[Offering]) -> None:
    """A pinned machine type no offering sells is a typo, and one that carries another accelerator contradicts the
    pin: WorkloadFieldError (exit 2) naming hardware.machine_type, not "nothing feasible" (exit 3)."""
    carries: dict[str, set[str]] = {}
    for offering in offerings:
        types = {offering.machine_type}
        generation = shapes.GENERATION_BY_ACCELERATOR.get(offering.accelerator)
        if generation is not None:
            types |= set(generation.single_host_machine_types.values())
        for name in types:
            carries.setdefault(name, set()).add(offering.accelerator)
    if accelerator in carries.get(machine_type, ()):
        return
    own = sorted(name for name, accelerators in carries.items() if accelerator in accelerators)
    if machine_type in carries:
        raise WorkloadFieldError("hardware.machine_type", f"{machine_type!r} carries "
                                 f"{', '.join(sorted(carries[machine_type]))}, not {accelerator}; the catalog sells "
                                 f"{accelerator} as {', '.join(own) or 'nothing'}")
    from accel.policies.catalog.not_offered import why_not_offered  # only this message needs it

    known = why_not_offered(machine_type)
    if known:
        raise WorkloadFieldError("hardware.machine_type", known)
    import difflib  # only this message needs it

    near = difflib.get_close_matches(machine_type, own or list(carries), n=1, cutoff=0.5)
    raise WorkloadFieldError("hardware.machine_type", f"{machine_type!r} is sold by no catalog offering"
                             + (f"; did you mean {near[0]!r}?" if near else "")
                             + f"; the catalog sells {accelerator} as {', '.join(own) or 'nothing'}")

def choose_pinned(spec: WorkloadSpec, catalog: Catalog, objective: str, extra_offerings: Sequence[Offering],
                  reservations: Sequence = ()) -> Choice:
    """The Choice for the workload's hardware pin: its cheapest matching offering and region, with warnings
    where the pin misses the deadline, budget or throughput target. Raises NoFeasibleOption when it cannot run,
    WorkloadFieldError when a region is in no offering, the pin's spot contradicts constraints.spot, the pin
    cannot be built (more nodes in one pool than the offering's max_nodes) or it is a TPU multislice whose
    slices cannot each hold the training state.

    Why it is long: a pin is ruled in or out by the checks a search applies to an offering (regions, spot,
    the node limit, multislice memory), each failing with its own field, before it is estimated
    (evaluate_pin) and priced in each matching region; the warnings then name each limit the pin misses."""
    pin = spec.hardware
    assert pin is not None
    # A stack's accel:hardware is applied to its workload without re-validating the pair: check it here too.
    conflict = pin_spot_conflict(spec)
    if conflict is not None:
        raise WorkloadFieldError("hardware.spot", conflict)
    conflict = pin_provisioning_conflict(spec)
    if conflict is not None:
        raise WorkloadFieldError("hardware.provisioning", conflict)
    everything = list(catalog.offerings) + list(extra_offerings)
    check_regions(spec.constraints.regions, everything, "constraints.regions")
    if pin.region:
        check_regions([pin.region], everything, "hardware.region")
    # A declared reservation of the pinned machine is timed as held capacity (no queue, no legs: evaluate_pin).
    ctx = search_context(spec, catalog, objective, reservations)
    ctx.pinned_chips = pin.chips   # a long sequence's layout is chosen within the pinned fleet (SearchContext.sequence_fit)
    clouds = [pin.cloud] if pin.cloud else list(spec.constraints.clouds)
    offerings = [o for o in everything if o.accelerator == pin.accelerator and o.cloud in clouds]
    generation = shapes.GENERATION_BY_ACCELERATOR.get(pin.accelerator)
    if pin.machine_type:
        _check_machine_type(pin.machine_type, pin.accelerator, everything)
        if generation is not None:
            offerings = [o for o in offerings if pin.machine_type in
                         {o.machine_type, *generation.single_host_machine_types.values()}]
        else:
            offerings = [o for o in offerings if o.machine_type == pin.machine_type]
    if pin.region:
        offerings = [o for o in offerings if pin.region in o.regions]
    where = f"{pin.accelerator} on {', '.join(clouds)}" + (f" in {pin.region}" if pin.region else "") + (
        f" as {pin.machine_type}" if pin.machine_type else "")
    spot = pin.wants_spot if pin.wants_spot is not None else spec.constraints.spot == "required"
    # How each offering's fleet is bought when not on spot: its own provisioning, or the mode the pin names.
    bought: dict[str, str] = {}
    if not spot:
        bought = _pinned_provisioning(ctx, offerings, pin.provisioning)
        offerings = _servable_offerings(spec, ctx, [o for o in offerings if o.id in bought], bought)
    ref = catalog_ref(catalog)
    if not offerings:
        known = sorted({f"{o.id} ({', '.join(o.regions)})" for o in catalog.offerings if o.accelerator == pin.accelerator})
        raise NoFeasibleOption(f"hardware pin: the catalog has no offering of {where}; offerings of "
                               f"{pin.accelerator}: {'; '.join(known) or 'none'}",
                               {"hardware": [pin.accelerator]}, None, workload=spec, catalog=ref)
    hard = hard_filter(spec.model_copy(update={"constraints": spec.constraints.model_copy(
        update={"clouds": clouds, "regions": None})}), offerings[0])
    if hard is not None and hard[0] in ("framework", "portability"):
        raise NoFeasibleOption(f"hardware pin {pin.accelerator}: {hard[1]}", {hard[0]: [o.id for o in offerings]},
                               None, workload=spec, catalog=ref)
    if generation is not None:
        # HardwarePin has checked that a topology, TPU type or slice count describes exactly pin.chips.
        if pin.topology:
            topology, slices = pin.topology, pin.slices or pin.chips // shapes.topology_chips(pin.topology)
        elif pin.slices or pin.tpu_type:
            slices = pin.slices or 1
            topology = shapes.smallest_topology(generation.name, pin.chips // slices)
        else:
            # The search's layout rule: the smallest ladder size that holds the chips (policies/selection/ladders.py).
            check_tpu_chips_fit_a_stack(pin.chips, generation.name)
            layout = tpu_layout(generation.name, pin.chips)
            topology, slices = layout.topology, layout.slices
            assert topology is not None
        check_tpu_slices_fit_a_stack(spec, topology, slices)
        if spec.kind == "inference":
            check_tpu_serving_slice_within_hosts(spec, generation.name, topology)
        if spec.kind != "inference" and slices > 1:
            check_multislice_memory(spec, ctx, catalog, topology, slices)
    candidates: list[tuple[tuple, Candidate, str]] = []
    notes: list[str] = []
    over_limit: list[tuple[Offering, Size]] = []
    for offering in offerings:
        regions = [pin.region] if pin.region else list(offering.regions)
        # A fleet bought through a queued mode is billed at the mode's price, as the search prices it; one the pin
        # puts on flex-start although the offering is sold on demand (A3 High) is the search's flex-start point.
        provisioning = bought.get(offering.id, offering.provisioning)
        queued = (queued_or_listed(ctx, offering, provisioning)
                  if not spot and provisioning in QUEUED_PROVISIONING else None)
        queue = provisioning if not spot and provisioning != offering.provisioning else None
        for region in regions:
            prices = offering.prices(region, spot)
            if prices is None:
                notes.append(f"{offering.id} has no {'spot' if spot else 'on-demand'} price in {region}")
                continue
            chip, host = queued(*prices) if queued is not None else prices
            if generation is not None:
                size = tpu_fleet(generation.name, topology, slices)
            else:
                # The GPU ladder's first size that holds the pinned chips: whole nodes, rounded up.
                step = hardware.current().node_step(offering.machine_type)
                ladder = GpuLadder(offering, math.ceil(pin.chips / offering.chips_per_host / step) * step)
                size = ladder[ladder.first_at_least(pin.chips)]
            # A GPU fleet is one node pool, a TPU multislice one pool per slice: the components build no larger pool.
            if node_limit_violation(offering, size.hosts, size.slices, spec.kind != "inference"):
                over_limit.append((offering, size))
                break
            candidate = evaluate_pin(ctx, offering, spot, region, chip, host, size, queue)
            if candidate is None:
                continue
            candidates.append(((candidate.evaluation.total_usd, offering.id, list(offering.regions).index(region)),
                               candidate, region))
    if not candidates and over_limit:
        raise node_limit_error(spec, *over_limit[0])
    if not candidates:
        raise NoFeasibleOption(f"hardware pin: no {'spot' if spot else 'on-demand'} price for {where}"
                               + (f" ({'; '.join(notes[:3])})" if notes else ""),
                               {"spot": [o.id for o in offerings]}, None, workload=spec, catalog=ref)
    candidates.sort(key=lambda item: item[0])
    _, best, region = candidates[0]
    option = to_option(best, region)
    need = ctx.min_memory_chips(best.offering)
    replica_need = best.evaluation.detail.get("unservable")
    if spec.kind != "inference" and option.chips < need:
        raise NoFeasibleOption(f"hardware pin: {plural(option.chips, 'chip')} of {pin.accelerator} cannot hold the "
                               f"training state ({training_memory_bytes(spec, ctx.resolved) / 1e12:,.2f} TB needs at "
                               f"least {plural(need, 'chip')})",
                               {"memory": [best.offering.id]}, option, "does not fit in memory", workload=spec, catalog=ref)
    fit = ctx.sequence_fit(best.offering)
    if fit is not None and fit.changes_layout:
        refused = sequence_refusal(fit, option.chips, best.offering)
        if refused is not None:
            raise NoFeasibleOption(f"hardware pin: {plural(option.chips, 'chip')} of {pin.accelerator} cannot train "
                                   f"the sequence: {refused}", {"memory": [best.offering.id]}, option,
                                   "one sequence's activations do not fit", workload=spec, catalog=ref)
    if replica_need:
        raise NoFeasibleOption(f"hardware pin: {plural(option.chips, 'chip')} of {pin.accelerator} cannot serve the "
                               f"model: {replica_need}",
                               {"memory": [best.offering.id]}, option, str(replica_need), workload=spec, catalog=ref)
    # The fleet on the declared reservation that holds it is priced as that bills it before a line is written.
    held_by = _held_by(ctx, best, option, spot)
    estimate = estimate_for(ctx, best, option)
    billed, held = option, None
    if held_by is not None:
        billed, held, estimate = _on_reservation(spec, held_by, best, option, estimate)
    window = best.evaluation.detail.get("capacity_window_days")
    runs = (f"Runs {duration(float(best.evaluation.detail['capacity_wall_hours']))}, billed for the declared "
            f"Capacity Block's whole {duration(option.hours)} window," if window else f"Runs {duration(option.hours)}")
    # Its figures as the reservation bills them, said so where that is not the catalog's rate.
    rebilled = billed.hourly_usd != option.hourly_usd
    shown = billed if rebilled else option
    rationale = [f"Pinned: {describe(option)} (hardware pin; no search). "
                 f"{runs if spec.kind != 'inference' else 'Serves'} at "
                 f"{money(shown.hourly_usd)}/h, {money(shown.total_usd)} in total"
                 f"{', as the reservation bills it' if rebilled else ''}."]
    rationale.extend(how_wrong(ctx, option))
    rationale.extend(sequence_words(best.evaluation.detail))
    if option.chips != pin.chips:
        if generation is None:
            unit = f"whole nodes of {plural(best.offering.chips_per_host, 'GPU')}"
        else:
            unit = (f"TPU {generation.name} slices come in fixed shapes; give a topology or tpu_type to pin the "
                    f"exact slice")
        rationale.append(f"{plural(pin.chips, 'chip')} rounded up to {option.chips:,} ({unit}).")
    if pin.tpu_type and generation is not None:
        counts = "count TensorCores, two per chip" if generation.cores_per_chip == 2 else "count chips"
        per_slice = pin.chips // (pin.slices or 1)
        rationale.append(f"{pin.tpu_type} is {plural(per_slice, 'chip')} ({generation.name} type names {counts}).")
    if spec.kind != "inference" and option.hours > ctx.deadline_h:
        rationale.append(f"Warning: misses the {ctx.deadline_h / 24:g}-day "
                         f"{'deadline' if ctx.deadline_given else 'default limit'} ({duration(option.hours)}).")
    if ctx.budget is not None and option.total_usd > ctx.budget:
        cost, budget = money_pair(option.total_usd, ctx.budget)
        rationale.append(f"Warning: {cost} is over the {budget} budget.")
    if spec.kind == "inference":
        detail = best.evaluation.detail
        served = float(detail.get("tokens_per_second", 0))
        assert spec.inference is not None
        if served < spec.inference.tokens_per_second:
            rationale.append(f"Warning: serves ~{served:,.0f} tok/s, below the {spec.inference.tokens_per_second:,.0f} "
                             f"tok/s target.")
        stages = int(detail.get("pipeline_stages", 1) or 1)
        across = ("" if stages == 1 else f" ({stages} nodes as {stages} pipeline stages over the scale-out network, "
                                         f"{int(detail['replica_chips']) // stages}-GPU tensor parallel in each)")
        batch = (f"batch {detail['batch_per_replica']}" if stages == 1 else
                 f"{detail['batch_per_replica']} sequences in {stages} micro-batches")
        rationale.append(f"{plural(int(detail['replicas']), 'replica')} of "
                         f"{plural(int(detail['replica_chips']), 'chip')}{across}, {batch} at "
                         f"~{detail['p99_ms_per_token']} ms/token p99.")
    if ctx.obtain is not None:
        # A fleet on a reservation is not bought through the mode it was judged on: no line of that mode's risk.
        queued = f"Capacity mode {best.evaluation.detail.get('capacity_mode')}:" if held is not None and \
            best.evaluation.detail.get("capacity_mode") else None
        rationale.extend(line for line in capacity_lines(ctx.obtain, best, option)
                         if queued is None or not line.startswith(queued))
    # The same pin on each other allowed cloud, cheapest first: a fleet estimated everywhere it can be built.
    elsewhere: dict[str, Option] = {}
    for _, candidate, candidate_region in candidates[1:]:
        cloud = candidate.offering.cloud
        if cloud != option.cloud and cloud not in elsewhere:
            elsewhere[cloud] = to_option(candidate, candidate_region)
    return Choice(chosen=billed, options=[billed, *elsewhere.values()], rejected=[], rationale=rationale,
                  estimate=estimate, objective=objective, workload=spec, catalog=ref, chosen_offering=best.offering,
                  pinned=True, reservation=held.reservation if held is not None else None, held=held)


def _held_by(ctx: SearchContext, best: Candidate, option: Option, spot: bool):
    """The declared reservation the pinned fleet goes on (reservations.reservation_holding: its machine in its
    region), else None: none declared, on spot, or already on a reservation the catalog's offering names."""
    if not ctx.reservations or spot or (option.provisioning in ("reservation", "capacity-block")
                                        and best.offering.reservation):
        return None
    from accel.policies.cloud.reservations import reservation_holding

    return reservation_holding(ctx.reservations, option.provisioning, _pool_machine_type(option, best.offering),
                               option.region)


def _pool_machine_type(option: Option, offering: Offering) -> str:
    """The machine type of the pool the fleet is built as (a TPU slice's hosts are the topology's VM type)."""
    if option.family == "tpu":
        assert option.topology is not None
        return planned_tpu_pool(option.accelerator, option.topology, option.slices).machine_type
    return offering.machine_type


def _on_reservation(spec: WorkloadSpec, held_by, best: Candidate, option: Option,
                    estimate: Estimate) -> tuple[Option, HeldCapacity, Estimate]:
    """The pinned fleet and its estimate as the declared reservation bills them (reservations.bill_on_reservation),
    and what the plan writes of it (HeldCapacity: make_plan)."""
    from accel.policies.cloud.reservations import bill_on_reservation, held_mode, held_words

    machine_type = _pool_machine_type(option, best.offering)
    billed, estimate = bill_on_reservation(held_by, machine_type, option.hosts, option, estimate, spec.inference)
    held = HeldCapacity(reservation=held_by.name, zone=held_by.zone,
                        mode=held_mode(option.cloud, machine_type, held_by),
                        line=held_words(held_by, option.hosts, option, machine_type), sized=option)
    return billed, held, estimate


def _pinned_provisioning(ctx: SearchContext, offerings: list[Offering], wanted: str | None) -> dict[str, str]:
    """{offering id: the provisioning its pinned fleet is bought through}: the offering's own, or the mode the pin
    names (`hardware.provisioning`) where the capacity-mode table sells the machine through it: flex-start on a
    machine sold on demand and through flex-start (A3 High, A3 Mega, A2, TPUs) is the search's flex-start point.
    WorkloadFieldError (exit 2) naming hardware.provisioning when no offering of the pin is sold that way, with
    the table's reason and the modes it is sold through."""
    if wanted is None or wanted == "spot":
        return {o.id: o.provisioning for o in offerings}
    bought: dict[str, str] = {}
    for offering in offerings:
        if offering.provisioning == wanted or (
                wanted in QUEUED_PROVISIONING and offering.provisioning == "on-demand" and ctx.obtain is not None
                and ctx.obtain.mode_for(offering, wanted) is not None):
            bought[offering.id] = wanted
    if bought or not offerings:
        return bought
    raise WorkloadFieldError("hardware.provisioning", _not_sold_through(ctx, offerings[0], wanted))


def _not_sold_through(ctx: SearchContext, offering: Offering, wanted: str) -> str:
    """Why `offering` is not bought through `wanted` (the applicability table's reason where it gives one) and the
    modes a pin of it may name."""
    table = ctx.obtain.table if ctx.obtain is not None else None
    row = table.applicable(offering.cloud, offering.machine_type) if table is not None else None
    reason = next((why for mode_id, why in (row.excluded.items() if row is not None else ())
                   if table is not None and table.modes[mode_id].provisioning == wanted), None)
    sold = [offering.provisioning]
    if ctx.obtain is not None:
        sold += [m.provisioning for m in ctx.obtain.modes_for(offering)
                 if m.provisioning in ("on-demand", "spot", "flex-start") and m.kind != "commitment"]
    sold = list(dict.fromkeys(sold))
    why = reason or ("flex-start is Google Cloud's Dynamic Workload Scheduler mode" if wanted == "flex-start"
                     and offering.cloud != "gcp" else "not among its capacity modes (policies/cloud/capacity_modes.yaml)")
    return (f"{offering.machine_type} ({offering.id}) is not sold through {wanted}: {why}; a pin of it may name "
            f"provisioning {' or '.join(sold)}, or leave provisioning unset (a reservation or Capacity Block is "
            "declared in accel:reservations)")


def _servable_offerings(spec: WorkloadSpec, ctx: SearchContext, offerings: list[Offering],
                        bought: dict[str, str]) -> list[Offering]:
    """The pin's offerings less those a service may not be bought through (policies/selection/serving_capacity.py:
    a service past a queued mode's longest request); WorkloadFieldError (exit 2) naming the pin's machine key when
    that leaves none, saying why and what to do instead. `bought`: the provisioning of each (_pinned_provisioning)."""
    servable, refused = [], None
    for offering in offerings:
        provisioning = bought.get(offering.id, offering.provisioning)
        mode = ctx.obtain.mode_for(offering, provisioning) if ctx.obtain is not None else None
        why = serving_refusal(spec, offering, mode, pinned=True)
        if why is None:
            servable.append(offering)
        elif refused is None:
            refused = (offering, why)
    if servable or refused is None:
        return servable
    offering, why = refused
    pin = spec.hardware
    assert pin is not None
    field = ("hardware.provisioning" if pin.provisioning else
             "hardware.machine_type" if pin.machine_type else "hardware.accelerator")
    raise WorkloadFieldError(field, (
        f"pins {offering.machine_type} ({offering.id}), bought through "
        f"{bought.get(offering.id, offering.provisioning)} without a reservation: {why}"))


def _slice_field(spec: WorkloadSpec) -> str:
    """The pin key that sets the TPU slice shape: the one to change when a slice is wrong."""
    pin = spec.hardware
    assert pin is not None
    return ("hardware.topology" if pin.topology else "hardware.tpu_type" if pin.tpu_type else
            "hardware.slices" if pin.slices else "hardware.chips")


def check_tpu_chips_fit_a_stack(chips: int, generation: str) -> None:
    """WorkloadFieldError (exit 2) naming hardware.chips when no multislice a stack builds (at most MAX_SLICES
    slices of the generation's largest) holds `chips`: before the layout is looked for, not at `accel plan`."""
    most = MAX_SLICES * largest_slice_chips(generation)
    if chips > most:
        raise WorkloadFieldError("hardware.chips", (
            f"{chips:,} chips of TPU {generation} are more than one stack builds: at most {MAX_SLICES} slices (a GKE "
            f"node pool each, components/gcp/tpu.py) of the largest {largest_slice_chips(generation):,}-chip slice, "
            f"{most:,} chips; pin at most {most:,} chips, or split the run across stacks"))


def check_tpu_slices_fit_a_stack(spec: WorkloadSpec, topology: str, slices: int) -> None:
    """WorkloadFieldError (exit 2) naming the pin's key when its multislice has more slices than one TpuSlice
    builds (MAX_SLICES): `accel plan` would refuse the stack; `accel choose` says so first."""
    if slices <= MAX_SLICES:
        return
    pin = spec.hardware
    assert pin is not None
    field = "hardware.slices" if pin.slices else "hardware.chips"
    raise WorkloadFieldError(field, (
        f"{slices:,} slices of {topology} are more than the {MAX_SLICES} one stack builds (a GKE node pool each, "
        f"components/gcp/tpu.py); pin at most {MAX_SLICES} slices "
        f"({MAX_SLICES * shapes.topology_chips(topology):,} chips of {topology}), or larger slices"))


def check_tpu_serving_slice_within_hosts(spec: WorkloadSpec, generation: str, topology: str) -> None:
    """A pinned TPU serving replica (one slice of `topology`) spanning more hosts than accel serves on (the hardware
    table's limits.tpu_serving_hosts_per_replica): WorkloadFieldError (exit 2) naming the pin's slice key and the
    generation's largest single-host slice, at choose and plan time rather than at `accel job`."""
    hosts = shapes.hosts_per_slice(generation, topology)
    if hosts <= tpu_serving.max_hosts():
        return
    pin = spec.hardware
    assert pin is not None
    single = tpu_serving.single_host_pin(pin.accelerator, generation)
    fix = f"; {single}" if single is not None else ""
    raise WorkloadFieldError(_slice_field(spec), (
        f"each serving replica is one slice: {topology} is {plural(shapes.topology_chips(topology), 'chip')} over "
        f"{hosts} {shapes.machine_type(generation, topology)} hosts; {tpu_serving.why_within_hosts(generation)}{fix}"))


def check_multislice_memory(spec: WorkloadSpec, ctx: SearchContext, catalog: Catalog, topology: str,
                            slices: int) -> None:
    """A TPU multislice runs data-parallel across its slices, so each slice holds the whole training state:
    WorkloadFieldError (exit 2) naming the pin's slice key when one slice's HBM cannot."""
    pin = spec.hardware
    assert pin is not None
    accelerator = catalog.accelerators[pin.accelerator]
    per_slice = shapes.topology_chips(topology)
    if slice_holds_training_state(spec, ctx.resolved, accelerator, per_slice):
        return
    generation = shapes.GENERATION_BY_ACCELERATOR[pin.accelerator]
    need = min_chips_for_memory(spec, ctx.resolved, accelerator)
    state_tb = training_memory_bytes(spec, ctx.resolved) / 1e12
    fraction = ctx.resolved["hbm_usable_fraction"]
    hbm_tb = per_slice * accelerator.hbm_gb / 1000
    try:
        holding = shapes.smallest_topology(generation.name, need)
    except shapes.ShapeError:
        holding = None
    total = per_slice * slices
    regrouped = next((n for n in range(slices - 1, 0, -1) if total % n == 0
                      and need <= total // n <= generation.max_chips_per_slice
                      and shapes.topology_chips(shapes.smallest_topology(generation.name, total // n)) == total // n),
                     None)
    if regrouped is not None:
        shape = shapes.smallest_topology(generation.name, total // regrouped)
        fix = (f"each slice needs at least {plural(need, 'chip')}: the same {total:,} chips as "
               f"{plural(regrouped, 'slice')} of {shape} ({shapes.tpu_vm_type(generation.name, total // regrouped)}) "
               f"would hold it")
    elif holding is not None:
        fix = (f"each slice needs at least {plural(need, 'chip')}: pin larger slices (e.g. topology {holding}, "
               f"{shapes.tpu_vm_type(generation.name, shapes.topology_chips(holding))})")
    else:
        fix = (f"no TPU {generation.name} slice holds it (the largest has "
               f"{plural(generation.max_chips_per_slice, 'chip')}): pin another accelerator")
    raise WorkloadFieldError(_slice_field(spec), (
        f"{slices} slices of {topology} ({plural(per_slice, 'chip')} each) cannot hold the training state: a "
        f"multislice runs data-parallel across slices, so each slice holds all {state_tb:,.2f} TB of weights, "
        f"gradients, optimizer state and activations, and one slice has {per_slice} x {accelerator.hbm_gb:g} GB = "
        f"{hbm_tb:,.2f} TB of HBM ({hbm_tb * fraction:,.2f} TB usable at hbm_usable_fraction {fraction:g}); {fix}"))


def node_limit_error(spec: WorkloadSpec, offering: Offering, size: Size) -> WorkloadFieldError:
    """The exit-2 error for a pin whose node pool is larger than the offering's max_nodes, with the limit,
    its source and what to do."""
    limit = node_limit(offering, spec.kind != "inference")
    assert limit is not None and spec.hardware is not None
    per_pool = size.hosts // size.slices
    if offering.family == "tpu":
        field = _slice_field(spec)
        what = f"{plural(size.slices, 'slice')} of {per_pool} hosts"
        fix = f"pin smaller slices (at most {limit.value} hosts each)"
    else:
        field = "hardware.chips"
        fleet = limit.fleet_max_nodes or limit.value
        what = f"{plural(size.hosts, 'node')} of {offering.machine_type} in one cluster"
        fix = f"pin at most {plural(fleet * offering.chips_per_host, 'chip')}"
    if limit.adjustable:
        fix += (f", or, once the quota is raised, give the offering your own max_nodes in a catalog overlay "
                f"(--catalog): offerings: [{{id: {offering.id}, like: {offering.id}, max_nodes: {{value: N, name: "
                f"..., source: ...}}}}]")
    else:
        fix += " (a fixed limit, not a quota)"
    return WorkloadFieldError(field, (
        f"{plural(spec.hardware.chips, 'chip')} of {spec.hardware.accelerator} on {offering.id} need {what}, over "
        f"the limit: {node_limit_words(offering, limit)} (source: {limit.source}); {fix}"))


def _holding(reservations: Sequence, machine_type: str, region: str):
    """The declared reservation that holds machines of this type in the region, else None (reservations.holding;
    loaded only when declared: the reservation rules are pydantic models a warm `choose` need not build)."""
    from accel.policies.cloud.reservations import holding

    return holding(reservations, machine_type, region)


def evaluate_pin(ctx: SearchContext, offering: Offering, spot: bool, region: str, chip: Price, host: Price | None,
                 size: Size, queue: str | None = None) -> Candidate | None:
    """Time, cost and utilisation of exactly this size of the offering in this region; `queue`: bought through
    this queued mode although the offering is sold on demand (hardware.provisioning: flex-start), as the search's
    flex-start point of the same offering."""
    spec = ctx.spec
    provisioning = queue or offering.provisioning
    chip_usd, host_usd = chip.usd, (host.usd if host else 0.0)
    hourly = size.chips * chip_usd + size.hosts * host_usd
    if spec.kind != "inference":
        model = ctx.training_model(offering, spot)
        trained = ctx.trained_size(offering, size)   # timed on its whole replicas, paid on every node
        hours = model.hours(trained.chips, trained.hosts, trained.slices)
        if not math.isfinite(hours):
            hours = 1e9
        detail: dict[str, float | int | str] = {"min_chips_for_memory": ctx.min_memory_chips(offering),
                                                **ctx.sequence_detail(offering, size)}
        if spot:
            detail["spot_time_lost"] = round(1.0 - model.productivity(trained.hosts), 4)
        spot_model = ctx.obtain.spot_model(offering) if spot and ctx.obtain is not None else None
        # The fleet runs on a reservation the stack holds when one of its machine type is declared in the region
        # (choose_pinned bills it as the reservation does): held capacity is not chained in legs (chains_legs).
        held_by = _holding(ctx.reservations, offering.machine_type, region) if ctx.reservations else None
        held = held_by is not None
        bought = (None if spot or ctx.obtain is None else
                  ctx.obtain.mode_for(offering, "reservation", held=True) if held else
                  ctx.obtain.mode_for(offering, provisioning))
        limits = (ctx.obtain.queue(offering, provisioning)
                  if ctx.obtain is not None and ModeTable.chains_legs(bought) else None)
        timing = None
        if spot_model is not None and ctx.obtain is not None:
            # A pin is not searched, but the capacity model still says whether its spot fleet finishes.
            timing = spot_timing(ctx.obtain, spot_model, size.hosts, hours, model.loss_hours,
                                 mode_id(ctx.obtain, offering, "spot"))
        elif limits is not None and ctx.obtain is not None:
            # Bought through a queued mode (A3 Ultra, A4, TPU7x on flex-start): chained in legs of at most its
            # longest request, each paying the start-up again, as the search times the same fleet (sizing.py).
            timing = queued_timing(ctx.obtain, limits, size.hosts, hours, model.startup_hours(trained.hosts),
                                   mode_id(ctx.obtain, offering, provisioning), provisioning)
        block = held_by.block_hours(hours) if held_by is not None and not spot else None
        if block is not None and block[1] is None:
            # On a declared Capacity Block, paid for its whole window (the search's block point and use_reservation
            # bill it alike: DeclaredReservation.block_hours); a run longer than it is refused at `accel plan`.
            detail["capacity_wall_hours"] = round(hours, 2)
            detail["capacity_window_days"] = round(block[0] / 24, 2)
            hours = block[0]
        if timing is not None:
            detail["capacity_mode"], detail["capacity_risk"] = timing.mode, timing.risk
            if math.isfinite(timing.wall_hours):
                detail["capacity_wall_hours"] = round(timing.wall_hours, 2)
                hours = timing.billed_hours
                if timing.legs is not None:
                    detail["capacity_legs"] = timing.legs.legs
        evaluation = Evaluation(hours=hours, hourly_usd=hourly, total_usd=hours * hourly,
                                mfu=model.mfu(trained.chips, trained.slices),
                                goodput=model.goodput * max(model.productivity(trained.hosts), 1e-6), detail=detail)
        return Candidate(offering, [region], spot, size, evaluation, chip, host, queue=queue)
    assert spec.inference is not None
    model_i = ctx.inference_model(offering)
    if size.topology is not None:
        options = [(shapes.topology_chips(size.topology), size.slices, 1)]
    else:   # the sizes the engine runs for a named model's heads (served_sizes), as a search weighs them
        options = [(r.chips, replicas_held(offering, r, size), r.stages) for r in served_replica_sizes(ctx, offering)]
    best: tuple[float, Replica, int] | None = None
    reason, too_large = "", None
    for replica_chips, replicas, stages in options:
        if replicas < 1:   # a replica larger than the pinned fleet serves nothing: no 0 tok/s fleet to price
            too_large = too_large or replica_chips
            continue
        # A pinned TPU slice is its one replica, over one host's JAX devices (the job's --tensor-parallel-size).
        refused = (engine_refusal(ctx, offering, min(replica_chips, offering.chips_per_host))
                   if size.topology is not None else None)
        if refused is not None:
            reason = f"{replica_chips}-chip replica: {refused}"
            continue
        replica, why = model_i.replica(replica_chips, stages)
        if replica is None:
            reason = f"{replica_chips}-chip replica: {why}"
            continue
        served = replica.tokens_per_second * replicas
        if best is None or served > best[0]:
            best = (served, replica, replicas)
    if too_large is not None:
        reason += (f"{'; ' if reason else ''}a replica of {too_large} chips or more is larger than the pinned "
                   f"{size.chips} chips")
    reason = reason or "no replica size"
    hours = spec.inference.hours
    if best is None:
        detail = {"unservable": reason, "min_chips_for_memory": ctx.min_memory_chips(offering)}
        evaluation = Evaluation(hours=hours, hourly_usd=hourly, total_usd=hourly * hours, mfu=1e-6, goodput=1.0,
                                detail=detail)
        return Candidate(offering, [region], spot, size, evaluation, chip, host, queue=queue)
    served, replica, replicas = best
    latency_ms = replica.step_seconds * ctx.resolved["inference_latency_p99_factor"] * 1000
    used = min(served, spec.inference.tokens_per_second)
    detail = {"replica_chips": replica.chips, "replicas": replicas, "batch_per_replica": replica.batch,
              "p99_ms_per_token": round(latency_ms, 1), "tokens_per_second": round(served, 1),
              "tokens_per_second_per_replica": round(replica.tokens_per_second, 1), "bound": replica.bound,
              "min_chips_for_memory": ctx.min_memory_chips(offering)}
    if replica.stages > 1:   # whole nodes over the scale-out network (ladders.pipeline_sizes)
        detail["pipeline_stages"] = replica.stages
    # Priced by the rule a searched fleet is (plan.serving_token_prices), so a pin and a search of one fleet agree.
    # (From the rate served, not its rounded figure in the detail: a fleet of under 0.05 tok/s rounds to 0.)
    detail.update(serving_token_prices(hourly, served, spec.inference.tokens_per_second))
    if not spot and ctx.obtain is not None:   # a pin on A3 Ultra says it waits and ends as the search's fleet does
        detail.update(queued_service_detail(ctx.obtain, offering, provisioning))
    utilisation = model_i.utilisation(used, size.chips)
    evaluation = Evaluation(hours=hours, hourly_usd=hourly, total_usd=hourly * hours, mfu=utilisation, goodput=1.0,
                            detail=detail)
    return Candidate(offering, [region], spot, size, evaluation, chip, host, queue=queue)


def plan_from_pin(spec: WorkloadSpec, catalog: Catalog, extra_offerings: Sequence[Offering] = (),
                  reservations: Sequence = ()) -> Plan:
    """A Plan for the workload's hardware pin, without a search; `reservations` (a stack's accel:reservations)
    time a fleet of a declared reservation's machine as held capacity. Raises ValueError without a pin."""
    if spec.hardware is None:
        raise ValueError("plan_from_pin needs a workload with a 'hardware' pin")
    return make_plan(spec, choose_pinned(spec, catalog, "cost", extra_offerings, reservations), catalog)
