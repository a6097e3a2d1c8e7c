"""`accel plan --json` lists what each resource waits for, and every stack orders what the cloud needs.

The mock engine accepts any graph in any order; the real one creates resources in parallel as
soon as what they depend on exists. These tests read the dependencies the program registered
(explicit `depends_on` and those implied by inputs, plus the provider a resource is created
through) and assert the orderings a first `pulumi up` on a fresh project needs:

- a Workload Identity binding after the GKE cluster that creates its `<project>.svc.id.goog` pool;
- every Helm release after the cluster's API endpoint and every node pool / node group;
- every custom resource after the release (or cluster) that installs its CRD;
- every namespaced Kubernetes object after its namespace;
- a capacity block's scheduled scaling actions after the node group whose Auto Scaling group they act on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pytest

from tests.conftest import every_stack_id

STACKS = every_stack_id()

GKE_CLUSTER = "gcp:container/cluster:Cluster"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
ASG_SCHEDULE = "aws:autoscaling/schedule:Schedule"
WI_MEMBER = re.compile(r"^serviceAccount:(?P<pool>[^\[]+\.svc\.id\.goog)\[")
# API groups whose CRDs the cluster itself serves (GKE multi-networking), not a Helm release.
CLUSTER_PROVIDED_GROUPS = {"networking.gke.io": GKE_CLUSTER}
# API group -> the Helm release (by release name) that installs its CRDs.
RELEASE_PROVIDED_GROUPS = {"kueue.x-k8s.io": "kueue", "jobset.x-k8s.io": "jobset"}


class Graph:
    """The plan's resources with what each waits for, transitively (dependencies and provider)."""

    def __init__(self, document: dict):
        self.resources = document["resources"]
        self.by_urn = {r["urn"]: r for r in self.resources}
        self._closure: dict[str, set[str]] = {}

    def of_type(self, type_token: str) -> list[dict]:
        return [r for r in self.resources if r["type"] == type_token]

    def waits_for(self, resource: dict) -> set[str]:
        urn = resource["urn"]
        if urn not in self._closure:
            self._closure[urn] = set()  # cycles would be an engine error; never loop here
            direct = set(resource.get("dependencies", []))
            if resource.get("provider"):
                direct.add(resource["provider"])
            found = set(direct)
            for dependency in direct:
                if dependency in self.by_urn:
                    found |= self.waits_for(self.by_urn[dependency])
            self._closure[urn] = found
        return self._closure[urn]

    def missing(self, resource: dict, needed: Iterable[dict]) -> list[str]:
        have = self.waits_for(resource)
        return [n["name"] for n in needed if n["urn"] not in have]


@pytest.fixture(scope="module")
def graphs(every_stack) -> dict[str, Graph]:
    return {stack: Graph(document) for stack, document in every_stack.items()}


def test_plan_json_lists_dependencies_and_provider_of_every_resource(every_stack):
    for stack, document in every_stack.items():
        urns = {r["urn"] for r in document["resources"]}
        for resource in document["resources"]:
            assert isinstance(resource["dependencies"], list), (stack, resource["name"])
            assert set(resource["dependencies"]) <= urns, (stack, resource["name"])
            if resource["custom"] and not resource["type"].startswith("pulumi:providers:"):
                assert resource["provider"] in urns, (stack, resource["name"])


@pytest.mark.parametrize("stack", STACKS)
def test_workload_identity_bindings_wait_for_the_cluster_that_creates_the_pool(graphs, stack):
    graph = graphs[stack]
    clusters = graph.of_type(GKE_CLUSTER)
    for resource in graph.resources:
        member = resource["inputs"].get("member")
        match = WI_MEMBER.match(member) if isinstance(member, str) else None
        if match is None:
            continue
        owners = [c for c in clusters if c["inputs"]["workloadIdentityConfig"]["workloadPool"] == match["pool"]]
        assert owners, f"{stack}: {resource['name']} binds into {match['pool']}, which no cluster of the stack creates"
        assert graph.missing(resource, owners) == [], f"{stack}: {resource['name']} does not wait for its cluster"


@pytest.mark.parametrize("stack", STACKS)
def test_helm_releases_wait_for_the_api_endpoint_and_every_node_pool(graphs, stack):
    graph = graphs[stack]
    compute = [*graph.of_type(GKE_CLUSTER), *graph.of_type(GKE_NODE_POOL),
               *graph.of_type(EKS_CLUSTER), *graph.of_type(EKS_NODE_GROUP)]
    for release in graph.of_type(HELM_RELEASE):
        assert graph.missing(release, compute) == [], f"{stack}: {release['name']}"


@pytest.mark.parametrize("stack", STACKS)
def test_custom_resources_wait_for_whatever_installs_their_crd(graphs, stack):
    graph = graphs[stack]
    releases = {r["inputs"]["name"]: r for r in graph.of_type(HELM_RELEASE)}
    checked = 0
    for resource in graph.resources:
        api_version = resource["inputs"].get("apiVersion") if resource["type"].startswith("kubernetes:") else None
        group = api_version.split("/", 1)[0] if isinstance(api_version, str) and "/" in api_version else None
        if group in RELEASE_PROVIDED_GROUPS and RELEASE_PROVIDED_GROUPS[group] in releases:
            installer = [releases[RELEASE_PROVIDED_GROUPS[group]]]
        elif group in CLUSTER_PROVIDED_GROUPS:
            installer = graph.of_type(CLUSTER_PROVIDED_GROUPS[group])
            assert installer, f"{stack}: {resource['name']} needs a {CLUSTER_PROVIDED_GROUPS[group]}"
        else:
            continue
        checked += 1
        assert graph.missing(resource, installer) == [], f"{stack}: {resource['name']} ({api_version})"
    assert checked, f"{stack}: no custom resource checked (every stack declares Kueue objects)"


@pytest.mark.parametrize("stack", STACKS)
def test_namespaced_objects_wait_for_their_namespace(graphs, stack):
    graph = graphs[stack]
    namespaces = {r["inputs"]["metadata"]["name"]: r for r in graph.of_type("kubernetes:core/v1:Namespace")}
    for resource in graph.resources:
        if not resource["type"].startswith("kubernetes:") or resource["type"] == HELM_RELEASE:
            continue
        namespace = (resource["inputs"].get("metadata") or {}).get("namespace")
        if namespace in namespaces:
            assert graph.missing(resource, [namespaces[namespace]]) == [], f"{stack}: {resource['name']}"


@pytest.mark.parametrize("stack", STACKS)
def test_capacity_block_schedules_wait_for_the_node_group_whose_auto_scaling_group_they_scale(graphs, stack):
    graph = graphs[stack]
    groups = {g["urn"]: g for g in graph.of_type(EKS_NODE_GROUP)}
    for schedule in graph.of_type(ASG_SCHEDULE):
        # The group's Auto Scaling group exists only once EKS has created the node group.
        owners = [g for g in groups.values() if g["parent"] == schedule["parent"]]
        assert len(owners) == 1, f"{stack}: {schedule['name']} has no node group beside it"
        assert graph.missing(schedule, owners) == [], f"{stack}: {schedule['name']}"
