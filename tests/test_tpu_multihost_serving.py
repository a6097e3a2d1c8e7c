"""Serving on TPUs across hosts (accel/job/tpu_serving.py): a replica over several TPU hosts is one multi-host slice,
and accel serves TPUs with vLLM TPU, which GKE supports on one host only (multi-host configurations are not
supported; tpu-inference leaves tensor parallelism across hosts untested). accel writes no job there: it refuses with
exit 2, saying why and how to serve instead; the single-host slice it names serves. Across GPU nodes, the Service
reaches the leaders only (only they run the server)."""

from __future__ import annotations

import dataclasses
import functools
import json

import pytest

from accel.base.errors import EXIT_INVALID, UsageError
from accel.job.context import JobContext
from accel.job.manifests import JobOptions, generate
from accel.job.pod_templates import LWS_WORKER_INDEX
from accel.job.tpu_serving import MultiHostTpuServing
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.hardware.tpu_serving import LIMIT
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping


@functools.cache
def _plan(hardware_json: str, model_json: str = '{"parameters": "70B"}', framework: str = "jax"):
    workload = {"name": "llama-70b-chat", "kind": "inference", "model": json.loads(model_json),
                "hardware": json.loads(hardware_json),
                "inference": {"tokens_per_second": 2000, "framework": framework}}
    spec = workload_from_mapping(workload, "t.yaml")
    hosts = json.loads(hardware_json).get("chips", 0) // 4
    if hosts <= 1 or not json.loads(hardware_json)["accelerator"].startswith("tpu"):
        return choose_plan(spec, load_catalog())
    # choose and plan hold TPU serving to one host (hardware table limits.tpu_serving_hosts_per_replica,
    # tests/test_tpu_serving_choose.py) and refuse this pin: the plan `accel job` still meets, one made before that
    # rule or edited by hand, is made under a table that allows the replica's hosts.
    facts = hardware.current()
    limit = facts.limits[LIMIT]._replace(value=hosts)
    with hardware.using(dataclasses.replace(facts, limits={**facts.limits, LIMIT: limit})):
        return choose_plan(spec, load_catalog())


def plan(hardware: dict, model: dict | None = None, framework: str = "jax"):
    return _plan(json.dumps(hardware, sort_keys=True), json.dumps(model or {"parameters": "70B"}), framework)


FOUR_HOSTS = {"accelerator": "tpu-v6e", "chips": 16}          # ct6e-standard-4t x 4, a 4x4 slice
ONE_HOST = {"accelerator": "tpu-v6e", "topology": "2x4"}      # ct6e-standard-8t, 8 chips on one host


@pytest.mark.parametrize("options", [JobOptions(), JobOptions(command="serve.sh"),
                                     JobOptions(image="my/vllm-tpu:1")])
def test_a_tpu_replica_over_several_hosts_is_refused_with_exit_2(options):
    # Before: one pod template for leader and workers, the probes on every host and the Service selecting the
    # workers too, each host its own server: a job that cannot serve.
    with pytest.raises(MultiHostTpuServing) as refused:
        generate(plan(FOUR_HOSTS), JobContext(stack="t"), options)
    assert isinstance(refused.value, UsageError) and refused.value.exit_code == EXIT_INVALID
    text = str(refused.value)
    assert "each replica takes 16 chips over 4 ct6e-standard-4t hosts (topology 4x4" in text


def test_the_refusal_says_why_citing_the_vllm_tpu_tutorial_and_tpu_inferences_matrix():
    with pytest.raises(MultiHostTpuServing) as refused:
        generate(plan(FOUR_HOSTS), JobContext(stack="t"))
    reason = refused.value.reason
    for needed in ("accel serves TPUs with vLLM TPU on one host",
                   "multi-host configurations are not supported with vLLM on TPUs on GKE",
                   "[GKE 'Serve an LLM using TPU Trillium on GKE with vLLM'",
                   "tensor parallelism there untested [tpu-inference 0.32.0 README 'Parallelism Techniques'"):
        assert needed in reason, needed


def test_the_refusal_says_how_to_serve_instead():
    with pytest.raises(MultiHostTpuServing) as refused:
        generate(plan(FOUR_HOSTS), JobContext(stack="t"))
    fix = refused.value.fix
    assert "pin hardware: {accelerator: tpu-v6e, topology: 2x4} for one 8-chip replica on one ct6e-standard-8t host" in fix
    assert "on GPUs" in fix and "kubernetes-sigs/lws docs/examples/vllm/TPU" in fix
    assert "`accel job -s STACK --check FILE`" in fix


def test_the_single_host_slice_it_names_serves_as_a_deployment():
    manifests = generate(plan(ONE_HOST), JobContext(stack="t")).manifests
    deployment, service = manifests
    assert deployment["kind"] == "Deployment"
    pod = deployment["spec"]["template"]["spec"]
    assert pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"] == "2x4"
    assert [c["name"] for c in pod["containers"]] == ["server"]
    assert "--tensor-parallel-size 8 " in pod["containers"][0]["command"][-1]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


def test_a_gpu_replica_over_nodes_is_served_by_its_leaders_only():
    # Before: the Service selected app.kubernetes.io/name alone, which the workers (headless, no port) carry too.
    gpu = plan({"accelerator": "h100-80gb", "chips": 16}, {"parameters": "8B"}, "pytorch")
    details = {**gpu.estimate.details, "replicas": 1, "replica_chips": 16}   # one replica over both 8-GPU nodes
    gpu = gpu.model_copy(update={"estimate": gpu.estimate.model_copy(update={"details": details})})
    manifests = generate(gpu, JobContext(stack="t")).manifests
    lws = next(m for m in manifests if m["kind"] == "LeaderWorkerSet")
    service = next(m for m in manifests if m["kind"] == "Service")
    assert lws["spec"]["leaderWorkerTemplate"]["size"] > 1
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": lws["metadata"]["name"], LWS_WORKER_INDEX: "0"}
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert "ports" not in worker and "readinessProbe" not in worker


def test_the_job_and_the_pin_refusal_give_the_one_single_host_pin():
    # What a refused multi-host serving replica is told to pin is worded once (policies/hardware/tpu_serving.py
    # single_host_pin): `accel job` says what `accel choose` says of the same pin.
    from accel.policies.catalog import load_catalog
    from accel.policies.hardware.tpu_serving import single_host_pin
    from accel.policies.selection.choose import choose
    from accel.policies.workload import WorkloadFieldError, workload_from_mapping

    single = single_host_pin("tpu-v6e", "v6e")
    assert single is not None and single.startswith("pin hardware: {accelerator: tpu-v6e, topology: 2x4}")
    with pytest.raises(MultiHostTpuServing) as job_refused:
        generate(plan(FOUR_HOSTS), JobContext(stack="t"))
    spec = workload_from_mapping({"name": "chat", "kind": "inference", "model": {"parameters": "70B"},
                                  "inference": {"tokens_per_second": 2000, "framework": "jax"},
                                  "constraints": {"clouds": ["gcp"], "spot": "never"}, "hardware": FOUR_HOSTS}, "t.yaml")
    with pytest.raises(WorkloadFieldError) as pin_refused:
        choose(spec, load_catalog())
    assert single in job_refused.value.fix and single in pin_refused.value.problem
