"""How the search obtains a fleet: the capacity mode of each option, the obtainability model's verdict on it
(policies/cloud/obtainability.py over policies/cloud/capacity_modes.yaml, with the workload's overrides), and
the words that say which mode, why, and the risk.

- spot: the fleet must finish by the deadline at the quantile of reclaim waves and pool drains; a fleet past
  the spot pool, or one the waves make late, is not offered on spot (the model decides, no threshold);
- flex-start and queued provisioning run at most seven days per request: a longer run is chained in legs,
  each re-queued and started again, and a fleet past the mode's size is not offered in it;
- on-demand past the pool one zone is expected to supply is still priced, but labelled an upper bound with
  what it takes (Capacity Blocks where they can supply it, else a negotiated reservation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from accel.base.units import hours_text as duration, money
from accel.policies.catalog.model import Offering
from accel.policies.cloud.booking import (
    BOOKED_MODES, Booking, block_sizes, blocks_words, supply_problem, window_days)
from accel.policies.cloud.capacity_modes import QUEUED_PROVISIONING, CapacityMode, ModeTable, load_modes
from accel.policies.cloud.mode_prices import upper_bound_words
from accel.policies.cloud.obtainability import (
    QueuedOutcome, SpotModel, SpotOutcome, queued_legs, spot_outcome,
    waves_words)
from accel.policies.workload import WorkloadFieldError, WorkloadSpec


@dataclass
class Obtaining:
    """One search's capacity model: the mode table, the quantile, and the workload's overrides (validated)."""

    table: ModeTable
    confidence: float
    overrides: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    _spot: dict[str, SpotModel | None] = field(default_factory=dict)
    _figures: dict[tuple[str, str, str], tuple[float, bool] | None] = field(default_factory=dict)
    # The table's answers per accelerator and per machine type and provisioning: each is a scan of its fnmatch
    # patterns, and a search asks ~250 times about a few dozen (~1 ms of a choose).
    _classes: dict[str, str | None] = field(default_factory=dict)
    _modes: dict[tuple[str, str], list[CapacityMode]] = field(default_factory=dict)
    _mode: dict[tuple[str, str, str, bool], CapacityMode | None] = field(default_factory=dict)

    def obtain_class(self, offering: Offering) -> str | None:
        """The obtainability class of the offering's accelerator (the table's obtain_class)."""
        if offering.accelerator not in self._classes:
            self._classes[offering.accelerator] = self.table.obtain_class(offering.accelerator)
        return self._classes[offering.accelerator]

    def modes_for(self, offering: Offering) -> list[CapacityMode]:
        """The modes applicable to the offering's machine type (the table's modes_for)."""
        key = (offering.cloud, offering.machine_type)
        if key not in self._modes:
            self._modes[key] = self.table.modes_for(*key)
        return self._modes[key]

    def mode_for(self, offering: Offering, provisioning: str, held: bool = False) -> CapacityMode | None:
        """The applicable mode that builds `provisioning` on the offering's machine type (the table's mode_for;
        `held`: capacity the stack holds, a declared reservation)."""
        key = (offering.cloud, offering.machine_type, provisioning, held)
        if key not in self._mode:
            self._mode[key] = self.table.mode_for(*key)
        return self._mode[key]

    def spot_model(self, offering: Offering) -> SpotModel | None:
        """The spot model of the offering's class (None for an accelerator of no class: no model applies)."""
        cls = self.obtain_class(offering)
        key = cls or ""
        if key not in self._spot:
            params = self.table.obtainability.spot.get(cls) if cls else None
            self._spot[key] = (None if params is None else
                               SpotModel.of(params, self.overrides.get(key, {}).get("spot")))
        return self._spot[key]

    def figure(self, offering: Offering, kind: str, name: str) -> tuple[float, bool] | None:
        """(value, is an estimate) of one obtainability figure for the offering's class, overrides first (kept per
        accelerator: the search asks for the same figure of every fleet it ranks)."""
        key = (offering.accelerator, kind, name)
        if key not in self._figures:
            self._figures[key] = self._figure(offering, kind, name)
        return self._figures[key]

    def _figure(self, offering: Offering, kind: str, name: str) -> tuple[float, bool] | None:
        cls = self.obtain_class(offering)
        if cls is None:
            return None
        override = self.overrides.get(cls, {}).get(kind, {}).get(name)
        if override is not None:
            return override, False
        section = getattr(self.table.obtainability, kind.replace("-", "_"))
        params = section.get(cls) or section.get("all")
        if params is None:
            return None
        value = getattr(params, name, None)
        return None if value is None else (value.value, value.estimate)

    def queue(self, offering: Offering, provisioning: str) -> tuple[float, float, float] | None:
        """(longest request hours, mean wait hours, most hosts) of flex-start or queued on this offering."""
        if provisioning not in QUEUED_PROVISIONING:
            return None
        mode = self.mode_for(offering, provisioning)
        wait = self.figure(offering, provisioning, "expected_wait_hours") or self.figure(
            offering, "flex-start", "expected_wait_hours")
        hosts = self.figure(offering, provisioning, "max_hosts") or self.figure(offering, "flex-start", "max_hosts")
        if mode is None or mode.limits.max_duration_hours is None or wait is None or hosts is None:
            return None
        return mode.limits.max_duration_hours, wait[0], hosts[0]

    def bookings(self, offering: Offering) -> list[Booking]:
        """The booked modes (Capacity Blocks, calendar mode) the offering can be bought through, each with its
        lead time and its price table; a mode with no lead-time figure for the offering's class is left out
        (nothing says how far ahead it could be had)."""
        if offering.reserved_only:
            return []
        found = []
        for mode in self.modes_for(offering):
            kind = BOOKED_MODES.get(mode.id)
            lead = self.figure(offering, kind, "lead_days") if kind else None
            if kind is None or lead is None:
                continue
            prices = {}
            if mode.price is not None and mode.price.instance_usd and mode.price.source:
                for region, usd in mode.price.instance_usd.get(offering.machine_type, {}).items():
                    prices[region] = (usd, self.table.source_words(mode.price.source))
            found.append(Booking(mode, lead[0], lead[1], prices))
        return found


_PARAMS = {
    "spot": set(SpotModel._fields),
    "on-demand": {"pool_hosts"},
    "flex-start": {"expected_wait_hours", "max_hosts"},
    "queued": {"expected_wait_hours", "max_hosts"},
    "capacity-block": {"lead_days"},
    "calendar": {"lead_days"},
    "negotiated": {"lead_days"},
}


def obtaining(spec: WorkloadSpec) -> Obtaining:
    """The search's capacity model; WorkloadFieldError (exit 2) naming the field for an unknown parameter."""
    table = load_modes()
    capacity = spec.constraints.capacity
    confidence = (capacity.confidence if capacity and capacity.confidence is not None
                  else table.obtainability.confidence.value)
    overrides: dict[str, dict[str, dict[str, float]]] = {}
    for cls, kinds in (capacity.obtainability.items() if capacity else ()):
        for kind, params in kinds.items():
            unknown = sorted(set(params) - _PARAMS[kind])
            if unknown:
                raise WorkloadFieldError(f"constraints.capacity.obtainability.{cls}.{kind}",
                                         f"unknown parameter {unknown[0]!r}; known: {', '.join(sorted(_PARAMS[kind]))}")
            bad = [name for name, value in params.items() if value < 0 or (name.endswith("fraction") and value > 1)]
            if bad:
                raise WorkloadFieldError(f"constraints.capacity.obtainability.{cls}.{kind}.{bad[0]}",
                                         f"must be >= 0 (a fraction at most 1), got {params[bad[0]]!r}")
            overrides.setdefault(cls, {})[kind] = dict(params)
    return Obtaining(table, confidence, overrides)


# A NamedTuple, not a dataclass: a search builds ~2,000 (a faster constructor), and defining it generates no code.
class Timing(NamedTuple):
    """A fleet's run on its capacity mode: wall-clock at the quantile (judged against the deadline), billed
    hours (what the price is paid for), and the mode's words."""

    wall_hours: float
    billed_hours: float
    mode: str
    reason: str = ""
    spot: SpotOutcome | None = None
    legs: QueuedOutcome | None = None
    words: tuple[int, float, float] | None = None   # (hosts, run hours, confidence): spot's risk, said on demand

    @property
    def risk(self) -> str:
        """The mode's risk in words (built only for the sizes a search keeps: most are never shown)."""
        if self.spot is None or self.words is None or not self.spot.feasible:
            return self.reason
        hosts, run_hours, confidence = self.words
        lost = self.spot.wall_hours_q - run_hours
        return (f"spot: {waves_words(self.spot, confidence)} over {duration(self.spot.wall_hours_q)}, "
                f"{duration(lost)} lost to them and to obtaining {hosts} hosts (estimates: docs/capacity.md)")


def spot_timing(ob: Obtaining, model: SpotModel, hosts: int, run_hours: float, restart_hours: float,
                mode: str, floor: float | None = None) -> Timing:
    """`floor`: spot_wall_floor of the same fleet, when worked out already (obtainability.spot_outcome)."""
    outcome = spot_outcome(hosts, run_hours, model, ob.confidence, restart_hours, floor)
    if not outcome.feasible:
        return Timing(math.inf, math.inf, mode, f"spot: {outcome.reason} (estimate)", outcome)
    return Timing(outcome.wall_hours_q, outcome.wall_hours_mean, mode, "", outcome,
                  words=(hosts, run_hours, ob.confidence))


def queued_timing(ob: Obtaining, limits: tuple[float, float, float], hosts: int, run_hours: float,
                  startup_hours: float, mode: str, provisioning: str) -> Timing:
    max_hours, wait, max_hosts = limits
    if hosts > max_hosts:
        return Timing(math.inf, math.inf, mode,
                      f"{provisioning}: {hosts} hosts is past the {max_hosts:g} hosts it is expected to supply "
                      "(estimate)")
    legs = queued_legs(run_hours, startup_hours, max_hours, wait, ob.confidence)
    if legs is None:
        return Timing(math.inf, math.inf, mode, f"{provisioning}: start-up alone exceeds one request")
    if legs.legs == 1:
        risk = f"{provisioning}: one request of at most {max_hours / 24:g} days; waits ~{duration(wait)} in the queue (estimate)"
    else:
        risk = (f"{provisioning} runs at most {max_hours / 24:g} days per request: {legs.legs} legs, "
                f"{legs.legs - 1} re-queues (~{duration(wait)} each, estimate) and start-ups")
    return Timing(legs.wall_hours_q, legs.billed_hours, mode, risk, legs=legs)


def queued_service_detail(ob: Obtaining, offering: Offering, provisioning: str) -> dict[str, str]:
    """The capacity mode and risk a service bought through a queued mode records, searched or pinned alike: one
    request within the mode's longest (serving_capacity keeps a longer service off it), every node removed when
    it ends, and the queue's wait before it serves; {} where the offering is not bought through one."""
    limits = ob.queue(offering, provisioning) if provisioning in QUEUED_PROVISIONING else None
    if limits is None:
        return {}
    max_hours, wait, _ = limits
    return {"capacity_mode": mode_id(ob, offering, provisioning),
            "capacity_risk": f"{provisioning}: one request of at most {max_hours / 24:g} days, every node removed "
                             f"when it ends; waits ~{duration(wait)} in the queue before it serves (estimate)"}


def booked_timing(booking: Booking, hosts: int, chips: int, run_hours: float, tpu: bool) -> Timing:
    """A fleet booked through Capacity Blocks or calendar mode: wall-clock = the lead time to obtain the booking
    + the run (judged against the deadline); billed = the whole window the mode sells, used or not. Past the
    mode's size or its longest window it is not offered (infinite), with the reason."""
    mode = booking.mode
    problem = supply_problem(mode, hosts, chips, tpu)
    if problem is not None:
        return Timing(math.inf, math.inf, mode.id, f"{booking.words}: {problem}")
    days = window_days(mode, run_hours)
    if days is None:
        return Timing(math.inf, math.inf, mode.id,
                      f"{booking.words}: a {duration(run_hours)} run is past the longest window, "
                      f"{(mode.limits.max_duration_hours or 0) / 24:g} days ({mode.limits.source}); a second window "
                      "cannot be booked now, so the mode is not offered")
    blocks = blocks_words(mode, hosts)
    if blocks and not blocks.startswith("1 block"):
        blocks += (" (each block is in one Availability Zone: book them all in the same zone for the same window, "
                   "a node group each)")
    booked = (f"~{booking.lead_days:g} days ahead ({'estimate' if booking.lead_is_estimate else 'your figure'})")
    what = (f"{blocks} for {days} days" if blocks else
            f"{chips:,} TPU chips ({hosts} VMs) for {days} days" if tpu else f"{hosts} VMs for {days} days")
    if mode.id == "aws-capacity-block":
        risk = (f"capacity blocks must be booked {booked}, not cancellable, paid up front: {what}, billed for the "
                f"whole window used or not ({mode.limits.source})")
    else:
        risk = (f"a calendar-mode reservation must be booked {booked}, not cancellable once submitted: {what}, "
                f"billed for the whole window used or not ({mode.limits.source}, gcp-obtain-capacity)"
                + ("" if booking.instance_usd else "; no calendar-mode rate was found, so it is priced at on-demand "
                                                    "list: an UPPER BOUND"))
    return Timing(booking.lead_hours + run_hours, days * 24.0, mode.id, risk)


def capacity_lines(ob: Obtaining, candidate, option, serving_spot: str | None = None, why: str = "") -> list[str]:
    """The rationale's capacity lines for a chosen option: its mode, why and the risk, then what it takes to
    obtain a fleet past the self-service limits."""
    detail = candidate.evaluation.detail
    lines = []
    mode = detail.get("capacity_mode") or mode_id(ob, candidate.offering, option.provisioning)
    risk = detail.get("capacity_risk")
    if risk:
        wall = detail.get("capacity_wall_hours")
        at = "(the lead time, then the run)" if mode in BOOKED_MODES else f"at P{ob.confidence * 100:g}"
        lines.append(f"Capacity mode {mode}: {risk}" + (f"; {duration(float(wall))} wall-clock {at}" if wall else "")
                     + ".")
    if why:
        lines.append(f"Capacity: {why}.")
    bound = upper_bound_words(ob.table, mode, candidate.offering.machine_type) if mode else None
    if bound is not None:
        lines.append(f"Capacity: {bound}.")
    lines.extend(supply_lines(ob, candidate.offering, option.hosts, option.hours, option.region,
                              option.provisioning, option.provisioning == "spot", option.hourly_usd))
    if serving_spot == "allowed":
        lines.append("Capacity: a service with a latency target keeps an on-demand floor, so it is sized on demand: "
                     "one spot reclaim wave can take every spot node of the zone at once (set constraints.spot: "
                     "required to serve on spot anyway).")
    elif serving_spot == "required":
        lines.append("Capacity: served on spot only (constraints.spot: required): one reclaim wave can take the "
                     "whole service.")
    return lines


def booked_why(ob: Obtaining, chosen, ranked: list) -> str:
    """Why a booked mode was chosen: against the best on-demand option (its price, or that it is past what a zone
    is expected to supply), or that no on-demand option meets the workload. `ranked`: [(key, candidate, region)]."""
    if chosen.booking is None:
        return ""
    other = next((c for _, c, _ in ranked if c.booking is None and c.reserved is None), None)
    words = f"bought through {chosen.booking.words}"
    if other is None:
        return f"{words}: no fleet on demand, on spot or through a queue meets the workload"
    o, e = other, other.evaluation
    fleet = f"{o.size.hosts} x {o.offering.machine_type} {o.provisioning} ({money(e.total_usd)})"
    if beyond_supply(ob, o.offering, o.provisioning, o.size.hosts):
        pool = ob.figure(o.offering, "on-demand", "pool_hosts")
        return (f"{words}: the best fleet of another mode, {fleet}, is past the {pool[0] if pool else 0:g} hosts one zone "
                "is expected to supply on demand (estimate), so its price is only an upper bound")
    return (f"{words}: {money(chosen.evaluation.total_usd)} for the whole window against {fleet}, the best "
            "fleet of another mode")


def queued_why(chosen, ranked: list, service: bool) -> str:
    """Why a fleet bought through flex-start at the mode's own price was chosen: against the best on-demand fleet
    of the same offering (the same machines, without the queue and the seven-day legs; for a `service`, one
    request), or that none meets the workload. `ranked`: [(key, candidate, region)]."""
    if chosen.queue is None:
        return ""
    words = (f"bought through {chosen.queue} at its price ({chosen.chip_price.source.split(':', 1)[0]}, "
             f"{chosen.chip_price.as_of}: an observation to be re-verified)")
    other = next((c for _, c, _ in ranked if c.offering.id == chosen.offering.id and c.provisioning == "on-demand"
                  and c.reserved is None and c.booking is None), None)
    if other is None:
        return f"{words}: no fleet of {chosen.offering.machine_type} on demand meets the workload"
    # A service is one request (serving_capacity): it does not chain legs, but its request ends.
    unlike = ("neither waits in the queue before it serves nor is removed when a request ends" if service else
              "neither waits in the queue nor restarts between legs")
    return (f"{words}: {money(chosen.evaluation.total_usd)} against {money(other.evaluation.total_usd)} for "
            f"{other.size.hosts} x {other.offering.machine_type} on demand, which {unlike}")


def mode_id(ob: Obtaining, offering: Offering, provisioning: str, held: bool = False) -> str:
    mode = ob.mode_for(offering, provisioning, held)
    return mode.id if mode else provisioning


def beyond_supply(ob: Obtaining, offering: Offering, provisioning: str, hosts: int) -> bool:
    """An on-demand fleet past the pool one zone is expected to supply: obtaining it takes a reservation."""
    if provisioning != "on-demand":
        return False
    pool = ob.figure(offering, "on-demand", "pool_hosts")
    return pool is not None and hosts > pool[0]


def price_is_upper_bound(ob: Obtaining, offering: Offering, option, mode: str | None = None) -> bool:
    """An on-demand fleet past the pool one zone is expected to supply is priced at on-demand list as an upper
    bound: obtaining it takes a reservation (a Capacity Block, a calendar-mode or a negotiated one). So is a
    booked mode with no sourced price of its own (calendar mode: priced at on-demand list), and a queued mode with no
    factor for the machine (A4, TPU7x on flex-start: mode_prices.upper_bound_words)."""
    if mode in BOOKED_MODES:
        booked = next((b for b in ob.bookings(offering) if b.id == mode), None)
        return booked is not None and option.region not in booked.instance_usd
    if mode and upper_bound_words(ob.table, mode, offering.machine_type) is not None:
        return True
    return beyond_supply(ob, offering, option.provisioning, option.hosts)


def supply_lines(ob: Obtaining, offering: Offering, hosts: int, hours: float, region: str,
                 provisioning: str, spot: bool, hourly_usd: float) -> list[str]:
    """The capacity words of a chosen fleet: the mode and its risk; and, for an on-demand fleet past the pool
    one zone is expected to supply, which self-service mode can supply it (Capacity Blocks) or that none can,
    what it takes (a negotiated reservation), and that the price is an upper bound."""
    if spot or provisioning not in ("on-demand",):
        return []
    pool = ob.figure(offering, "on-demand", "pool_hosts")
    if pool is None or hosts <= pool[0]:
        return []
    words = (f"Capacity: {hosts:,} x {offering.machine_type} on demand is past the {pool[0]:g} hosts one zone is "
             f"expected to supply on demand ({'estimate' if pool[1] else 'your figure'}).")
    table = ob.table
    modes = {m.id: m for m in ob.modes_for(offering)}
    cb = modes.get("aws-capacity-block")
    if cb is not None:
        limits = cb.limits
        # The blocks the search itself would book and the stack builds (booking.block_sizes), not any sum of
        # block sizes: a rationale must not offer a layout the booked mode refuses.
        blocks, days = _capacity_block_fit(cb, hosts, hours)
        price = table.cb_instance_usd(offering.machine_type, region)
        lead = ob.figure(offering, "capacity-block", "lead_days")
        if blocks is not None and days is not None:
            reference = ""
            if price is not None:
                reference = (f" at ${price[0]:,.3f}/instance-h ({price[1]}) = "
                             f"{money(price[0] * hosts * days * 24)} for the whole {days}-day window")
            booked = f"must be booked ~{lead[0]:g} days ahead (estimate) and " if lead else ""
            return [words, f"Capacity Blocks can supply it: {len(blocks)} block(s) of "
                           f"{', '.join(str(b) for b in blocks)} instances for {days} days{reference}; capacity "
                           f"blocks {booked}are not cancellable ({limits.source}). The on-demand figure is an "
                           "upper bound."]
        layout = supply_problem(cb, hosts, hosts * offering.chips_per_host, False)
        why = (f"Capacity Blocks stop at {limits.max_hosts_per_request} instances per block and "
               f"{limits.max_hosts_total} across blocks, 1-14 days then 7-day steps to 182 days ({limits.source})"
               if layout is None or hosts > (limits.max_hosts_total or 0) else f"Capacity Blocks: {layout}")
    elif "gcp-calendar" in modes:
        cal = modes["gcp-calendar"].limits
        tpu = offering.family == "tpu"
        days = math.ceil(hours / 24 - 1e-9)
        lead = ob.figure(offering, "calendar", "lead_days")
        if _calendar_fits(modes["gcp-calendar"], offering, hosts, hours):
            booked = f"booked ~{lead[0]:g} days ahead (estimate), " if lead else ""
            return [words, f"A calendar-mode reservation can supply it: {days} days, {booked}billed for the whole "
                           f"window and not cancellable ({cal.source}); no calendar-mode price for it was found, so "
                           "the on-demand figure is an upper bound."]
        unit = f"{cal.max_chips_per_request} TPU chips" if tpu else f"{cal.max_hosts_per_request} GPU VMs"
        why = (f"a calendar-mode reservation stops at {unit} per request and "
               f"{(cal.max_duration_hours or 0) / 24:g} days ({cal.source})")
    else:
        why = "no self-service reservation mode applies to this machine type"
    negotiated = ob.figure(offering, "negotiated", "lead_days")
    lead = f", booked ~{negotiated[0]:g} days ahead (estimate)" if negotiated else ""
    return [words + " No self-service capacity mode supplies it: " + why + ".",
            f"It takes a negotiated reservation with the cloud's account team{lead}. Priced as an UPPER BOUND at "
            f"on-demand list: {money(hourly_usd * hours)}; declare the reservation and its committed rate in "
            "accel:reservations to price it as agreed."]


def _capacity_block_fit(cb: CapacityMode, hosts: int, hours: float) -> tuple[list[int] | None, int | None]:
    """(the blocks, the days) Capacity Blocks would sell an on-demand fleet past a zone's supply as; either None
    when they cannot (the layout the stack builds, booking.block_sizes; the longest window)."""
    return block_sizes(cb, hosts), window_days(cb, hours)


def _calendar_fits(calendar: CapacityMode, offering: Offering, hosts: int, hours: float) -> bool:
    """One calendar-mode request holds the fleet (its chips or VMs per request) for the whole run."""
    cal = calendar.limits
    fits = (hosts * offering.chips_per_host <= (cal.max_chips_per_request or 0) if offering.family == "tpu"
            else hosts <= (cal.max_hosts_per_request or 0))
    return fits and cal.max_duration_hours is not None and hours <= cal.max_duration_hours


def beyond_supply_words(ob: Obtaining, offering: Offering, hosts: int, hours: float) -> str:
    """An on-demand fleet past what one zone is expected to supply, in one clause with its figures and what would
    obtain it (the mode supply_lines names for a chosen fleet): the reason such a fleet ranks after the fleets a
    mode is expected to supply (choose._rank_key)."""
    pool = ob.figure(offering, "on-demand", "pool_hosts")
    figure = f"{hosts:,} on-demand hosts"
    if pool is not None:
        figure += (f" against the {pool[0]:g} host{'s' if pool[0] != 1 else ''} one zone is expected to supply "
                   f"({'estimate' if pool[1] else 'your figure'})")
    modes = {m.id: m for m in ob.modes_for(offering)}   # kept per machine type: asked of every fleet ranked after
    cb, calendar = modes.get("aws-capacity-block"), modes.get("gcp-calendar")
    route = "only a negotiated reservation with the cloud's account team would supply them"
    if cb is not None:   # the modes in supply_lines' order
        blocks, days = _capacity_block_fit(cb, hosts, hours)
        if blocks is not None and days is not None:
            route = f"Capacity Blocks could supply them ({len(blocks)} block(s) for {days} days, booked ahead)"
    elif calendar is not None and _calendar_fits(calendar, offering, hosts, hours):
        route = "a calendar-mode reservation could supply them (booked ahead)"
    return f"{figure}; {route}; the on-demand price is an upper bound"
