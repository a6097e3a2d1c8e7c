"""The serving model against published serving throughput (TensorRT-LLM H100/L40S fp8, A100 fp16): each
figure's exact batch, lengths, precision and tensor parallelism through InferenceModel, nothing fitted."""

import pytest

from accel.policies.calibration import median
from accel.policies.catalog import load_catalog
from accel.policies.serving_figures import published_serving, serving_errors


@pytest.fixture(scope="module")
def errors():
    return serving_errors(load_catalog())


def test_every_published_serving_figure_names_its_source():
    table = published_serving()
    assert len(table.figures) >= 10
    assert all(len(table.sources[f.source]) > 20 for f in table.figures)


def test_the_median_serving_figure_is_predicted_within_30_percent(errors):
    assert median([abs(e.error) for e in errors]) <= 0.30


def test_prefill_heavy_figures_are_slower_than_decode_heavy_ones_as_published(errors):
    by_id = {e.figure.id: e.predicted for e in errors}
    assert by_id["trt-h100-fp8-llama7b-2048-128"] < by_id["trt-h100-fp8-llama7b-128-2048"]


@pytest.mark.xfail(strict=True, reason="measured: Llama 2 70B fp8 long-output figures (TensorRT-LLM v0.6.1) are "
                                       "2-4.5x below the bandwidth model; not explained yet")
def test_every_published_serving_figure_is_predicted_within_30_percent(errors):
    worst = max(errors, key=lambda e: abs(e.error))
    assert abs(worst.error) <= 0.30, f"{worst.figure.id}: {worst.error:+.0%}"
