"""The fitted MFU model and what reads it: `MfuFit`, `predict`, `dcn_breakdown` and `calibrated_fit`, the fit
on every published run, cached per catalog and in the user's derived-data cache.

The model and how it is fitted are described in policies/estimator/calibration.py, which holds the table of
published runs, its checks and the fit itself. They are kept apart so that a run whose fit comes from the
cache (every warm `accel choose`) never defines the table's models: calibration.py is imported only to fit.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

from accel.base.derived_cache import cached
from accel.policies import hardware
from accel.policies.hardware import shapes
from accel.policies.catalog.model import Accelerator, Catalog, rule_for
from accel.policies.estimator import generations
from accel.policies.estimator.dcn import DcnStep, dcn_step

POLICIES_DIR = Path(__file__).resolve().parent.parent
PUBLISHED_RUNS = POLICIES_DIR / "catalog" / "published_runs.yaml"
SIZE_REFERENCE = 1e10        # x = log10(parameters / 1e10): 10B parameters at x = 0
SCALE_REFERENCE_CHIPS = 8    # one GPU node: no scale penalty below it


class MfuFit(NamedTuple):
    """A calibrated MFU model: intercepts and slopes in log space."""

    class_intercepts: dict[str, float]
    accelerator_offsets: dict[str, float]
    size_slope: float
    size_curvature: float
    scale_slope: float           # per doubling of chips past SCALE_REFERENCE_CHIPS (log)
    multislice: float            # log factor for more than one slice
    rows: int

    def intercept(self, accelerator_id: str, mfu_class: str) -> float | None:
        base = self.class_intercepts.get(mfu_class)
        if base is None:
            return None
        return base + self.accelerator_offsets.get(accelerator_id, 0.0)

    def decay_per_doubling(self) -> float:
        return math.exp(self.scale_slope)


def _features(parameters: float, chips: int, slices: int) -> tuple[float, float, float, float]:
    x = math.log10(parameters / SIZE_REFERENCE)
    return x, x * x, math.log2(max(chips, SCALE_REFERENCE_CHIPS) / SCALE_REFERENCE_CHIPS), 1.0 if slices > 1 else 0.0


def run_batch_tokens(catalog: Catalog, parameters: float, global_batch_tokens: float | None) -> float:
    """A run's global batch: as published, else the default for its size (assumptions.yaml)."""
    if global_batch_tokens is not None:
        return global_batch_tokens
    return rule_for(catalog.defaults.training.global_batch_tokens_by_size, parameters).value


def _dcn_settings(catalog: Catalog, accelerator_id: str) -> tuple[float, float, float] | None:
    """(DCN Gbps per chip, gradient bytes per parameter, overlap) for a TPU; None for chips without a DCN figure."""
    generation = shapes.GENERATION_BY_ACCELERATOR.get(accelerator_id)
    if generation is None or not generation.dcn_gbps_per_chip:
        return None
    training = catalog.defaults.training
    return generation.dcn_gbps_per_chip, training.dcn_gradient_bytes_per_parameter.value, training.dcn_overlap.value


def dcn_breakdown(catalog: Catalog, accelerator: Accelerator, parameters: float, chips: int, slices: int,
                  slice_mfu: float, global_batch_tokens: float | None = None) -> DcnStep | None:
    """One step's compute and cross-slice all-reduce at `slice_mfu` (None: one slice, or no DCN figure)."""
    settings = _dcn_settings(catalog, accelerator.id) if slices > 1 else None
    if settings is None:
        return None
    gbps, gradient_bytes, overlap = settings
    return dcn_step(parameters, run_batch_tokens(catalog, parameters, global_batch_tokens), chips, slices,
                    accelerator.peak_bf16_tflops * 1e12, slice_mfu, gbps, gradient_bytes, overlap)


def _calibrated_as(catalog: Catalog, accelerator_id: str) -> str:
    """The accelerator whose published runs stand for this one (an H200 runs at an H100's MFU)."""
    return catalog.defaults.mfu_model.same_as.get(accelerator_id, accelerator_id)


def predict(fitted: MfuFit, catalog: Catalog, accelerator: Accelerator, parameters: float, chips: int,
            slices: int = 1, decay_per_doubling: float | None = None, multislice_efficiency: float | None = None,
            global_batch_tokens: float | None = None) -> float:
    """bf16 step MFU of a dense model of `parameters` on `chips` chips (in `slices` slices).

    Across slices: the fitted multislice factor times the DCN all-reduce's efficiency at this slice count and
    global batch (default: the size's default batch), or the workload's `multislice_efficiency` for both."""
    intercept = _intercept(fitted, catalog, accelerator.id)
    x, x2, doublings, multislice = _features(parameters, chips, slices)
    scale = math.log(decay_per_doubling) if decay_per_doubling is not None else fitted.scale_slope
    across = math.log(multislice_efficiency) if multislice_efficiency is not None else fitted.multislice
    value = min(math.exp(intercept + fitted.size_slope * x + fitted.size_curvature * x2 + scale * doublings
                         + across * multislice), catalog.defaults.mfu_model.max_mfu.value)
    if multislice_efficiency is None:
        step = dcn_breakdown(catalog, accelerator, parameters, chips, slices, value, global_batch_tokens)
        if step is not None:
            value *= step.efficiency
    return value


# The intercept of each accelerator, worked out once for the last fit, catalog and hardware facts table (all
# three frozen; the nearest-generation rule reads the facts table): a search predicts ~1,700 fleet sizes on a
# dozen accelerators, and this lookup costs more than the arithmetic of a size.
_LAST_INTERCEPTS: list[tuple[MfuFit, Catalog, object, dict[str, float]]] = []


def _intercept(fitted: MfuFit, catalog: Catalog, accelerator_id: str) -> float:
    facts = hardware.current()
    if not (_LAST_INTERCEPTS and _LAST_INTERCEPTS[0][0] is fitted and _LAST_INTERCEPTS[0][1] is catalog
            and _LAST_INTERCEPTS[0][2] is facts):
        _LAST_INTERCEPTS[:] = [(fitted, catalog, facts, {})]
    known = _LAST_INTERCEPTS[0][3]
    intercept = known.get(accelerator_id)
    if intercept is None:
        intercept = known[accelerator_id] = _work_out_intercept(fitted, catalog, accelerator_id)
    return intercept


def _work_out_intercept(fitted: MfuFit, catalog: Catalog, accelerator_id: str) -> float:
    calibrated = catalog.accelerator(_calibrated_as(catalog, accelerator_id))
    if calibrated.id not in fitted.accelerator_offsets and calibrated.mfu_class in fitted.class_intercepts:
        # No step row of its own: the nearest calibrated generation's chip (policies/estimator/generations.py).
        nearest = generations.nearest_calibrated(calibrated.id, fitted.accelerator_offsets)
        if nearest is not None and nearest in catalog.accelerators:
            calibrated = catalog.accelerator(nearest)
    intercept = fitted.intercept(calibrated.id, calibrated.mfu_class)
    if intercept is None:
        fallback = catalog.defaults.mfu_classes[calibrated.mfu_class]
        if fallback.relative_to is None or fallback.factor is None or fallback.relative_to not in fitted.class_intercepts:
            raise ValueError(f"no published run calibrates mfu_class {calibrated.mfu_class!r} of {accelerator_id} "
                             "and it names no calibrated class to run relative_to")
        intercept = fitted.class_intercepts[fallback.relative_to] + math.log(fallback.factor)
    return intercept


_FITS: dict[tuple, MfuFit] = {}


def calibrated_fit(catalog: Catalog) -> MfuFit:
    """The model fitted on every published run, cached per catalog's peaks and estimator settings."""
    key = _fit_key(catalog)
    fitted = _FITS.get(key)
    if fitted is None:
        def compute() -> MfuFit:
            # Only on a cache miss: the table's models and the fit (policies/estimator/calibration.py).
            from accel.policies.estimator import calibration
            return calibration.fit(calibration.published_runs().runs, catalog)

        # Kept in the user's cache too (keyed by the runs table, the key above and the code), unless
        # another hardware facts table is in use: only what the bundled one gives is cached.
        fitted = _FITS[key] = (cached("mfu-fit", [PUBLISHED_RUNS], compute, code=[POLICIES_DIR], extra=key)
                               if hardware.bundled_in_use() else compute())
    return fitted


# The last key worked out, with the catalog and the hardware facts table it was worked out for: a search asks
# for the fits once per offering and size, with the same (frozen) catalog and table every time.
_LAST_KEY: list[tuple[Catalog, object, tuple]] = []


def _fit_key(catalog: Catalog) -> tuple:
    facts = hardware.current()
    if _LAST_KEY and _LAST_KEY[0][0] is catalog and _LAST_KEY[0][1] is facts:
        return _LAST_KEY[0][2]
    key = _work_out_fit_key(catalog)
    _LAST_KEY[:] = [(catalog, facts, key)]
    return key


def _work_out_fit_key(catalog: Catalog) -> tuple:
    model = catalog.defaults.mfu_model
    peaks = tuple(sorted((a.id, a.peak_bf16_tflops, a.peak_fp8_tflops, a.mfu_class)
                         for a in catalog.accelerators.values()))
    training = catalog.defaults.training
    # The DCN term of multislice rows reads these too: an overlay or another facts table that changes them
    # is another fit.
    dcn = (training.dcn_gradient_bytes_per_parameter.value, training.dcn_overlap.value,
           repr(training.global_batch_tokens_by_size),
           tuple(sorted((a, g.dcn_gbps_per_chip) for a, g in shapes.GENERATION_BY_ACCELERATOR.items())))
    return (peaks, training.fp8_speedup.value, model.accelerator_ridge.value,
            model.slope_ridge.value, tuple(sorted(model.same_as.items())), dcn)


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
