"""vLLM TPU's KV cache as tpu-inference 0.32.0 lays it out (policies/estimator/tpu_kv_layout.py), charged on a TPU only.

Its ragged paged attention kernel pads each head's width to 128 lanes (utils.py get_padded_head_dim, kernels/
ragged_paged_attention/v3/kernel.py get_kv_cache_shape), except a width of 64, whose own kernel holds a head's K and V
in one 128-lane row (kernel_hd64.py); either way a device's K/V rows fill whole 32-bit words (packing 2 at bf16, 4 at
fp8), and a multi-latent cache pads its latent and rotary key to 128 each. GPUs (vLLM) store the model's own width.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, strategies as st

from accel.policies import architectures
from accel.policies.catalog import load_catalog
from accel.policies.estimator import tpu_kv_layout
from accel.policies.estimator.estimate import InferenceModel, resolve
from accel.policies.workload import workload_from_mapping


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def serving(model: dict, precision: str = "bf16"):
    return workload_from_mapping({"name": "t", "kind": "inference", "model": model,
                                  "inference": {"tokens_per_second": 5000, "p99_latency_ms": 100,
                                                "precision": precision}}, "t.yaml")


LLAMA_8B = {"architecture": "llama3.1-8b", "sequence_length": 8192}       # 8 KV heads of 128
DEEPSEEK = {"architecture": "deepseek3-671b", "sequence_length": 8192}    # latent 512 + rotary key 64


def model_on(catalog, accelerator: str, spec, resolved=None) -> InferenceModel:
    return InferenceModel(spec, resolved or resolve(spec, catalog.defaults), catalog.accelerator(accelerator))


def with_head_dim(monkeypatch, name: str, head_dim: int):
    """The named row with another head width (the mutation: a model of head_dim 80, 64, ...)."""
    row = dataclasses.replace(architectures.lookup(name), head_dim=head_dim)
    monkeypatch.setattr(architectures, "lookup", lambda architecture: row)
    return row


# ----- the rule, from the kernels' cache shapes -----

@pytest.mark.parametrize("head_dim, stored", [(64, 64), (80, 128), (96, 128), (128, 128), (192, 256), (256, 256)])
def test_the_head_width_vllm_tpu_stores(head_dim, stored):
    assert tpu_kv_layout.padded_head_dim(head_dim) == stored


@pytest.mark.parametrize("heads, head_dim, kv_bytes, stored", [
    (1, 128, 2, 1), (2, 128, 2, 2),            # bf16: K and V of one head fill whole words
    (1, 128, 1, 2), (2, 128, 1, 2), (3, 128, 1, 4),   # fp8: four values a word, so heads in pairs
    (1, 64, 2, 2), (2, 64, 2, 2), (3, 64, 2, 4),      # head_dim 64: one row holds a head's K and V, rows in pairs
    (1, 64, 1, 4),
])
def test_the_heads_a_device_stores_round_to_its_words(heads, head_dim, kv_bytes, stored):
    assert tpu_kv_layout.heads_stored(heads, head_dim, kv_bytes) == stored


@given(st.integers(1, 64), st.sampled_from([64, 80, 96, 112, 128, 160, 192, 256]), st.sampled_from([1.0, 2.0]))
def test_a_device_never_stores_less_than_its_heads_and_no_more_than_a_word_over(heads, head_dim, kv_bytes):
    stored = tpu_kv_layout.heads_stored(heads, head_dim, kv_bytes)
    values = stored * 2 * tpu_kv_layout.padded_head_dim(head_dim)          # K and V, each head's stored width
    shape = (-(-heads // tpu_kv_layout.packing(kv_bytes)) * tpu_kv_layout.packing(kv_bytes) * 128 if head_dim == 64
             else -(-2 * heads // tpu_kv_layout.packing(kv_bytes)) * tpu_kv_layout.packing(kv_bytes)
             * -(-head_dim // 128) * 128)                                  # the kernels' last three axes
    assert values == shape
    assert heads <= stored < heads + tpu_kv_layout.packing(kv_bytes)


def test_deepseek_v3s_latent_pads_its_rotary_key():
    assert tpu_kv_layout.latent_width_factor(512, 64) == pytest.approx(640 / 576)


# ----- charged on a TPU only -----

def test_a_head_width_of_80_costs_128_on_tpu_and_80_on_gpu(catalog, monkeypatch):
    with_head_dim(monkeypatch, "llama3.1-8b", 80)
    spec = serving(LLAMA_8B)
    resolved = resolve(spec, catalog.defaults)
    assert resolved.kv_head_dim == 80
    assert resolved["kv_cache_bytes_per_token"] == 2 * 32 * 8 * 80 * 2
    on_tpu, on_gpu = model_on(catalog, "tpu-v6e", spec, resolved), model_on(catalog, "h100-80gb", spec, resolved)
    assert on_gpu.kv_bytes_per_token == resolved["kv_cache_bytes_per_token"]
    assert on_tpu.kv_bytes_per_token == pytest.approx(resolved["kv_cache_bytes_per_token"] * 128 / 80)
    assert on_tpu.sequence_kv_bytes(4) == pytest.approx(on_gpu.sequence_kv_bytes(4) * 128 / 80)
    # The mutated case: without the padding the TPU replica would batch more sequences than its HBM holds.
    unpadded = model_on(catalog, "tpu-v6e", spec, dataclasses.replace(resolved, tpu_kv_width=1.0))
    assert unpadded.memory_batch(4) > on_tpu.memory_batch(4)


def test_a_head_width_of_64_is_kept_but_one_head_a_device_takes_two_heads_room(catalog, monkeypatch):
    with_head_dim(monkeypatch, "llama3.1-8b", 64)
    spec = serving(LLAMA_8B)
    resolved = resolve(spec, catalog.defaults)
    on_tpu = model_on(catalog, "tpu-v6e", spec, resolved)
    assert on_tpu.kv_bytes_per_token == resolved["kv_cache_bytes_per_token"]   # no width padding at 64
    assert on_tpu.kv_copies(4) == 1.0                                          # 2 heads a device: one word row
    assert on_tpu.kv_copies(8) == 2.0                                          # 1 head a device: padded to 2
    assert model_on(catalog, "h100-80gb", spec, resolved).kv_copies(8) == 1.0


def test_fp8_on_tpu7x_stores_one_head_a_device_as_two(catalog):
    """Llama 3.1 8B at fp8 on a TPU7x 2x2x1: 8 devices, one KV head each, K and V two values of four a word."""
    spec = serving(LLAMA_8B, "fp8")
    tpu7x = model_on(catalog, "tpu7x", spec)
    assert tpu7x.kv_bytes_per_value == 1.0
    assert tpu7x.kv_copies(4) == 2.0        # 8 devices
    assert tpu7x.kv_copies(1) == 1.0        # 2 devices, 4 heads each
    assert model_on(catalog, "h100-80gb", spec).kv_copies(8) == 1.0
    bf16 = model_on(catalog, "tpu7x", serving(LLAMA_8B))
    assert bf16.kv_copies(4) == 1.0         # bf16: K and V of one head fill a word


def test_a_multi_latent_cache_on_tpu_pads_to_640(catalog):
    spec = serving(DEEPSEEK)
    resolved = resolve(spec, catalog.defaults)
    on_tpu, on_gpu = model_on(catalog, "tpu-v6e", spec, resolved), model_on(catalog, "h200-141gb", spec, resolved)
    assert on_gpu.kv_bytes_per_token == resolved["kv_cache_bytes_per_token"]
    assert on_tpu.kv_bytes_per_token == pytest.approx(resolved["kv_cache_bytes_per_token"] * 640 / 576)


def test_the_bundled_128_wide_bf16_models_store_what_the_estimate_counts(catalog):
    """v5e and v6e serve at bf16 (no fp8): every row of 128 or 256 per head is stored as counted."""
    for name in ("llama3.1-8b", "llama3.1-70b", "qwen3-32b", "gemma3-27b", "gemma2-9b"):
        spec = serving({"architecture": name, "sequence_length": 4096})
        resolved = resolve(spec, catalog.defaults)
        assert resolved.tpu_kv_width == 1.0
        for chip in ("tpu-v5e", "tpu-v6e"):
            model = model_on(catalog, chip, spec, resolved)
            assert model.kv_bytes_per_token == resolved["kv_cache_bytes_per_token"]
            gpu = model_on(catalog, "h100-80gb", spec, resolved)
            assert [model.kv_copies(n) for n in (1, 2, 4, 8, 16)] == [gpu.kv_copies(n) for n in (1, 2, 4, 8, 16)]


def test_a_model_named_by_size_alone_takes_the_assumed_128(catalog):
    resolved = resolve(serving({"parameters": "8B", "sequence_length": 4096}), catalog.defaults)
    assert (resolved.kv_head_dim, resolved.tpu_kv_width) == (128, 1.0)
