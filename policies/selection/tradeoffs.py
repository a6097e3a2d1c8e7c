"""What each alternative trades against the chosen option, in words a person compares.

Pure functions over Options: `accel choose` shows the best few side by side with these words, so
a person can see that a faster fleet costs 4% more, or that the cheaper one is spot and TPU-only.
"""

from __future__ import annotations

from typing import NamedTuple

from accel.base.units import money
from accel.policies.plan import Option
from accel.policies.selection.commitments import commitment_of

# What each capacity type risks, said once (the catalog's capacity types, policies/plan.py).
CAPACITY_RISK = {
    "on-demand": "no preemption",
    "spot": "preemptible: restarts from the last checkpoint",
    "reservation": "reserved capacity",
    "flex-start": "may wait for capacity",
    "queued": "waits for the whole slice",
    "capacity-block": "booked dates only",
}
# A service does not restart from a checkpoint: a reclaimed replica drops out until it is replaced.
SERVING_RISK = {**CAPACITY_RISK, "spot": "preemptible: a reclaimed replica is lost until replaced"}
PORTABILITY = {
    "gpu": "portable: any cloud or on-prem",
    "tpu": "Google Cloud only",
}


class Alternative(NamedTuple):
    """One row of the ranked table: an option, the other regions it is offered in, and its trade-offs."""

    rank: int
    option: Option
    regions: tuple[str, ...]
    chosen: bool
    tradeoffs: tuple[str, ...]


def time_words(option: Option, chosen: Option) -> str | None:
    """'2.9x faster', '1.4x slower', or None when the run takes about as long (the table shows the times)."""
    ratio = chosen.hours / option.hours
    if abs(ratio - 1) < 0.05:
        return None
    return f"{ratio:.1f}x faster" if ratio > 1 else f"{1 / ratio:.1f}x slower"


def cost_words(option: Option, chosen: Option) -> str:
    """'+4% ($32.7k more)', '-12% ($5,000 less)' or 'same cost'."""
    difference = option.total_usd - chosen.total_usd
    if chosen.total_usd <= 0 or abs(difference) / chosen.total_usd < 0.005:
        return "same cost"
    percent = difference / chosen.total_usd * 100
    return f"{percent:+.0f}% ({money(abs(difference))} {'more' if difference > 0 else 'less'})"


def tradeoffs(option: Option, chosen: Option, serving: bool) -> tuple[str, ...]:
    """Time, cost, capacity risk and portability of `option` against `chosen`, differences only."""
    risk = SERVING_RISK if serving else CAPACITY_RISK
    if option is chosen:
        return ("chosen", risk[option.provisioning], PORTABILITY[option.family])  # the baseline
    words = [] if serving else [w for w in (time_words(option, chosen),) if w]
    words.append(cost_words(option, chosen))
    if option.provisioning != chosen.provisioning:
        words.append(risk[option.provisioning])
    if commitment_of(option) != commitment_of(chosen):
        words.append(f"under commitment {commitment_of(option)}" if commitment_of(option) else "at list price")
    if option.family != chosen.family:
        words.append(PORTABILITY[option.family])
    elif option.cloud != chosen.cloud:
        words.append(f"on {option.cloud} instead of {chosen.cloud}")
    if option.ranked_after:   # its reason before the colon, the figures after it (selection.ranked_after)
        words.append(f"ranks after: {option.ranked_after.split(':', 1)[0]}")
    return tuple(words)


def ranked_alternatives(options: list[Option], serving: bool, limit: int) -> tuple[list[Alternative], list[Option]]:
    """(the best `limit` distinct options, best first, the chosen first; the distinct options not shown).

    Options identical but for the region (same offering, capacity and chips) are one row with every
    region listed: a person picks a configuration, then a region.
    """
    if not options:
        return [], []
    chosen = options[0]
    groups: dict[tuple[str, str, int, str | None], list[Option]] = {}
    for option in options:   # an option priced under a declared commitment is a row of its own
        groups.setdefault((option.offering, option.provisioning, option.chips, commitment_of(option)),
                          []).append(option)
    rows = [
        Alternative(rank, group[0], tuple(dict.fromkeys(o.region for o in group)), rank == 1,
                    tradeoffs(group[0], chosen, serving))
        for rank, group in enumerate(groups.values(), start=1)
    ]
    return rows[:limit], [row.option for row in rows[limit:]]
