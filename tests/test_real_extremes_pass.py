"""The workload's sanity bounds (policies/workload.py) refuse typos, never a real workload at the edge of what is
run: a 1T-parameter mixture of experts on 100T tokens, a ten-year serving run, a 100,000-GPU fleet."""

from __future__ import annotations

import pytest

from accel.policies.workload import workload_from_mapping

BASE = {"name": "edge", "owner": "x", "constraints": {"clouds": ["gcp", "aws"]}}

EXTREMES = {
    # Kimi K2-shaped: 1.04T total, 32B active, 384 routed experts, 8 per token, 1 shared; 100T tokens.
    "1T-parameter MoE on 100T tokens": {
        "kind": "pretrain",
        "model": {"parameters": "1.04T", "active_parameters": "32B", "experts": 384, "experts_per_token": 8,
                  "shared_experts": 1, "layers": 61, "hidden": 7168},
        "training": {"tokens": "100T", "global_batch_tokens": "64M"},
        "constraints": {"clouds": ["gcp", "aws"], "deadline_days": 3650}},
    "ten-year serving run": {
        "kind": "inference", "model": {"parameters": "70B"},
        "inference": {"tokens_per_second": 1_000_000, "hours": 87_660}},   # 10 x 365.25 days
    "100,000-GPU fleet": {
        "kind": "pretrain", "model": {"parameters": "405B"}, "training": {"tokens": "100T"},
        "hardware": {"accelerator": "h100-80gb", "chips": 100_000},
        "constraints": {"clouds": ["gcp", "aws"], "max_chips": 100_000}},
}


@pytest.mark.parametrize("name", EXTREMES)
def test_a_real_workload_at_the_edge_passes_the_sanity_bounds(name):
    spec = workload_from_mapping({**BASE, **EXTREMES[name]}, name)
    assert spec.kind == EXTREMES[name]["kind"]
