"""What hindsight could reach on the published dense whole runs (benchmarks/whole_run_hindsight.py, issue #30):
the two measures bench_estimate prints beside the leave-one-out and blind tables."""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import whole_run_hindsight as hindsight  # noqa: E402  (benchmarks/ is not a package)
from whole_run_hindsight import DenseRun, hindsight_fit, pair_floor, twins  # noqa: E402

mfu = st.floats(0.01, 0.9)


@given(mfu, mfu, st.floats(0.005, 2.0))
def test_no_one_answer_for_two_runs_beats_the_pair_floor(a, b, answer):
    """Whatever one MFU an estimator answers for two runs, the worse of their two errors in hours is at least
    the floor, and the floor is met at the midpoint."""
    worst = max(abs(a / answer - 1.0), abs(b / answer - 1.0))
    assert worst >= pair_floor(a, b) - 1e-12
    midpoint = (a + b) / 2.0
    assert max(abs(a / midpoint - 1.0), abs(b / midpoint - 1.0)) == pytest.approx(pair_floor(a, b))


def test_three_times_apart_is_the_fifty_percent_line():
    assert pair_floor(0.1, 0.3) == pytest.approx(0.5)
    assert pair_floor(0.1, 0.31) > 0.5 > pair_floor(0.1, 0.29)


def run(id: str, chip: str = "h100-80gb", generation: str = "hopper", active: float = 7e9, chips: int = 512,
        implied: float = 0.3, step: float = 0.45, fp8: bool = False, year: int = 2024) -> DenseRun:
    return DenseRun(id, "table", chip, generation, active, chips, True, 1, 2e12 / active, year, fp8, implied, step)


def test_twins_are_one_chip_and_precision_sizes_within_one_and_a_half_fleets_within_two():
    base = run("base", implied=0.1)
    assert [(t.slower.id, t.faster.id) for t in twins([base, run("close", active=10e9, chips=1000)])] == \
        [("base", "close")]
    for apart in (run("bigger", active=11e9), run("wider", chips=1100), run("other-chip", chip="h200"),
                  run("fp8", fp8=True)):
        assert twins([base, apart]) == [], apart.id


def synthetic(n: int = 24) -> list[DenseRun]:
    """Runs whose whole-run MFU is exactly the model's form: step x exp(offset[gen] + slope[gen] x size)."""
    runs = []
    for i in range(n):
        generation = ("ampere", "hopper", "tpu")[i % 3]
        active = 10 ** (8.5 + 3.0 * i / n)
        step = 0.3 + 0.01 * (i % 7)
        offset, slope = {"ampere": (-0.2, 0.05), "hopper": (-0.5, 0.2), "tpu": (-0.4, 0.0)}[generation]
        implied = step * math.exp(offset + slope * math.log10(active / 1e10))
        runs.append(run(f"r{i}", chip=generation, generation=generation, active=active, chips=64 * (1 + i % 5),
                        implied=implied, step=step, year=2022 + i % 4))
    return runs


@pytest.mark.parametrize("leave_one_out", [False, True])
def test_runs_the_form_explains_are_fitted_to_within_the_ridge(leave_one_out):
    fit = hindsight_fit("synthetic", synthetic(), "size", hindsight.FEATURE_SETS["size"], leave_one_out)
    assert fit.parameters == 6        # an intercept and size slope, and both again for each of two more generations
    assert fit.worst[1] < 0.01


def test_a_run_the_form_cannot_explain_shows_as_its_error():
    runs = synthetic()
    runs[5] = replace(runs[5], implied_mfu=runs[5].implied_mfu * 3.0)    # a run three times faster than its kin
    in_sample = hindsight_fit("synthetic", runs, "size", hindsight.FEATURE_SETS["size"], False)
    left_out = hindsight_fit("synthetic", runs, "size", hindsight.FEATURE_SETS["size"], True)
    assert in_sample.worst[0] == left_out.worst[0] == "r5"
    # Seen, it pulls the fit toward itself; unseen, the others' fit misses it by about the factor it stands apart.
    assert 0.5 < in_sample.worst[1] < left_out.worst[1]
    assert left_out.worst[1] == pytest.approx(2.0, rel=0.05)


def test_the_published_runs_hold_twins_no_one_answer_serves_within_the_bound():
    """The claim issue #30's note rests on: among the dense runs held, some twins are more than 3x apart, so any
    estimator that answers a planner's one question once misses the 50% worst bound on one of them."""
    from accel.policies.catalog import load_catalog

    seen = hindsight.hindsight(load_catalog())
    assert len(seen.runs) == len({r.id for r in seen.runs}) >= 50
    worst = seen.twins[0]
    assert worst.floor > 0.5
    assert {worst.slower.chip, worst.faster.chip} == {"h100-80gb"}
    for fit in seen.fits:
        assert set(fit.errors) == {r.id for r in seen.runs if fit.population == "every" or r.held_in == "table"}
