"""The MFU model: model FLOPs utilisation as a function of model size, accelerator, precision and scale,
calibrated on the table of published training runs (policies/catalog/published_runs.yaml).

    log MFU = intercept[accelerator] + a * x + b * x**2 + d * log2(chips / 8) + m * [multislice] + log dcn

where x = log10(parameters / 1e10). Small models leave the matrix units idle on short matmuls and large ones
pay for model parallelism (the quadratic in size), bigger fleets pay for collectives (d), and slices joined
over the data-centre network pay for their per-step gradient all-reduce (`dcn`, policies/estimator/dcn.py: a function
of the slice count, the model's gradient bytes, the global batch and the chips' DCN bandwidth, not fitted)
and once more for what that does not explain (m: DCN latency, stragglers). An accelerator's intercept is its class's (tpu-3d, tpu-2d,
gpu-nvlink) plus its own offset, ridge-shrunk toward the class so one published run cannot swing it; an
accelerator with no published run takes its class's intercept. The model predicts bf16 step MFU; fp8 runs
enter at bf16-equivalent speed (published fp8 MFU x fp8 peak / bf16 peak / fp8_speedup).

Nothing is fitted by hand: `fit` is ordinary ridge least squares on every row, and `leave_one_out` predicts
each run from a fit without it (benchmarks/bench_estimate.py prints it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Literal

from pydantic import Field, model_validator

from accel.base.model import StrictModel
from accel.base.yaml_files import read_yaml_file
from accel.policies.catalog.model import Accelerator, Catalog
from accel.policies.estimator.dcn import dcn_seconds, efficiency_from_observed
# The fitted model and what reads it live in mfu_model.py (what a warm run imports); named here too, as before.
from accel.policies.estimator.mfu_model import (  # noqa: F401
    POLICIES_DIR,
    PUBLISHED_RUNS,
    SCALE_REFERENCE_CHIPS,
    SIZE_REFERENCE,
    MfuFit,
    _calibrated_as,
    _dcn_settings,
    _features,
    _fit_key,
    calibrated_fit,
    dcn_breakdown,
    median,
    predict,
    run_batch_tokens,
)
from accel.policies.workload import AcceleratorId



class PublishedRun(StrictModel):
    """One published training run or benchmark, with its figures as published."""

    id: str = Field(min_length=3)
    model: str = Field(min_length=2)
    parameters: float = Field(gt=0)
    tokens: float | None = Field(None, gt=0)
    accelerator: AcceleratorId
    chips: int = Field(gt=0)
    slices: int = Field(1, gt=0)
    precision: Literal["bf16", "fp16", "fp8"]
    sequence_length: int | None = Field(None, gt=0)
    global_batch_tokens: float | None = Field(None, gt=0)
    mfu: float | None = Field(None, gt=0, le=1)
    mfu_peak: Literal["bf16", "fp8"] = "bf16"
    tflops_per_chip: float | None = Field(None, gt=0)
    tokens_per_second_per_chip: float | None = Field(None, gt=0)
    measured: Literal["step"]
    source: str = Field(min_length=3)
    notes: str | None = None

    @model_validator(mode="after")
    def _one_figure(self) -> "PublishedRun":
        given = [name for name in ("mfu", "tflops_per_chip", "tokens_per_second_per_chip") if getattr(self, name)]
        if len(given) != 1:
            raise ValueError(f"give exactly one of mfu, tflops_per_chip, tokens_per_second_per_chip (got {given})")
        return self


class PublishedRuns(StrictModel):
    as_of: date
    sources: dict[str, str] = Field(min_length=1)
    runs: list[PublishedRun] = Field(min_length=1)

    @model_validator(mode="after")
    def _sources_resolve(self) -> "PublishedRuns":
        seen: set[str] = set()
        for run in self.runs:
            if run.source not in self.sources:
                raise ValueError(f"run {run.id}: source {run.source!r} is not listed under sources")
            if run.id in seen:
                raise ValueError(f"run id {run.id!r} appears twice")
            seen.add(run.id)
        return self


@lru_cache(maxsize=1)
def published_runs() -> PublishedRuns:
    return PublishedRuns.model_validate(read_yaml_file(PUBLISHED_RUNS, "published runs table"))


def published_mfu(run: PublishedRun, accelerator: Accelerator) -> float:
    """The run's MFU as published, against the peak of the precision it names (bf16 unless `mfu_peak: fp8`)."""
    if run.mfu is not None:
        return run.mfu
    peak = accelerator.peak_bf16_tflops
    if run.tflops_per_chip is not None:
        return run.tflops_per_chip / peak
    assert run.tokens_per_second_per_chip is not None
    return 6.0 * run.parameters * run.tokens_per_second_per_chip / (peak * 1e12)


def bf16_equivalent_mfu(run: PublishedRun, accelerator: Accelerator, fp8_speedup: float) -> float:
    """The run's speed as a share of the bf16 peak, divided by the fp8 speed-up for fp8 runs: what the model
    predicts before the estimator applies the precision factor."""
    value = published_mfu(run, accelerator)
    if run.mfu_peak == "fp8":
        value *= (accelerator.peak_fp8_tflops or accelerator.peak_bf16_tflops) / accelerator.peak_bf16_tflops
    if run.precision == "fp8":
        value /= fp8_speedup
    return value


def fit(runs: list[PublishedRun], catalog: Catalog) -> MfuFit:
    """Ridge least squares of log bf16-equivalent MFU on the features; the accelerator offsets (and only they)
    are shrunk toward their class by `mfu_model.accelerator_ridge`."""
    model = catalog.defaults.mfu_model
    fp8_speedup = catalog.defaults.training.fp8_speedup.value
    accelerators = [catalog.accelerator(_calibrated_as(catalog, run.accelerator)) for run in runs]
    classes = sorted({a.mfu_class for a in accelerators})
    ids = sorted({a.id for a in accelerators})
    columns = len(classes) + len(ids) + 4
    rows: list[list[float]] = []
    targets: list[float] = []
    for run, accelerator in zip(runs, accelerators):
        row = [0.0] * columns
        row[classes.index(accelerator.mfu_class)] = 1.0
        row[len(classes) + ids.index(accelerator.id)] = 1.0
        row[len(classes) + len(ids):] = _features(run.parameters, run.chips, run.slices)
        rows.append(row)
        published = bf16_equivalent_mfu(run, catalog.accelerator(run.accelerator), fp8_speedup)
        # The fit is of the MFU within a slice: the modelled DCN all-reduce is taken out of a multislice step.
        targets.append(math.log(published) - math.log(_observed_dcn_efficiency(run, published, catalog)))
    penalty = [0.0] * len(classes) + [model.accelerator_ridge.value] * len(ids) + [model.slope_ridge.value] * 4
    solution = _ridge(rows, targets, penalty)
    tail = solution[len(classes) + len(ids):]
    return MfuFit(class_intercepts=dict(zip(classes, solution[:len(classes)])),
                  accelerator_offsets=dict(zip(ids, solution[len(classes):len(classes) + len(ids)])),
                  size_slope=tail[0], size_curvature=tail[1], scale_slope=tail[2], multislice=tail[3], rows=len(runs))


def _observed_dcn_efficiency(run: PublishedRun, published_mfu: float, catalog: Catalog) -> float:
    settings = _dcn_settings(catalog, run.accelerator) if run.slices > 1 else None
    if settings is None:
        return 1.0
    gbps, gradient_bytes, overlap = settings
    peak = catalog.accelerator(run.accelerator).peak_bf16_tflops * 1e12
    tokens = run_batch_tokens(catalog, run.parameters, run.global_batch_tokens)
    step = 6.0 * run.parameters * tokens / (run.chips * peak * published_mfu)
    return efficiency_from_observed(step, dcn_seconds(run.parameters, run.chips, run.slices, gbps, gradient_bytes),
                                    overlap)


def _ridge(rows: list[list[float]], targets: list[float], penalty: list[float]) -> list[float]:
    """Solve (X'X + diag(penalty)) w = X'y by Gaussian elimination with partial pivoting."""
    n = len(penalty)
    matrix = [[sum(r[i] * r[j] for r in rows) + (penalty[i] if i == j else 0.0) for j in range(n)] +
              [sum(r[i] * y for r, y in zip(rows, targets))]
              for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(matrix[r][col]))
        matrix[col], matrix[pivot] = matrix[pivot], matrix[col]
        lead = matrix[col][col]
        if abs(lead) < 1e-12:
            raise ValueError("the published runs do not determine the MFU model (singular system)")
        for r in range(n):
            if r != col and matrix[r][col]:
                factor = matrix[r][col] / lead
                matrix[r] = [a - factor * b for a, b in zip(matrix[r], matrix[col])]
    return [matrix[i][n] / matrix[i][i] for i in range(n)]


@dataclass(frozen=True)
class RunError:
    """One published run predicted by a model fitted without it. Error is in accelerator-hours:
    predicted hours / published hours - 1 = published MFU / predicted MFU - 1."""

    run: PublishedRun
    published_mfu: float     # bf16-equivalent
    predicted_mfu: float

    @property
    def error(self) -> float:
        return self.published_mfu / self.predicted_mfu - 1.0


def leave_one_out(catalog: Catalog, runs: list[PublishedRun] | None = None) -> list[RunError]:
    runs = list(published_runs().runs if runs is None else runs)
    fp8_speedup = catalog.defaults.training.fp8_speedup.value
    errors = []
    for i, run in enumerate(runs):
        fitted = fit(runs[:i] + runs[i + 1:], catalog)
        accelerator = catalog.accelerator(run.accelerator)
        predicted = predict(fitted, catalog, accelerator, run.parameters, run.chips, run.slices,
                            global_batch_tokens=run.global_batch_tokens)
        errors.append(RunError(run, bf16_equivalent_mfu(run, accelerator, fp8_speedup), predicted))
    return errors
