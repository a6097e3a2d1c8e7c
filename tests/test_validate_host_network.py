"""`accel job --validate` on cloud GPU nodes the stack joined by no GPU network (fabric none): each node checks its
own NVLink, since an all-reduce across them would cross the hosts' own network against a line rate of a fabric the
stack never built (found by benchmarks/sweep_day_one.py: a 3-node p5en serving pool with no EFA was held to EFA's
280 GB/s, an A2 training fleet to DGX A100's InfiniBand 140 GB/s); a one-GPU node has no all-reduce to check."""

from __future__ import annotations

import functools
import json

import pytest

from accel.base.errors import UsageError
from accel.job.context import JobContext
from accel.job.manifests import JobOptions, generate
from accel.job.validate import host_network_only, pass_line
from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping


@functools.cache
def _plan(workload_json: str):
    return choose_plan(workload_from_mapping(json.loads(workload_json), "t.yaml"), load_catalog())


def plan(kind: str, hardware: dict, clouds: list[str], parameters: str = "13B"):
    section = ({"inference": {"tokens_per_second": 20000, "p99_latency_ms": 60}} if kind == "inference" else
               {"training": {"tokens": "20B", "framework": "pytorch"}})
    workload = {"name": "host-net", "kind": kind, "model": {"parameters": parameters}, "hardware": hardware,
                "constraints": {"clouds": clouds, "spot": "never"}, **section}
    return _plan(json.dumps(workload, sort_keys=True))


def check(plan_):
    job = generate(plan_, JobContext(stack="t"), JobOptions(validate=True))
    jobset = job.manifests[-1]
    replicated = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    container = replicated["template"]["spec"]["containers"][0]
    return replicated["parallelism"], " ".join(container["command"]), container, "\n".join(job.derivations)


SERVING_P5EN = ("inference", {"accelerator": "h200-141gb", "chips": 24, "machine_type": "p5en.48xlarge"}, ["aws"])
TRAINING_A2 = ("pretrain", {"accelerator": "a100-40gb", "chips": 32, "machine_type": "a2-highgpu-8g"}, ["gcp"])


@pytest.mark.parametrize("case", [SERVING_P5EN, TRAINING_A2], ids=["p5en-serving", "a2-training"])
def test_nodes_joined_by_no_gpu_network_each_check_their_own_nvlink(case):
    planned = plan(*case)
    assert planned.gpu.fabric == "none" and planned.gpu.nodes > 1
    assert host_network_only(planned)
    pods, command, container, derivations = check(planned)
    assert pods == planned.gpu.nodes                       # one pod on every node
    assert command.startswith("/bin/bash -c all_reduce_perf") and f"-g {planned.gpu.gpus_per_node}" in command
    assert "torchrun" not in command and "vpc.amazonaws.com/efa" not in container["resources"]["limits"]
    line, why = pass_line(planned)
    assert f"if ($NF < {line})" in command
    assert "within each node (the stack built no GPU network across nodes: fabric none)" in why
    assert "each node on its own" in derivations


def test_the_line_is_the_nodes_nvlink_not_a_fabric_the_stack_did_not_build():
    line, why = pass_line(plan(*SERVING_P5EN))
    assert line == 315.0 and "NVLink" in why and "EFA" not in why       # 0.7 x 450 GB/s, not 0.7 x 400 (EFAv3)
    line, why = pass_line(plan(*TRAINING_A2))
    assert line == 210.0 and "InfiniBand" not in why                    # 0.7 x 300 GB/s NVLink 3, not DGX's HDR IB


def test_a_fleet_on_efa_still_checks_across_nodes():
    planned = plan("pretrain", {"accelerator": "h100-80gb", "chips": 32, "machine_type": "p5.48xlarge"}, ["aws"])
    assert planned.gpu.fabric == "efa" and not host_network_only(planned)
    _, command, container, _ = check(planned)
    assert "torchrun --nnodes=4" in command and container["resources"]["limits"]["vpc.amazonaws.com/efa"] == 32


def test_a_one_gpu_node_has_no_all_reduce_to_check():
    planned = plan("inference", {"accelerator": "l4", "chips": 1, "machine_type": "g2-standard-4"}, ["gcp"],
                   parameters="1.3B")
    with pytest.raises(UsageError, match=r"--validate: each g2-standard-4 node holds one GPU .*no all-reduce to check"):
        check(planned)


def test_the_serving_stacks_one_gpu_nodes_are_refused_a_check_that_could_never_pass():
    # stacks/Pulumi.llama-8b-serving-gpu.yaml: g6e.xlarge nodes of one L40S with no GPU network between them; its
    # check was a torchrun all-reduce over the hosts' network held to the PCIe line (22.4 GB/s), which they cannot carry.
    from tests.test_job import generated

    with pytest.raises(UsageError, match=r"each g6e.xlarge node holds one GPU and the stack built no GPU network"):
        generated("llama-8b-serving-gpu", validate=True)
