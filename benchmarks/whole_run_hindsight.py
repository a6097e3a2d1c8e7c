"""What hindsight could reach on the published dense whole runs (issue #30): how close any estimator over the
features a planner knows before a run could come to the issue's bounds, measured two ways on every dense run
the repository holds (the table's 25, both blind sets'):

1. Twins: two runs on the same chip, of sizes within 1.5x and fleets within 2x, are one question to a planner,
   so an estimator gives them about one answer, p. Runs that took r times apart per FLOP (published
   whole-run MFU a and r x a) are then off by max(|a/p - 1|, |r a/p - 1|), least at p = (1 + r) a / 2:
   (r - 1) / (r + 1). Past r = 3 that is more than the 50% the issue allows.
2. An oracle fitted on the answers: the estimator's own form (the step model's prediction times a fitted
   whole-run factor, exp of a linear function of the features) fitted by least squares ON the very runs it is
   then scored on. It has seen every answer, so it is a lower bound on what a model of the same features can
   do on runs it has not seen; where it misses the bound, no honest fit of those features meets it.

Nothing here feeds the estimator: benchmarks/bench_estimate.py prints it beside the leave-one-out and blind
tables.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable

from accel.policies.catalog.model import Catalog
from accel.policies.estimator import calibration, whole_runs
from accel.policies.estimator.mfu_model import median

TWIN_SIZE_RATIO, TWIN_CHIPS_RATIO = 1.5, 2.0


@dataclass(frozen=True)
class DenseRun:
    """A published dense whole run as a planner sees it before the run, and what it took."""

    id: str
    held_in: str             # "table", "blind set 1", "blind set 2"
    chip: str                # the compute chip (an H800 computes as an H100)
    generation: str
    active: float
    chips: int
    chips_published: bool
    stages: int              # the estimator's pipeline depth for it (its layout)
    tokens_per_parameter: float
    year: int
    fp8: bool
    implied_mfu: float       # what the run took: whole-run model FLOPs over the bf16 peak
    step_mfu: float          # what the step model (fitted on every step row) predicts for its steps


def dense_runs(catalog: Catalog) -> list[DenseRun]:
    """Every dense whole run the repository holds, table and blind sets alike (the oracle is told all answers)."""
    table = whole_runs.whole_runs()
    impute = whole_runs.chips_rule(table.dense + table.moe)
    step_fit = calibration.calibrated_fit(catalog)
    fp8 = whole_runs.fp8_speedup(table)
    held = ([("table", r) for r in table.dense] + [("blind set 1", r) for r in whole_runs.blind_runs(table).dense]
            + [("blind set 2", r) for r in whole_runs.second_blind_runs(table).dense])
    runs = []
    for where, r in held:
        chips = whole_runs.chips_of(r, impute)
        step = whole_runs.step_mfu(step_fit, catalog, r, chips) * whole_runs.precision_speedup(r, fp8)
        runs.append(DenseRun(r.id, where, r.compute_chip, whole_runs.generation_of(r), r.active, chips,
                             r.chips is not None, whole_runs.row_stages(r, catalog, impute), r.tokens / r.active,
                             r.year, r.precision == "fp8", whole_runs.implied_mfu(r, catalog), step))
    return runs


def pair_floor(a: float, b: float) -> float:
    """The least worst error in hours one prediction can have for two runs of published MFU a and b."""
    r = max(a, b) / min(a, b)
    return (r - 1.0) / (r + 1.0)


@dataclass(frozen=True)
class Twins:
    slower: DenseRun
    faster: DenseRun

    @property
    def ratio(self) -> float:
        return self.faster.implied_mfu / self.slower.implied_mfu

    @property
    def floor(self) -> float:
        return pair_floor(self.slower.implied_mfu, self.faster.implied_mfu)


def twins(runs: list[DenseRun]) -> list[Twins]:
    """Pairs on one chip and precision, sizes within 1.5x, fleets within 2x (published or imputed), worst first."""
    found = []
    for a, b in itertools.combinations(runs, 2):
        if a.chip != b.chip or a.fp8 != b.fp8:
            continue
        if (max(a.active, b.active) / min(a.active, b.active) > TWIN_SIZE_RATIO
                or max(a.chips, b.chips) / min(a.chips, b.chips) > TWIN_CHIPS_RATIO):
            continue
        slower, faster = sorted((a, b), key=lambda run: run.implied_mfu)
        found.append(Twins(slower, faster))
    return sorted(found, key=lambda t: -t.floor)


Feature = Callable[[DenseRun], float]


def size(run: DenseRun) -> float:
    return math.log10(run.active / whole_runs.SIZE_REFERENCE)


# The estimator's own terms (goodput: a generation offset and size slope each), then what else a planner knows.
FEATURE_SETS: dict[str, list[tuple[str, Feature]]] = {
    "size": [("size", size)],
    "size, fleet, layout": [("size", size), ("log2 chips", lambda r: math.log2(r.chips)),
                            ("log2 stages", lambda r: math.log2(r.stages))],
    "size, fleet, layout, tokens per parameter, year": [
        ("size", size), ("log2 chips", lambda r: math.log2(r.chips)), ("log2 stages", lambda r: math.log2(r.stages)),
        ("log10 tokens per parameter", lambda r: math.log10(r.tokens_per_parameter)),
        ("year", lambda r: r.year - 2023.0)],
}


@dataclass(frozen=True)
class HindsightFit:
    population: str
    features: str
    parameters: int
    scored: str                  # "in sample" (fitted on the answers) or "leave-one-out"
    errors: dict[str, float]     # run id -> error in hours (predicted / published - 1)

    @property
    def median(self) -> float:
        return median([abs(e) for e in self.errors.values()])

    @property
    def worst(self) -> tuple[str, float]:
        name = max(self.errors, key=lambda k: abs(self.errors[k]))
        return name, abs(self.errors[name])


# A small ridge keeps a generation solvable when its only run is left out (its offset then stays 0: the pooled
# intercept); on these features it moves no in-sample error by more than a rounding.
RIDGE = 1e-3


class _Design:
    """log(implied / step MFU) = offset[generation] + sum over features of (slope + slope[generation]) x feature."""

    def __init__(self, runs: list[DenseRun], features: list[tuple[str, Feature]]) -> None:
        self.features = features
        self.generations = sorted({r.generation for r in runs})

    def row(self, run: DenseRun) -> list[float]:
        values = [f(run) for _, f in self.features]
        row = [1.0] + values
        for g in self.generations[1:]:
            own = 1.0 if run.generation == g else 0.0
            row += [own] + [own * v for v in values]
        return row

    def fit(self, runs: list[DenseRun]) -> list[float]:
        rows = [self.row(r) for r in runs]
        return calibration._ridge(rows, [math.log(r.implied_mfu / r.step_mfu) for r in runs],
                                  [RIDGE] * len(rows[0]))

    def error(self, weights: list[float], run: DenseRun) -> float:
        predicted = run.step_mfu * math.exp(sum(a * b for a, b in zip(weights, self.row(run))))
        return run.implied_mfu / predicted - 1.0


def hindsight_fit(population: str, runs: list[DenseRun], name: str, features: list[tuple[str, Feature]],
                  leave_one_out: bool) -> HindsightFit:
    """Each of `runs` scored by the fit on all of them (in sample: the fit has seen its answer) or on all the
    others (leave-one-out, as bench_estimate scores the table, but with the blind runs let in as well)."""
    design = _Design(runs, features)
    if leave_one_out:
        errors = {r.id: design.error(design.fit(runs[:i] + runs[i + 1:]), r) for i, r in enumerate(runs)}
    else:
        weights = design.fit(runs)
        errors = {r.id: design.error(weights, r) for r in runs}
    return HindsightFit(population, name, len(design.row(runs[0])), "leave-one-out" if leave_one_out else "in sample",
                        errors)


@dataclass(frozen=True)
class Hindsight:
    runs: list[DenseRun]
    twins: list[Twins]
    fits: list[HindsightFit]     # per population, feature set, in sample and leave-one-out


def hindsight(catalog: Catalog) -> Hindsight:
    """Twins among every dense run held, and the oracle fitted on two populations: the table's runs (what the
    leave-one-out bound is measured on) and every dense run held (the bound on runs outside the table)."""
    runs = dense_runs(catalog)
    populations = {"the table's": [r for r in runs if r.held_in == "table"], "every": runs}
    fits = [hindsight_fit(population, rows, features, f, leave_one_out)
            for population, rows in populations.items() for features, f in FEATURE_SETS.items()
            for leave_one_out in (False, True)]
    return Hindsight(runs, twins(runs), fits)
