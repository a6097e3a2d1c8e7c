"""GB200 serving across trays, and GB200 inventories that say which NVLink domain they are.

1. A serving replica that spans nodes of one NVLink domain (stacks/Pulumi.llama-405b-serving-a4x.yaml: Llama 3.1 405B
   on A4X, 2 trays per replica) runs as a LeaderWorkerSet whose leader and workers claim the IMEX channel of an NVIDIA
   ComputeDomain, exactly when the training path's one decision (workloads.nvlink_group_spans_nodes) says the group
   spans the domain across nodes; a replica on one node claims none.
2. The offline check refuses a pod group across the nodes of one NVLink domain that claims no channel (rule
   nvidia/compute-domain-claim), for the serving group and the training job alike.
3. An inventory states its NVLink domain (accel:cluster inventory nvlink_domain_gpus): a GB200 NVL4 inventory (4
   GPUs on one board, NVLink within it) gets no ComputeDomain and no DRA driver; the default stays NVL72.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from accel.components.kubernetes.pools import ExistingCluster
from accel.components.kubernetes.workloads import needs_compute_domain, nvlink_group_spans_nodes
from accel.job import rules
from accel.job.declared import declared_cluster
from accel.job.service import check_manifests, job_of
from accel.job.manifests import JobOptions
from accel.offline_plan import plan_stack
from accel.policies import hardware
from accel.policies.plan import Plan
from tests.compute_domain_checks import assert_claims_a_valid_compute_domain
from tests.conftest import planned_result
from tests.crds import CRDS, validate

ROOT = Path(__file__).resolve().parent.parent
SERVING = "llama-405b-serving-a4x"
CHANNEL = "compute-domain-channel"
LWS_CRD = CRDS / "lws" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
CD_CRD = CRDS / "nvidia-dra" / "resource.nvidia.com_computedomains.yaml"


def _of_kind(manifests, kind):
    return [m for m in manifests if m["kind"] == kind]


def _releases(result) -> set[str]:
    return {r.inputs["name"] for r in result.capture.resources if r.type == "kubernetes:helm.sh/v3:Release"}


def _violations(result, manifests, rule_id="nvidia/compute-domain-claim"):
    scope = rules.Scope(manifests, cluster=declared_cluster(result.capture, result.existing_cluster))
    return [v for v in rules.run(scope, [rules.RULES[rule_id]])]


@pytest.fixture(scope="module")
def serving():
    result = planned_result(SERVING)
    return result, job_of(result)


# ------------------------------------------------------------------------------ 1. the LWS claims the channel
def test_a_405b_replica_spans_two_a4x_trays_as_a_leader_worker_set_that_claims_the_compute_domain(serving):
    result, job = serving
    plan = Plan.model_validate(result.plan)
    assert plan.gpu.machine_type == "a4x-highgpu-4g" and plan.estimate.details["replica_chips"] == 8
    [domain] = _of_kind(job.manifests, "ComputeDomain")
    [lws] = _of_kind(job.manifests, "LeaderWorkerSet")
    validate(domain, CD_CRD, "v1beta1")
    validate(lws, LWS_CRD, "v1")
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    # vLLM runs the replica as the plan lays it out and the estimate costs it: one TP8 group over both trays.
    assert plan.parallelism.text() == "TP8 x PP1 x DP9"
    command = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["command"][-1]
    assert "--tensor-parallel-size 8" in command and "--pipeline-parallel-size" not in command
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    group = lws["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        pod = group[role]["spec"]
        assert pod["resourceClaims"] == [{"name": CHANNEL, "resourceClaimTemplateName": template}], role
        assert pod["containers"][0]["resources"]["claims"] == [{"name": CHANNEL}], role
    # Each group (one Kueue Workload: leader and workers) is required in one sub-block, one NVL72 rack, as a PodSet
    # group, so a replica never straddles two NVLink domains.
    rack = hardware.current().placement_units["a4x-highgpu-4g"]
    assert rack.nodes == 18 and rack.level == "cloud.google.com/gce-topology-subblock"
    for role in ("leaderTemplate", "workerTemplate"):
        assert group[role]["metadata"]["annotations"] == {"kueue.x-k8s.io/podset-group-name": lws["metadata"]["name"],
                                                          "kueue.x-k8s.io/podset-required-topology": rack.level}
    # The decision is the training path's, over the replica's nodes.
    assert nvlink_group_spans_nodes(plan.gpu.accelerator, plan.gpu.machine_type, group["size"])
    assert any(line.startswith("ComputeDomain ") and "2 nodes of each replica" in line for line in job.derivations)
    assert check_manifests(result, job.manifests).ok
    # The stack installs what the objects need: the LWS controller and NVIDIA's DRA driver (rule
    # stack/crd-controller-installed would refuse otherwise).
    assert {"lws", "nvidia-dra-driver-gpu"} <= _releases(result)


def test_the_reserved_serving_pool_is_created_with_its_nodes_so_kueue_can_place_the_groups(serving):
    """Its flavor names a Kueue Topology (a pool on a scale-out fabric), and Kueue assigns topology domains from the
    nodes that exist: a serving pool scaling from zero was flagged kueue/topology-over-provisioned-nodes (never
    admitted), as training pools were before (components/gcp/gpu.py _topology_needs_nodes)."""
    result, job = serving
    [pool] = [r.inputs for r in result.capture.of_type("gcp:container/nodePool:NodePool") if "gpu" in r.name]
    assert pool["autoscaling"]["totalMinNodeCount"] == pool["initialNodeCount"] == result.plan["gpu"]["nodes"] == 18
    report = check_manifests(result, job.manifests)
    assert not [f for f in [*report.errors, *report.warnings] if f.rule == "kueue/topology-over-provisioned-nodes"]


def test_the_serving_stacks_fabric_check_claims_the_domain_over_the_whole_fleet(serving):
    result, _ = serving
    check = job_of(result, JobOptions(validate=True))
    assert_claims_a_valid_compute_domain(result, check)


def test_a_gb200_replica_on_one_tray_runs_as_a_deployment_and_claims_nothing(serving):
    """The same plan with a 4-GPU replica (a 70B model fits one tray): a Deployment, whose pods are groups of one."""
    result, _ = serving
    data = copy.deepcopy(result.plan)
    data["estimate"]["details"].update(replica_chips=4, replicas=18)
    data.pop("parallelism")   # derived from the replica: TP4 in the tray
    plan = Plan.model_validate(data)
    from accel.job.manifests import generate
    from accel.job.service import context_of

    job = generate(plan, context_of(result, plan))
    assert [m["kind"] for m in job.manifests] == ["Deployment", "Service"]
    assert "resourceClaims" not in job.manifests[0]["spec"]["template"]["spec"]
    assert not _violations(result, job.manifests)
    assert not nvlink_group_spans_nodes("gb200", "a4x-highgpu-4g", 1)
    assert needs_compute_domain(plan)   # the fleet (the fabric check across it) still does


def test_multi_node_gpu_serving_replicas_stay_inside_one_placed_nvlink_domain():
    """Only a machine whose NVLink domain spans nodes and is placed as a unit (A4X) offers replicas across nodes, in
    the sizes a tensor-parallel group may span there (2 trays: groups of 2 tile an 18-tray rack)."""
    from accel.policies.catalog import load_catalog
    from accel.policies.selection.ladders import replica_sizes

    offerings = {o.machine_type: o for o in load_catalog().offerings}
    assert [(s.chips, s.hosts) for s in replica_sizes(offerings["a4x-highgpu-4g"], 256)] == [
        (1, 1), (2, 1), (4, 1), (8, 2)]
    for machine in ("p6e-gb200.36xlarge", "a4-highgpu-8g", "p5.48xlarge"):
        assert {s.hosts for s in replica_sizes(offerings[machine], 256)} == {1}, machine
    assert [s.chips for s in replica_sizes(offerings["a4x-highgpu-4g"], 4)] == [1, 2, 4]


# ------------------------------------------------------------------------------ 2. the offline check
def test_the_generated_groups_pass_the_compute_domain_rule(serving):
    result, job = serving
    assert not _violations(result, job.manifests)
    training = planned_result("onprem-gb200")
    assert not _violations(training, job_of(training).manifests)


@pytest.mark.parametrize("role", ["leaderTemplate", "workerTemplate"])
def test_a_serving_group_across_trays_without_the_claim_is_refused(serving, role):
    result, job = serving
    manifests = copy.deepcopy(job.manifests)
    [lws] = _of_kind(manifests, "LeaderWorkerSet")
    del lws["spec"]["leaderWorkerTemplate"][role]["spec"]["resourceClaims"]
    [violation] = _violations(result, manifests)
    assert violation.breach.field == f"spec.leaderWorkerTemplate.{role}.spec.resourceClaims"
    assert "its 2 pods share one NVLink domain across the nodes of" in violation.breach.message
    assert not check_manifests(result, manifests).ok


def test_a_container_that_does_not_name_the_claim_is_refused(serving):
    result, job = serving
    manifests = copy.deepcopy(job.manifests)
    [lws] = _of_kind(manifests, "LeaderWorkerSet")
    del lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["resources"]["claims"]
    [violation] = _violations(result, manifests)
    assert violation.breach.field.endswith("workerTemplate.spec.containers[0].resources.claims")


def test_a_claim_of_a_template_no_compute_domain_names_is_refused(serving):
    result, job = serving
    manifests = [m for m in copy.deepcopy(job.manifests) if m["kind"] != "ComputeDomain"]
    assert len(_violations(result, manifests)) == 2   # leader and worker: their claim names nothing


def test_a_training_job_across_nvl72_inventory_trays_without_the_claim_is_refused():
    result = planned_result("onprem-gb200")
    manifests = copy.deepcopy(job_of(result).manifests)
    [jobset] = _of_kind(manifests, "JobSet")
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    del pod["resourceClaims"]
    [violation] = _violations(result, manifests)
    assert "inventory:gb200" in violation.breach.message


# ------------------------------------------------------------------------------ 3. an inventory's own domain
def _onprem(tmp_path, **entry) -> Path:
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.onprem-gb200.yaml").read_text())
    stack["config"]["accel:cluster"]["inventory"][0].update(entry)
    path = tmp_path / "Pulumi.onprem-gb200.yaml"
    path.write_text(yaml.safe_dump(stack))
    return path


def test_an_nvl4_inventory_gets_no_compute_domain_and_no_dra_driver(tmp_path):
    result = plan_stack(None, _onprem(tmp_path, nvlink_domain_gpus=4), ROOT)
    assert result.plan["gpu"]["nodes"] > 1
    job = job_of(result)
    assert "ComputeDomain" not in {m["kind"] for m in job.manifests}
    assert "nvidia-dra-driver-gpu" not in _releases(result)
    assert check_manifests(result, job.manifests).ok       # and the rule asks for no claim
    check = job_of(result, JobOptions(validate=True))
    assert "ComputeDomain" not in {m["kind"] for m in check.manifests}
    assert not any("NVLink domain" in line and "IMEX" in line for line in check.derivations)


def test_an_inventory_that_states_nvl72_is_what_the_default_already_was(tmp_path):
    stated = plan_stack(None, _onprem(tmp_path, nvlink_domain_gpus=72), ROOT)
    assert "ComputeDomain" in {m["kind"] for m in job_of(stated).manifests}
    assert "nvidia-dra-driver-gpu" in _releases(stated)


def _entry(**fields):
    return {"accelerator": "gb200", "chips": 72, "usd_per_chip_hour": 4.2, "gpus_per_node": 4, **fields}


@pytest.mark.parametrize(("fields", "message"), [
    ({"nvlink_domain_gpus": 6}, r"nvlink_domain_gpus: 6 is not a whole number of nodes of 4 GPUs \(gpus_per_node\): "
                                r"give at most 4 .* or a multiple of 4"),
    ({"nvlink_domain_gpus": 0}, r"nvlink_domain_gpus\n.*greater than 0"),
    ({"nvlink_domain_gpus": "nvl4"}, r"nvlink_domain_gpus\n.*valid integer"),
    ({"accelerator": "tpu-v5p", "gpus_per_node": None, "nvlink_domain_gpus": 4},
     r"nvlink_domain_gpus is for GPU inventory; tpu-v5p is a TPU"),
])
def test_a_bad_nvlink_domain_names_the_field_and_what_is_allowed(fields, message):
    with pytest.raises(ValidationError, match=message):
        ExistingCluster(name="dc", inventory=[_entry(**fields)])


def test_a_domain_within_the_node_or_of_whole_nodes_is_accepted():
    for domain in (1, 2, 4, 8, 72):
        cluster = ExistingCluster(name="dc", inventory=[_entry(nvlink_domain_gpus=domain)])
        assert cluster.stated_nvlink_domain("gb200") == domain
    assert ExistingCluster(name="dc", inventory=[_entry()]).stated_nvlink_domain("gb200") is None


# ------------------------------------------------------------------------------ 4. an inventory labelled by its clique
CLIQUE = "nvidia.com/gpu.clique"


def test_a_gb200_inventory_labelled_by_gpu_feature_discovery_keeps_each_replica_in_one_nvlink_clique(tmp_path):
    """nvlink_clique_label: the stack's Kueue Topology is the clique, then the node, the flavor names it, and the job
    requires each 2-tray replica (TP8 over both trays: the PyTorch run's distributed optimizer shards the optimizer
    state over the replicas) in one clique: two NVL72 racks of 18 trays hold 18, the job needs 11."""
    result = plan_stack(None, _onprem(tmp_path, nvlink_clique_label=True), ROOT)
    [topology] = [r.inputs for r in result.capture.resources if r.type.endswith(":Topology")]
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == [CLIQUE, "kubernetes.io/hostname"]
    [flavor] = [r.inputs for r in result.capture.resources if r.type.endswith(":ResourceFlavor")]
    assert flavor["spec"]["topologyName"] == topology["metadata"]["name"]
    validate(topology, CRDS / "kueue" / "kueue.x-k8s.io_topologies.yaml", "v1beta1")
    job = job_of(result)
    [jobset] = _of_kind(job.manifests, "JobSet")
    annotations = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"kueue.x-k8s.io/podset-slice-required-topology": CLIQUE,
                           "kueue.x-k8s.io/podset-slice-size": "2"}
    assert check_manifests(result, job.manifests).ok
    assert "ComputeDomain" in {m["kind"] for m in job.manifests}


def test_an_inventory_without_the_label_gets_no_topology(tmp_path):
    result = planned_result("onprem-gb200")
    assert not [r for r in result.capture.resources if r.type.endswith(":Topology")]


def test_a_replica_wider_than_a_stated_clique_is_only_preferred_in_one(tmp_path):
    """Racks partitioned into cliques of 9 trays (nvlink_domain_gpus 36) hold no 24-tray job whole: required, it would
    wait forever; the 4-tray replicas still pack (two racks: 4 cliques of 9 hold 8 of them)."""
    result = plan_stack(None, _onprem(tmp_path, nvlink_clique_label=True, nvlink_domain_gpus=36), ROOT)
    from accel.job.topology import topology_request
    levels = (CLIQUE, "kubernetes.io/hostname")
    assert topology_request(levels, "gb200", 24, 24, clique_nodes=9, fleet_nodes=36).annotations == {
        "kueue.x-k8s.io/podset-preferred-topology": CLIQUE}
    [jobset] = _of_kind(job_of(result).manifests, "JobSet")
    annotations = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["kueue.x-k8s.io/podset-slice-required-topology"] == CLIQUE


def test_inventory_clique_nodes_follow_the_stated_domain():
    inventory_clique_nodes = hardware.current().inventory_clique_nodes
    assert inventory_clique_nodes("gb200", 4, None) == 18      # the table's NVL72
    assert inventory_clique_nodes("gb200", 4, 36) == 9
    assert inventory_clique_nodes("gb200", 4, 4) is None       # NVL4: the node is the domain


@pytest.mark.parametrize(("fields", "message"), [
    ({"nvlink_clique_label": True, "nvlink_domain_gpus": 4}, r"nvlink_clique_label: gb200 nodes share no NVLink domain "
                                                             r"across nodes"),
    ({"nvlink_clique_label": True, "accelerator": "h100-80gb", "gpus_per_node": 8},
     r"nvlink_clique_label: h100-80gb nodes share no NVLink domain across nodes"),
    ({"nvlink_clique_label": True, "accelerator": "tpu-v5p", "gpus_per_node": None},
     r"nvlink_clique_label: tpu-v5p nodes share no NVLink domain"),
    ({"nvlink_clique_label": "yes please"}, r"nvlink_clique_label\n.*valid boolean"),
])
def test_a_clique_label_where_no_nvlink_domain_joins_nodes_is_refused(fields, message):
    with pytest.raises(ValidationError, match=message):
        ExistingCluster(name="dc", inventory=[_entry(**fields)])
