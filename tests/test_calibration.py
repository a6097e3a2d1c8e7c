"""The MFU model against the table of published training runs: every row sourced, leave-one-out error
within the targets (median <= 20%, worst <= 50% in accelerator-hours), and the shape an expert expects."""

import math

import pytest

from accel.policies.calibration import (
    PublishedRun,
    calibrated_fit,
    leave_one_out,
    median,
    predict,
    published_mfu,
    published_runs,
)
from accel.policies.catalog import load_catalog


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def errors(catalog):
    return leave_one_out(catalog)


def test_the_table_holds_at_least_twenty_runs_each_with_a_listed_source():
    table = published_runs()
    assert len(table.runs) >= 20
    assert all(run.source in table.sources and len(table.sources[run.source]) > 20 for run in table.runs)


def test_the_table_spans_tpus_and_gpus_small_and_large_models_and_fleets():
    runs = published_runs().runs
    assert {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "a100-80gb", "h100-80gb"} <= {r.accelerator for r in runs}
    assert min(r.parameters for r in runs) < 1e9 < 100e9 < max(r.parameters for r in runs)
    assert min(r.chips for r in runs) <= 8 and max(r.chips for r in runs) >= 8192


def test_every_published_figure_is_a_plausible_utilisation(catalog):
    for run in published_runs().runs:
        assert 0.1 < published_mfu(run, catalog.accelerator(run.accelerator)) < 0.8, run.id


def test_a_row_must_give_exactly_one_published_figure():
    with pytest.raises(ValueError, match="exactly one"):
        PublishedRun(id="x-run", model="Model X", parameters=1e9, accelerator="h100-80gb", chips=8, precision="bf16",
                     mfu=0.4, tflops_per_chip=400, measured="step", source="llm-foundry")


def test_leave_one_out_median_error_in_accelerator_hours_is_at_most_20_percent(errors):
    assert median([abs(e.error) for e in errors]) <= 0.20


def test_leave_one_out_worst_error_in_accelerator_hours_is_at_most_50_percent(errors):
    worst = max(errors, key=lambda e: abs(e.error))
    assert abs(worst.error) <= 0.50, f"{worst.run.id}: {worst.error:+.0%}"


def test_every_run_is_predicted_none_dropped(errors):
    assert [e.run.id for e in errors] == [r.id for r in published_runs().runs]


def test_mfu_falls_as_the_fleet_grows(catalog):
    fit, h100 = calibrated_fit(catalog), catalog.accelerator("h100-80gb")
    values = [predict(fit, catalog, h100, 70e9, chips) for chips in (8, 64, 512, 4096, 16384)]
    assert values == sorted(values, reverse=True) and values[0] > values[-1]


def test_mid_sized_models_run_hotter_than_tiny_or_huge_ones(catalog):
    fit, a100 = calibrated_fit(catalog), catalog.accelerator("a100-80gb")
    tiny, mid, huge = (predict(fit, catalog, a100, n, 64) for n in (125e6, 10e9, 1e12))
    assert mid > tiny and mid > huge


def test_v5p_runs_at_a_higher_mfu_than_v6e_as_maxtext_publishes(catalog):
    fit = calibrated_fit(catalog)
    v5p, v6e = (predict(fit, catalog, catalog.accelerator(a), 70e9, 256) for a in ("tpu-v5p", "tpu-v6e"))
    assert v5p > 1.2 * v6e


def test_an_h200_is_predicted_from_h100_runs(catalog):
    fit = calibrated_fit(catalog)
    assert predict(fit, catalog, catalog.accelerator("h200-141gb"), 8e9, 64) == pytest.approx(
        predict(fit, catalog, catalog.accelerator("h100-80gb"), 8e9, 64))


def test_pcie_cards_without_published_runs_run_below_nvlink_gpus(catalog):
    fit = calibrated_fit(catalog)
    l4 = predict(fit, catalog, catalog.accelerator("l4"), 1e9, 8)
    a100 = predict(fit, catalog, catalog.accelerator("a100-80gb"), 1e9, 8)
    assert l4 == pytest.approx(a100 * 0.7 * math.exp(-calibrated_fit(catalog).accelerator_offsets["a100-80gb"]),
                               rel=1e-9)
