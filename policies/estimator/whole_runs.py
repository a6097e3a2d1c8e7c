"""What a whole training run pays beyond its steady-state steps, calibrated on published whole runs.

Two layers, each fitted on its own kind of evidence (issue #30):

    hours = F / (3600 x peak_bf16 x step_mfu x goodput x fp8 x moe)
    F     = tokens x (6 x N_active + 12 x layers x hidden x sequence)      (attention as PaLM, appendix B)

- step_mfu: policies/estimator/calibration.py, fitted on the step rows (published_runs.yaml: steady-state
  MFU / TFLOP/s, no failures, restarts or evaluations). For a mixture-of-experts model it is evaluated at the
  active parameters: the matmuls a token passes through are the active experts' and attention's.
- goodput: the share of the steps' speed a whole run keeps (restarts, evaluations, data stalls, stragglers,
  ramp-up, layouts the step rows never saw), fitted on the DENSE whole-run rows (whole_runs.yaml):

      log goodput = a + c[generation] x log10(N_active / 1e10) + offset[generation]      (at most max_goodput)

  by model scale and hardware generation. A generation with fewer than `min_rows_for_offset` whole runs takes
  the offset and slope of its nearest calibrated generation (policies/estimator/generations.py), else the
  pooled ones. The fleet size is not a term: tried (with 6N FLOPs), it fitted at -2.6% per doubling of chips
  and made the leave-one-out worse (dense median 12.2% -> 15.5%), so goodput is a property of the model and
  the generation; the step model already charges a fleet's scale. The parallel layout is not a term either:
  pre-registered in docs/choose.md (log2 of the pipeline stages), it met its rule on the table's rows but
  fitted with the sign opposite to its physical reason (+8% goodput per doubling of stages), made the held-out
  runs worse and would reward memory-forced pipelining in the fleets it sizes; it stands for "a large,
  experienced team", not a cause. The row's pipeline degree (`row_stages`) stays a diagnostic column of
  benchmarks/bench_estimate.py, fitted into nothing.
- fp8: the geometric mean of the published fp8-vs-bf16 speed-ups (whole_runs.yaml fp8_evidence).
- moe: m x all-to-all efficiency; the all-to-all against the fabric it crosses (policies/estimator/moe.py),
  m (router imbalance, grouped matmuls, token dropping) one factor fitted on the MoE whole-run rows.

Where a run's chip count is not published it is imputed from the rows that publish theirs
(log2 chips = a + b log10 parameters), never from its own hours. Nothing is fitted row by row: every
leave-one-out prediction comes from fits without the row (and, for a run that also has step rows, without
those: `linked_step_rows`).

The blind runs (blind_runs.yaml: published runs held out of the table and estimated blind) are predicted by the
fits on every table row and give the out-of-sample range `accel choose` states beside the leave-one-out's; they
enter no fit (fit_model reads them after every fit is made).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from accel.base.model import StrictModel
from accel.base.yaml_files import read_yaml_file
from accel.policies.catalog.model import Catalog
from accel.policies.estimator import calibration, generations, moe
from accel.policies.estimator.mfu_model import MfuFit, median
# The fitted model and what reads it live in whole_run_model.py (what a warm run imports); named here too.
from accel.policies.estimator.whole_run_model import (  # noqa: F401
    BLIND_RUNS,
    SIZE_REFERENCE,
    WHOLE_RUNS,
    GoodputFit,
    Spread,
    WholeRunModel,
    calibrated_model,
    flops_per_token,
)
from accel.policies.parallelism import training_parallelism


class WholeRun(StrictModel):
    """One published whole training run: accelerator-hours for a stated number of tokens."""

    id: str = Field(min_length=3)
    kind: Literal["whole_run"]
    model: str
    parameters: float = Field(gt=0)
    active_parameters: float | None = Field(None, gt=0)
    experts: int | None = Field(None, gt=1)
    experts_per_token: int | None = Field(None, gt=0)
    shared_experts: int | None = Field(None, ge=0)
    layers: int = Field(gt=0)
    moe_layers: int | None = Field(None, gt=0)
    hidden: int = Field(gt=0)
    arch_source: str
    sequence_length: int = Field(gt=0)
    tokens: float = Field(gt=0)
    tokens_note: str | None = None
    accelerator: str
    calibrated_as: str | None = None
    chips: int | None = Field(None, gt=0)
    chips_source: str | None = None
    days: float | None = Field(None, gt=0)
    slices: int = Field(1, gt=0)
    accelerator_hours: float = Field(gt=0)
    derived: str | None = None
    precision: Literal["bf16", "fp16", "fp8", "unknown"]
    precision_note: str | None = None
    layout: str | None = None
    expert_parallel: int | None = Field(None, gt=0)
    framework: str
    year: int
    published: date
    quote: str = Field(min_length=10)
    url: str = Field(pattern=r"^https://")
    checked_here: str
    reverified: str | None = None
    linked_step_rows: list[str] = Field(default_factory=list)
    notes: str | None = None

    @model_validator(mode="after")
    def _moe_complete(self) -> "WholeRun":
        moe_fields = (self.active_parameters, self.experts, self.experts_per_token, self.moe_layers)
        if any(v is not None for v in moe_fields) and any(v is None for v in moe_fields):
            raise ValueError("a mixture-of-experts row gives active_parameters, experts, experts_per_token and "
                             "moe_layers together")
        if self.active_parameters is not None and self.active_parameters > self.parameters:
            raise ValueError("active_parameters exceed parameters")
        return self

    @property
    def is_moe(self) -> bool:
        return self.active_parameters is not None

    @property
    def active(self) -> float:
        return self.active_parameters or self.parameters

    @property
    def compute_chip(self) -> str:
        """The catalog chip whose peak and step MFU stand for this run's (an H800 computes as an H100)."""
        return self.calibrated_as or self.accelerator


class Fp8Evidence(StrictModel):
    id: str
    speedup_vs_bf16: float | None = Field(None, gt=1)
    setup: str | None = None
    quality: str
    quote: str | None = None
    figure: str | None = None
    derived: str | None = None
    url: str = Field(pattern=r"^https://")
    published: date | int | str | None = None
    checked_here: str | None = None
    kind: str


class WholeRunSettings(StrictModel):
    """How the whole-run model is fitted; each with its reason."""

    offset_ridge: float = Field(ge=0)
    slope_ridge: float = Field(ge=0)
    min_rows_for_offset: int = Field(ge=1)
    max_goodput: float = Field(gt=0, le=1)
    all_to_all_overlap: float = Field(ge=0, lt=1)
    sources: dict[str, str]


def _check_kinds(dense: list[WholeRun], moe: list[WholeRun], what: str) -> None:
    """A table's rows: ids once each, dense rows without active_parameters and MoE rows with them."""
    ids = [r.id for r in dense + moe]
    if len(ids) != len(set(ids)):
        raise ValueError(f"a {what} id appears twice")
    if any(r.is_moe for r in dense) or not all(r.is_moe for r in moe):
        raise ValueError("dense rows have no active_parameters; moe rows have them")


class WholeRunsTable(StrictModel):
    as_of: date
    kind_note: str
    model_settings: WholeRunSettings
    dense: list[WholeRun] = Field(min_length=1)
    moe: list[WholeRun] = Field(min_length=1)
    fp8_evidence: list[Fp8Evidence] = Field(min_length=1)

    @model_validator(mode="after")
    def _kinds(self) -> "WholeRunsTable":
        _check_kinds(self.dense, self.moe, "whole-run")
        return self


@lru_cache(maxsize=1)
def whole_runs() -> WholeRunsTable:
    return WholeRunsTable.model_validate(read_yaml_file(WHOLE_RUNS, "whole-runs table"))


class BlindRunsTable(StrictModel):
    """Published whole runs held out of the table and estimated blind (blind_runs.yaml): rows of the table's
    own schema, kept as out-of-sample evidence for the stated range only; no fit ever reads them."""

    as_of: date
    dense: list[WholeRun] = Field(default_factory=list)
    moe: list[WholeRun] = Field(default_factory=list)

    @model_validator(mode="after")
    def _kinds(self) -> "BlindRunsTable":
        _check_kinds(self.dense, self.moe, "blind-run")
        return self


def blind_runs(table: WholeRunsTable | None = None, path: Path = BLIND_RUNS) -> BlindRunsTable:
    """The blind runs (of `path`), checked to be none of the table's: a run in both would be out of sample no more."""
    blind = BlindRunsTable.model_validate(read_yaml_file(path, "blind-runs table"))
    table = table or whole_runs()
    fitted = {r.id for r in table.dense + table.moe}
    both = sorted(fitted & {r.id for r in blind.dense + blind.moe})
    if both:
        raise ValueError(f"{path.name}: {', '.join(both)} also in {WHOLE_RUNS.name}; a blind run is in "
                         "neither the fit nor the table")
    return blind


# A second blind set (issue #30), gathered and committed before any estimate of it: predicted as the first set is,
# never fitted, and not the range `accel choose` states (it is no input of the derived cache; only the benchmark
# and the tests read it).
BLIND_RUNS_2 = WHOLE_RUNS.with_name("blind_runs_2.yaml")


def second_blind_runs(table: WholeRunsTable | None = None) -> BlindRunsTable:
    """The second blind set, checked to be in neither the table nor the first blind set (a seen run is no test)."""
    second = blind_runs(table, BLIND_RUNS_2)
    first = blind_runs(table)
    both = sorted({r.id for r in first.dense + first.moe} & {r.id for r in second.dense + second.moe})
    if both:
        raise ValueError(f"{BLIND_RUNS_2.name}: {', '.join(both)} also in {BLIND_RUNS.name}; the second blind set "
                         "holds runs in neither the table nor the first set")
    return second


def fp8_speedup(table: WholeRunsTable | None = None) -> float:
    """The geometric mean of the published fp8-vs-bf16 training speed-ups."""
    speedups = [e.speedup_vs_bf16 for e in (table or whole_runs()).fp8_evidence if e.speedup_vs_bf16]
    return math.exp(statistics.fmean(math.log(s) for s in speedups))


def precision_speedup(run: WholeRun, fp8: float) -> float:
    """What a row's precision multiplies its bf16 step prediction by: `fp8` (fp8_speedup) for an fp8 run, else 1."""
    return fp8 if run.precision == "fp8" else 1.0


def generation_of(run: WholeRun) -> str:
    return generations.generation(run.compute_chip)


def implied_mfu(run: WholeRun, catalog: Catalog) -> float:
    """The run's whole-run model-FLOPs utilisation (6 x active parameters x tokens) against the bf16 peak."""
    peak = catalog.accelerator(run.compute_chip).peak_bf16_tflops * 1e12
    return flops_per_token(run.active, run.layers, run.hidden, run.sequence_length) * run.tokens / (
        run.accelerator_hours * 3600.0 * peak)


def chips_rule(rows: list[WholeRun]):
    """log2 chips = a + b log10 parameters, least squares on the rows that publish their chips."""
    known = [(math.log10(r.parameters), math.log2(r.chips)) for r in rows if r.chips]
    xs, ys = zip(*known)
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in known) / sum((x - mx) ** 2 for x in xs)
    a = my - b * mx
    return lambda parameters: max(8, int(round(2 ** (a + b * math.log10(parameters)) / 8)) * 8)


def chips_of(run: WholeRun, impute) -> int:
    return run.chips or impute(run.parameters)


def gpus_per_node(catalog: Catalog, accelerator_id: str) -> int:
    """The node a multi-node training fleet of this accelerator is built from: the catalog's largest host."""
    return max((o.chips_per_host for o in catalog.offerings if o.accelerator == accelerator_id), default=1)


def pipeline_stages(catalog: Catalog, accelerator_id: str, min_chips: int, chips: int | None = None) -> int:
    """Diagnostic only (not a term of the fit, see the module's docstring): the pipeline degree of the estimator's training layout for a state of `min_chips` chips' worth
    (estimate.min_chips_for_memory) on `chips` chips (None: a fleet at least one pipeline wide); a TPU has
    no pipeline (its slice shards the state)."""
    if generations.generation(accelerator_id) == "tpu":
        return 1
    per_node = gpus_per_node(catalog, accelerator_id)
    nodes = math.ceil(chips / per_node) if chips else 1 << 30
    return training_parallelism(min_chips, per_node, nodes).pipeline


def row_min_chips(run: WholeRun, catalog: Catalog) -> int:
    """estimate.min_chips_for_memory for the row's model at the catalog's defaults: weights, gradients and
    optimizer state of every parameter (a mixture of experts: the total) plus activation headroom, over the
    compute chip's usable HBM."""
    training = catalog.defaults.training
    needed = run.parameters * training.bytes_per_parameter.value * (1.0 + training.activation_headroom.value)
    usable = catalog.accelerator(run.compute_chip).hbm_bytes * training.hbm_usable_fraction.value
    return max(1, math.ceil(needed / usable))


def row_stages(run: WholeRun, catalog: Catalog, impute) -> int:
    return pipeline_stages(catalog, run.compute_chip, row_min_chips(run, catalog), chips_of(run, impute))


def step_mfu(step_fit: MfuFit, catalog: Catalog, run: WholeRun, chips: int) -> float:
    accelerator = catalog.accelerator(run.compute_chip)
    return calibration.predict(step_fit, catalog, accelerator, run.active, chips, run.slices)


def fit_goodput(rows: list[WholeRun], step_fit: MfuFit, catalog: Catalog, impute,
                settings: WholeRunSettings | None = None) -> GoodputFit:
    """Ridge least squares of log(implied whole-run MFU / predicted step MFU) on size and generation."""
    settings = settings or whole_runs().model_settings
    counts: dict[str, int] = {}
    for r in rows:
        counts[generation_of(r)] = counts.get(generation_of(r), 0) + 1
    own = sorted(g for g, n in counts.items() if n >= settings.min_rows_for_offset)
    fp8 = fp8_speedup()
    features, targets = [], []
    for r in rows:
        x = math.log10(r.active / SIZE_REFERENCE)
        g = generation_of(r)
        g = g if g in own else generations.nearest_calibrated_generation(g, own)
        row = [1.0, x] + [1.0 if g == o else 0.0 for o in own] + [x if g == o else 0.0 for o in own]
        features.append(row)
        predicted = step_mfu(step_fit, catalog, r, chips_of(r, impute)) * precision_speedup(r, fp8)
        targets.append(math.log(implied_mfu(r, catalog) / predicted))
    penalty = [0.0, settings.slope_ridge] + [settings.offset_ridge] * len(own) + [settings.offset_ridge] * len(own)
    w = calibration._ridge(features, targets, penalty)
    n = len(own)
    return GoodputFit(intercept=w[0], size_slope=w[1], offsets=dict(zip(own, w[2:2 + n])),
                      slopes=dict(zip(own, w[2 + n:])), max_goodput=settings.max_goodput, rows=len(rows))


# ---------------------------------------------------------------------------------------------- MoE


def moe_shape(run: WholeRun) -> moe.MoeShape:
    assert run.experts and run.experts_per_token and run.moe_layers
    return moe.MoeShape(run.experts, run.experts_per_token, run.moe_layers, float(run.hidden))


def moe_parts(run: WholeRun, step_fit: MfuFit, goodput: GoodputFit, catalog: Catalog, impute,
              overlap: float) -> tuple[float, float, moe.ExpertLayout]:
    """(implied MFU, predicted MFU without the fitted MoE factor, the expert layout) of a MoE row."""
    chips = chips_of(run, impute)
    step = step_mfu(step_fit, catalog, run, chips)
    peak = catalog.accelerator(run.compute_chip).peak_bf16_tflops * 1e12
    compute = flops_per_token(run.active, run.layers, run.hidden, run.sequence_length) / (peak * step)
    layout = moe.layout(moe_shape(run), run.accelerator, compute, overlap, run.expert_parallel, chips)
    precision = precision_speedup(run, fp8_speedup())
    kept = goodput.goodput(generation_of(run), run.active)
    predicted = step * kept * layout.efficiency * precision
    return implied_mfu(run, catalog), predicted, layout


def moe_factor(parts: list[tuple[float, float, moe.ExpertLayout]]) -> float:
    """m: the geometric mean of observed / predicted-without-m over MoE rows."""
    return math.exp(statistics.fmean(math.log(observed / predicted) for observed, predicted, _ in parts))


# ---------------------------------------------------------------------------------------------- the fit


def spread(kind: str, errors: list["WholeRunError"], beside: Spread | None = None) -> Spread:
    ratios = sorted((1.0 / (1.0 + e.error), e.run.id) for e in errors)
    deciles = statistics.quantiles([r for r, _ in ratios], n=10, method="inclusive")
    return Spread(kind, len(ratios), deciles[0], deciles[-1], (ratios[0][1], ratios[0][0]),
                  (ratios[-1][1], ratios[-1][0]), beside)


def fit_model(catalog: Catalog, blind: BlindRunsTable | None = None) -> WholeRunModel:
    """The whole-run model fitted on every row (whole_run_model.calibrated_model caches it), with the spreads of
    the leave-one-out and of the blind runs (`blind`: blind_runs.yaml unless given), which no fit reads."""
    table = whole_runs()
    step_fit = calibration.calibrated_fit(catalog)
    impute = chips_rule(table.dense + table.moe)
    goodput = fit_goodput(table.dense, step_fit, catalog, impute)
    overlap = table.model_settings.all_to_all_overlap
    parts = [moe_parts(r, step_fit, goodput, catalog, impute, overlap) for r in table.moe]
    m = moe_factor(parts)
    # The leave-one-out's MoE rows are predicted by these same fits on every row: handed over, not fitted again.
    dense, mixture = leave_one_out(catalog, goodput)
    blind_dense, blind_moe = blind_errors(catalog, blind or blind_runs(table), step_fit, goodput, m, impute)
    return WholeRunModel(goodput, m, fp8_speedup(table), overlap, len(table.moe),
                         spread("dense", dense), spread("mixture-of-experts", mixture, spread("dense", dense)),
                         blind_spread("dense", blind_dense), blind_spread("mixture-of-experts", blind_moe))


def blind_spread(kind: str, errors: list["WholeRunError"]) -> Spread | None:
    """The spread's rule over the blind runs of a kind; None under two runs (no percentiles)."""
    return spread(kind, errors) if len(errors) >= 2 else None


def blind_errors(catalog: Catalog, blind: BlindRunsTable, step_fit: MfuFit, goodput: GoodputFit, m: float,
                 impute) -> tuple[list["WholeRunError"], list["WholeRunError"]]:
    """(dense, MoE) errors of the blind runs, each predicted as the leave-one-out predicts a row, but by the
    fits on every table row: step model, goodput, chips rule and MoE factor. They are predicted, never fitted."""
    table = whole_runs()
    fp8 = fp8_speedup(table)
    overlap = table.model_settings.all_to_all_overlap
    dense = [predict_row(run, catalog, step_fit, goodput, impute, fp8) for run in blind.dense]
    mixture = [predict_row(run, catalog, step_fit, goodput, impute, fp8,
                           moe_parts(run, step_fit, goodput, catalog, impute, overlap), m) for run in blind.moe]
    return dense, mixture


# ---------------------------------------------------------------------------------------------- leave-one-out


@dataclass(frozen=True)
class WholeRunError:
    """One whole run predicted by fits without it: error in accelerator-hours (predicted / published - 1)."""

    run: WholeRun
    chips: int
    imputed_chips: bool
    step_mfu: float
    goodput: float
    other: float            # all-to-all x MoE factor (1 for dense)
    implied_mfu: float
    predicted_mfu: float
    stages: int = 1         # diagnostic: pipeline stages of the estimator's layout for the row (not fitted)

    @property
    def error(self) -> float:
        return self.implied_mfu / self.predicted_mfu - 1.0

    @property
    def predicted_hours(self) -> float:
        return self.run.accelerator_hours * (1.0 + self.error)


def blind_test(catalog: Catalog, blind: BlindRunsTable | None = None
               ) -> tuple[list[WholeRunError], list[WholeRunError]]:
    """(dense, MoE) errors of `blind`'s runs (blind_runs.yaml's by default; the second set, second_blind_runs) by the
    model fitted on every table row (what benchmarks/bench_estimate.py prints; fit_model works out the same inside
    its fit for the first set). Predicted, none of them refitted."""
    table = whole_runs()
    model = calibrated_model(catalog)
    return blind_errors(catalog, blind if blind is not None else blind_runs(table), calibration.calibrated_fit(catalog),
                        model.goodput, model.moe_factor, chips_rule(table.dense + table.moe))


def predict_row(run: WholeRun, catalog: Catalog, step_fit: MfuFit, goodput: GoodputFit, impute, fp8: float,
                parts: tuple[float, float, moe.ExpertLayout] | None = None, m: float = 1.0) -> WholeRunError:
    """One row predicted by the fits given: step MFU x goodput (x fp8); a MoE row (`parts`, from moe_parts with
    the same fits) also x all-to-all x `m`, goodput x MoE at most max_goodput, as in the estimator."""
    chips = chips_of(run, impute)
    step = step_mfu(step_fit, catalog, run, chips)
    stages = row_stages(run, catalog, impute)
    kept = goodput.goodput(generation_of(run), run.active)
    if parts is None:
        predicted = step * kept * precision_speedup(run, fp8)
        return WholeRunError(run, chips, run.chips is None, step, kept, 1.0, implied_mfu(run, catalog), predicted,
                             stages)
    observed, predicted, layout = parts
    capped = min(predicted * m, predicted / (kept * layout.efficiency) * goodput.max_goodput)
    return WholeRunError(run, chips, run.chips is None, step, kept, layout.efficiency * m, observed, capped, stages)


class _StepFits:
    """The step model fitted without some step rows, each set of rows fitted once; without none it is the
    calibrated fit on every row (calibration.calibrated_fit, already worked out or cached for the estimator)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.runs = calibration.published_runs().runs
        self.fits: dict[tuple[str, ...], MfuFit] = {(): calibration.calibrated_fit(catalog)}

    def without(self, ids: list[str]) -> MfuFit:
        key = tuple(sorted(ids))
        if key not in self.fits:
            self.fits[key] = calibration.fit([r for r in self.runs if r.id not in key], self.catalog)
        return self.fits[key]


def leave_one_out(catalog: Catalog, goodput_all: GoodputFit | None = None
                  ) -> tuple[list[WholeRunError], list[WholeRunError]]:
    """(dense errors, MoE errors), each row predicted by the step model without its linked step rows, the
    goodput model without it, the chips rule without it and (MoE) the MoE factor without it. `goodput_all`:
    the goodput fitted on every dense row against the step fit on every row (fit_model has it), else fitted
    here; the MoE rows take it (none of them is a dense row)."""
    table = whole_runs()
    steps = _StepFits(catalog)
    fp8 = fp8_speedup(table)
    overlap = table.model_settings.all_to_all_overlap
    dense_errors = []
    for i, run in enumerate(table.dense):
        others = table.dense[:i] + table.dense[i + 1:]
        impute = chips_rule(others + table.moe)
        step_fit = steps.without(run.linked_step_rows)
        goodput = fit_goodput(others, step_fit, catalog, impute)
        dense_errors.append(predict_row(run, catalog, step_fit, goodput, impute, fp8))
    step_all = steps.without([])
    everything = table.dense + table.moe
    if goodput_all is None:
        goodput_all = fit_goodput(table.dense, step_all, catalog, chips_rule(everything))
    parts = {r.id: moe_parts(r, step_all, goodput_all, catalog, chips_rule([x for x in everything if x is not r]),
                             overlap) for r in table.moe}
    moe_errors = []
    for run in table.moe:
        m = moe_factor([parts[r.id] for r in table.moe if r is not run])
        impute = chips_rule([x for x in everything if x is not run])
        moe_errors.append(predict_row(run, catalog, step_all, goodput_all, impute, fp8, parts[run.id], m))
    return dense_errors, moe_errors


__all__ = ["BlindRunsTable", "GoodputFit", "Spread", "WholeRun", "WholeRunError", "WholeRunModel", "WholeRunsTable",
           "blind_errors", "blind_runs", "blind_test", "calibrated_model", "fit_goodput", "fp8_speedup", "leave_one_out",
           "median", "second_blind_runs", "whole_runs"]
