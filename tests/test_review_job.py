"""What `accel job` writes says only what its manifests do (review of the 2026-11-27 session's job changes)."""

from __future__ import annotations

from accel.job.topology import REQUIRED, SLICE_REQUIRED
from tests.test_job import generated


def _pod_annotations(manifests) -> dict:
    jobset = next(m for m in manifests if m["kind"] == "JobSet")
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"].get("annotations") or {}


def _compute_domain_note(job) -> str:
    return next(line for line in job.derivations if line.startswith("ComputeDomain "))


def test_the_a4x_job_says_its_tensor_groups_are_placed_in_one_nvlink_domain_because_it_asks_kueue_to():
    job = generated("llama-405b-a4x")
    assert SLICE_REQUIRED in _pod_annotations(job.manifests)
    assert "each 2-node tensor-parallel group is placed inside one NVLink domain" in _compute_domain_note(job)


def test_the_a4x_fabric_check_asks_kueue_for_no_group_placement_so_its_note_claims_none():
    check = generated("llama-405b-a4x", validate=True)
    annotations = _pod_annotations(check.manifests)
    assert SLICE_REQUIRED not in annotations and REQUIRED not in annotations
    assert "tensor-parallel group" not in _compute_domain_note(check)
