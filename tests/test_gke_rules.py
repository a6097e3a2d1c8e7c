"""GKE's COMPACT-placement rules (policies/cloud/gke_rules.yaml): one answer for planner, components and guardrail."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accel.policies.cloud.gke_rules import compact_placement_problem, load_gke_rules

PROVISIONING = ("on-demand", "spot", "reservation", "flex-start", "queued")
GPU_MACHINES = ("a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g", "a2-ultragpu-8g",
                "g2-standard-48", "h4d-highmem-192")


def test_the_rules_name_their_source_and_date():
    rules = load_gke_rules()
    assert "cluster-toolkit" in rules.source and rules.as_of


@given(st.sampled_from(GPU_MACHINES), st.sampled_from(("on-demand", "spot", "reservation")))
def test_capacity_outside_the_dynamic_workload_scheduler_keeps_compact_placement(machine, provisioning):
    assert compact_placement_problem(machine, provisioning) is None


@given(st.sampled_from(GPU_MACHINES))
def test_queued_gpu_pools_never_take_compact_placement(machine):
    assert "queued" in compact_placement_problem(machine, "queued")


@pytest.mark.parametrize("machine, allowed", [("a3-ultragpu-8g", True), ("a4-highgpu-8g", True),
                                              ("h4d-highmem-192", True), ("a3-megagpu-8g", False),
                                              ("a3-highgpu-8g", False), ("g2-standard-48", False)])
def test_flex_start_takes_compact_placement_only_on_the_supported_series(machine, allowed):
    assert (compact_placement_problem(machine, "flex-start") is None) == allowed


@given(st.sampled_from(PROVISIONING))
def test_tpu_pools_are_exempt(provisioning):
    assert compact_placement_problem("ct6e-standard-4t", provisioning, tpu=True) is None
