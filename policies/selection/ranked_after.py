"""Why an option ranks after others whose figures look worse than its own: the Option's `ranked_after`, the table's
"ranks after" and the rationale line naming the fastest (or cheapest) such run.

The search ranks two kinds of option after the rest whatever their figures (choose._rank_key, the key's first
two elements): an offering no price list carries (every figure an estimate by rule) after the priced ones, and an
on-demand fleet past what one zone is expected to supply after every fleet a mode is expected to supply. The
option says which, in words: a short reason, a colon, then its figures ("past a zone's expected supply: 463
on-demand hosts against the 64 hosts one zone is expected to supply (estimate); ...").
"""

from __future__ import annotations

from accel.base.units import hours_text as duration, money
from accel.policies.plan import Option
from accel.policies.selection.candidates import Candidate
from accel.policies.selection.capacity import Obtaining, beyond_supply_words
from accel.policies.selection.explain import describe

ESTIMATE = "priced by estimate"
SUPPLY = "past a zone's expected supply"

Ranked = list[tuple[tuple, Candidate, str]]


def ranked_after_reasons(ob: Obtaining | None, ranked: Ranked) -> list[str | None]:
    """For each ranked option (best first, as choose orders them): why the key's first two elements put it after
    the chosen option, or None. Only an element the chosen option does not share puts it after (when every option
    is priced by estimate, that says nothing about the order)."""
    if not ranked:
        return []
    first = ranked[0][0][:2]
    words: dict[int, str | None] = {}   # an option is one candidate in each of its regions: worded once
    reasons = []
    for key, candidate, _ in ranked:
        if id(candidate) not in words:
            heads, details = [], []
            if key[0] and not first[0]:
                heads.append(ESTIMATE)
                details.append(f"no price list carries {candidate.offering.id}, so every figure is an estimate by "
                               "rule")
            if key[1] and not first[1] and ob is not None:
                heads.append(SUPPLY)
                details.append(beyond_supply_words(ob, candidate.offering, candidate.size.hosts,
                                                   candidate.evaluation.hours))
            words[id(candidate)] = f"{' and '.join(heads)}: {'; '.join(details)}" if heads else None
        reasons.append(words[id(candidate)])
    return reasons


def ranked_after_lines(objective: str, kind: str, ranked: Ranked, options: list[Option]) -> list[str]:
    """The rationale's line for the fastest run (`--objective time`, training) or the cheapest (cost) that ranks
    after the chosen because a zone is not expected to supply it on demand, with its time, cost and why; none when
    no such run beats the chosen on the objective's figure. A run ranked after only for its estimated price is
    left to choose.estimate_lines (which names it). By cost, the cheapest such run may be the fleet a booked choice
    was weighed against, whose price and supply capacity.booked_why gives already: then no line (by time, that
    line gives no run time, so this one is still said)."""
    if not ranked or (objective == "time" and kind == "inference"):
        return []
    chosen_key, best = ranked[0][0], ranked[0][1]
    beats = [(key[2], i) for i, (key, _, _) in enumerate(ranked)
             if key[1] and not chosen_key[1] and key[2] < chosen_key[2] and options[i].ranked_after]
    if not beats:
        return []
    at = min(beats)[1]
    # booked_why's "best fleet of another mode": the first ranked fleet neither booked nor reserved.
    weighed = (next((c for _, c, _ in ranked if c.booking is None and c.reserved is None), None)
               if best.booking is not None else None)
    if objective == "cost" and ranked[at][1] is weighed:
        return []
    option = options[at]
    what = "faster" if objective == "time" else "cheaper"
    terms = (f"{money(option.hourly_usd)}/h" if kind == "inference"
             else f"{duration(option.hours)}, {money(option.total_usd)}")
    return [f"Capacity: a {what} fleet, {describe(option)}: {terms}, ranks after: {option.ranked_after}."]
