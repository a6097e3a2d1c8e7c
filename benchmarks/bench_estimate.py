"""How well the estimator's MFU model holds against published training runs, leave-one-out: each run in
policies/catalog/published_runs.yaml is predicted by the model fitted on all the others.

    uv run python benchmarks/bench_estimate.py

Prints per run the published and predicted MFU (bf16-equivalent step MFU) and the error in
accelerator-hours (predicted hours / published hours - 1), then the median and worst absolute error.
Targets (issue #15): median <= 20%, worst <= 50%. Exit status 1 when a training target is missed.
Then the serving model against published serving figures (policies/catalog/published_serving.yaml).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from accel.policies.estimator.calibration import calibrated_fit, leave_one_out, median  # noqa: E402
from accel.policies.catalog import load_catalog  # noqa: E402
from accel.policies.estimator.serving_figures import serving_errors  # noqa: E402

MEDIAN_TARGET, WORST_TARGET = 0.20, 0.50


def main() -> int:
    catalog = load_catalog()
    errors = leave_one_out(catalog)
    print(f"{'run':34} {'accelerator':11} {'chips':>6} {'params':>8} {'published':>9} {'predicted':>9} {'error':>7}")
    for e in errors:
        r = e.run
        print(f"{r.id:34} {r.accelerator:11} {r.chips:>6} {r.parameters / 1e9:>7.3g}B {e.published_mfu:>9.3f} "
              f"{e.predicted_mfu:>9.3f} {e.error:>+7.1%}")
    absolute = [abs(e.error) for e in errors]
    worst = max(errors, key=lambda e: abs(e.error))
    fit = calibrated_fit(catalog)
    print(f"\n{len(errors)} runs, leave-one-out error in accelerator-hours: median {median(absolute):.1%} "
          f"(target <= {MEDIAN_TARGET:.0%}), worst {abs(worst.error):.1%} on {worst.run.id} "
          f"(target <= {WORST_TARGET:.0%})")
    print(f"fit on all runs: size slope {fit.size_slope:+.3f}, curvature {fit.size_curvature:+.3f} per decade^2, "
          f"x{fit.decay_per_doubling():.3f} per doubling of chips, multislice x{math.exp(fit.multislice):.3f}")
    print(f"\n{'serving figure':36} {'published':>9} {'predicted':>9} {'error':>7}   (generated tok/s per chip)")
    serving = serving_errors(catalog)
    for s in serving:
        print(f"{s.figure.id:36} {s.figure.tokens_per_second_per_chip:>9,.0f} {s.predicted:>9,.0f} {s.error:>+7.1%}")
    served = [abs(s.error) for s in serving]
    within = sum(error <= 0.30 for error in served)
    print(f"{len(serving)} serving figures: median {median(served):.1%}, worst {max(served):.1%}, "
          f"{within} of {len(serving)} within the 30% target")
    return 0 if median(absolute) <= MEDIAN_TARGET and abs(worst.error) <= WORST_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
