"""The MFU model against the table of published training runs: every row sourced, leave-one-out error
within the targets (median <= 20%, worst <= 50% in accelerator-hours), and the shape an expert expects."""

import math

import pytest

from accel.policies.estimator.calibration import (
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


# ---- the data-centre-network cost of a multislice (policies/estimator/dcn.py) ---------------------------------------

def _multislice_mfu(catalog, parameters: float, slices: int, chips_per_slice: int = 256) -> float:
    from accel.policies.estimator.calibration import calibrated_fit, predict

    fitted = calibrated_fit(catalog)
    return predict(fitted, catalog, catalog.accelerator("tpu-v5e"), parameters, chips_per_slice * slices, slices,
                   global_batch_tokens=16e6)


def _dcn_efficiency(catalog, parameters: float, slices: int, chips_per_slice: int = 256,
                    batch_tokens: float = 16e6) -> float:
    from accel.policies.estimator.calibration import calibrated_fit, dcn_breakdown, predict

    fitted = calibrated_fit(catalog)
    accelerator = catalog.accelerator("tpu-v5e")
    chips = chips_per_slice * slices
    slice_mfu = predict(fitted, catalog, accelerator, parameters, chips, slices, multislice_efficiency=1.0)
    return dcn_breakdown(catalog, accelerator, parameters, chips, slices, slice_mfu, batch_tokens).efficiency


def test_dcn_efficiency_falls_as_the_slices_grow(catalog):
    efficiencies = [_dcn_efficiency(catalog, 64e9, slices) for slices in (2, 4, 8, 16, 32)]
    assert all(later < earlier for earlier, later in zip(efficiencies, efficiencies[1:]))
    assert efficiencies[-1] < 1.0


def test_a_larger_model_pays_more_for_the_same_compute_per_step(catalog):
    # The same FLOPs per step (parameters x batch tokens), as MaxText's configs run a larger model at a smaller
    # per-chip batch: the larger model all-reduces 8x the gradient bytes in that step.
    small = _dcn_efficiency(catalog, 16e9, 16, batch_tokens=16e6)
    large = _dcn_efficiency(catalog, 128e9, 16, batch_tokens=2e6)
    assert large < small


def test_the_dcn_time_is_the_ring_all_reduce_of_the_gradients_over_each_chips_dcn_bandwidth():
    from accel.policies.estimator.dcn import GBPS_TO_BYTES, dcn_seconds

    # 2 slices of 256 chips, 10B parameters, 4 bytes each: each slice moves 2*(1/2)*40 GB over 256 x 25 Gb/s.
    expected = 40e9 / (256 * 25 * GBPS_TO_BYTES)
    assert dcn_seconds(10e9, 512, 2, 25, 4) == pytest.approx(expected)
    assert dcn_seconds(10e9, 256, 1, 25, 4) == 0.0


def test_one_slice_pays_no_dcn_cost(catalog):
    from accel.policies.estimator.calibration import dcn_breakdown

    assert dcn_breakdown(catalog, catalog.accelerator("tpu-v5e"), 64e9, 256, 1, 0.5) is None


def test_every_tpu_generation_has_a_sourced_dcn_bandwidth():
    from accel.policies import hardware

    generations = hardware.current().tpu_generations.values()
    assert generations
    for generation in generations:
        assert generation.dcn_gbps_per_chip > 0
        assert generation.dcn_source.split(":", 1)[0] in hardware.current().sources  # "<source id>: <its title>"


def test_the_multislice_estimate_falls_with_the_slice_count(catalog):
    mfus = [_multislice_mfu(catalog, 64e9, slices) for slices in (2, 8, 32)]
    assert mfus[0] > mfus[1] > mfus[2]
