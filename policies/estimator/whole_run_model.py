"""The fitted whole-run model and what reads it: `WholeRunModel` (goodput, MoE factor, fp8 speed-up, the
leave-one-out spread and the blind runs' spread) and `calibrated_model`, the fit on every row, cached per
catalog and in the user's derived-data cache.

The model and how it is fitted are described in policies/estimator/whole_runs.py, which holds the table of
published whole runs, its checks and the fits. They are kept apart so that a run whose model comes from the
cache (every warm `accel choose`) never defines the table's models: whole_runs.py is imported only to fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from accel.base.derived_cache import cached
from accel.policies import hardware
from accel.policies.catalog.model import Catalog
from accel.policies.estimator import generations, mfu_model

WHOLE_RUNS = Path(__file__).resolve().parent.parent / "catalog" / "whole_runs.yaml"
# Published runs held out of WHOLE_RUNS and estimated blind: evidence for the stated range only, never fitted.
BLIND_RUNS = WHOLE_RUNS.with_name("blind_runs.yaml")
SIZE_REFERENCE = 1e10


def flops_per_token(active_parameters: float, layers: float, hidden: float, sequence_length: float) -> float:
    """Training FLOPs per token: 6 x the active parameters (forward 2, backward 4, every matmul a token passes
    through) plus attention's score and value matmuls, 12 x layers x hidden x sequence (PaLM, Chowdhery et al.
    2022, appendix B: the convention under which its MFU is reported)."""
    return 6.0 * active_parameters + 12.0 * layers * hidden * sequence_length


@dataclass(frozen=True)
class GoodputFit:
    """log goodput = intercept + offset[g] + (size_slope + slope[g]) x log10(N_active / 1e10), capped."""

    intercept: float
    size_slope: float
    offsets: dict[str, float]
    slopes: dict[str, float]
    max_goodput: float
    rows: int
    borrowed: dict[str, str] = field(default_factory=dict)   # generation -> the one it borrows from

    def own_generation(self, name: str) -> str | None:
        """The generation whose offset applies: its own, its nearest calibrated one, or None (pooled)."""
        if name in self.offsets:
            return name
        return generations.nearest_calibrated_generation(name, self.offsets)

    def goodput(self, generation: str, active_parameters: float) -> float:
        x = math.log10(active_parameters / SIZE_REFERENCE)
        own = self.own_generation(generation)
        log = self.intercept + self.size_slope * x
        if own is not None:
            log += self.offsets[own] + self.slopes[own] * x
        return min(math.exp(log), self.max_goodput)

    def source(self, generation: str) -> str:
        own = self.own_generation(generation)
        where = (f"{generation}'s own offset" if own == generation else
                 f"{own}'s offset (nearest calibrated generation: {generation} has too few published whole runs)"
                 if own else f"the pooled intercept ({generation} has too few published whole runs and no "
                             "calibrated generation before it)")
        return (f"fitted on {self.rows} published dense whole runs (policies/catalog/whole_runs.yaml) by model "
                f"size and hardware generation; {where}; at most {self.max_goodput:g}")


class Spread(NamedTuple):
    """How wrong a whole-run estimate may be: published / predicted accelerator-hours over rows each predicted
    by fits without it (leave-one-out), as the 10th and 90th percentiles (linear interpolation) and the
    extremes, with the rows they come from."""

    kind: str                 # "dense" or "mixture-of-experts"
    rows: int
    low: float                # 10th percentile of published / predicted
    high: float               # 90th percentile
    lowest: tuple[str, float]
    highest: tuple[str, float]
    beside: "Spread | None" = None   # the dense rows' spread, beside a mixture of experts' few rows

    def text(self) -> str:
        words = (f"published {self.kind} whole runs took {self.low:.2f}x to {self.high:.2f}x the hours the model "
                 f"predicted for them without them (10th to 90th percentile of {self.rows}, leave-one-out; extremes "
                 f"{self.lowest[1]:.2f}x {self.lowest[0]}, {self.highest[1]:.2f}x {self.highest[0]})")
        if self.beside is not None:
            words += (f"; {self.rows} rows are few: the {self.beside.rows} {self.beside.kind} runs' "
                      f"{self.beside.low:.2f}x to {self.beside.high:.2f}x is the wider view")
        return words

    def blind_text(self) -> str:
        """The range published runs outside the table showed against the model fitted on every table row."""
        return (f"runs outside the table, estimated blind, took {self.low:.2f}x to {self.high:.2f}x "
                f"({self.rows} runs)")

    def blind_source(self) -> str:
        return (f"runs outside the table, estimated blind, took {self.low:.2f}x to {self.high:.2f}x the hours the "
                f"model fitted on every table row predicted (10th to 90th percentile of {self.rows}; extremes "
                f"{self.lowest[1]:.2f}x {self.lowest[0]}, {self.highest[1]:.2f}x {self.highest[0]}; "
                "policies/catalog/blind_runs.yaml: out of sample, never fitted; docs/choose.md)")


class WholeRunModel(NamedTuple):
    """Everything fitted on all rows: what `accel choose` uses."""

    goodput: GoodputFit
    moe_factor: float
    fp8_speedup: float
    overlap: float
    moe_rows: int
    dense_spread: Spread | None = None
    moe_spread: Spread | None = None
    # The same rule over published runs outside the table, each predicted by the fits on every table row.
    dense_blind: Spread | None = None
    moe_blind: Spread | None = None

    def spread_for(self, is_moe: bool) -> Spread | None:
        return self.moe_spread if is_moe else self.dense_spread

    def blind_for(self, is_moe: bool) -> Spread | None:
        return self.moe_blind if is_moe else self.dense_blind


_MODELS: dict[tuple, WholeRunModel] = {}


def calibrated_model(catalog: Catalog) -> WholeRunModel:
    """The whole-run model fitted on every row, cached per catalog's peaks and estimator settings and, with the
    bundled hardware table, in the user's derived-data cache (keyed by the run tables, the blind runs, the
    hardware table and the code; an edit of any refits): reading and checking the tables costs a few hundred milliseconds, the fitted
    model's pickle almost nothing."""
    key = mfu_model._fit_key(catalog)
    # The MoE rows' all-to-all reads the hardware table's collective fabrics: another table is another fit (the
    # derived-data cache below is used with the bundled table only; this one is kept per table's fabrics too).
    found = _MODELS.get(memo := (key, hardware.current().collective_fabrics_key()))
    if found is None:
        def compute() -> WholeRunModel:
            # Only on a cache miss: the tables' models and the fits (policies/estimator/whole_runs.py).
            from accel.policies.estimator import whole_runs
            return whole_runs.fit_model(catalog)

        # facts.toml is an input as the run tables are: its [collective_fabrics] are not in `key`, and an edit of
        # them read back the fit made before it.
        found = _MODELS[memo] = (cached("whole-run-fit", [WHOLE_RUNS, BLIND_RUNS, mfu_model.PUBLISHED_RUNS,
                                                          hardware.BUNDLED_FACTS], compute,
                                       code=[mfu_model.POLICIES_DIR], extra=key)
                                if hardware.bundled_in_use() else compute())
    return found
