"""A tensor-parallel serving replica pays its all-reduces wherever it runs (policies/estimator/fabric_allreduce.py):
no published latency table covers TPUs or PCIe GPUs, so a latency plus the bytes over a bandwidth charges them, 2
per layer. A TPU: the scaling book's model, 2 x (hops x hop latency + bytes / (axes x link bandwidth)) on the
replica's one-host slice. A PCIe GPU: NCCL's ring as NCCL's own cost model prices it, the faster of its LL and Simple
protocols. A one-chip replica pays nothing; NVLink GPUs keep the measured table."""

import pytest
from pydantic import ValidationError

from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.catalog.model import IciAllreduce
from accel.policies.estimator import fabric_allreduce
from accel.policies.estimator.estimate import InferenceModel, assumption_list, resolve
from accel.policies.workload import workload_from_mapping

HOP_S = 1e-6   # assumptions.yaml inference.ici_allreduce.hop_latency_us


def _model(accelerator: str) -> InferenceModel:
    catalog = load_catalog()
    spec = workload_from_mapping({
        "name": "llama-70b", "kind": "inference", "model": {"parameters": 70.6e9, "layers": 80, "hidden": 8192},
        "inference": {"tokens_per_second": 1, "p99_latency_ms": 1e6, "prompt_tokens": 32, "output_tokens": 128},
    }, "test")
    return InferenceModel(spec, resolve(spec, catalog.defaults), catalog.accelerator(accelerator), 1.0, 80)


def test_the_hop_latency_is_the_catalogs():
    assert load_catalog().defaults.inference.ici_allreduce.hop_latency_us.value * 1e-6 == HOP_S


@pytest.mark.parametrize("accelerator", ["tpu-v5e", "tpu-v6e", "tpu7x", "tpu-v5p", "l4", "l40s", "a10g"])
def test_a_one_chip_replica_pays_nothing(accelerator):
    assert _model(accelerator).allreduce_seconds(1, 64) == 0.0


def test_a_v6e_8_replica_pays_two_all_reduces_a_layer_over_its_2x4_slice():
    model = _model("tpu-v6e")
    message = 64 * 8192 * 2
    # v6e: 400 GB/s of ICI a chip each way over 4 links (2D torus): 100 GB/s a link; a 2x4 slice: 1 + 3 hops, 2 axes.
    one = 2 * (4 * HOP_S + message / (2 * 100e9))
    assert model.allreduce_seconds(8, 64) == pytest.approx(160 * one)


def test_the_latency_grows_with_the_degree_and_the_message():
    model = _model("tpu-v6e")
    assert 0 < model.allreduce_seconds(4, 64) < model.allreduce_seconds(8, 64)
    assert model.allreduce_seconds(8, 1) < model.allreduce_seconds(8, 64) < model.allreduce_seconds(8, 256)


def test_a_slower_ici_pays_more_for_the_same_message():
    assert _model("tpu-v5e").allreduce_seconds(8, 256) > _model("tpu-v6e").allreduce_seconds(8, 256)


@pytest.mark.parametrize("accelerator", ["tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x"])
def test_the_link_bandwidth_is_the_hardware_tables_ici_over_the_torus_links(accelerator):
    facts = hardware.current()
    generation = facts.generation_of_chip(accelerator)
    fabric = facts.collective_fabric(accelerator)
    path = fabric_allreduce.ici_route(accelerator, 4)
    assert path is not None
    assert path.link_bytes_per_s == fabric.scale_up_gbytes_per_s * 1e9 / (2 * generation.dimensions)


@pytest.mark.parametrize("generation, chips, topology, hops, axes", [
    ("v6e", 4, "2x2", 2, 2), ("v6e", 8, "2x4", 4, 2), ("v5e", 8, "2x4", 4, 2), ("tpu7x", 4, "2x2x1", 2, 2)])
def test_the_path_is_the_longest_route_through_the_replicas_one_host_slice(generation, chips, topology, hops, axes):
    accelerator = hardware.current().tpu_generations[generation].accelerator
    path = fabric_allreduce.ici_route(accelerator, chips)
    assert (path.topology, path.hops, path.axes) == (topology, hops, axes)


def test_nvlink_gpus_keep_the_measured_table():
    model = _model("h100-80gb")
    table = load_catalog().defaults.inference.allreduce_latency_us
    message = 64 * 8192 * 2
    assert model.allreduce_path(8, message) is None
    assert model.allreduce_seconds(8, 64) == pytest.approx(160 * table.microseconds("vllm", 8, message) * 1e-6)


def test_the_plan_says_how_it_was_charged():
    catalog = load_catalog()
    spec = workload_from_mapping({
        "name": "llama-70b", "kind": "inference", "model": {"parameters": 70.6e9, "layers": 80, "hidden": 8192},
        "inference": {"tokens_per_second": 1, "p99_latency_ms": 1e6, "prompt_tokens": 32, "output_tokens": 128},
    }, "test")
    resolved = resolve(spec, catalog.defaults)
    items = assumption_list(spec, resolved, catalog, catalog.accelerator("tpu-v6e"), "gcp", False, 8, 1, "price",
                            {"replica_chips": 8, "batch_per_replica": 64})
    [allreduce] = [a for a in items if a.name == "tensor-parallel all-reduce latency"]
    assert "2x4 slice over ICI" in allreduce.value and "4 hops x 1 us" in allreduce.value
    assert "scaling book" in allreduce.source and "ICI per chip" in allreduce.source
    one = assumption_list(spec, resolved, catalog, catalog.accelerator("tpu-v6e"), "gcp", False, 1, 1, "price",
                          {"replica_chips": 1, "batch_per_replica": 64})
    [none] = [a for a in one if a.name == "tensor-parallel all-reduce latency"]
    assert none.value == "none (one-chip replica)"


def test_a_hop_that_takes_no_time_is_refused():
    good = load_catalog().defaults.inference.ici_allreduce.model_dump()
    IciAllreduce.model_validate(good)
    bad = {**good, "hop_latency_us": {**good["hop_latency_us"], "value": 0.0}}
    with pytest.raises(ValidationError, match="hop_latency_us"):
        IciAllreduce.model_validate(bad)


# --- PCIe GPUs: NCCL's ring by NCCL's cost model (assumptions.yaml inference.pcie_allreduce) ---

LL = (6.6, 1.0, 0.5 * 24e9)       # base us, us a ring step, bus bandwidth (NCCL 2.30 tuning.cc, Gen4 x16 = 24 GB/s)
SIMPLE = (8.4, 5.7, 24e9)


def _nccl_ring_us(chips, message, protocol):
    base, step, bus = protocol
    steps = 2 * (chips - 1)
    return base + steps * step + message / (bus * chips / steps) * 1e6


@pytest.mark.parametrize("chips, batch", [(2, 1), (4, 8), (4, 64), (8, 256)])
def test_a_pcie_replica_pays_nccls_ring_at_the_faster_protocol(chips, batch):
    model = _model("l40s")
    message = batch * 8192 * 2
    expected = min(_nccl_ring_us(chips, message, LL), _nccl_ring_us(chips, message, SIMPLE))
    assert model.allreduce_seconds(chips, batch) == pytest.approx(160 * expected * 1e-6)


def test_a_small_message_takes_ll_and_a_large_one_simple():
    model = _model("l4")
    assert "LL:" in model.allreduce_path(4, 2048).how
    assert "Simple:" in model.allreduce_path(4, 4 * 2**20).how


def test_pcie_pays_more_than_nvlink_once_the_bytes_count():
    assert _model("l40s").allreduce_seconds(4, 64) > 2 * _model("h100-80gb").allreduce_seconds(4, 64)
    assert _model("l40s").allreduce_seconds(8, 64) > _model("l40s").allreduce_seconds(4, 64)


def test_an_accelerator_costed_both_ways_is_refused():
    inference = load_catalog().defaults.inference.model_dump()
    inference["pcie_allreduce"]["mfu_classes"] = ["gpu-pcie", "gpu-nvlink"]
    with pytest.raises(ValidationError, match="costed one way"):
        type(load_catalog().defaults.inference).model_validate(inference)
