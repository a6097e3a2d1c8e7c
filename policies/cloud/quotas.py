"""The quota each region needs before `pulumi up`: accelerators per family, CPUs, and the cluster
limits the fleet's layout relies on (docs/scale.md).

A pure function of the Plan, the hardware table (vCPUs, chips, limits) and policies/cloud/quotas.yaml
(the names users see in the console and request increases for).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from accel.base.model import StrictModel
from accel.base.yaml_files import read_yaml_file
from accel.policies import hardware
from accel.policies.plan import Plan

QUOTAS_FILE = Path(__file__).resolve().parent / "quotas.yaml"


class QuotaNeed(StrictModel):
    """One quota a region needs: what the cloud calls it, how much, and why."""

    cloud: str
    region: str
    name: str
    amount: int
    unit: str
    why: str
    source: str


@lru_cache(maxsize=1)
def _names() -> dict[str, Any]:
    return read_yaml_file(QUOTAS_FILE, "quota names")


def _source(key: str) -> str:
    return f"{key}: {_names()['sources'][key]}"


def quota_needs(plan: Plan) -> list[QuotaNeed]:
    """The quotas the plan's region needs for its accelerator fleet (empty for inventory clusters)."""
    if plan.cloud == "gcp":
        return _gcp(plan)
    if plan.cloud == "aws":
        return _aws(plan)
    return []


def _gcp(plan: Plan) -> list[QuotaNeed]:
    names, facts = _names()["gcp"], hardware.current()
    spot = plan.capacity.provisioning == "spot"
    needs = []
    if plan.tpu is not None:
        tpu = plan.tpu
        machine = facts.tpu_machines[tpu.machine_type]
        entry = names["tpus"][tpu.generation]
        chips, hosts = tpu.chips_per_slice * tpu.slices, tpu.hosts_per_slice * tpu.slices
        needs.append(QuotaNeed(cloud="gcp", region=plan.region, name=("preemptible " if spot else "") + entry["name"],
                               amount=chips, unit="chips", why=f"{tpu.slices} x {tpu.topology} slices",
                               source=_source(entry["source"])))
        vcpus = machine.vcpus * hosts
        why_cpus = f"{hosts} x {tpu.machine_type} ({machine.vcpus} vCPUs)"
    else:
        gpu = plan.gpu
        assert gpu is not None
        machine = facts.gcp_gpu_machines[gpu.machine_type]
        entry = names["gpus"].get(machine.gke_accelerator)
        if entry is not None:
            needs.append(QuotaNeed(cloud="gcp", region=plan.region,
                                   name=(names["spot_prefix"] if spot else "") + entry["name"],
                                   amount=gpu.gpus_per_node * gpu.nodes, unit="GPUs",
                                   why=f"{gpu.nodes} x {gpu.machine_type} ({gpu.gpus_per_node} GPUs)",
                                   source=_source(entry["source"])))
        vcpus = machine.vcpus * gpu.nodes
        why_cpus = f"{gpu.nodes} x {gpu.machine_type} ({machine.vcpus} vCPUs)"
    cpus = names["cpus"]
    needs.append(QuotaNeed(cloud="gcp", region=plan.region, name=cpus["spot_name"] if spot else cpus["name"],
                           amount=vcpus, unit="vCPUs", why=why_cpus, source=_source(cpus["source"])))
    return needs


def _aws(plan: Plan) -> list[QuotaNeed]:
    gpu = plan.gpu
    assert gpu is not None
    facts = hardware.current()
    instance = facts.aws_gpu_instances[gpu.machine_type]
    spot = plan.capacity.provisioning == "spot"
    needs = []
    entry = _names()["aws"]["vcpus"].get(instance.family[0])
    if entry is not None and plan.capacity.provisioning != "capacity-block":   # a Capacity Block brings its own
        needs.append(QuotaNeed(cloud="aws", region=plan.region, name=entry["spot_name"] if spot else entry["name"],
                               amount=instance.vcpus * gpu.nodes, unit="vCPUs",
                               why=f"{gpu.nodes} x {gpu.machine_type} ({instance.vcpus} vCPUs)",
                               source=_source(entry["source"])))
    for key, amount, unit in (("eks_nodes_per_managed_node_group", max(gpu.pool_sizes), "nodes"),
                              ("eks_managed_node_groups_per_cluster", gpu.pools, "node groups")):
        limit = facts.limits[key]
        if amount > limit.value:   # only past the default: the layout already keeps within it
            needs.append(QuotaNeed(cloud="aws", region=plan.region, name=key, amount=amount, unit=unit,
                                   why=f"default {limit.value}", source=limit.source))
    return needs
