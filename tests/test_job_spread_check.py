"""`accel job --check` places a serving group's pods under its topology spread (accel/job/spread_check.py): a spread
the declared nodes cannot meet (fewer nodes than minDomains, so replicas meant to be apart would share one) fails
the check, as the scheduler would leave the pods Pending; one they can meet passes.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from fractions import Fraction

from hypothesis import given, strategies as st

from accel.job.check import check
from accel.job.declared import declared_cluster
from accel.job.manifests import JobOptions
from accel.job.service import job_of
from accel.job.spread_check import most_placed
from tests.conftest import planned_result

SERVING = "llama-8b-serving-gpu"   # a Deployment of one-GPU replicas, queued through the stack's LocalQueue
GPU = "nvidia.com/gpu"


def cluster_of_eight_gpu_nodes(nodes: int):
    """The serving stack's declared cluster with its GPU pool made `nodes` nodes of 8 GPUs (cpu and memory left
    undeclared: only the GPUs bound how many pods a node takes)."""
    result = planned_result(SERVING)
    cluster = declared_cluster(result.capture, result.existing_cluster)
    pools = [replace(pool, nodes=nodes, min_nodes=None, allocatable={GPU: Fraction(8)}) if GPU in pool.allocatable
             else pool for pool in cluster.pools]
    return replace(cluster, pools=pools)


def spread_deployment(replicas: int, min_domains: int, selector: dict | None = None):
    manifests = copy.deepcopy(job_of(planned_result(SERVING), JobOptions()).manifests)
    deployment = next(m for m in manifests if m["kind"] == "Deployment")
    deployment["spec"]["replicas"] = replicas
    deployment["spec"]["template"]["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "minDomains": min_domains, "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["pod-template-hash"],
        "labelSelector": selector or {"matchLabels": dict(deployment["spec"]["selector"]["matchLabels"])}}]
    return manifests


def spread_findings(findings):
    return [f for f in findings if "topologySpreadConstraints" in f.field]


def test_two_replicas_kept_apart_on_one_node_fail_the_check():
    report = check(spread_deployment(2, min_domains=2), cluster_of_eight_gpu_nodes(1))
    [error] = spread_findings(report.errors)
    assert error.field == "spec.template.spec.topologySpreadConstraints[0]"
    assert "2 pods, but the spread places at most 1 (minDomains 2 over 1 node(s)" in error.message
    assert not report.ok


def test_the_same_replicas_on_two_nodes_pass():
    report = check(spread_deployment(2, min_domains=2), cluster_of_eight_gpu_nodes(2))
    assert report.errors == []
    assert sum(p["count"] for p in report.placements) == 2


def test_replicas_past_the_minimum_share_nodes_once_the_minimum_is_met():
    # 16 replicas on 2 nodes of 8 GPUs: 8 a node, the skew 0 (the stack's queue holds 8 GPUs: its own error).
    report = check(spread_deployment(16, min_domains=2), cluster_of_eight_gpu_nodes(2))
    assert spread_findings(report.errors) == [] and sum(p["count"] for p in report.placements) == 16


def test_a_spread_selecting_none_of_its_pods_is_said():
    report = check(spread_deployment(2, min_domains=2, selector={"matchLabels": {"app": "other"}}),
                   cluster_of_eight_gpu_nodes(1))
    assert spread_findings(report.errors) == []
    [warning] = spread_findings(report.warnings)
    assert warning.field.endswith("labelSelector") and "spreads nothing" in warning.message


def scheduler_places(capacities: list[int], max_skew: int, min_domains: int) -> int:
    """The scheduler's filter one pod at a time: a pod goes to a domain with room whose count, with it, passes the
    global minimum (0 while fewer domains than minDomains) by at most maxSkew; the least-filled such domain first."""
    counts = [0] * len(capacities)
    while True:
        floor = 0 if len(counts) < min_domains else min(counts)
        open_ = [i for i, c in enumerate(counts) if c < capacities[i] and c + 1 - floor <= max_skew]
        if not open_:
            return sum(counts)
        counts[min(open_, key=lambda i: counts[i])] += 1


@given(capacities=st.lists(st.integers(1, 8), min_size=1, max_size=6), max_skew=st.integers(1, 3),
       min_domains=st.integers(1, 8))
def test_the_bound_is_what_the_scheduler_places_one_pod_at_a_time(capacities, max_skew, min_domains):
    assert most_placed(capacities, max_skew, min_domains) == scheduler_places(capacities, max_skew, min_domains)


def test_a_node_the_pods_do_not_fit_still_counts_as_a_domain_holding_none():
    # Two pools the selector admits: two nodes of 8 GPUs, one of none. The empty node keeps the global minimum at 0,
    # so each node takes at most maxSkew (1) of the 4 pods: 2 place.
    cluster = cluster_of_eight_gpu_nodes(2)
    gpu_pool = next(pool for pool in cluster.pools if GPU in pool.allocatable)
    empty = replace(gpu_pool, name=gpu_pool.name + "-empty", nodes=1, allocatable={GPU: Fraction(0)})
    report = check(spread_deployment(4, min_domains=1), replace(cluster, pools=[*cluster.pools, empty]))
    [error] = spread_findings(report.errors)
    assert "4 pods, but the spread places at most 2 (maxSkew 1 over 3 nodes holding 8, 8, 0 of them" in error.message
