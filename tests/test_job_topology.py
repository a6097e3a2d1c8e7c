"""`accel job` asks Kueue for the topology level the Plan's parallelism needs (accel/job/topology.py),
and the schedule check refuses a level the cluster's Topology does not have."""

from __future__ import annotations

import copy

import pytest

from accel.job.check import check
from accel.job.declared import declared_cluster
from accel.job.topology import PREFERRED, REQUIRED, SLICE_REQUIRED, SLICE_SIZE, replica_level, topology_request
from accel.policies import hardware
from accel.policies.plan import Plan
from tests.test_job import generated, planned, recheck

GKE = hardware.current().kubernetes.gke_topology_levels
EKS = hardware.current().kubernetes.eks_topology_levels
BLOCK, SUBBLOCK, HOST, NODE = GKE


def pod_annotations(manifests) -> dict:
    return manifests[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"]


# ---- the decision ------------------------------------------------------------------------------------

def test_a_replica_of_several_nodes_is_required_in_the_finest_level_above_the_host():
    assert replica_level(GKE, "a3-megagpu-8g", 16) == SUBBLOCK
    assert replica_level(EKS, "p5.48xlarge", 16) == "topology.k8s.aws/network-node-layer-3"


def test_a_replica_larger_than_a_documented_unit_is_required_one_level_up():
    assert replica_level(GKE, "a4x-highgpu-4g", 18) == SUBBLOCK   # an A4X sub-block is 18 nodes
    assert replica_level(GKE, "a4x-highgpu-4g", 32) == BLOCK


def test_a_single_node_replica_is_required_on_its_node():
    assert replica_level(GKE, "a3-megagpu-8g", 1) == NODE


def test_whole_replicas_get_a_slice_requirement_and_the_job_a_coarser_preference():
    request = topology_request(GKE, "a3-megagpu-8g", 2048, 16)
    assert request.annotations == {SLICE_REQUIRED: SUBBLOCK, SLICE_SIZE: "16", PREFERRED: BLOCK}


def test_replicas_inside_a_node_only_prefer_the_placement_unit_for_the_job():
    assert topology_request(EKS, "p5.48xlarge", 4, 1).annotations == {PREFERRED: "topology.k8s.aws/network-node-layer-3"}


def test_a_fleet_that_is_one_replica_requires_one_domain_for_all_of_it():
    assert topology_request(GKE, "a3-megagpu-8g", 8, 8).annotations == {REQUIRED: SUBBLOCK}


def test_a_pool_without_a_topology_or_a_single_node_job_requests_nothing():
    assert topology_request((), "a3-megagpu-8g", 2048, 16).annotations == {}
    assert topology_request(GKE, "a3-megagpu-8g", 1, 1).annotations == {}


# ---- the 16,384-H100 jobs ---------------------------------------------------------------------------

@pytest.mark.parametrize("stack, levels", [("llama-405b-h100-gcp", GKE), ("llama-405b-h100-aws", EKS)])
def test_the_405b_job_keeps_each_model_replica_in_one_unit_and_schedules(stack, levels):
    plan = Plan.model_validate(planned(stack).plan)
    job = generated(stack)
    annotations = pod_annotations(job.manifests)
    assert annotations[SLICE_SIZE] == str(plan.parallelism.group_nodes)
    assert annotations[SLICE_REQUIRED] in levels[1:-1] and annotations[PREFERRED] in levels
    assert levels.index(annotations[PREFERRED]) == levels.index(annotations[SLICE_REQUIRED]) - 1
    assert recheck(stack, job.manifests).errors == []


# ---- the schedule check -----------------------------------------------------------------------------

STACK = "llama-405b-h100-gcp"


def test_check_refuses_a_level_the_clusters_topology_does_not_have():
    manifests = copy.deepcopy(generated(STACK).manifests)
    pod_annotations(manifests)[SLICE_REQUIRED] = "cloud.google.com/gce-topology-rack"
    errors = recheck(STACK, manifests).errors
    assert any(SLICE_REQUIRED in e.field and "gce-topology-rack" in e.message and "is not a level" in e.message
               for e in errors), errors


def test_check_refuses_a_topology_request_on_a_flavor_without_a_topology():
    result = planned(STACK)
    cluster = declared_cluster(result.capture, result.existing_cluster)
    for flavor in cluster.flavors.values():
        flavor.topology_name = None
    errors = check(generated(STACK).manifests, cluster).errors
    assert any("names no Kueue Topology" in e.message for e in errors), errors


def test_check_refuses_a_slice_size_that_does_not_divide_the_job():
    manifests = copy.deepcopy(generated(STACK).manifests)
    pod_annotations(manifests)[SLICE_SIZE] = "15"
    errors = recheck(STACK, manifests).errors
    assert any(SLICE_SIZE in e.field and "divides" in e.message for e in errors), errors


def test_check_refuses_a_slice_coarser_than_the_jobs_level():
    # Kueue refuses a slice level above the PodSet's, and takes the same level (kueue v0.14.1
    # pkg/cache/scheduler/tas_flavor_snapshot.go:715).
    manifests = copy.deepcopy(generated(STACK).manifests)
    annotations = pod_annotations(manifests)
    annotations.pop(PREFERRED, None)
    annotations.update({REQUIRED: SUBBLOCK, SLICE_REQUIRED: BLOCK})
    errors = recheck(STACK, manifests).errors
    assert any("is above the job's" in e.message for e in errors), errors
    annotations[SLICE_REQUIRED] = SUBBLOCK
    assert not [e for e in recheck(STACK, manifests).errors if SLICE_REQUIRED in e.field]


def test_check_refuses_required_and_preferred_together():
    manifests = copy.deepcopy(generated(STACK).manifests)
    pod_annotations(manifests)[REQUIRED] = BLOCK
    errors = recheck(STACK, manifests).errors
    assert any("exclude each other" in e.message for e in errors), errors
