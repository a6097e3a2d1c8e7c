"""Whether a capacity mode can supply a fleet, how long it takes to finish on it, and what it bills: the
obtainability model of docs/capacity.md, as pure functions over the parameters in capacity_modes.yaml.

A synchronous fleet of N hosts lives in one zone. `pool_hosts` P is the spare capacity of its class one can
expect to get and hold there; obtaining k hosts while the fleet is N takes k / (rate x (1 - (N-1)/P)) hours,
slower as the fleet nears the pool and impossible past it. Spot loses hosts in correlated waves (a share of
the zone's spot hosts at once) and, rarer, in drains that shrink the pool for hours: a fleet larger than what
survives a drain stalls for the drain. The run must finish by the deadline at the `confidence` quantile of
those events (Poisson counts), not on average. Losses independent per host stay in the estimator
(preemptions_per_host_day), so with no waves, no drains, an unbounded pool and instant obtaining the model
adds nothing to today's estimate: the generous override.

No threshold is written anywhere: the largest spot fleet that finishes in time falls out of the parameters
(with the bundled frontier-GPU ones, drain_pool_fraction x pool_hosts = 32 hosts for runs past a few days;
the drain figures come from a spot-availability trace, docs/capacity.md).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Mapping, NamedTuple

# The quantiles of the Poisson counts (waves, drains) and of the normal: their numerics live in cloud.poisson.
from accel.policies.cloud.poisson import normal_quantile as _normal_quantile, poisson_quantile

# Hours a flex-start or queued request may run (gke-flex-start: seven days); the mode table holds the figure,
# callers pass it in.
_MAX_ITERATIONS = 60


class SpotModel(NamedTuple):
    """The spot parameters of one class, as plain floats (overrides applied)."""

    pool_hosts: float
    obtain_hosts_per_hour: float
    waves_per_week: float
    wave_fraction: float
    drains_per_week: float
    drain_pool_fraction: float
    drain_hours: float

    @classmethod
    def of(cls, params, overrides: Mapping[str, float] | None = None) -> "SpotModel":
        """From a SpotParams (Sourced figures), with any of its fields overridden by plain numbers."""
        values = {name: getattr(params, name).value for name in cls._fields}
        values.update(overrides or {})
        return cls(**values)


# A NamedTuple, not a dataclass: a search builds ~1,000 (a faster constructor), and defining it generates no code.
class SpotOutcome(NamedTuple):
    """A spot fleet's fate: feasible or why not, its wall-clock at the quantile and on average, and the events
    counted at the quantile (for the words)."""

    feasible: bool
    wall_hours_q: float
    wall_hours_mean: float
    obtain_hours: float
    waves: int
    drains: int
    reason: str = ""


def acquire_hours(k: float, fleet: float, model: SpotModel) -> float:
    """Hours to obtain k hosts while the fleet is `fleet` hosts: slower as the fleet nears the pool."""
    if k <= 0:
        return 0.0
    free = 1.0 - (fleet - 1.0) / model.pool_hosts
    if free <= 0:
        return math.inf
    return k / (model.obtain_hosts_per_hour * free)


def _spot_terms(hosts: int, model: SpotModel, restart_hours: float) -> tuple[float, float, float, float]:
    """(hours to obtain the fleet, chance a wave takes at least one of its hosts, hours a wave costs it, hours a
    drain costs it): what spot_outcome and spot_wall_floor both count events with."""
    obtain = acquire_hours(hosts, hosts, model)
    hit = 1.0 - (1.0 - model.wave_fraction) ** hosts          # a wave takes at least one of our hosts
    wave_cost = acquire_hours(max(1.0, model.wave_fraction * hosts), hosts, model) + restart_hours
    left = model.drain_pool_fraction * model.pool_hosts
    drain_cost = (model.drain_hours + acquire_hours(hosts - left, hosts, model) + restart_hours
                  if hosts > left else wave_cost)
    return obtain, hit, wave_cost, drain_cost


def spot_wall_floor(hosts: int, run_hours: float, model: SpotModel, confidence: float,
                    restart_hours: float) -> float:
    """A floor under spot_outcome(...).wall_hours_q at two quantiles' cost instead of the settled loop's ~16: the
    loop's first step, the events counted over the run with no event in it yet. The loop's walls only grow from
    there (each step counts the events of a longer wall, and the quantile does not fall as its mean grows; float
    sums and products round monotonically), and it ends on one of them or at infinity. inf past the pool."""
    if hosts > model.pool_hosts:
        return math.inf
    obtain, hit, wave_cost, drain_cost = _spot_terms(hosts, model, restart_hours)
    base = run_hours + obtain
    if not math.isfinite(base):  # a run that never ends (its preemptions leave no time for work) has no quantile
        return math.inf
    weeks = base / 168.0
    return (base + poisson_quantile(model.waves_per_week * hit * weeks, confidence) * wave_cost
            + poisson_quantile(model.drains_per_week * weeks, confidence) * drain_cost)


def spot_outcome(hosts: int, run_hours: float, model: SpotModel, confidence: float,
                 restart_hours: float, floor: float | None = None) -> SpotOutcome:
    """The wall-clock of a synchronous `hosts`-host spot fleet that needs `run_hours` of full-fleet time (the
    estimator's hours, which already count independent per-host losses), at the `confidence` quantile of wave
    and drain counts and on average. Each wave costs re-obtaining its share of the fleet plus a restart
    (`restart_hours`: restart and the work since the last checkpoint); each drain that leaves fewer hosts than
    the fleet stalls it for the drain and the re-obtaining.

    `floor`: spot_wall_floor of the same arguments, when the caller has worked it out (a search does for
    every spot size before settling the ones it keeps): it is the loop's first step, not worked out again."""
    if hosts > model.pool_hosts:
        return SpotOutcome(False, math.inf, math.inf, math.inf, 0, 0,
                           f"{hosts} hosts is more than the {model.pool_hosts:g}-host spot pool one zone is expected "
                           "to hold")
    obtain, hit, wave_cost, drain_cost = _spot_terms(hosts, model, restart_hours)

    # The counts at the quantile, settled: the wall-clock sets how many events the run sees, and they lengthen
    # it. A search settles this for every spot size of every offering, so the loop calls the quantile directly
    # with the rates hoisted (the same products in the same order: (waves/week x hit) x weeks).
    # Also hoisted: the quantile and isfinite as locals, and run_hours + obtain, the sum's first addition
    # (evaluated left to right, so the same value).
    wave_rate, drain_rate = model.waves_per_week * hit, model.drains_per_week
    base = run_hours + obtain
    quantile, isfinite = poisson_quantile, math.isfinite

    def settle() -> tuple[float, int, int]:
        wall, waves, drains = base, 0, 0
        if not isfinite(base):  # a run that never ends has no count of events at a quantile
            return math.inf, waves, drains
        steps = _MAX_ITERATIONS
        if floor is not None and isfinite(floor) and floor <= 1e7 and abs(floor - base) >= 1e-9:
            # The first step's wall, bit for bit (the same products and sums), where the loop goes on past it:
            # the loop starts from it (where the first step would end the loop, it is taken as ever).
            wall, steps = floor, _MAX_ITERATIONS - 1
        for _ in range(steps):
            weeks = wall / 168.0
            waves = quantile(wave_rate * weeks, confidence)
            drains = quantile(drain_rate * weeks, confidence)
            new = base + waves * wave_cost + drains * drain_cost
            if not isfinite(new) or new > 1e7:
                return math.inf, waves, drains
            if abs(new - wall) < 1e-9:
                wall = new
                break
            wall = new
        return wall, waves, drains

    # On average the counts grow in proportion to the wall-clock, so the mean is a closed form:
    # W = base + W x (wave rate x wave cost + drain rate x drain cost) / 168.
    per_hour = (model.waves_per_week * hit * wave_cost + model.drains_per_week * drain_cost) / 168.0
    wall_mean = base / (1.0 - per_hour) if per_hour < 1.0 and math.isfinite(base) else math.inf
    wall_q, waves, drains = settle()
    return SpotOutcome(math.isfinite(wall_q), wall_q, wall_mean, obtain, waves, drains,
                       "" if math.isfinite(wall_q) else "the reclaim waves never let it finish")


class QueuedOutcome(NamedTuple):
    """A run on flex-start or queued provisioning, chained in legs of at most the mode's duration."""

    legs: int
    wall_hours_q: float
    billed_hours: float


@lru_cache(maxsize=1024)
def erlang_quantile(legs: int, mean_wait: float, q: float) -> float:
    """The q-quantile of the sum of `legs` exponential waits of mean `mean_wait` (P(Gamma <= x) = P(Poisson(x /
    mean) >= legs)), by bisection."""
    if legs <= 0 or mean_wait <= 0:
        return 0.0
    if legs > 30:   # the sum of many waits is close to normal (mean legs x wait, deviation sqrt(legs) x wait)
        return mean_wait * max(0.0, legs + _normal_quantile(q) * math.sqrt(legs))
    lo, hi = 0.0, mean_wait * (legs + 20 * math.sqrt(legs) + 20)
    for _ in range(80):
        mid = (lo + hi) / 2
        if mid == lo or mid == hi:
            # Adjacent floats: every step left would keep the interval's midpoint at mid, so the answer is
            # final (~55 steps in; the last ~25 cost a search ~0.5 ms the first time it meets each wait).
            break
        rate = mid / mean_wait
        term = cdf = math.exp(-rate)
        for n in range(1, legs):
            term *= rate / n
            cdf += term
        if 1.0 - cdf < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def queued_legs(run_hours: float, startup_hours: float, max_hours: float, mean_wait: float,
                confidence: float) -> QueuedOutcome | None:
    """A run chained in legs of at most `max_hours` (each leg pays the start-up again and waits in the queue
    first); None when not even one leg has room for work after its start-up."""
    work = max_hours - startup_hours
    if work <= 0 or not math.isfinite(run_hours):
        return None
    useful = max(0.0, run_hours - startup_hours)
    legs = max(1, math.ceil(useful / work - 1e-9))
    billed = useful + legs * startup_hours
    return QueuedOutcome(legs, billed + erlang_quantile(legs, mean_wait, confidence), billed)


def capacity_block_days(hours: float, max_days: float = 182) -> int | None:
    """The shortest Capacity Block duration (days) covering `hours`: whole days up to 14, then multiples of 7
    up to 182 (aws-cb-purchase); None past the longest."""
    if not math.isfinite(hours):
        return None
    days = max(1, math.ceil(hours / 24 - 1e-9))
    if days > 14:
        days = 7 * math.ceil(days / 7)
    return days if days <= max_days else None


def capacity_blocks(hosts: int, sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64),
                    max_total: int = 256) -> list[int] | None:
    """Blocks of the allowed instance counts that add up to `hosts` (fewest blocks), or None past `max_total`."""
    if hosts <= 0 or hosts > max_total:
        return None
    blocks, left = [], hosts
    for size in sorted(sizes, reverse=True):
        while left >= size:
            blocks.append(size)
            left -= size
    return blocks if left == 0 else None


def waves_words(outcome: SpotOutcome, confidence: float) -> str:
    """'expect up to 3 reclaim waves and 1 pool drain (P90)'."""
    def count(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"
    parts = [count(outcome.waves, "reclaim wave")]
    if outcome.drains:
        parts.append(count(outcome.drains, "pool drain"))
    return f"expect up to {' and '.join(parts)} (P{confidence * 100:g})"
