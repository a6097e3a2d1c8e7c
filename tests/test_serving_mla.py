"""A multi-latent-attention model's serving KV cache is its latent, as vLLM stores it: one vector of kv_lora_rank +
qk_rope_head_dim values per token and layer, no separate K and V (vLLM v0.8.5 vllm/config.py get_head_size,
vllm/v1/kv_cache_interface.py "For MLA we only store a single latent vector"); and vLLM gives every tensor-parallel
GPU one latent head (get_num_kv_heads returns 1 under MLA, not divided by the tensor-parallel size), so each rank of
a stage holds and reads the whole latent of its layers. DeepSeek-V3: 61 x (512 + 64) = 35,136 values per token, a
copy per tensor-parallel GPU, where the generic 2 x layers x 1,024 assumed 124,928 for the replica."""

import dataclasses

import pytest

from accel.policies.catalog import load_catalog
from accel.policies.estimator.estimate import InferenceModel, resolve
from accel.policies.workload import workload_from_mapping


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def serving(model: dict, assumptions: dict | None = None):
    return workload_from_mapping({"name": "t", "kind": "inference", "model": model,
                                  "inference": {"tokens_per_second": 5000, "p99_latency_ms": 100},
                                  **({"assumptions": assumptions} if assumptions else {})}, "t.yaml")


DEEPSEEK = {"architecture": "deepseek3-671b", "sequence_length": 32768}


def test_the_deepseek_v3_cache_is_its_latent_per_layer(catalog):
    resolved = resolve(serving(DEEPSEEK), catalog.defaults)
    assert resolved["kv_cache_bytes_per_token"] == 61 * (512 + 64) * 2     # bf16, once: no K,V factor
    assert resolved.kv_cache_per_tensor_rank
    assert "get_num_kv_heads" in resolved.sources["kv_cache_bytes_per_token"]


def test_a_grouped_query_row_keeps_k_and_v_per_head_shared_over_ranks(catalog):
    resolved = resolve(serving({"architecture": "mixtral-8x7b"}), catalog.defaults)
    assert resolved["kv_cache_bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    assert not resolved.kv_cache_per_tensor_rank


def test_a_stated_cache_size_is_taken_as_the_replicas(catalog):
    resolved = resolve(serving(DEEPSEEK, {"kv_cache_bytes_per_token": 70_000}), catalog.defaults)
    assert resolved["kv_cache_bytes_per_token"] == 70_000
    assert not resolved.kv_cache_per_tensor_rank


def model_on(catalog, accelerator: str, resolved=None) -> InferenceModel:
    spec = serving(DEEPSEEK)
    return InferenceModel(spec, resolved or resolve(spec, catalog.defaults), catalog.accelerator(accelerator))


def test_each_tensor_parallel_gpu_holds_the_whole_latent(catalog):
    model = model_on(catalog, "h200-141gb")
    assert model.kv_copies(8) == 8 and model.kv_copies(16, stages=2) == 8 and model.kv_copies(1) == 1
    assert model.sequence_kv_bytes(16, 2) == 8 * model.kv_bytes_per_sequence


def test_a_tpu_replica_holds_the_whole_latent_on_every_chip_too(catalog):
    """vLLM TPU shards an MLA cache over the batch and KV-context axes, not the tensor-parallel one (tpu-inference
    0.32.0 runner/kv_cache.py l.171-175): each chip of a replica of 8 holds it whole, as each GPU does."""
    tpu = next(a.id for a in catalog.accelerators.values() if a.family == "tpu")
    assert model_on(catalog, tpu).kv_copies(8) == 8 and model_on(catalog, tpu).kv_copies(1) == 1


def test_the_copies_shrink_the_batch_and_slow_attention(catalog):
    spec = serving(DEEPSEEK)
    resolved = resolve(spec, catalog.defaults)
    per_rank = model_on(catalog, "h200-141gb", resolved)
    once = model_on(catalog, "h200-141gb", dataclasses.replace(resolved, kv_cache_per_tensor_rank=False))
    replicated, shared = per_rank.replica(16, 2)[0], once.replica(16, 2)[0]
    assert replicated.batch < shared.batch
    assert per_rank.step_seconds(16, 32, 2)[0] > once.step_seconds(16, 32, 2)[0]
