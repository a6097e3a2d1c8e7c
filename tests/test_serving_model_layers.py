"""The serving estimate counts a model's layers as the workload states them, and a mixture-of-experts model's
layers from the parameters a token passes through, as the training estimate does (model_architecture): the KV
cache per token is 2 x layers x KV width x bytes, so a count from the total parameters gave DeepSeek-V3 (671B, 37B
active, 61 layers) 175 layers and 2.9x its KV cache, and a user's `model.layers: 61` was ignored (audit4 sweep)."""

import pytest

from accel.policies.catalog import load_catalog
from accel.policies.estimator.estimate import model_architecture, resolve
from accel.policies.workload import workload_from_mapping

DEEPSEEK_V3 = {"parameters": "671B", "active_parameters": "37B", "experts": 256, "experts_per_token": 8,
               "shared_experts": 1, "sequence_length": 32768}


@pytest.fixture(scope="module")
def defaults():
    return load_catalog().defaults


def serving(model: dict):
    return workload_from_mapping({"name": "t", "kind": "inference", "model": model,
                                  "inference": {"tokens_per_second": 5000}}, "t.yaml")


def test_stated_layers_size_the_kv_cache(defaults):
    resolved = resolve(serving({**DEEPSEEK_V3, "layers": 61}), defaults)
    width = defaults.inference.kv_cache_width.value
    assert resolved["model_layers"] == 61
    assert resolved["kv_cache_bytes_per_token"] == 2 * 61 * width * 2   # K and V, bf16
    assert resolved.sources["kv_cache_bytes_per_token"].startswith("61 layers (model.layers) x")


def test_a_mixture_of_experts_counts_layers_from_its_active_parameters_as_training_does(defaults):
    moe = serving(DEEPSEEK_V3)
    dense_of_the_active_size = serving({"parameters": "37B", "sequence_length": 32768})
    resolved = resolve(moe, defaults)
    assert resolved["model_layers"] == resolve(dense_of_the_active_size, defaults)["model_layers"]
    assert resolved["model_layers"] == model_architecture(moe, defaults)[0] < 80   # 67, not 175


def test_a_dense_model_without_layers_is_estimated_as_before(defaults):
    # Llama 3 70B: 0.02 x (70e9)^(1/3) = 82 layers (it has 80), the rule's own example.
    assert resolve(serving({"parameters": "70B"}), defaults)["model_layers"] == 82


def test_a_latent_attention_architecture_says_its_layers_are_the_architectures(defaults):
    # DeepSeek-V3's row (MLA attention) has no head_dim: its source said "61 layers (estimated)" with the cube-root
    # rule, a count nobody estimated; it now sizes the latent of the row's own 61 layers (tests/test_serving_mla.py).
    resolved = resolve(serving({"architecture": "deepseek3-671b", "sequence_length": 32768}), defaults)
    assert resolved["model_layers"] == 61
    source = resolved.sources["kv_cache_bytes_per_token"]
    assert source.startswith("architecture deepseek3-671b: multi-latent attention, 61 layers x")
    assert defaults.inference.kv_cache_layers_per_cube_root.source not in source
