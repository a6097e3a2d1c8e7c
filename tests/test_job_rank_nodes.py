"""A GPU training job starts ranks only on the nodes that hold the Plan's whole model replicas: a launcher on every
node of a fleet sized past whole replicas makes a world size TP x PP sharding refuses (Megatron: world size must be
a multiple of TP x PP)."""

from __future__ import annotations

import re

import pytest

from accel.job.manifests import JobOptions
from accel.job.service import job_of
from tests.conftest import planned_result


def training_jobset(stack: str) -> tuple[dict, dict, str]:
    result = planned_result(stack)
    job = job_of(result, JobOptions())
    jobset = next(m for m in job.manifests if m["kind"] == "JobSet")
    return result.plan, jobset, "\n".join(job.derivations)


@pytest.mark.parametrize("stack, fleet, ranked", [
    ("llama-405b-a4x", 36, 32),          # TP8 x PP4 x DP4 on 4-GPU trays: 32 nodes; racks of 18 placed whole
    ("llama-405b-p6e", 18, 16),          # TP4 x PP16 on one 18-instance UltraServer pinned by hand
])
def test_ranks_start_on_the_nodes_holding_whole_replicas(stack, fleet, ranked):
    plan, jobset, derivations = training_jobset(stack)
    layout = plan["parallelism"]
    assert plan["gpu"]["nodes"] == fleet
    gpus = layout["tensor"] * layout["pipeline"] * layout["data"]
    assert gpus == ranked * plan["gpu"]["gpus_per_node"]
    spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert spec["parallelism"] == spec["completions"] == ranked
    command = " ".join(jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
                       ["command"])
    assert re.search(rf"--nnodes={ranked}\b", command)
    assert f"ranks on {ranked} of the fleet's {fleet} nodes" in derivations


# The search times a fleet on its whole replicas (policies/selection/replica_fleet.py), so it picks whole replicas:
# onprem-gb200 22 nodes (TP4 x PP2 x DP11, the distributed optimizer's replica; 24 in TP4 x PP4 x DP6 while a replica
# held the whole state), llama-70b-finetune-aws 132 (33 replicas of 4; 136 in 17 replicas of 8 before).
@pytest.mark.parametrize("stack", ["llama-405b-h100-aws", "dev-spot", "onprem-gb200", "llama-70b-finetune-aws"])
def test_a_fleet_of_whole_replicas_starts_ranks_on_every_node(stack):
    plan, jobset, derivations = training_jobset(stack)
    spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert spec["completions"] == plan["gpu"]["nodes"]
    assert "ranks on" not in derivations
