"""Would a fresh `accel choose` still pick what a stack pinned?

A pinned Plan keeps its hardware on purpose (a price change must never silently change what `pulumi up`
builds), and its rationale says why it won *when it was chosen*. Selection rules, calibration and the
catalog move on: the same workload can get a different answer from the same catalog version a month
later. A pin that is kept must then say so, or its rationale ("no GPU option is feasible") silently
contradicts what `accel choose` prints for the same workload. So the plan re-runs the choice for the
pin's own workload on the current catalog (with the stack's reservations) and, when neither objective
picks the pinned hardware, reports what it picks instead and what that costs against the pin. It only
informs: the pinned hardware is kept (docs/plan.md, "Pinned plans").
"""

from __future__ import annotations

from typing import Any, Sequence

from pydantic import Field

from accel.base.model import StrictModel
from accel.base.units import money

OBJECTIVES = ("cost", "time")


class FreshChoice(StrictModel):
    """What `accel choose` answers now for a pin's workload, when it is not the pinned hardware."""

    catalog: str = Field(description="The catalog version the fresh choice was made on")
    pinned_catalog: str
    hardware: str = Field(description="The fresh answer, as `accel choose` names it ('nothing feasible' when none is)")
    hourly_usd: float | None = Field(description="The fresh answer's $/h; null when nothing is feasible now")
    run_usd: float | None
    pinned_hourly_usd: float
    pinned_run_usd: float
    note: str = Field(description="One line for people")


def _identity(option: Any) -> tuple[Any, ...]:
    """What a pin fixes: where, which chips, how they are obtained and laid out (not the price)."""
    return (option.cloud, option.region, option.accelerator, option.provisioning, option.machine_type,
            option.topology, option.slices, option.hosts, option.chips)


def describe_option(option: Any) -> str:
    """'H100 spot, 146 x p5.48xlarge, aws us-east-2' or 'TPU v6e on-demand, 4 x 16x16, gcp us-east5'."""
    from accel.policies.selection.explain import accelerator_name

    layout = (f"{option.slices} x {option.topology}" if option.topology and option.slices > 1
              else option.topology or f"{option.hosts} x {option.machine_type}")
    return f"{accelerator_name(option.accelerator)} {option.provisioning}, {layout}, {option.cloud} {option.region}"


def _against_the_pin(fresh: float, pinned: float) -> str:
    if pinned <= 0 or abs(fresh - pinned) < 0.005 * pinned:
        return "at about the same cost as this pin"
    share, gap = abs(fresh - pinned) / pinned, money(abs(fresh - pinned))
    return f"{share:.0%} cheaper ({gap} less) than this pin" if fresh < pinned else f"{share:.0%} dearer ({gap} more) than this pin"


def fresh_choice(plan: Any, catalog: Any, reservations: Sequence[Any] = ()) -> FreshChoice | None:
    """None when `accel choose` of the pin's workload on `catalog` picks the pinned hardware (under either
    objective); else what it picks and the cost against the pin, or that it now finds nothing feasible
    (the estimate or the capacity model moved past the workload's own limits: the pin's rationale,
    which says it met them, is then what was true when it was chosen)."""
    from accel.base.errors import AccelError
    from accel.policies.selection.choice import NoFeasibleOption
    from accel.policies.selection.choose import choose

    answers = []
    for objective in OBJECTIVES:
        try:
            choice = choose(plan.workload, catalog, objective, reservations=reservations)  # type: ignore[arg-type]
        except NoFeasibleOption as nothing:
            return _nothing_feasible_now(plan, catalog, nothing)
        except AccelError:  # the pin's workload no longer reads: other checks say so; nothing to compare
            return None
        if _identity(choice.chosen) == _identity(plan.chosen):
            return None
        answers.append(choice)
    fresh, pinned = answers[0].chosen, plan.chosen
    inference = plan.workload.kind == "inference"
    compared = (_against_the_pin(fresh.hourly_usd, pinned.hourly_usd) if inference
                else _against_the_pin(fresh.total_usd, pinned.total_usd))
    figures = (f"{money(fresh.hourly_usd)}/h" if inference
               else f"{fresh.hours / 24:,.1f} days, {money(fresh.total_usd)}")
    pinned_figures = (f"{money(pinned.hourly_usd)}/h" if inference
                      else f"{pinned.hours / 24:,.1f} days, {money(pinned.total_usd)}")
    note = (f"a fresh `accel choose` of this stack's workload on catalog {catalog.version} picks "
            f"{describe_option(fresh)} ({figures}), {compared} ({describe_option(pinned)}, "
            f"{pinned_figures}, chosen on catalog {plan.catalog.version}); the pin's rationale is what was true then")
    return FreshChoice(catalog=catalog.version, pinned_catalog=plan.catalog.version, hardware=describe_option(fresh),
                       hourly_usd=round(fresh.hourly_usd, 2), run_usd=round(fresh.total_usd, 2),
                       pinned_hourly_usd=round(pinned.hourly_usd, 2), pinned_run_usd=round(pinned.total_usd, 2),
                       note=note)


def _nothing_feasible_now(plan: Any, catalog: Any, nothing: Any) -> FreshChoice:
    pinned = plan.chosen
    closest = nothing.closest
    why = (f"the closest, {describe_option(closest)}, {nothing.closest_misses}" if closest is not None and
           nothing.closest_misses else "see `accel choose` for what eliminated each offering")
    note = (f"a fresh `accel choose` of this stack's workload on catalog {catalog.version} finds nothing that meets "
            f"its limits now ({why}); this pin ({describe_option(pinned)}, {money(pinned.total_usd)}, chosen on "
            f"catalog {plan.catalog.version}) was chosen under estimates that no longer hold")
    return FreshChoice(catalog=catalog.version, pinned_catalog=plan.catalog.version, hardware="nothing feasible",
                       hourly_usd=None, run_usd=None, pinned_hourly_usd=round(pinned.hourly_usd, 2),
                       pinned_run_usd=round(pinned.total_usd, 2), note=note)
