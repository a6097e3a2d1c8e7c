"""A pipelined vLLM replica's pods ride the fabric its stage hand-offs are priced on: leader and worker get the wiring
a training pod of the same machine gets, from the same code (manifests._fabric through wire_fabric): the NCCL
plugin's host paths, mounts and env, the RxDM sidecar, the GKE multi-network annotations, IPC_LOCK, and the plugin's
env profile sourced before `vllm serve` starts (its multiprocessing backend spawns each node's workers, which
inherit the environment). EFA's plugin is no host path but part of the image: the release image
lacks it, so an EFA-pipelined replica runs the release's EFA variant. A replica within one node is untouched."""

from __future__ import annotations

import copy
import functools
import json

import pytest

from accel.job.check import check
from accel.job.context import JobContext
from accel.job.declared import DeclaredCluster
from accel.job.facts import runtime
from accel.job.manifests import JobOptions, generate, training_pod
from accel.policies.catalog import load_catalog
from accel.policies.plan import Plan
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping
from tests.conftest import planned_result
from accel.job.service import job_of

SERVICE_405B = {"name": "llama-405b-serving", "kind": "inference", "model": {"architecture": "llama3.1-405b"},
                "inference": {"tokens_per_second": 2000, "p99_latency_ms": 100, "framework": "pytorch",
                              "precision": "bf16"},
                "constraints": {"spot": "never", "accelerators": ["h100-80gb"]}}
NETWORKS = ("vpc1", "vpc2", "vpc3", "vpc4")


@functools.cache
def _chosen(data: str) -> Plan:
    return choose_plan(workload_from_mapping(json.loads(data), "t.yaml"), load_catalog())


def plan_on(machine: str) -> Plan:
    data = copy.deepcopy(SERVICE_405B)
    data["hardware"] = {"accelerator": "h100-80gb", "chips": 32, "cloud": "gcp", "machine_type": machine}
    return _chosen(json.dumps(data, sort_keys=True))


def templates(job) -> list[dict]:
    lws = next(m for m in job.manifests if m["kind"] == "LeaderWorkerSet")
    return [lws["spec"]["leaderWorkerTemplate"][t] for t in ("leaderTemplate", "workerTemplate")]


def rule_errors(job) -> list[str]:
    """The pod and LWS rules' findings (the rules that read what the wiring adds: mounts name volumes, mount paths,
    sidecar restart policies, env names, extended resources)."""
    report = check(job.manifests, DeclaredCluster())
    return [f.rule for f in report.errors if f.rule and f.rule.startswith(("pod/", "lws/"))]


@pytest.fixture(scope="module")
def a3_high():
    plan = plan_on("a3-highgpu-8g")
    assert plan.gpu.fabric == "gpudirect-tcpx" and plan.parallelism.pipeline == 2
    ctx = JobContext(stack="t", gke_networks=NETWORKS)
    return plan, ctx, generate(plan, ctx)


def test_leader_and_worker_get_the_training_pods_fabric(a3_high):
    plan, ctx, job = a3_high
    trainer, annotations, _ = training_pod(plan, ctx, "t", "workers", "img", "cmd")
    want = trainer["spec"]
    fabric_env = [e for e in want["containers"][0]["env"] if e["name"] in runtime()["fabrics"]["gpudirect-tcpx"]["env"]]
    for template in templates(job):
        spec, server = template["spec"], template["spec"]["containers"][0]
        assert spec["initContainers"] == want["initContainers"]          # the RxDM sidecar, as training's
        assert all(v in spec["volumes"] for v in want["volumes"] if v["name"] != "checkpoints")
        assert all(m in server["volumeMounts"] for m in want["containers"][0]["volumeMounts"]
                   if m["name"] != "checkpoints")
        assert all(e in server["env"] for e in fabric_env)
        assert server["securityContext"] == want["containers"][0]["securityContext"]
        assert all(template["metadata"]["annotations"][k] == v for k, v in annotations.items()
                   if k.startswith(("networking.gke.io", "devices.gke.io")))
    assert rule_errors(job) == []


def test_the_profile_is_sourced_before_vllm_starts_on_tcpxo():
    plan = plan_on("a3-megagpu-8g")
    assert plan.gpu.fabric == "gpudirect-tcpxo"
    job = generate(plan, JobContext(stack="t", gke_networks=NETWORKS + ("vpc5", "vpc6", "vpc7", "vpc8")))
    trainer, _, _ = training_pod(plan, JobContext(stack="t"), "t", "workers", "img", "cmd")
    profile = trainer["spec"]["containers"][0]["command"][-1].split(" && ")[0]
    assert profile.startswith("source ")
    leader, worker = (t["spec"]["containers"][0]["command"][-1] for t in templates(job))
    assert leader.startswith(f"{profile} && vllm serve ") and "--headless" not in leader
    assert worker.startswith(f"{profile} && vllm serve ") and worker.endswith(" --headless")
    assert rule_errors(job) == []


def test_a_mount_the_wiring_needs_without_its_volume_is_caught(a3_high):
    _, _, job = a3_high
    broken = copy.deepcopy(job)
    worker = templates(broken)[1]["spec"]
    worker["volumes"] = [v for v in worker["volumes"] if v["name"] != "tcpx-socket"]
    assert "pod/mount-names-a-volume" in rule_errors(broken)


def test_a_sidecar_that_would_block_the_pod_is_caught(a3_high):
    _, _, job = a3_high
    broken = copy.deepcopy(job)
    templates(broken)[0]["spec"]["initContainers"][0]["restartPolicy"] = "OnFailure"
    assert "pod/container-restart-policy" in rule_errors(broken)


def test_on_efa_the_pods_get_the_training_env_and_the_releases_efa_image():
    result = planned_result("llama-405b-serving-h100")
    job = job_of(result)
    for template in templates(job):
        server = template["spec"]["containers"][0]
        assert {"name": "FI_PROVIDER", "value": "efa"} in server["env"]
        assert server["resources"]["limits"]["vpc.amazonaws.com/efa"] == 32
        assert server["image"] == "vllm/vllm-openai:v0.33.0-efa"   # the release's EFA variant
    said = " ".join(job.derivations)
    assert "through the libfabric and aws-ofi-nccl of vllm/vllm-openai:v0.33.0-efa, the release's efa variant" in said
    assert "'Using network Libfabric'" in said
    # An image of the user's own: the job no longer says it lacks the plugin, but that it must carry it.
    plan = Plan.model_validate(result.plan)
    own = generate(plan, JobContext(stack="t"), JobOptions(image="registry.example/vllm-efa:1"))
    said = " ".join(own.derivations)
    assert "registry.example/vllm-efa:1 must carry libfabric and aws-ofi-nccl" in said and "lacks" not in said


def test_the_release_image_without_the_plugin_would_fall_back_to_sockets():
    """Mutated: the EFA variant gone from the facts, the pipelined replica keeps the release image, and the job says
    it lacks the plugin (NCCL over TCP sockets), as the v0.8.5 job did."""
    from accel.job import serving_fabric

    row = runtime()["serving"]["nccl_plugin"]["in_image"]["efa"]
    assert serving_fabric.pipelined_image("efa", "vllm/vllm-openai:v0.33.0") == row["image_with"]
    assert serving_fabric.pipelined_image("gpudirect-tcpxo", "vllm/vllm-openai:v0.33.0") == "vllm/vllm-openai:v0.33.0"
    note = serving_fabric.hand_off_note("efa", "vllm/vllm-openai:v0.33.0", custom_image=False)
    assert "vllm/vllm-openai:v0.33.0 lacks libfabric and aws-ofi-nccl" in note and "TCP sockets" in note


def test_a_replica_within_one_node_gets_no_fabric():
    data = copy.deepcopy(SERVICE_405B)
    data["constraints"].update({"clouds": ["aws"], "accelerators": ["h200-141gb"]})
    plan = _chosen(json.dumps(data, sort_keys=True))
    assert plan.chosen.machine_type == "p5en.48xlarge" and plan.estimate.details["replica_chips"] == 8
    job = generate(plan, JobContext(stack="t"))
    deployment = next(m for m in job.manifests if m["kind"] == "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    assert "initContainers" not in spec
    assert not any(e["name"].startswith(("NCCL_", "FI_")) for e in spec["containers"][0]["env"])
