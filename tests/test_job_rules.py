"""The rules of accel/job/rules, each shown catching its bad case.

Every rule in the registry has a case below: a valid object set (what `accel job` and the stack write
for a bundled stack, which passes every rule) and one mutation of it that the real system refuses.
The case must pass the rule before the mutation and break it after; a rule without a case, or a
case without its rule, fails `test_every_rule_has_a_case_and_every_case_a_rule`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from accel.job import rules
from accel.job.check import check
from accel.job.declared import declared_cluster
from accel.job.manifests import JobOptions
from accel.job.pod_templates import pod_templates
from accel.job.rules import names
from accel.job.rules.kueue import manager_configuration
from accel.job.service import context_of, job_of
from accel.job.topology import PODSET_GROUP, REQUIRED
from accel.policies.plan import Plan
from accel.policies.workload import InferenceSpec

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Case:
    baseline: str                       # which valid Scope to start from (BASELINES)
    mutate: Callable[[rules.Scope], None]
    field: str                          # a part of the field the violation must name


def _scope(result, manifests) -> rules.Scope:
    cluster = declared_cluster(result.capture, result.existing_cluster)
    return rules.Scope(manifests, cluster.objects, cluster)


def _lws_manifests(result) -> list[dict]:
    """The serving stack's plan with replicas of two one-GPU nodes: a LeaderWorkerSet and its Service."""
    from accel.job.manifests import generate

    plan = Plan.model_validate(result.plan)
    details = {**plan.estimate.details, "replicas": plan.chosen.chips // 2, "replica_chips": 2}
    plan = plan.model_copy(update={"estimate": plan.estimate.model_copy(update={"details": details})})
    return generate(plan, context_of(result, plan)).manifests


def _p6e_lws_manifests(result, replica_chips: int = 16) -> list[dict]:
    """The p6e-gb200 UltraServer stack's plan served with replicas of `replica_chips` GPUs (16: four trays of one
    UltraServer): a LeaderWorkerSet whose groups share an NVLink domain across nodes."""
    from accel.job.manifests import generate

    plan = Plan.model_validate(result.plan)
    details = {**plan.estimate.details, "replicas": plan.chosen.chips // replica_chips, "replica_chips": replica_chips}
    # Served as the Plan validator asks of kind inference: with an inference section.
    served = plan.workload.model_copy(update={"kind": "inference", "inference": InferenceSpec(tokens_per_second=1000)})
    plan = plan.model_copy(update={"workload": served,
                                   "estimate": plan.estimate.model_copy(update={"details": details})})
    return generate(plan, context_of(result, plan)).manifests


ARM64_STATED = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic-arm64:v1.1.0"


@pytest.fixture(scope="module")
def baselines(planned_results) -> dict[str, rules.Scope]:
    serving = planned_results["llama-8b-serving-gpu"]
    scopes = {
        "tpu": _scope(planned_results["llama-70b-tpu"], job_of(planned_results["llama-70b-tpu"]).manifests),
        "gke-gpu": _scope(planned_results["llama-405b-h100-gcp"],
                          job_of(planned_results["llama-405b-h100-gcp"]).manifests),
        "eks": _scope(planned_results["llama-70b-finetune-aws"],
                      job_of(planned_results["llama-70b-finetune-aws"]).manifests),
        "serving": _scope(serving, job_of(serving).manifests),
        "lws": _scope(serving, _lws_manifests(serving)),
        # Arm (Grace) nodes: A4X's fabric check, in an image stated for arm64 (Google's arm64 gIB diagnostic image;
        # the check's default across nodes, the NGC PyTorch image, has no stated platforms).
        "arm": _scope(planned_results["llama-405b-a4x"],
                      job_of(planned_results["llama-405b-a4x"], JobOptions(validate=True, image=ARM64_STATED)).manifests),
    }
    # A serving replica over four trays of one p6e-gb200 UltraServer, placed by its NVLink clique.
    scopes["p6e-lws"] = _scope(planned_results["llama-405b-p6e"], _p6e_lws_manifests(planned_results["llama-405b-p6e"]))
    # LWS needs its controller: the serving stack's plan (one node per replica) does not install it.
    for name in ("lws", "p6e-lws"):
        scopes[name].cluster.releases["lws"] = {"name": "lws"}
    return scopes


# ---- where the mutations reach ---------------------------------------------------------------

def first(scope: rules.Scope, kind: str) -> dict:
    return next(o for o in scope.objects if o["kind"] == kind)


def pod(scope: rules.Scope) -> dict:
    """The first pod template's spec of the workload."""
    return next(pod_templates(scope.manifests)).spec


def container(scope: rules.Scope) -> dict:
    return pod(scope)["containers"][0]


def replicated_job(scope: rules.Scope) -> dict:
    return first(scope, "JobSet")["spec"]["replicatedJobs"][0]


def leader_annotations(scope: rules.Scope) -> dict:
    return first(scope, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["annotations"]


def kueue_config(scope: rules.Scope, config: dict) -> None:
    scope.cluster.releases["kueue"]["values"] = {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config)}}


def _set(target: dict, key: str, value) -> None:
    target[key] = value


def _jobset_name_for_long_pods(scope: rules.Scope) -> None:
    """A JobSet name whose Job names fit in 63 characters but whose pod names (+ "-abcde") do not."""
    jobset, job = first(scope, "JobSet"), replicated_job(scope)
    job_tail = f"-{job['name']}-{job['replicas'] - 1}"
    pod_tail = f"{job_tail}-{job['template']['spec']['completions'] - 1}-abcde"
    jobset["metadata"]["name"] = "j" * (63 - len(job_tail))
    assert len(jobset["metadata"]["name"] + pod_tail) > 63


CASES: dict[str, Case] = {
    # object metadata
    "meta/name": Case("serving", lambda s: _set(first(s, "Deployment")["metadata"], "name", "Llama_8B"),
                      "metadata.name"),
    "meta/namespace": Case("serving", lambda s: _set(first(s, "Service")["metadata"], "namespace", "Training"),
                           "metadata.namespace"),
    "meta/labels": Case("tpu", lambda s: _set(first(s, "JobSet")["metadata"]["labels"], "accel.dev/stack", "x" * 64),
                        "labels[accel.dev/stack]"),
    "meta/annotations": Case("tpu", lambda s: _set(first(s, "JobSet")["metadata"].setdefault("annotations", {}),
                                                   "not a key", "v"), "annotations[not a key]"),
    "core/priority-class": Case("tpu", lambda s: _set(first(s, "PriorityClass"), "value", 2_000_000_000), "value"),
    # pod specs
    "pod/volume-names-unique": Case("gke-gpu", lambda s: pod(s)["volumes"].append(
        {"name": pod(s)["volumes"][0]["name"], "emptyDir": {}}), "volumes["),
    "pod/volume-name-syntax": Case("tpu", lambda s: pod(s)["volumes"].append({"name": "Scratch", "emptyDir": {}}),
                                   "volumes["),
    "pod/container-names-unique": Case("tpu", lambda s: pod(s)["containers"].append(copy.deepcopy(container(s))),
                                       "containers[1].name"),
    "pod/container-name-syntax": Case("tpu", lambda s: _set(container(s), "name", "Trainer"), "containers[0].name"),
    "pod/port-name-syntax": Case("serving", lambda s: _set(container(s)["ports"][0], "name", "HTTP--port"),
                                 "ports[0].name"),
    "pod/port-names-unique": Case("serving", lambda s: container(s)["ports"].append(
        {"containerPort": 8001, "name": "http"}), "ports[1].name"),
    "pod/port-number": Case("tpu", lambda s: _set(container(s)["ports"][0], "containerPort", 70000),
                            "ports[0].containerPort"),
    "pod/mount-names-a-volume": Case("tpu", lambda s: container(s)["volumeMounts"].append(
        {"name": "scratch", "mountPath": "/scratch"}), "volumeMounts["),
    "pod/mount-paths-unique": Case("gke-gpu", lambda s: container(s)["volumeMounts"].append(
        {"name": "libraries", "mountPath": container(s)["volumeMounts"][0]["mountPath"] + "/"}), "mountPath"),
    "pod/env-var-name": Case("eks", lambda s: container(s)["env"].append({"name": "1_BAD", "value": "x"}), "env["),
    "pod/resource-quantities": Case("tpu", lambda s: _set(container(s)["resources"]["limits"], "google.com/tpu",
                                                          "lots"), "limits[google.com/tpu]"),
    "schema/integer-counts": Case("tpu", lambda s: _set(replicated_job(s), "replicas", "4"),
                                  "replicatedJobs[0].replicas"),
    "pod/extended-resource-integer": Case("tpu", lambda s: _set(container(s)["resources"]["limits"],
                                                                "google.com/tpu", "3500m"), "limits[google.com/tpu]"),
    "pod/extended-resource-needs-limit": Case("eks", lambda s: container(s)["resources"]["limits"].pop(
        "vpc.amazonaws.com/efa"), "limits[vpc.amazonaws.com/efa]"),
    "pod/extended-resource-request-equals-limit": Case("gke-gpu", lambda s: _set(
        container(s)["resources"]["requests"], "nvidia.com/gpu", 4), "requests[nvidia.com/gpu]"),
    "pod/topology-spread": Case("serving", lambda s: _set(pod(s), "topologySpreadConstraints", [
        {"maxSkew": 1, "minDomains": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "x"}}}]), "topologySpreadConstraints[0].minDomains"),
    "pod/topology-spread-match-label-keys": Case("serving", lambda s: _set(pod(s), "topologySpreadConstraints", [
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"pod-template-hash": "x"}}, "matchLabelKeys": ["pod-template-hash"]}]),
        "topologySpreadConstraints[0].matchLabelKeys[0]"),
    "pod/topology-spread-match-label-keys-need-selector": Case("serving", lambda s: _set(
        pod(s), "topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                               "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["pod-template-hash"]}]),
        "topologySpreadConstraints[0].matchLabelKeys"),
    "pod/request-within-limit": Case("serving", lambda s: _set(container(s)["resources"]["limits"], "cpu", "1m"),
                                     "requests[cpu]"),
    "pod/node-selector": Case("tpu", lambda s: _set(pod(s)["nodeSelector"], "accel.dev/pool", "v6e 16x16"),
                              "nodeSelector[accel.dev/pool]"),
    "pod/tolerations": Case("tpu", lambda s: pod(s)["tolerations"].append(
        {"key": "google.com/tpu", "operator": "Exists", "value": "present", "effect": "NoSchedule"}), "tolerations["),
    "pod/container-restart-policy": Case("tpu", lambda s: _set(container(s), "restartPolicy", "Always"),
                                         "containers[0].restartPolicy"),
    # batch, apps, Service
    "batch/restart-policy": Case("tpu", lambda s: _set(pod(s), "restartPolicy", "Always"), "restartPolicy"),
    "batch/indexed-job": Case("tpu", lambda s: replicated_job(s)["template"]["spec"].pop("completions"),
                              "completions"),
    "batch/non-negative": Case("tpu", lambda s: _set(replicated_job(s)["template"]["spec"], "backoffLimit", -1),
                               "backoffLimit"),
    "apps/restart-policy": Case("serving", lambda s: _set(pod(s), "restartPolicy", "OnFailure"), "restartPolicy"),
    "apps/selector-matches-template": Case("serving", lambda s: _set(
        first(s, "Deployment")["spec"]["selector"]["matchLabels"], "app.kubernetes.io/name", "other"),
        "template.metadata.labels"),
    "apps/replicas-non-negative": Case("serving", lambda s: _set(first(s, "Deployment")["spec"], "replicas", -1),
                                       "spec.replicas"),
    "service/ports": Case("serving", lambda s: first(s, "Service")["spec"]["ports"].append(
        {"port": 9000, "targetPort": 9000}), "spec.ports[1].name"),
    "service/selects-the-pods": Case("serving", lambda s: _set(first(s, "Service")["spec"], "selector",
                                                               {"app.kubernetes.io/name": "elsewhere"}),
                                     "spec.selector"),
    # JobSet webhook
    "jobset/job-names": Case("tpu", lambda s: _set(first(s, "JobSet")["metadata"], "name", "l" * 60),
                             "replicatedJobs[0].name"),
    "jobset/pod-names": Case("tpu", _jobset_name_for_long_pods, "replicatedJobs[0].name"),
    "jobset/subdomain": Case("tpu", lambda s: _set(first(s, "JobSet")["spec"]["network"], "subdomain", "7b-net"),
                             "spec.network.subdomain"),
    "jobset/replicas-times-parallelism": Case("tpu", lambda s: _set(replicated_job(s), "replicas", 2 ** 30),
                                              "spec.replicatedJobs[0]"),
    "jobset/replicated-job-names-unique": Case("tpu", lambda s: first(s, "JobSet")["spec"]["replicatedJobs"].append(
        copy.deepcopy(replicated_job(s))), "replicatedJobs[1].name"),
    # LeaderWorkerSet webhook
    "lws/name": Case("lws", lambda s: _set(first(s, "LeaderWorkerSet")["metadata"], "name", "8b-serving"),
                     "metadata.name"),
    "lws/size-and-replicas": Case("lws", lambda s: _set(first(s, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"],
                                                        "size", 0), "leaderWorkerTemplate.size"),
    "lws/subgroup-exclusive-needs-subgroups": Case("lws", lambda s: _set(
        first(s, "LeaderWorkerSet")["metadata"].setdefault("annotations", {}),
        "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology", "cloud.google.com/gke-nodepool"),
        "subgroup-exclusive-topology"),
    "lws/pod-names": Case("lws", lambda s: _set(first(s, "LeaderWorkerSet")["metadata"], "name", "l" * 60),
                          "metadata.name"),
    # a Service over the group that drops the leaders' label: the workers (headless, no port) get requests too
    "lws/service-selects-the-leaders": Case("lws", lambda s: first(s, "Service")["spec"]["selector"].pop(
        "leaderworkerset.sigs.k8s.io/worker-index"), "spec.selector"),
    # the leader's probes copied onto the workers, which run no server
    "lws/worker-probes-a-port-it-opens": Case("lws", lambda s: _set(
        first(s, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0],
        "readinessProbe", {"httpGet": {"path": "/health", "port": 8000}}), "workerTemplate.spec.containers[0]"),
    # volumes
    "pod/claims-exist": Case("tpu", lambda s: pod(s)["volumes"].append(
        {"name": "scratch", "persistentVolumeClaim": {"claimName": "scratch"}}), "persistentVolumeClaim"),
    "storage/claim-binds-its-volume": Case("tpu", lambda s: _set(first(s, "PersistentVolumeClaim")["spec"],
                                                                 "accessModes", ["ReadWriteOnce"]), "spec.accessModes"),
    # Kueue objects
    "kueue/flavor-node-labels": Case("tpu", lambda s: _set(first(s, "ResourceFlavor")["spec"]["nodeLabels"],
                                                           "accel.dev/capacity", "-queued"), "nodeLabels["),
    "kueue/flavor-topology-needs-node-labels": Case("eks", lambda s: _set(first(s, "ResourceFlavor")["spec"],
                                                                          "nodeLabels", {}), "spec"),
    "kueue/topology-levels": Case("eks", lambda s: first(s, "Topology")["spec"]["levels"].append(
        {"nodeLabel": "topology.k8s.aws/network-node-layer-1"}), "spec.levels"),
    "kueue/cluster-queue-resource-groups": Case("tpu", lambda s: first(s, "ClusterQueue")["spec"]["resourceGroups"][0]
                                                ["flavors"][0]["resources"].reverse(), "resources["),
    "kueue/cluster-queue-admission-checks": Case("tpu", lambda s: first(s, "ClusterQueue")["spec"].update(
        admissionChecks=["a"], admissionChecksStrategy={"admissionChecks": [{"name": "a"}]}), "spec"),
    # Kueue admission and the stack's controllers
    "kueue/integration-enabled": Case("serving", lambda s: kueue_config(
        s, {"integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset", "deployment"]}}),
        "queue-name"),
    "kueue/flavor-labels-on-pools": Case("serving", lambda s: next(iter(s.cluster.flavors.values())).node_labels.update(
        {"node.kubernetes.io/instance-type": "g6e.48xlarge"}), "spec.nodeLabels"),
    "kueue/topology-over-provisioned-nodes": Case("eks", lambda s: [setattr(p, "min_nodes", 0)
                                                                   for p in s.cluster.pools], "spec.topologyName"),
    "stack/crd-controller-installed": Case("lws", lambda s: s.cluster.releases.pop("lws"), "apiVersion"),
    # images on Arm nodes (an amd64-only image: exec format error; one not confirmed for arm64: a warning)
    # A command from MaxText's older docs on the 2026-08-05 image: the shim and that config path are gone.
    "maxtext/entry-in-image": Case("tpu", lambda s: _set(container(s), "command", [
        "/bin/bash", "-c", "python3 -m MaxText.train MaxText/configs/base.yml run_name=x"]), "containers[0].command"),
    "pod/image-architecture": Case("arm", lambda s: _set(
        container(s), "image", "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic:v1.1.1"),
        "containers[0].image"),
    # a pod group across the trays of one NVLink domain (A4X's fabric check over 36 nodes) claims the IMEX channel
    "nvidia/compute-domain-claim": Case("arm", lambda s: pod(s).pop("resourceClaims"), "spec.resourceClaims"),
    # a serving replica over four trays of one UltraServer no longer required in one NVLink clique: Kueue may put
    # it across two UltraServers
    "nvidia/nvlink-group-in-one-domain": Case("p6e-lws", lambda s: leader_annotations(s).pop(REQUIRED),
                                              "leaderTemplate.metadata.annotations"),
    # a vLLM TPU server given fewer devices than its pod holds (TPU7x's habit: the chips, half its devices)
    "tpu/vllm-uses-every-device": Case("tpu", lambda s: _set(container(s), "command", [
        "/bin/bash", "-c", "vllm serve m --tensor-parallel-size 1"]), "containers[0].command"),
    "pod/image-architecture-unconfirmed": Case("arm", lambda s: _set(container(s), "image",
                                                                     "ghcr.io/nvidia/jax:maxtext-2026-03-21"),
                                               "containers[0].image"),
}


def test_every_rule_has_a_case_and_every_case_a_rule():
    assert sorted(CASES) == sorted(rules.RULES)


def test_every_rule_cites_its_upstream_source_and_says_how_to_fix():
    for rule in rules.RULES.values():
        assert rule.source and rule.fix and rule.summary, rule.id
        assert any(project in rule.source for project in ("kubernetes v1.33", "jobset v0.10.1", "lws v0.10.0",
                                                          "kueue v0.14.1", "nvidia-dra-driver-gpu 25.12.0",
                                                          "MaxText", "tpu-inference 0.32.0")), rule.id


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_the_rule_catches_its_mutated_case(rule_id, baselines):
    case = CASES[rule_id]
    scope = copy.deepcopy(baselines[case.baseline])
    rule = rules.RULES[rule_id]
    assert rules.run(scope, [rule]) == [], "the valid baseline must pass the rule"
    case.mutate(scope)
    caught = rules.run(scope, [rule])
    assert caught, f"{rule_id} did not catch its case"
    assert any(case.field in v.breach.field for v in caught), [v.breach for v in caught]


def test_gke_networks_need_the_clusters_multi_networking(baselines):
    scope = copy.deepcopy(baselines["gke-gpu"])
    rule = rules.RULES["stack/crd-controller-installed"]
    assert any(o["kind"] == "GKENetworkParamSet" for o in scope.objects) and rules.run(scope, [rule]) == []
    scope.cluster.preinstalled.discard("gke-multi-networking")
    assert {v.breach.object.split()[0] for v in rules.run(scope, [rule])} == {"GKENetworkParamSet", "Network"}


@pytest.mark.parametrize("baseline", ["tpu", "gke-gpu", "eks", "serving", "lws", "arm", "p6e-lws"])
def test_what_accel_writes_passes_every_rule(baseline, baselines):
    scope = baselines[baseline]
    errors = [v for v in rules.run(scope) if v.rule.severity == "error"]
    assert errors == []


# ---- the findings this closes ----------------------------------------------------------------

@pytest.mark.parametrize("stack", ["llama-70b-tpu", "llama-70b-v5p", "llama-405b-h100-gcp", "dev-spot"])
def test_gke_jobs_declare_each_volume_once_and_mount_the_stacks_bucket_claims(stack, planned_results):
    for validate in (False, True):
        manifests = job_of(planned_results[stack], JobOptions(validate=validate)).manifests
        volumes = manifests[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["volumes"]
        volume_names = [v["name"] for v in volumes]
        assert len(volume_names) == len(set(volume_names)), volume_names
        by_name = {v["name"]: v for v in volumes}
        assert by_name["checkpoints"]["persistentVolumeClaim"]["claimName"] == "checkpoints"
        assert by_name["datasets"]["persistentVolumeClaim"] == {"claimName": "datasets", "readOnly": True}


def test_a_capacity_block_node_group_carries_its_launch_templates_instance_type(matrix_stacks):
    result = matrix_stacks["p5-capacity-block"]
    cluster = declared_cluster(result.capture, result.existing_cluster)
    gpu_pools = [p for p in cluster.pools if "nvidia.com/gpu" in p.allocatable]
    assert gpu_pools and all(p.labels["node.kubernetes.io/instance-type"] == "p5.48xlarge" for p in gpu_pools)
    # The group starts empty and its scheduled scale-out (the block's start) brings the nodes.
    assert all(p.standing_nodes == p.nodes for p in gpu_pools)
    report = check(job_of(result).manifests, cluster)
    assert report.errors == []
    # Without the launch template's type the group's nodes looked unlabelled and the job was refused.
    for pool in gpu_pools:
        del pool.labels["node.kubernetes.io/instance-type"]
    refused = check(job_of(result).manifests, cluster).errors
    assert any(e.field.endswith("nodeSelector[node.kubernetes.io/instance-type]") for e in refused)
    assert any(e.rule == "kueue/flavor-labels-on-pools" for e in refused)


def test_topology_aware_pools_are_built_with_their_nodes_and_flagged_when_they_start_empty(planned_results):
    """The GKE on-demand training pools under a Kueue Topology are created with their nodes (issue #27,
    components/gcp/gpu.py), so the job is admitted; a pool that starts empty is still flagged, not refused."""
    result = planned_results["llama-405b-h100-gcp"]
    cluster = declared_cluster(result.capture, result.existing_cluster)
    report = check(job_of(result).manifests, cluster)
    assert report.errors == []
    assert not [w for w in report.warnings if w.rule == "kueue/topology-over-provisioned-nodes"]
    for pool in cluster.pools:
        pool.min_nodes = 0
    report = check(job_of(result).manifests, cluster)
    assert report.errors == []
    flagged = [w for w in report.warnings if w.rule == "kueue/topology-over-provisioned-nodes"]
    assert flagged and "ProvisioningRequest" in flagged[0].message and flagged[0].fix


def test_a_queued_pool_gated_by_a_provisioning_request_is_not_flagged(matrix_stacks):
    result = matrix_stacks["a3-mega-queued"]
    cluster = declared_cluster(result.capture, result.existing_cluster)
    assert any(f.topology_name for f in cluster.flavors.values())
    report = check(job_of(result).manifests, cluster)
    assert not [w for w in report.warnings if w.rule == "kueue/topology-over-provisioned-nodes"]


def test_the_a4_flex_start_fleet_is_built_with_queued_provisioning_and_gated_by_a_provisioning_request():
    """The shipped A4 stack (32 x a4-highgpu-8g on flex-start, RDMA fabric): its Kueue Topology covers a pool that
    starts empty, so the pool is built as flex-start with queued provisioning and its ClusterQueue asks GKE through a
    ProvisioningRequest check (policies/cloud/flex_start.py); before, the job waited forever and the rule said so."""
    from tests.conftest import planned_result

    result = planned_result("llama-70b-a4")
    (pool,) = [r for r in result.capture.of_type("gcp:container/nodePool:NodePool") if r.name.endswith("-gpu-pool")]
    assert pool.inputs["queuedProvisioning"] == {"enabled": True} and pool.inputs["nodeConfig"]["flexStart"] is True
    assert "placementPolicy" not in pool.inputs   # GKE takes no COMPACT placement on a queued-provisioning GPU pool
    cluster = declared_cluster(result.capture, result.existing_cluster)
    (flavor,) = [f for f in cluster.flavors.values() if f.topology_name]
    (queue,) = cluster.cluster_queues.values()
    checks = queue.admission_checks_for(flavor.name)
    assert [cluster.admission_checks[c] for c in checks] == ["kueue.x-k8s.io/provisioning-request"]
    assert {"key": "cloud.google.com/gke-queued", "operator": "Exists", "effect": "NoSchedule"} in flavor.tolerations
    report = check(job_of(result).manifests, cluster)
    assert report.errors == []
    assert not [w for w in report.warnings if w.rule == "kueue/topology-over-provisioned-nodes"]
    # The rule still catches the defect: the same empty flex-start pool under the Topology with no check.
    queue.admission_checks.clear()
    flagged = [w for w in check(job_of(result).manifests, cluster).warnings
               if w.rule == "kueue/topology-over-provisioned-nodes"]
    assert flagged and "llama-70b-a4-gpu-pool" in flagged[0].message


def test_the_stacks_kueue_manages_deployments_and_leaderworkersets(planned_results):
    result = planned_results["llama-8b-serving-gpu"]
    config = manager_configuration(declared_cluster(result.capture, result.existing_cluster))
    frameworks = config["integrations"]["frameworks"]
    assert {"pod", "deployment", "leaderworkerset.x-k8s.io/leaderworkerset", "jobset.x-k8s.io/jobset"} <= set(frameworks)
    # The pod integration stays off the system namespaces and the controllers' own, and on the workload's.
    excluded = config["managedJobsNamespaceSelector"]["matchExpressions"][0]
    assert excluded["operator"] == "NotIn" and {"kube-system", "kueue-system", "jobset-system"} <= set(excluded["values"])
    assert "training" not in excluded["values"]


def test_only_a_plan_with_a_multi_node_serving_replica_installs_the_lws_controller(planned_results):
    from accel.components.kubernetes.workloads import needs_leader_worker_set

    for stack, result in planned_results.items():
        releases = declared_cluster(result.capture, result.existing_cluster).releases
        assert ("lws" in releases) == needs_leader_worker_set(Plan.model_validate(result.plan)), stack


@pytest.mark.parametrize("objective, machine_type, kind", [("cost", "p5en.48xlarge", "Deployment"),
                                                           ("time", "ct6e-standard-8t", "Deployment")])
def test_the_70b_inference_example_writes_a_schedulable_job(tmp_path, monkeypatch, objective, machine_type, kind):
    """Newcomer finding 4: choose -> plan -> job for examples/llama-70b-inference.yaml, under both objectives. choose
    holds a TPU serving replica to one host (hardware table limits.tpu_serving_hosts_per_replica: across hosts GKE
    serves only through Pathways), so it no longer picks the 4-host v6e slices `accel job` refuses (cost objective:
    3 x 4x4 until then): it picks what the job then writes and the cluster schedules. Nor, for a 730-hour service,
    A3 Ultra on flex-start, whose nodes are removed within seven days (policies/selection/serving_capacity.py): the
    cost objective's answer is 3 x p5en.48xlarge on demand."""
    from typer.testing import CliRunner

    from accel import cli
    from accel.offline_plan import plan_stack

    for name in ("Pulumi.yaml", "__main__.py"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    (tmp_path / "stacks").mkdir()
    monkeypatch.chdir(tmp_path)
    cli._register_commands()
    chosen = CliRunner().invoke(cli.app, ["choose", str(ROOT / "examples" / "llama-70b-inference.yaml"),
                                      "--objective", objective, "--write-stack", "inference"], catch_exceptions=False)
    assert chosen.exit_code == 0, chosen.output
    result = plan_stack("inference", None, tmp_path)
    assert Plan.model_validate(result.plan).chosen.machine_type == machine_type
    manifests = job_of(result).manifests
    assert manifests[0]["kind"] == kind
    report = check(manifests, declared_cluster(result.capture, result.existing_cluster))
    assert report.errors == [] and result.job["schedulable"] is True and result.exit_code == 0
    job = CliRunner().invoke(cli.app, ["job", "-s", "inference"], catch_exceptions=False)
    assert job.exit_code == 0, job.output
    assert f"kind: {kind}" in job.stdout


def test_a_missing_lws_exclusive_annotation_names_the_lws_key_and_the_fix():
    from fractions import Fraction

    from accel.job.check import PodGroup, ScheduleReport, _check_slices
    from accel.job.declared import NodePool

    slices = [NodePool(f"slice-{i}", "ct6e-standard-4t", 4, {}, [], {"google.com/tpu": Fraction(4)}, "4x4")
              for i in range(3)]
    group = PodGroup("inference", "LeaderWorkerSet", "training", {}, {}, 3, 4, {}, "spec.leaderWorkerTemplate")
    report = ScheduleReport()
    _check_slices(group, "inference pod", "spec", Fraction(4), slices, report)
    assert [e.field for e in report.errors] == ["metadata.annotations[leaderworkerset.sigs.k8s.io/exclusive-topology]"]
    assert "cloud.google.com/gke-nodepool" in report.errors[0].fix


# ---- the name syntaxes, against their definitions ---------------------------------------------

@given(st.text(alphabet="abcz09-.A_", max_size=70))
def test_a_dns_label_is_a_subdomain_and_a_dns1035_label_a_dns_label(text):
    if not names.dns1035_label(text):
        assert not names.dns1123_label(text)
    if not names.dns1123_label(text):
        assert not names.dns1123_subdomain(text) and len(text) <= 63 and "." not in text


@given(st.integers(min_value=1, max_value=40), st.integers(min_value=1, max_value=200),
       st.integers(min_value=1, max_value=200))
def test_jobset_pod_names_fit_exactly_when_the_longest_is_63_characters(length, replicas, hosts):
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "j" * length, "namespace": "training"},
              "spec": {"replicatedJobs": [{"name": "slice", "replicas": replicas, "template": {"spec": {
                  "completionMode": "Indexed", "completions": hosts, "parallelism": hosts}}}]}}
    longest = f"{'j' * length}-slice-{replicas - 1}-{hosts - 1}-abcde"
    caught = rules.run(rules.Scope([jobset]), [rules.RULES["jobset/pod-names"]])
    assert bool(caught) == (len(longest) > 63)


def test_a_finding_names_the_object_the_field_the_rule_and_the_fix(baselines):
    scope = copy.deepcopy(baselines["tpu"])
    pod(scope)["volumes"].append(copy.deepcopy(pod(scope)["volumes"][0]))
    from accel.job.check import Finding

    finding = Finding.of(rules.run(scope, [rules.RULES["pod/volume-names-unique"]])[0])
    text = str(finding)
    assert text.startswith("JobSet training/")
    for part in ("spec.replicatedJobs[0].template.spec.template.spec.volumes[", "Duplicate value",
                 "rule pod/volume-names-unique", "ValidateVolumes", "fix:"):
        assert part in text, text
    assert finding.to_json()["rule"] == "pod/volume-names-unique"
    assert replace(finding, fix=None).to_json()["fix"] is None


# ---- accel plan and accel job agree -----------------------------------------------------------

def test_plan_exits_2_when_the_stacks_job_would_not_run_and_says_the_rule_and_fix(planned_results, monkeypatch):
    from typer.testing import CliRunner

    from accel import cli, offline_plan

    result = copy.copy(planned_results["llama-8b-serving-gpu"])
    scope = _scope(result, job_of(result).manifests)
    first(scope, "Deployment")["spec"]["template"]["spec"]["volumes"] = [{"name": "x", "emptyDir": {}}] * 2
    report = check(scope.manifests, scope.cluster)
    result.job = {"name": "llama-8b-serving", "kinds": ["Deployment", "Service"], **report.to_json()}
    assert result.exit_code == 2 and not result.mandatory_violations
    monkeypatch.setattr(offline_plan, "plan_stack", lambda *args, **kwargs: result)
    cli._register_commands()
    outcome = CliRunner().invoke(cli.app, ["plan", "-s", "llama-8b-serving-gpu", "--cwd", str(ROOT)])
    assert outcome.exit_code == 2
    assert "would not schedule" in outcome.output and "rule pod/volume-names-unique" in outcome.output
    assert "fix:" in outcome.output and "accel job -s llama-8b-serving-gpu" in outcome.output


def test_docs_list_every_rule():
    text = (ROOT / "docs" / "job.md").read_text()
    assert [rule_id for rule_id in rules.RULES if f"`{rule_id}`" not in text] == []


@pytest.mark.parametrize("workload_name", ["70b-pretrain", "Llama 3.1 405B pretrain on 2048 H100 nodes (v2)"])
def test_generated_names_pass_the_name_rules_whatever_the_workload_is_called(workload_name, planned_results):
    from accel.job.manifests import generate

    for stack in ("llama-70b-tpu", "llama-8b-serving-gpu"):
        result = planned_results[stack]
        plan = Plan.model_validate(result.plan)
        plan = plan.model_copy(update={"workload": plan.workload.model_copy(update={"name": workload_name})})
        # The serving stack's one-GPU nodes have no fabric check (tests/test_validate_host_network.py).
        for validate in (False, True) if stack == "llama-70b-tpu" else (False,):
            manifests = generate(plan, context_of(result, plan), JobOptions(validate=validate)).manifests
            errors = [v for v in rules.run(_scope(result, manifests)) if v.rule.severity == "error"]
            assert errors == [], [str(v.breach) for v in errors]


# ---- what the stack installs for these rules (AcceleratorStack) ---------------------------------

def test_the_lws_controller_is_pinned_and_kueue_starts_after_it(declare):
    from tests.test_kubernetes_layer import PINS, stack_program, v5p_pool

    capture = declare(stack_program([v5p_pool()], install_lws=True))
    lws = capture.named("llama-lws")
    assert (lws.inputs["chart"], lws.inputs["version"], lws.inputs["namespace"]) == \
        ("oci://registry.k8s.io/lws/charts/lws", PINS.lws.version, "lws-system")
    kueue = capture.named("llama-kueue")
    assert lws.urn in kueue.dependencies  # Kueue turns its LWS integration on only if the CRD exists at start
    config = yaml.safe_load(kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert "lws-system" in config["managedJobsNamespaceSelector"]["matchExpressions"][0]["values"]
    # Without LWS in the plan, no release.
    assert not [r for r in declare(stack_program([v5p_pool()])).resources if r.name == "llama-lws"]


def test_the_kueue_configuration_keeps_the_charts_defaults(declare):
    """Helm replaces the chart's whole configuration with ours: every default field stays as the chart has it
    (kueue v0.14.1 charts/kueue/values.yaml), only the integrations and the namespace selector are added."""
    from tests.test_kubernetes_layer import stack_program, v5p_pool

    kueue = declare(stack_program([v5p_pool()])).named("llama-kueue")
    config = yaml.safe_load(kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["leaderElection"] == {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"}
    assert (config["apiVersion"], config["kind"]) == ("config.kueue.x-k8s.io/v1beta1", "Configuration")
    assert config["integrations"]["frameworks"][:12] == list(rules.kueue.CHART_DEFAULT_FRAMEWORKS)


# ---- Kueue's quota, as the schedule check applies it (accel/job/check.py _admit) -------------------

def test_a_cluster_queue_quota_short_of_the_whole_job_is_refused(baselines):
    from fractions import Fraction

    scope = copy.deepcopy(baselines["tpu"])
    assert check(scope.manifests, scope.cluster).errors == []
    queue = next(iter(scope.cluster.cluster_queues.values()))
    for quotas in queue.quotas.values():
        quotas["google.com/tpu"] = quotas["google.com/tpu"] / 2 - Fraction(1)
    errors = check(scope.manifests, scope.cluster).errors
    assert any(e.field == "resources" and "cannot admit the whole job" in e.message and "google.com/tpu" in e.message
               for e in errors), errors


def test_a_resource_the_cluster_queue_does_not_cover_is_refused(baselines):
    scope = copy.deepcopy(baselines["eks"])
    queue = next(iter(scope.cluster.cluster_queues.values()))
    queue.covered.remove("vpc.amazonaws.com/efa")
    errors = check(scope.manifests, scope.cluster).errors
    assert any("vpc.amazonaws.com/efa" in e.message and "does not cover" in e.message for e in errors), errors


def test_a_hand_edited_manifest_with_malformed_counts_and_quantities_is_reported_not_a_traceback(baselines):
    scope = copy.deepcopy(baselines["tpu"])
    replicated_job(scope)["replicas"] = "four"
    container(scope)["resources"]["limits"]["google.com/tpu"] = "lots"
    errors = check(scope.manifests, scope.cluster).errors
    assert {e.rule for e in errors} >= {"schema/integer-counts", "pod/resource-quantities"}


def _leaves(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaves(value, (*path, index))
    yield path


@given(data=st.data())
def test_any_field_of_the_wrong_shape_is_reported_never_raised(data, baselines):
    """`accel job --check FILE` reads hand-written manifests: a field of any shape gives findings, not a traceback."""
    base = baselines[data.draw(st.sampled_from(["tpu", "serving", "lws"]), label="baseline")]
    scope = rules.Scope(copy.deepcopy(base.manifests), base.stack_objects, base.cluster)
    paths = [p for p in _leaves(scope.manifests) if len(p) > 1]
    path = data.draw(st.sampled_from(paths), label="path")
    value = data.draw(st.sampled_from(["x", -1, 1.5, None, [], {}, [1], {"a": 1}, True]), label="value")
    target = scope.manifests
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    report = check(scope.manifests, scope.cluster)   # must not raise
    assert isinstance(report.errors, list)


# ---- a serving replica across trays of one NVLink domain (rule nvidia/nvlink-group-in-one-domain) ----------------

def test_a_p6e_replica_is_required_in_one_nvlink_clique_as_one_podset_group(baselines):
    lws = first(baselines["p6e-lws"], "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    for template in (lws["leaderTemplate"], lws["workerTemplate"]):
        assert template["metadata"]["annotations"][REQUIRED] == "nvidia.com/gpu.clique"
        assert template["metadata"]["annotations"][PODSET_GROUP] == "llama-405b-p6e"


def test_leader_and_workers_fitted_as_two_podsets_may_land_in_two_domains(baselines):
    scope = copy.deepcopy(baselines["p6e-lws"])
    rule = rules.RULES["nvidia/nvlink-group-in-one-domain"]
    worker = first(scope, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    worker["metadata"]["annotations"][PODSET_GROUP] = "another-group"
    caught = rules.run(scope, [rule])
    assert caught and all("do not name one kueue.x-k8s.io/podset-group-name" in v.breach.message for v in caught)


def test_a_replica_wider_than_one_ultraserver_is_not_asked_to_fit_one(tmp_path):
    """Twelve trays are more than the 9 nodes of the smaller UltraServer: where the stack's block does not say it is
    one u-p6e-gb200x72, no level holds the replica in one NVLink domain, so accel requires none and the rule asks for
    none (a requirement would leave it queued forever)."""
    from accel.offline_plan import plan_stack
    from tests.test_ultraserver_clique_layout import _stack as p6e_stack

    result = plan_stack(None, p6e_stack(tmp_path, None), ROOT)
    scope = _scope(result, _p6e_lws_manifests(result, replica_chips=48))
    scope.cluster.releases["lws"] = {"name": "lws"}
    leader = first(scope, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    assert first(scope, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]["size"] == 12
    assert rules.run(scope, [rules.RULES["nvidia/nvlink-group-in-one-domain"]]) == []
    assert leader["metadata"]["annotations"].get(REQUIRED) != "nvidia.com/gpu.clique"
