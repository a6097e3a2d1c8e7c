"""Sizing once per price ratio: a training fleet's run time and capacity-mode timing do not depend on the price,
and its cost is the chip price times a function of the host-to-chip price ratio (cost = billed hours x (chips x
chip + hosts x host) = chip x billed hours x (chips + hosts x ratio)). So regions whose prices differ only by a
factor pick the same size on the cost objective; the search sizes the first of them and scales the others'
figures by their chip price (issue #27: the search multiplies by region and mode, sizing must not).

Only where that is exact: the cost objective (the time objective's words quote prices), no declared
reservation, and a budget no scaled total crosses (a budget would cut the ladder elsewhere)."""

from __future__ import annotations

from accel.policies.catalog.model import Price
from accel.policies.estimator.estimate import Evaluation
from accel.policies.selection.candidates import Candidate
from accel.policies.selection.sizing import SizingOutcome


def ratio_key(chip: Price, host: Price | None) -> float:
    """The host-to-chip price ratio, to twelve significant digits (0 when the host is not billed apart)."""
    return float(f"{(host.usd / chip.usd if host is not None else 0.0):.12g}")


def rescaled(outcome: SizingOutcome, factor: float, regions: list[str], chip: Price, host: Price | None,
             budget: float | None) -> SizingOutcome | None:
    """`outcome` (sized at another chip price with the same ratio) at `factor` times its prices, in `regions`;
    None when a budget makes it inexact (the caller sizes instead)."""
    if outcome.best is not None:
        if budget is not None and any(c.evaluation.total_usd * factor > budget
                                      for c in (outcome.best, *outcome.alternatives)):
            return None
    elif budget is not None:
        # Nothing fit, for reasons other than the budget: the same holds at this price when its smallest fleet
        # is still within the budget (so the budget is not the first check to fail); the closest size is
        # re-picked at this price.
        if (any(constraint == "budget" for constraint, _ in outcome.reasons) or outcome.smallest_cost is None
                or outcome.closest_at is None or outcome.smallest_cost * factor > budget):
            return None

    def scale(candidate: Candidate, deadline_fit_usd: float | None = None) -> Candidate:
        # Built field by field, not with dataclasses.replace: a search at 100x the catalog scales ~90,000 of
        # them and replace costs four times as much (tests/test_capacity_modes.py checks every field is kept).
        e = candidate.evaluation
        detail = e.detail
        if deadline_fit_usd is not None and "deadline_fit_usd" in detail:
            # The one figure in money among the details (the best's, SizingOutcome.deadline_fit_usd, scaled before
            # it is rounded): a copy of its own. Otherwise the reference's detail is shared, as nothing writes a
            # candidate's detail once its sizing returns (the Choice's option_details are copies).
            detail = {**detail, "deadline_fit_usd": round(deadline_fit_usd * factor, 2)}
        evaluation = Evaluation(hours=e.hours, hourly_usd=e.hourly_usd * factor, total_usd=e.total_usd * factor,
                                mfu=e.mfu, goodput=e.goodput, detail=detail)
        return Candidate(offering=candidate.offering, regions=regions, spot=candidate.spot, size=candidate.size,
                         evaluation=evaluation, chip_price=chip, host_price=host, reserved=candidate.reserved,
                         booking=candidate.booking, queue=candidate.queue)

    near = [(score, scale(c), words) for score, c, words in outcome.near]
    if outcome.best is None and budget is not None and outcome.closest_at is not None:
        closest = outcome.closest_at(factor)
        near = [] if closest is None else [(closest[0], scale(closest[1]), closest[2])]
    return SizingOutcome(best=scale(outcome.best, outcome.deadline_fit_usd) if outcome.best is not None else None,
                         alternatives=[scale(c) for c in outcome.alternatives], reasons=list(outcome.reasons),
                         near=near, smallest_cost=outcome.smallest_cost, closest_at=outcome.closest_at,
                         deadline_fit_usd=(None if outcome.deadline_fit_usd is None else
                                           outcome.deadline_fit_usd * factor))
