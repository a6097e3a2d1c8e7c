"""What `accel job` writes says only what its manifests do (review of the 2026-11-27 session's job changes)."""

from __future__ import annotations

import pytest

from accel.job.topology import PREFERRED, REQUIRED, SLICE_REQUIRED, SLICE_SIZE
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


# ---- one Google Cloud project id rule for gcp:project and a shared reservation's path -----------------------------

SHARED_IN_A_DOMAIN_SCOPED_PROJECT = "projects/example.com:ml-train/reservations/a4x-held/reservationBlocks/block-1"


def test_a_shared_reservation_of_a_domain_scoped_project_is_taken_as_its_project_id_is():
    from accel.policies.cloud.reservation_names import reservation_name_problem
    from accel.stack.deploy_keys import project_id_problem

    assert project_id_problem("example.com:ml-train") is None
    assert reservation_name_problem(SHARED_IN_A_DOMAIN_SCOPED_PROJECT, "gcp") is None


@pytest.mark.parametrize("project", ["example.com:ml-train-", "example.com:9ml-train", "Example.com:ml-train",
                                     "ml-t", "ml-train-"])
def test_a_project_gcp_would_refuse_is_refused_alike_in_gcp_project_and_in_a_reservation_path(project):
    from accel.policies.cloud.reservation_names import reservation_name_problem
    from accel.stack.deploy_keys import project_id_problem

    assert project_id_problem(project) is not None
    assert reservation_name_problem(f"projects/{project}/reservations/a4x-held", "gcp") is not None


# ---- an inventory's own word on its nodes' architecture ---------------------------------------------------------

def _inventory_arch(entry: dict) -> str | None:
    from accel.components.kubernetes.pools import ExistingCluster
    from accel.job.declared import _inventory

    cluster = ExistingCluster.model_validate({"name": "dc", "gpu_setup": "device-plugin", "inventory": [entry]})
    [pool] = _inventory(cluster)
    return pool.arch


def test_an_inventory_of_h100_on_arm_servers_that_says_so_is_arm64_not_the_clouds_amd64():
    # H100 PCIe cards sit in Arm servers too (an Ampere Altra host); the cloud machine types that carry the chip are
    # all x86, so the chip alone says amd64: what the inventory states of its own nodes comes first.
    arm = {"accelerator": "h100-80gb", "chips": 16, "usd_per_chip_hour": 2.0, "gpus_per_node": 8,
           "node_labels": {"kubernetes.io/arch": "arm64"}}
    assert _inventory_arch(arm) == "arm64"
    tainted = {**arm, "node_labels": {}, "tolerations": [{"key": "kubernetes.io/arch", "operator": "Equal",
                                                          "value": "arm64", "effect": "NoSchedule"}]}
    assert _inventory_arch(tainted) == "arm64"


def test_an_inventory_that_says_nothing_of_its_architecture_is_its_chips():
    assert _inventory_arch({"accelerator": "h100-80gb", "chips": 16, "usd_per_chip_hour": 2.0}) == "amd64"
    assert _inventory_arch({"accelerator": "gb200", "chips": 72, "usd_per_chip_hour": 4.2}) == "arm64"


# ---- the fabric check's nccl-tests command ----------------------------------------------------------------------

def _command(job) -> str:
    jobset = next(m for m in job.manifests if m["kind"] == "JobSet")
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return pod["containers"][0]["command"][-1]


def test_a_one_node_fabric_check_drives_all_its_gpus_from_one_process():
    # dev-spot: one a3-megagpu-8g. `-g 1` ran a single-rank all-reduce, whose bus bandwidth nccl-tests reports as 0
    # (busBw = algBw x 2(n-1)/n), so the check failed on every healthy node.
    command = _command(generated("dev-spot", validate=True))
    assert "all_reduce_perf -b 1G -e 8G -f 2 -g 8 " in command
    assert "launched by the image" not in command


def test_a_multi_node_fabric_check_is_launched_by_torchrun_not_left_to_mpi():
    # Before: `-g 1` in each pod with no launcher (one rank per pod, bus bandwidth 0); now torchrun joins them all.
    check = generated("llama-70b-a4", validate=True)
    assert "torchrun --nnodes=32 --nproc-per-node=8 " in _command(check) and "-g 1 " not in _command(check)
    assert any(line.startswith("launch: torchrun") and "no SSH or MPI" in line for line in check.derivations)


# ---- accel job --check follows Kueue's own topology rules -------------------------------------------------------

def _with_annotations(job, annotations: dict):
    import copy

    manifests = copy.deepcopy(job.manifests)
    jobset = next(m for m in manifests if m["kind"] == "JobSet")
    metadata = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]
    for key in (REQUIRED, PREFERRED, SLICE_REQUIRED, SLICE_SIZE):
        metadata["annotations"].pop(key, None)
    metadata["annotations"].update(annotations)
    return manifests


def test_a_slice_at_the_podsets_own_level_is_taken_as_kueue_takes_it_and_a_coarser_one_is_not():
    # kueue v0.14.1 pkg/cache/scheduler/tas_flavor_snapshot.go:715: only a slice level above (coarser than) the
    # PodSet's is refused ("podset slice topology ... is above the podset topology").
    from tests.test_job import recheck

    job = generated("llama-405b-a4x")
    block, subblock = "cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock"
    same = _with_annotations(job, {REQUIRED: block, SLICE_REQUIRED: block, SLICE_SIZE: "2"})
    assert [e for e in recheck("llama-405b-a4x", same).errors if SLICE_REQUIRED in e.field] == []
    coarser = _with_annotations(job, {REQUIRED: subblock, SLICE_REQUIRED: block, SLICE_SIZE: "2"})
    assert [e for e in recheck("llama-405b-a4x", coarser).errors if SLICE_REQUIRED in e.field]


# ---- the bounds of the session's name rules, each caught when mutated ------------------------------------------

@pytest.mark.parametrize("reference, taken", [
    ("abc/dev", True), ("ab/dev", False),                           # owner: 3 to 40 (httpstate backend.go:140)
    (f"{'a' * 40}/dev", True), (f"{'a' * 41}/dev", False),
    ("acme-/dev", False), ("acme_1/proj.x/dev", True),             # ends alphanumeric; '.' in a project name
    ("organization/accel/dev", True),                               # the DIY backend's one owner (diy/store.go)
    (f"acme/{'p' * 100}/dev", True), (f"acme/{'p' * 101}/dev", False),
])
def test_pulumi_stack_reference_bounds(reference, taken):
    from accel.stack.stack_names import stack_reference_problem

    assert (stack_reference_problem(reference) is None) is taken


@pytest.mark.parametrize("name, taken", [
    ("a" * 63, True), ("a" * 64, False), ("held-", False), ("9held", False),   # RFC 1035, 1 to 63
    ("held/reservationBlocks/b" + "x" * 62, True), ("held/reservationBlocks/b" + "x" * 63, False),
    ("held/reservationSubBlocks/s", False),                                    # a sub-block only inside a block
    ("projects/acme-ml/reservations/held/reservationBlocks/b1/reservationSubBlocks/s1", True),
])
def test_gcp_reservation_name_bounds(name, taken):
    from accel.policies.cloud.reservation_names import reservation_name_problem

    assert (reservation_name_problem(name, "gcp") is None) is taken
