"""A serving replica whose tensor parallelism exceeds the model's KV heads stores copies of them.

Each tensor-parallel rank stores at least one whole KV head: vLLM v0.33.0 get_num_kv_heads is max(1, KV heads // TP)
per GPU (vllm/config/model.py l.1679-1683), vLLM TPU pads the cache's KV heads up to the 'model' axis' devices
(tpu-inference 0.32.0 utils.py get_padded_num_heads). So TP 16 of Llama 3.1 70B (8 KV heads) stores its cache
twice over the replica, and a TPU7x 2x2x1 (8 JAX devices) of Qwen3 235B (4 KV heads) twice too. The serving
estimate sizes the batch by what is stored (InferenceModel.kv_copies, sequence_kv_bytes) and reads each copy once
per step, each rank its own at its own bandwidth (kv_reads_per_copy).

MaxText training shards the query and KV heads over its tensor axis without replicating either: a TPU7x long
sequence whose length cannot split over both devices of each chip by context parallelism widens tensor parallelism
instead, which must still divide the heads (accel/job/context_parallel.py slice_heads_problem).
"""

from __future__ import annotations

import dataclasses
import functools
import json

import pytest
from pydantic import ValidationError

from accel.base.errors import UsageError
from accel.job import context_parallel
from accel.job.context import JobContext
from accel.job.manifests import JobOptions, generate
from accel.policies.catalog import load_catalog
from accel.policies.catalog.model import KvCacheWidth
from accel.policies.estimator.estimate import InferenceModel, resolve
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def serving(model: dict, assumptions: dict | None = None):
    return workload_from_mapping({"name": "t", "kind": "inference", "model": model,
                                  "inference": {"tokens_per_second": 5000, "p99_latency_ms": 100},
                                  **({"assumptions": assumptions} if assumptions else {})}, "t.yaml")


LLAMA_70B = {"architecture": "llama3.1-70b", "sequence_length": 8192}     # 8 KV heads
QWEN_235B = {"architecture": "qwen3-235b-a22b", "sequence_length": 8192}  # 4 KV heads


def model_on(catalog, accelerator: str, model: dict, resolved=None, kv_reads: float = 1.0) -> InferenceModel:
    spec = serving(model)
    return InferenceModel(spec, resolved or resolve(spec, catalog.defaults), catalog.accelerator(accelerator),
                          kv_reads)


def llama_70b_and_as_if_16_kv_heads(catalog) -> tuple[InferenceModel, InferenceModel]:
    """Llama 3.1 70B on H100s as it is (8 KV heads) and, the mutation, as if it had 16: one copy at TP 16."""
    resolved = resolve(serving(LLAMA_70B), catalog.defaults)
    return (model_on(catalog, "h100-80gb", LLAMA_70B, resolved),
            model_on(catalog, "h100-80gb", LLAMA_70B, dataclasses.replace(resolved, kv_heads=16)))


# ----- the heads the estimate counts: the architecture's, else the assumption's -----

def test_the_heads_are_the_named_architectures(catalog):
    assert resolve(serving(LLAMA_70B), catalog.defaults).kv_heads == 8
    assert resolve(serving(QWEN_235B), catalog.defaults).kv_heads == 4


def test_a_model_named_by_size_alone_takes_the_assumed_width_and_its_heads(catalog):
    """assumptions.yaml kv_cache_width: 1,024 values of 8 heads (Llama 3's 8 x 128), one entry for both; a workload
    stating its own bytes per token still splits over the heads of the architecture it names, else those 8."""
    width = catalog.defaults.inference.kv_cache_width
    assert (width.value, width.heads) == (1024, 8)
    assert resolve(serving({"parameters": "70B"}), catalog.defaults).kv_heads == width.heads
    assert resolve(serving(QWEN_235B, {"kv_cache_bytes_per_token": 100_000}), catalog.defaults).kv_heads == 4


def test_a_width_that_is_no_whole_number_of_heads_is_refused():
    KvCacheWidth(value=1024, heads=8, source="8 x 128")
    with pytest.raises(ValidationError, match="do not split into 6 whole heads"):
        KvCacheWidth(value=1024, heads=6, source="mutated")
    with pytest.raises(ValidationError):
        KvCacheWidth(value=1024, heads=0, source="mutated")


# ----- vLLM on GPUs: at least one whole KV head per GPU -----

def test_up_to_the_kv_heads_the_ranks_split_one_copy(catalog):
    model = model_on(catalog, "h100-80gb", LLAMA_70B)
    assert [model.kv_copies(gpus) for gpus in (1, 2, 4, 8)] == [1, 1, 1, 1]


def test_past_the_kv_heads_each_rank_stores_a_whole_head(catalog):
    """TP 16 of 8 KV heads: 16 heads stored, twice the cache; TP 8 of 4 KV heads the same."""
    assert model_on(catalog, "h100-80gb", LLAMA_70B).kv_copies(16) == 2
    assert model_on(catalog, "h100-80gb", QWEN_235B).kv_copies(8) == 2
    assert model_on(catalog, "h100-80gb", QWEN_235B).kv_copies(16) == 4


def test_a_pipeline_stage_counts_its_own_tensor_ranks(catalog):
    """16 GPUs over 2 stages are TP 8 per stage: each stage splits its layers' 8 heads, one copy."""
    model = model_on(catalog, "h100-80gb", LLAMA_70B)
    assert model.kv_copies(16, stages=2) == 1
    assert model.sequence_kv_bytes(16, 2) == model.kv_bytes_per_sequence
    assert model.sequence_kv_bytes(16) == 2 * model.kv_bytes_per_sequence


def test_ranks_that_do_not_divide_the_heads_count_whole_heads(catalog):
    """vLLM refuses TP 3 of 8 heads (accel/job model_run.vllm_tensor_parallel_problem); the estimate, which prices it,
    counts each rank's share rounded up to whole heads (3 x 3 of 8) rather than fewer heads than the model's."""
    model = model_on(catalog, "h100-80gb", LLAMA_70B)
    assert model.kv_copies(3) == pytest.approx(9 / 8)


def test_the_copies_shrink_the_batch_the_memory_holds(catalog):
    """Mutated: the same replica charged one copy (as if 16 KV heads) fits more sequences than the real one."""
    real, once = llama_70b_and_as_if_16_kv_heads(catalog)
    assert once.kv_copies(16) == 1
    free = 16 * real.usable_hbm - real.weight_bytes
    assert real.memory_batch(16) == int(free // (2 * real.kv_bytes_per_sequence))
    assert real.memory_batch(16) < once.memory_batch(16)
    assert real.memory_batch(8) == once.memory_batch(8)


# ----- the step's reads: each copy once, each rank at its own bandwidth -----

def test_a_replicated_cache_is_read_once_per_copy(catalog):
    """Each rank reads the head it stores: the replica's attention reads 2 x the cache over 16 GPUs' bandwidth."""
    real, once = llama_70b_and_as_if_16_kv_heads(catalog)
    assert real.kv_reads_per_copy(16) == 1
    assert real.step_seconds(16, 64)[0] > once.step_seconds(16, 64)[0]
    assert real.step_seconds(8, 64)[0] == once.step_seconds(8, 64)[0]


def test_a_per_query_head_kernel_reads_the_heads_as_often_however_they_are_stored(catalog):
    """A kernel reading a KV head once per query head (TensorRT-LLM without XQA: 64 / 8 = 8 reads of each value)
    reads the model's heads 8 times in all at TP 16 too, each of the 2 copies 4 times; the copies never read less
    than once each."""
    model = model_on(catalog, "h100-80gb", LLAMA_70B, kv_reads=8.0)
    assert model.kv_reads_per_copy(8) == 8
    assert model.kv_copies(16) * model.kv_reads_per_copy(16) == 8
    few = model_on(catalog, "h100-80gb", QWEN_235B, kv_reads=1.5)
    assert few.kv_copies(16) * few.kv_reads_per_copy(16) == 4


# ----- vLLM TPU: the ranks are JAX devices, two per TPU7x chip -----

def test_a_tpu7x_replica_of_four_chips_stores_four_kv_heads_twice(catalog):
    """A 2x2x1 TPU7x serves at TP 8 devices (facts.toml jax_devices_per_chip): 4 KV heads padded to 8; a v6e of 4
    chips (TP 4) stores them once, and 8 KV heads fit 8 devices once."""
    assert model_on(catalog, "tpu7x", QWEN_235B).kv_copies(4) == 2
    assert model_on(catalog, "tpu-v6e", QWEN_235B).kv_copies(4) == 1
    assert model_on(catalog, "tpu7x", LLAMA_70B).kv_copies(4) == 1


# ----- the stand-in a GPU job serves is sized by the same copies -----

def test_the_stand_in_fit_counts_the_replicas_pipeline_stages(monkeypatch):
    """The stand-in's KV cache over 16 GPUs as TP 8 x PP 2 is one copy; as TP 16 two (the estimate's kv_copies)."""
    from accel.job import stand_in

    plan = _plan(json.dumps({"name": "s", "kind": "inference", "model": {"parameters": "60B", "sequence_length": 8192},
                             "hardware": {"accelerator": "h100-80gb", "chips": 16, "cloud": "gcp"},
                             "inference": {"tokens_per_second": 2000, "precision": "bf16"}}, sort_keys=True))
    row = stand_in.by_size(60e9)
    pipelined, wide = stand_in._fit(plan, row, 16, 2), stand_in._fit(plan, row, 16, 1)
    assert wide.kv_bytes == 2 * pipelined.kv_bytes


# ----- MaxText on a TPU7x slice: a widened tensor degree still divides the heads -----

@functools.cache
def _plan(workload_json: str):
    return choose_plan(workload_from_mapping(json.loads(workload_json), "t.yaml"), load_catalog())


def long_training(sequence: int):
    """Qwen3 30B-A3B (32 query, 4 KV heads) on a TPU7x 2x2x1: the estimate shares the sequence over ICI TP4 chips."""
    return _plan(json.dumps({"name": "l", "kind": "pretrain",
                             "model": {"architecture": "qwen3-30b-a3b", "sequence_length": sequence},
                             "training": {"tokens": "5B", "framework": "jax", "precision": "bf16"},
                             "constraints": {"clouds": ["gcp"], "deadline_days": 30},
                             "hardware": {"accelerator": "tpu7x", "topology": "2x2x1"}}, sort_keys=True))


def test_a_length_that_splits_over_the_devices_keeps_the_heads_degree():
    """393,220 tokens split into 2 x CP2 chunks: the chips' two devices take CP2, tensor parallelism stays 4."""
    plan = long_training(393_220)
    layout = context_parallel.slice_layout(plan)
    assert (layout.tensor, layout.context) == (4, 2)
    assert context_parallel.slice_heads_problem(plan) is None
    job = generate(plan, JobContext(stack="t"), JobOptions())
    assert "ici_tensor_parallelism=4 ici_context_parallelism=2 " in json.dumps(job.manifests)


def test_a_doubled_tensor_degree_past_the_heads_is_refused_not_written():
    """Mutated: 393,218 tokens (2 x an odd number) take no CP2, so the devices would widen tensor parallelism to 8,
    which 4 KV heads do not divide: MaxText would fail at start-up sharding them; the job refuses, saying why."""
    plan = long_training(393_218)
    layout = context_parallel.slice_layout(plan)
    assert (layout.chip_tensor, layout.tensor, layout.context) == (4, 8, 1)
    with pytest.raises(UsageError) as refused:
        generate(plan, JobContext(stack="t"), JobOptions())
    message = str(refused.value)
    assert message.startswith("model.architecture: qwen3-30b-a3b: a 393,218-token sequence is shared by ICI TP4 "
                              "chips, 2 JAX devices each")
    assert "tensor parallelism 8 over them does not divide its 32 query and 4 KV heads" in message
    assert "base.yml l.542-544" in message
    assert "give model.sequence_length a multiple of 4" in message


def test_a_command_of_the_users_own_is_told_instead():
    plan = long_training(393_218)
    job = generate(plan, JobContext(stack="t"), JobOptions(command="python3 -m my.train"))
    notes = " ".join(job.derivations)
    assert "MaxText would refuse these degrees: model.architecture: qwen3-30b-a3b" in notes
