"""The serving estimate's hidden width (what each tensor-parallel all-reduce of a decode step carries: batch x hidden
x 2 bytes) is the model's: `model.hidden` where stated (a named architecture's row fills it in), else estimated from
the parameters a token passes through and the layers, by the one derivation training uses (model_hidden, through
model_architecture). It took a mixture of experts' total parameters and ignored model.hidden: Mixtral 8x7B (46.7B,
12.9B active, hidden 4,096) was given an 11,028-wide activation, 2.7x the message (audit4 sweep)."""

import math

import pytest

from accel.policies.catalog import load_catalog
from accel.policies.estimator.estimate import (
    InferenceModel, assumption_list, model_architecture, model_hidden, resolve)
from accel.policies.workload import workload_from_mapping

MIXTRAL_SHAPE = {"parameters": 46.7e9, "active_parameters": 12.9e9, "experts": 8, "experts_per_token": 2,
                 "layers": 32, "sequence_length": 32768}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def serving(model: dict):
    return workload_from_mapping({"name": "t", "kind": "inference", "model": model,
                                  "inference": {"tokens_per_second": 8000, "p99_latency_ms": 60}}, "t.yaml")


def replica_model(catalog, spec, accelerator: str = "h100-80gb") -> InferenceModel:
    return InferenceModel(spec, resolve(spec, catalog.defaults), catalog.accelerator(accelerator))


def test_stated_hidden_sizes_the_all_reduce(catalog):
    spec = serving({**MIXTRAL_SHAPE, "hidden": 4096})
    model = replica_model(catalog, spec)
    assert model.hidden == 4096
    # 64 all-reduces a step (2 per layer x 32 layers), each of batch x 4,096 x 2 bytes: 1,728 KiB at batch 216 over 4
    # H100 is 24.9 us in the vLLM row (it read 4,459 KiB, 40.2 us, from the total's 11,028).
    table = model.allreduce_table
    assert table is not None
    assert model.allreduce_seconds(4, 216) == pytest.approx(64 * table.microseconds("vllm", 4, 216 * 4096 * 2) * 1e-6)
    assert model.allreduce_seconds(4, 216) < 64 * table.microseconds("vllm", 4, 216 * 11028 * 2) * 1e-6


def test_a_named_architecture_serves_at_its_own_width_and_the_estimate_says_where_it_came_from(catalog):
    spec = serving({"architecture": "mixtral-8x7b", "sequence_length": 32768})
    model = replica_model(catalog, spec)
    assert model.hidden == 4096 == model_architecture(spec, catalog.defaults)[1]
    resolved = resolve(spec, catalog.defaults)
    items = assumption_list(spec, resolved, catalog, catalog.accelerator("h100-80gb"), "aws", False, 8, 1,
                            "aws-p5-list", {"replica_chips": 4, "batch_per_replica": 216})
    [allreduce] = [a for a in items if a.name == "tensor-parallel all-reduce latency"]
    assert "1,728 KiB over 4 chips" in allreduce.value
    assert "hidden 4,096 from model.hidden" in allreduce.source and "Kaplan" not in allreduce.source


def test_a_mixture_of_experts_without_hidden_derives_it_from_its_active_parameters_as_training_does(catalog):
    spec = serving(MIXTRAL_SHAPE)
    model = replica_model(catalog, spec)
    rule = catalog.defaults.inference.hidden_width_rule.value
    assert model.hidden == model_architecture(spec, catalog.defaults)[1] == model_hidden(spec, 32, rule)[0]
    assert model.hidden == pytest.approx(math.sqrt(12.9e9 / (rule * 32)))   # 5,796, not the total's 11,028


def test_a_dense_model_without_hidden_is_estimated_as_before(catalog):
    # Llama 3 70B: sqrt(70e9 / (12 x 82 estimated layers)) = 8,434 (its config: 8,192), the figure the plans print.
    spec = serving({"parameters": "70B"})
    assert replica_model(catalog, spec).hidden == pytest.approx(math.sqrt(70e9 / (12 * 82)))
    assert round(replica_model(catalog, spec).hidden) == 8434
