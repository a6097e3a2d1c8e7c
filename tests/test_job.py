"""`accel job`: manifests derived from each stack's Plan schedule on what the stack's program declares,
validate against the JobSet CRD and Kubernetes schemas, and hand-edited mistakes are caught."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from accel.job.check import check
from accel.job.declared import declared_cluster
from accel.job.manifests import QUEUE_LABEL, JobOptions
from accel.job.quantities import parse_quantity
from accel.job.service import job_of
from accel.offline_plan import plan_stack
from accel.policies.catalog import CatalogError, offerings_from_inventory
from tests.conftest import planned_result
from tests.crds import CRDS
from tests.crds import validate as validate_crd

ROOT = Path(__file__).resolve().parents[1]
STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
TRAINING_GPU, TRAINING_TPU, SERVING = "dev-spot", "llama-70b-tpu", "llama-8b-serving-gpu"
JOBSET_CRD = CRDS / "jobset" / "jobset.x-k8s.io_jobsets.yaml"

def planned(stack: str):
    return planned_result(stack)


def recheck(stack: str, manifests):
    result = planned(stack)
    return check(manifests, declared_cluster(result.capture, result.existing_cluster))


def generated(stack: str, **options):
    return job_of(planned(stack), JobOptions(**options))


def pod_spec(manifests):
    return manifests[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_stacks_job_schedules_on_what_the_stack_declares(stack):
    report = recheck(stack, generated(stack).manifests)
    assert report.errors == []
    assert sum(p["count"] for p in report.placements) > 0


@pytest.mark.parametrize("stack", STACKS)
def test_plan_json_carries_the_job_check(stack):
    job = planned(stack).to_json()["job"]
    assert job["schedulable"] is True and job["errors"] == []



@pytest.mark.parametrize("stack", [s for s in STACKS if s != SERVING])
def test_training_jobset_validates_against_the_jobset_crd(stack):
    checks = generated(stack, validate=True).manifests
    for manifest in generated(stack).manifests + checks:
        validate_crd(manifest, JOBSET_CRD, "v1alpha2")


def test_serving_objects_validate_against_the_kubernetes_schema():
    import kubernetes_validate

    for manifest in generated(SERVING).manifests:
        kubernetes_validate.validate(manifest, "1.30", strict=True)


def test_tpu_job_runs_one_pod_per_host_of_each_slice_with_multislice_wiring():
    plan = planned(TRAINING_TPU).plan["tpu"]
    jobset = generated(TRAINING_TPU).manifests[0]
    replicated = jobset["spec"]["replicatedJobs"][0]
    assert replicated["replicas"] == plan["slices"]
    assert replicated["template"]["spec"]["parallelism"] == plan["hosts_per_slice"]
    env = {e["name"] for e in pod_spec([jobset])["containers"][0]["env"]}
    assert {"MEGASCALE_COORDINATOR_ADDRESS", "MEGASCALE_NUM_SLICES", "MEGASCALE_SLICE_ID", "MEGASCALE_PORT"} <= env


def test_efa_job_requests_every_efa_interface_of_the_node():
    plan = planned("llama-70b-finetune-aws").plan["gpu"]
    limits = pod_spec(generated("llama-70b-finetune-aws").manifests)["containers"][0]["resources"]["limits"]
    assert limits["vpc.amazonaws.com/efa"] == plan["efa_interfaces"]


def test_check_catches_a_wrong_topology():
    manifests = copy.deepcopy(generated(TRAINING_TPU).manifests)
    pod_spec(manifests)["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "8x8"
    errors = recheck(TRAINING_TPU, manifests).errors
    assert any("gke-tpu-topology" in e.field and "8x8" in e.message for e in errors), errors


def test_check_catches_too_many_gpus_per_pod():
    manifests = copy.deepcopy(generated(TRAINING_GPU).manifests)
    resources = pod_spec(manifests)["containers"][0]["resources"]
    resources["limits"]["nvidia.com/gpu"] = resources["requests"]["nvidia.com/gpu"] = 16
    errors = recheck(TRAINING_GPU, manifests).errors
    assert any("nvidia.com/gpu" in str(e) for e in errors), errors


def test_check_catches_a_missing_queue_label():
    manifests = copy.deepcopy(generated(TRAINING_GPU).manifests)
    del manifests[0]["metadata"]["labels"][QUEUE_LABEL]
    del manifests[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"][QUEUE_LABEL]
    errors = recheck(TRAINING_GPU, manifests).errors
    assert any(e.field == f"metadata.labels[{QUEUE_LABEL}]" and "missing" in e.message for e in errors), errors


def test_check_catches_a_missing_toleration_outside_the_queue():
    manifests = copy.deepcopy(generated(TRAINING_GPU).manifests)
    del manifests[0]["metadata"]["labels"][QUEUE_LABEL]
    del manifests[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"][QUEUE_LABEL]
    pod_spec(manifests)["tolerations"] = []
    errors = recheck(TRAINING_GPU, manifests).errors
    assert any(e.field.endswith("tolerations") and "nvidia.com/gpu" in e.message for e in errors), errors


def test_check_warns_when_only_the_kueue_flavor_supplies_a_toleration():
    manifests = copy.deepcopy(generated(TRAINING_GPU).manifests)
    pod_spec(manifests)["tolerations"] = []
    report = recheck(TRAINING_GPU, manifests)
    assert report.errors == []
    assert any("tolerations" in w.field for w in report.warnings)


def test_check_catches_a_slice_with_the_wrong_number_of_hosts():
    manifests = copy.deepcopy(generated(TRAINING_TPU).manifests)
    manifests[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] = 32
    errors = recheck(TRAINING_TPU, manifests).errors
    assert any(e.field == "parallelism" for e in errors), errors


@pytest.mark.parametrize("stack", [TRAINING_GPU, TRAINING_TPU, "llama-70b-finetune-aws"])
def test_validate_writes_a_schedulable_check_job_with_a_pass_line(stack):
    job = generated(stack, validate=True)
    assert any(line.startswith("pass line: bus bandwidth >= ") for line in job.derivations)
    assert recheck(stack, job.manifests).errors == []


def test_inventory_nodes_hold_the_declared_gpus_per_node():
    [offering] = offerings_from_inventory([{"accelerator": "l40s", "count": 32, "usd_per_chip_hour": 1,
                                            "gpus_per_node": 4}])
    assert offering.chips_per_host == 4


def test_inventory_rejects_chips_that_are_not_whole_nodes():
    with pytest.raises(CatalogError, match="gpus_per_node"):
        offerings_from_inventory([{"accelerator": "l40s", "count": 30, "usd_per_chip_hour": 1, "gpus_per_node": 4}])


@given(st.integers(min_value=0, max_value=10 ** 6), st.sampled_from(["", "m", "Ki", "Mi", "Gi", "Ti", "k", "M", "G"]))
def test_quantities_parse_to_base_units(number, suffix):
    factor = {"": 1, "m": 0.001, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40,
              "k": 1e3, "M": 1e6, "G": 1e9}[suffix]
    assert float(parse_quantity(f"{number}{suffix}")) == pytest.approx(number * factor)


# ---- GPUDirect on GKE: the pod reaches the GPU NICs through the stack's GKE Networks ------------------

def tcpxo_plan():
    """dev-spot's plan moved to two A3 Mega nodes with GPUDirect-TCPXO (no stack in stacks/ uses it)."""
    from accel.policies.plan import Plan

    plan = Plan.model_validate(planned(TRAINING_GPU).plan)
    gpu = plan.gpu.model_copy(update={"machine_type": "a3-megagpu-8g", "nodes": 2, "fabric": "gpudirect-tcpxo",
                                      "extra_networks": 8, "guest_accelerator": "nvidia-h100-mega-80gb"})
    return plan.model_copy(update={"gpu": gpu})


def tcpxo_job(networks: tuple[str, ...]):
    from dataclasses import replace

    from accel.job.manifests import generate
    from accel.job.service import context_of

    plan = tcpxo_plan()
    return generate(plan, replace(context_of(planned(TRAINING_GPU), plan), gke_networks=networks))


def test_tcpxo_job_carries_the_rxdm_sidecar_and_the_stacks_networks():
    import json

    manifests = tcpxo_job(tuple(f"vpc{i}" for i in range(1, 9))).manifests
    template = manifests[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    # The native sidecar (restartPolicy Always); the other init container checks Megatron-LM out before it starts.
    [sidecar] = [c for c in template["spec"]["initContainers"] if c.get("restartPolicy") == "Always"]
    assert sidecar["name"] == "tcpxo-daemon" and sidecar["restartPolicy"] == "Always"
    interfaces = json.loads(template["metadata"]["annotations"]["networking.gke.io/interfaces"])
    assert [i["network"] for i in interfaces] == ["default", *(f"vpc{i}" for i in range(1, 9))]
    env = {e["name"] for e in template["spec"]["containers"][0]["env"]}
    assert "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY" in env


def test_tcpxo_jobset_validates_against_the_jobset_crd():
    validate_crd(tcpxo_job(("vpc1", "vpc2")).manifests[0], JOBSET_CRD, "v1alpha2")


def test_check_rejects_pod_networks_the_stack_does_not_declare():
    errors = recheck(TRAINING_GPU, tcpxo_job(("vpc1",)).manifests).errors
    assert any("vpc1" in e.message and "interfaces" in e.field for e in errors), errors


# ---- the objects the check reads are what the Kueue CRDs accept --------------------------------------

@pytest.mark.parametrize("kind", ["ClusterQueue", "LocalQueue", "ResourceFlavor"])
def test_declared_kueue_objects_validate_against_the_kueue_crds(kind):
    objects = [r.inputs for stack in (TRAINING_GPU, TRAINING_TPU)
               for r in planned(stack).capture.of_type(f"kubernetes:kueue.x-k8s.io/v1beta1:{kind}")]
    assert objects
    for manifest in objects:
        validate_crd(manifest, CRDS / "kueue" / f"kueue.x-k8s.io_{kind.lower()}s.yaml", "v1beta1")


# ---- the command line -----------------------------------------------------------------------------

@pytest.fixture
def run_cli(monkeypatch):
    """`accel job ...` on the stacks planned once above (the command's own planning run is the same call)."""
    from typer.testing import CliRunner

    from accel import cli, offline_plan

    monkeypatch.setattr(offline_plan, "plan_stack", lambda stack, config, project_dir, **_: planned(stack))
    cli._register_commands()
    return lambda *args: CliRunner().invoke(cli.app, ["job", *args, "--cwd", str(ROOT)])


def test_cli_writes_the_job_with_its_header_and_says_where_it_schedules(run_cli, tmp_path):
    out = tmp_path / "job.yaml"
    result = run_cli("-s", TRAINING_GPU, "-o", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert text.startswith(f"# Workload for stack {TRAINING_GPU}")
    assert [d["kind"] for d in yaml.safe_load_all(text) if d] == ["JobSet"]
    assert "schedulable on stack dev-spot" in result.output


def test_cli_check_exits_2_naming_the_pod_field_and_pool(run_cli, tmp_path):
    manifests = copy.deepcopy(generated(TRAINING_TPU).manifests)
    pod_spec(manifests)["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "8x8"
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump_all(manifests))
    result = run_cli("-s", TRAINING_TPU, "--check", str(edited))
    assert result.exit_code == 2
    assert "error: llama-70b-pretrain/slice pod: " in result.output
    assert "nodeSelector[cloud.google.com/gke-tpu-topology] (pool llama-70b-tpu-tpu-s0): wants '8x8'" in result.output


def test_cli_check_rejects_a_file_that_is_not_kubernetes_objects(run_cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just\n- a list\n")
    result = run_cli("-s", TRAINING_GPU, "--check", str(bad))
    assert result.exit_code == 2 and "not a Kubernetes object" in result.output


def test_cli_check_reads_every_document_of_a_multi_document_file(run_cli, tmp_path):
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
    both = tmp_path / "both.yaml"
    both.write_text(yaml.safe_dump_all([config_map, *generated(TRAINING_TPU).manifests]))
    result = run_cli("-s", TRAINING_TPU, "--check", str(both))
    assert result.exit_code == 0, result.output
    assert "schedulable on stack" in result.output


def test_cli_check_refuses_an_alias_bomb_before_building_it(run_cli, tmp_path):
    rows = ["a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    rows += [f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdef", "bcdefg")]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join([*rows, "kind: JobSet"]) + "\n")
    result = run_cli("-s", TRAINING_GPU, "--check", str(bomb))
    assert result.exit_code == 2 and "aliases expand to more than" in result.output


def test_a_serving_replica_spanning_nodes_becomes_a_schedulable_leaderworkerset():
    import kubernetes_validate

    from dataclasses import replace

    from accel.job.manifests import generate
    from accel.job.service import context_of
    from accel.policies.plan import Plan

    plan = Plan.model_validate(planned(SERVING).plan)
    replicas = plan.chosen.chips // 2   # as many replicas of 2 one-GPU nodes as the planned GPUs hold
    details = {**plan.estimate.details, "replicas": replicas, "replica_chips": 2}
    plan = plan.model_copy(update={"estimate": plan.estimate.model_copy(update={"details": details})})
    manifests = generate(plan, context_of(planned(SERVING), plan)).manifests
    lws = manifests[0]
    assert (lws["kind"], lws["spec"]["replicas"], lws["spec"]["leaderWorkerTemplate"]["size"]) == \
        ("LeaderWorkerSet", replicas, 2)
    for role in ("leaderTemplate", "workerTemplate"):
        template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": role.lower()},
                    "template": lws["spec"]["leaderWorkerTemplate"][role]}
        kubernetes_validate.validate(template, "1.30", strict=True)
    worker_command = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["command"]
    assert "$(LWS_LEADER_ADDRESS)" in worker_command[-1]
    # It schedules on the serving stack's nodes; that stack's own plan (one node per replica) installs no
    # LeaderWorkerSet controller, so the one error is the missing controller (tests/test_job_rules.py).
    assert [e.rule for e in recheck(SERVING, manifests).errors] == ["stack/crd-controller-installed"]


def test_cli_writes_nothing_to_o_when_the_job_would_not_schedule(run_cli, tmp_path):
    # Before: exit 2 and FILE written all the same, ready for a `kubectl apply -f FILE` that could never run.
    manifests = copy.deepcopy(generated(TRAINING_TPU).manifests)
    pod_spec(manifests)["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "8x8"
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump_all(manifests))
    out = tmp_path / "job.json"
    out.write_text("the job that ran last week\n")
    result = run_cli("-s", TRAINING_TPU, "--check", str(edited), "--json", "-o", str(out))
    assert result.exit_code == 2
    assert out.read_text() == "the job that ran last week\n"
    assert f"nothing written to {out}: the job would not schedule" in result.output
    fresh = tmp_path / "new.json"
    assert run_cli("-s", TRAINING_TPU, "--check", str(edited), "--json", "-o", str(fresh)).exit_code == 2
    assert not fresh.exists()
