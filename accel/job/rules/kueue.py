"""Kueue: the webhook and CRD rules for the Kueue objects the stack writes, and the admission rules
that decide whether Kueue ever admits the job accel writes.

Object rules, ported from kubernetes-sigs/kueue v0.14.1 (the pinned chart): `pkg/webhooks/
resourceflavor_webhook.go` (ValidateResourceFlavor), `pkg/webhooks/clusterqueue_webhook.go`
(ValidateClusterQueue, validateResourceGroups, validateFlavorQuotas, validateCQAdmissionChecks)
and the CRDs' x-kubernetes-validations (../shared/crds/kueue, v0.14.1).

Admission rules (need the cluster the stack declares): the workload kind's integration is enabled
in the Kueue manager configuration (`pkg/controller/jobs/*`: each integration's FrameworkName and
DependencyList), each flavor's nodeLabels are carried by a declared pool (site/content/en/docs/
concepts/resource_flavor.md: Kueue adds them to the pods' nodeSelector), and topology-aware
scheduling works over nodes that exist or that a ProvisioningRequest asks for (site/content/en/docs/
concepts/topology_aware_scheduling.md, "ClusterAutoscaler support"). The quota a job needs is the
schedule check's (accel/job/check.py `_admit`).
"""

from __future__ import annotations

from typing import Any

from accel.base.yaml_files import parse_yaml
from accel.job.label_selectors import selects
from accel.job.rules import names
from accel.job.rules.registry import Breach, Scope, describe, of_kind, rule, spec

KUEUE = "kueue v0.14.1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
# kueue v0.14.1 charts/kueue/values.yaml managerConfig.controllerManagerConfigYaml integrations.frameworks:
# the chart's defaults ("pod", "deployment", "statefulset" and LWS are commented out).
CHART_DEFAULT_FRAMEWORKS = ("batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster",
                            "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "kubeflow.org/paddlejob",
                            "kubeflow.org/pytorchjob", "kubeflow.org/tfjob", "kubeflow.org/xgboostjob",
                            "kubeflow.org/jaxjob", "workload.codeflare.dev/appwrapper")
# kind -> (FrameworkName, DependencyList) of pkg/controller/jobs/<kind>/*_controller.go @v0.14.1
FRAMEWORKS = {
    "Job": ("batch/job", ()),
    "JobSet": ("jobset.x-k8s.io/jobset", ()),
    "Deployment": ("deployment", ("pod",)),
    "StatefulSet": ("statefulset", ("pod",)),
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io/leaderworkerset", ("pod",)),
    "Pod": ("pod", ()),
}


# ---- object rules ------------------------------------------------------------------------------

@rule("kueue/flavor-node-labels", "a ResourceFlavor's nodeLabels are valid labels",
      source=f"{KUEUE} pkg/webhooks/resourceflavor_webhook.go ValidateResourceFlavor (ValidateLabels)",
      fix="use valid label keys and values")
def flavor_node_labels(scope: Scope):
    for obj in of_kind(scope.objects, "ResourceFlavor"):
        for key, value in (spec(obj).get("nodeLabels") or {}).items():
            for problem in names.qualified_name(str(key)) + names.label_value(str(value)):
                yield Breach(describe(obj), f"spec.nodeLabels[{key}]", f"Invalid value {value!r}: {problem}")


@rule("kueue/flavor-topology-needs-node-labels", "a ResourceFlavor with a topologyName has a nodeLabel",
      source=f"{KUEUE} CRD kueue.x-k8s.io_resourceflavors.yaml x-kubernetes-validations (\"at least one nodeLabel "
             "is required when topology is set\")",
      fix="give the flavor the node labels of its pool")
def flavor_topology_needs_node_labels(scope: Scope):
    for obj in of_kind(scope.objects, "ResourceFlavor"):
        body = spec(obj)
        if body.get("topologyName") and not body.get("nodeLabels"):
            yield Breach(describe(obj), "spec", "at least one nodeLabel is required when topology is set")


@rule("kueue/topology-levels", "a Topology's levels are unique, and kubernetes.io/hostname only the lowest",
      source=f"{KUEUE} CRD kueue.x-k8s.io_topologies.yaml x-kubernetes-validations on spec.levels",
      fix="list each node label once, broadest first, with kubernetes.io/hostname (if any) last")
def topology_levels(scope: Scope):
    for obj in of_kind(scope.objects, "Topology"):
        levels = [str(level.get("nodeLabel")) for level in spec(obj).get("levels") or []]
        if len(set(levels)) != len(levels):
            yield Breach(describe(obj), "spec.levels", f"Invalid value {levels}: must be unique")
        if "kubernetes.io/hostname" in levels and levels[-1] != "kubernetes.io/hostname":
            yield Breach(describe(obj), "spec.levels", "the kubernetes.io/hostname label can only be used at the "
                         "lowest level of topology")


@rule("kueue/cluster-queue-resource-groups", "resource groups cover each resource and list each flavor once, "
      "and every flavor's resources follow coveredResources",
      source=f"{KUEUE} pkg/webhooks/clusterqueue_webhook.go validateResourceGroups, validateFlavorQuotas (\"must "
             "match the name in coveredResources\"); CRD x-kubernetes-validations (\"flavors must have the same "
             "number of resources as the coveredResources\")",
      fix="list every covered resource once, in coveredResources order, in every flavor")
def cluster_queue_resource_groups(scope: Scope):
    for obj in of_kind(scope.objects, "ClusterQueue"):
        seen_resources: set[str] = set()
        seen_flavors: set[str] = set()
        for g, group in enumerate(spec(obj).get("resourceGroups") or []):
            covered = [str(r) for r in group.get("coveredResources") or []]
            for r, resource in enumerate(covered):
                if resource in seen_resources:
                    yield Breach(describe(obj), f"spec.resourceGroups[{g}].coveredResources[{r}]",
                                 f"Duplicate value: {resource!r}")
                seen_resources.add(resource)
            for f, flavor in enumerate(group.get("flavors") or []):
                where = f"spec.resourceGroups[{g}].flavors[{f}]"
                if flavor.get("name") in seen_flavors:
                    yield Breach(describe(obj), f"{where}.name", f"Duplicate value: {flavor.get('name')!r}")
                seen_flavors.add(flavor.get("name"))
                quotas = flavor.get("resources") or []
                if len(quotas) != len(covered):
                    yield Breach(describe(obj), f"{where}.resources", "flavors must have the same number of "
                                 "resources as the coveredResources")
                for q, (quota, resource) in enumerate(zip(quotas, covered)):
                    if quota.get("name") != resource:
                        yield Breach(describe(obj), f"{where}.resources[{q}].name",
                                     f"Invalid value {quota.get('name')!r}: must match the name in coveredResources")


@rule("kueue/cluster-queue-admission-checks", "a ClusterQueue sets admissionChecks or admissionChecksStrategy, "
      "not both", source=f"{KUEUE} pkg/webhooks/clusterqueue_webhook.go validateCQAdmissionChecks",
      fix="keep only admissionChecksStrategy (it can name the flavors each check applies to)")
def cluster_queue_admission_checks(scope: Scope):
    for obj in of_kind(scope.objects, "ClusterQueue"):
        body = spec(obj)
        if body.get("admissionChecks") and body.get("admissionChecksStrategy"):
            yield Breach(describe(obj), "spec", "Either AdmissionChecks or AdmissionCheckStrategy can be set, but "
                         "not both")


# ---- admission rules (the declared cluster) --------------------------------------------------

def manager_configuration(cluster: Any) -> dict[str, Any] | None:
    """The Kueue Configuration the stack's Kueue release runs with (None: the stack installs no Kueue)."""
    release = (cluster.releases or {}).get("kueue") if cluster is not None else None
    if release is None:
        return None
    text = (((release.get("values") or {}).get("managerConfig") or {}).get("controllerManagerConfigYaml"))
    if isinstance(text, str):
        parsed = parse_yaml(text)
        return parsed if isinstance(parsed, dict) else {}
    return {"integrations": {"frameworks": list(CHART_DEFAULT_FRAMEWORKS)}}


def _selects(selector: dict[str, Any] | None, namespace: str) -> bool:
    """A namespace selector against a namespace's automatic kubernetes.io/metadata.name label; an empty or absent
    one selects every namespace."""
    return not selector or selects(selector, {"kubernetes.io/metadata.name": namespace})


@rule("kueue/integration-enabled", "Kueue manages every queued workload kind accel writes",
      source=f"{KUEUE} pkg/controller/jobs/{{jobset,deployment,leaderworkerset}}/*_controller.go (FrameworkName, "
             "DependencyList: pod); charts/kueue/values.yaml integrations.frameworks and managedJobsNamespaceSelector",
      fix="enable the framework (and 'pod' for Deployments and LeaderWorkerSets) in the stack's Kueue manager "
          "configuration (components/kubernetes/charts.yaml kueue.manager_config)")
def integration_enabled(scope: Scope):
    config = manager_configuration(scope.cluster)
    if config is None:
        return  # Kueue comes with the cluster: its configuration is not the stack's to check
    frameworks = set((config.get("integrations") or {}).get("frameworks") or [])
    selector = config.get("managedJobsNamespaceSelector")
    for obj in scope.manifests:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if QUEUE_LABEL not in labels or obj.get("kind") not in FRAMEWORKS:
            continue
        framework, needs = FRAMEWORKS[obj["kind"]]
        missing = [f for f in (framework, *needs) if f not in frameworks]
        if missing:
            yield Breach(describe(obj), f"metadata.labels[{QUEUE_LABEL}]",
                         f"Kueue's integrations.frameworks lacks {', '.join(missing)}: the queue label is ignored, "
                         "so the workload bypasses the queue and its quota")
        namespace = (obj.get("metadata") or {}).get("namespace", "default")
        if needs and not _selects(selector, namespace):
            yield Breach(describe(obj), "metadata.namespace", f"Kueue's managedJobsNamespaceSelector does not "
                         f"select namespace {namespace!r}: its pods bypass the queue")


@rule("kueue/flavor-labels-on-pools", "every flavor of the ClusterQueue selects nodes a declared pool has",
      source=f"{KUEUE} site/content/en/docs/concepts/resource_flavor.md (Kueue adds the flavor's nodeLabels to the "
             "admitted pods' nodeSelector)",
      fix="make the flavor's nodeLabels the labels its pool's nodes carry (components/kubernetes/pools.py)")
def flavor_labels_on_pools(scope: Scope):
    cluster = scope.cluster
    if cluster is None or not cluster.pools:
        return
    for queue in cluster.cluster_queues.values():
        for flavor_name in queue.quotas:
            flavor = cluster.flavors.get(flavor_name)
            if flavor is None:
                continue
            if not any(all(pool.labels.get(k) == v for k, v in flavor.node_labels.items()) for pool in cluster.pools):
                yield Breach(f"ResourceFlavor {flavor_name}", "spec.nodeLabels",
                             f"{flavor.node_labels} match no declared node pool: a pod admitted on it stays Pending")


@rule("kueue/topology-over-provisioned-nodes", "topology-aware flavors cover nodes that exist, or that a "
      "ProvisioningRequest admission check asks for",
      source=f"{KUEUE} site/content/en/docs/concepts/topology_aware_scheduling.md (\"TAS integrates with the "
             "ClusterAutoscaler through the Provisioning AdmissionCheck\"): TAS assigns domains from the nodes "
             "that exist, so a pool that scales from zero never gets its first node",
      fix="give the pool its nodes at creation (a minimum or initial node count, a reservation), or gate the "
          "flavor with a ProvisioningRequest admission check (issue 'Capacity is obtained')",
      severity="flag")
def topology_over_provisioned_nodes(scope: Scope):
    cluster = scope.cluster
    if cluster is None:
        return
    for queue in cluster.cluster_queues.values():
        for flavor_name in queue.quotas:
            flavor = cluster.flavors.get(flavor_name)
            if flavor is None or not flavor.topology_name:
                continue
            if any(cluster.admission_checks.get(check) == PROVISIONING_CONTROLLER
                   for check in queue.admission_checks_for(flavor_name)):
                continue
            empty = [pool.name for pool in cluster.pools
                     if all(pool.labels.get(k) == v for k, v in flavor.node_labels.items()) and pool.min_nodes == 0]
            if empty:
                shown = ", ".join(empty[:2]) + (f" and {len(empty) - 2} more" if len(empty) > 2 else "")
                yield Breach(f"ResourceFlavor {flavor_name}", "spec.topologyName",
                             f"Topology {flavor.topology_name} over pool(s) {shown} that start with 0 "
                             f"nodes, and ClusterQueue {queue.name} has no ProvisioningRequest check on this flavor: "
                             "Kueue finds no topology domain and never admits the job, so nothing scales up")
