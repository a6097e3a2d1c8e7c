"""A 405B service on Google Cloud alone, never on spot, for a month: why nothing serves it and what would.

From the capacity table's facts (policies/cloud/capacity_modes.yaml applicability, gcp-consumption-options): A3
High, A3 Mega and A2 are sold on demand, but 810 GB of bf16 weights fit no replica of A2's (8 x 80 GB, no scale-out
fabric to span nodes over) and only two-node pipelined replicas of A3's, too slow for the 60 ms bound; A3 Ultra and A4, whose one node holds them, are not sold on demand
(flex-start past 168 h is refused for a service) and A4X only through reservations. So the refusal is right; it
must say why and what would serve: at fp8 the same search finds an on-demand H100 fleet, named with its price.
"""

from __future__ import annotations

import pytest

from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import NoFeasibleOption, choose
from accel.policies.workload import workload_from_mapping


def service_405b(precision: str = "bf16", hours: float = 730, **constraints):
    return workload_from_mapping({
        "name": "serve-405b", "kind": "inference", "model": {"parameters": "405B", "sequence_length": 8192},
        "inference": {"tokens_per_second": 15000, "p99_latency_ms": 60, "framework": "pytorch",
                      "precision": precision, "hours": hours},
        "constraints": {"clouds": ["gcp"], "spot": "never", **constraints}}, "serve-405b.yaml")


@pytest.fixture(scope="module")
def refusal():
    with pytest.raises(NoFeasibleOption) as refused:
        choose(service_405b(), load_catalog())
    return refused.value


def test_the_refusal_says_the_machines_sold_on_demand_cannot_hold_the_weights_and_why_the_others_are_out(refusal):
    text = str(refusal)
    assert set(refusal.eliminations["memory"]) >= {"gcp-a2-ultragpu-8g"}
    # A3 High and A3 Mega hold the weights in two-node replicas, pipeline stages over their scale-out fabric
    # (tests/test_pipeline_serving.py), whose decode step misses the 60 ms p99 bound.
    assert set(refusal.eliminations["latency"]) == {"gcp-a3-highgpu-8g", "gcp-a3-megagpu-8g"}
    assert set(refusal.eliminations["capacity"]) == {"gcp-a3-ultragpu-8g", "gcp-a4-highgpu-8g", "gcp-a4x-highgpu-4g"}
    why = next(line for line in text.splitlines() if line.strip().startswith("why:"))
    assert "a serving replica stays within one NVLink domain, or spans whole nodes as pipeline stages" in why
    assert ("gcp-a3-highgpu-8g, gcp-a3-megagpu-8g hold them in replicas of whole nodes over the scale-out network, "
            "which miss the p99 bound") in why
    assert "outlives flex-start's longest request, 168 h" in why and "a declared reservation of" in why


def test_the_refusal_names_what_the_search_finds_at_fp8(refusal):
    at_fp8 = choose(service_405b("fp8"), load_catalog()).chosen
    assert at_fp8.cloud == "gcp" and at_fp8.provisioning == "on-demand" and at_fp8.machine_type.startswith("a3-")
    line = next(line for line in str(refusal).splitlines() if "what would serve" in line)
    assert "inference.precision: fp8" in line
    assert f"{at_fp8.hosts} x {at_fp8.machine_type}" in line and at_fp8.region in line


def test_a_week_long_405b_service_is_served_through_flex_start_instead():
    chosen = choose(service_405b(hours=168), load_catalog()).chosen
    assert chosen.provisioning == "flex-start" and chosen.price_source.startswith("gcp-accel-price-sheet-2026-09")


def test_the_lower_precisions_tried_are_the_tables_with_fewer_bytes_a_weight():
    from accel.policies.selection.serving_remedies import lower_precisions

    precisions = load_catalog().defaults.inference.precisions
    assert lower_precisions(precisions, "bf16") == lower_precisions(precisions, "fp16") == ["fp8", "int8"]
    assert lower_precisions(precisions, "fp8") == lower_precisions(precisions, "int8") == []


def test_an_int8_remedy_does_not_claim_a_smaller_kv_cache():
    # On A100 (no fp8 tensor cores, so fp8 is served at bf16 and fails as bf16 does) int8 weight-only is what
    # serves; it halves the weights but keeps the KV cache at 2 bytes a value (assumptions.yaml
    # inference.precisions), so the line must not say it halves the cache, as it did.
    with pytest.raises(NoFeasibleOption) as refused:
        choose(service_405b(accelerators=["a100-80gb"]), load_catalog())
    line = next(line for line in str(refused.value).splitlines() if "what would serve" in line)
    assert "inference.precision: int8 (half the bytes of bf16 weights; the KV cache stays at 2 bytes a value)" in line
    assert "KV cache)" not in line


def test_an_int8_remedy_says_the_checkpoint_it_needs_when_the_workload_names_none():
    """The serving job refuses int8 without an 8-bit checkpoint (vLLM quantizes no bf16 one to int8 as it loads), so
    a remedy that only said 'inference.precision: int8' led to a stack `accel plan` refuses (sweep6, ng02)."""
    with pytest.raises(NoFeasibleOption) as refused:
        choose(service_405b(accelerators=["a100-80gb"]), load_catalog())
    line = next(line for line in str(refused.value).splitlines() if "what would serve" in line)
    assert "from a checkpoint already quantized to 8-bit weights named in model.checkpoint" in line
    asked = service_405b(accelerators=["a100-80gb"]).model_dump(mode="json", exclude_none=True)
    named = workload_from_mapping({**asked, "model": {"parameters": "405B", "sequence_length": 8192,
                                             "checkpoint": "gs://acme/llama-405b-w8a16"}}, "w.yaml")
    with pytest.raises(NoFeasibleOption) as refused:
        choose(named, load_catalog())
    line = next(line for line in str(refused.value).splitlines() if "what would serve" in line)
    assert "inference.precision: int8" in line and "model.checkpoint" not in line
