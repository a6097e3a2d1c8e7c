"""Fill a catalog entry's machine facts from the hardware facts table (policies/hardware/facts.toml).

The catalog keeps prices, regions, availability and estimator assumptions; what a machine *is*
(its chip, chips per host, guest accelerator, fabric and extra networks, bundled local SSDs, EFA
interfaces, the node limit of the pool that holds it) and what a chip can do (peak throughput,
memory, TensorCores) come from the hardware table. An entry may still state such a fact, but only
the table's value: a different one is a contradiction and is refused, naming both.
"""

from __future__ import annotations

from typing import Any, Callable

from accel.base.mappings import without_none
from accel.policies import hardware

# How an offering is provisioned -> the limit on one pool of it: (limit in the table, what sets it,
# which pools it limits). GKE GPU pools are COMPACT only for multi-node training; EKS caps every group.
_POOL_LIMITS = {
    "gke-gpu-node-pool": ("gke_compact_placement_max_nodes", "GKE compact placement", "training"),
    "eks-managed-node-group": ("eks_nodes_per_managed_node_group", "EKS nodes-per-managed-node-group quota", "all"),
}
# ... and what bounds a fleet of such pools in one cluster: (pools per cluster, nodes per cluster).
_FLEET_LIMITS = {
    "gke-gpu-node-pool": (None, "gke_cluster_max_nodes"),
    "eks-managed-node-group": ("eks_managed_node_groups_per_cluster", None),
}


def _source_text(facts: hardware.HardwareFacts, source: str) -> str:
    key = source.split(":", 1)[0].strip()
    known = facts.sources.get(key)
    return f"{key}: {known.title}{source[len(key):]}" if known else source


def _node_limit(facts: hardware.HardwareFacts, path: Any) -> dict[str, Any] | None:
    if path not in _POOL_LIMITS:
        return None
    key, name, applies_to = _POOL_LIMITS[path]
    limit = facts.limits[key]
    pools_key, nodes_key = _FLEET_LIMITS[path]
    fleet = {"max_pools": facts.limit(pools_key) if pools_key else None,
             "cluster_max_nodes": facts.limit(nodes_key) if nodes_key else None}
    return {"value": limit.value, "name": name, "applies_to": applies_to, "adjustable": limit.adjustable,
            "source": _source_text(facts, limit.source), **without_none(fleet)}


def offering_machine_facts(item: dict[str, Any]) -> dict[str, Any]:
    """The facts the table knows about the offering's machine type on its cloud ({} when it knows none)."""
    facts = hardware.current()
    machine_type, cloud = item.get("machine_type"), item.get("cloud")
    if not isinstance(machine_type, str):
        return {}
    if cloud == "gcp" and machine_type in facts.tpu_machines:
        generation = facts.generation_of_tpu_machine(machine_type)
        return {"accelerator": generation.accelerator, "chips_per_host": facts.tpu_machines[machine_type].chips}
    if cloud == "gcp" and machine_type in facts.gcp_gpu_machines:
        gcp = facts.gcp_gpu_machines[machine_type]
        derived = {"accelerator": gcp.chip, "chips_per_host": gcp.gpus, "guest_accelerator": gcp.gke_accelerator,
                   "fabric": gcp.fabric, "extra_networks": facts.fabrics[gcp.fabric].extra_networks,
                   "local_ssd_count": gcp.local_ssds if gcp.bundled_ssd else 0}
    elif cloud == "aws" and machine_type in facts.aws_gpu_instances:
        aws = facts.aws_gpu_instances[machine_type]
        derived = {"accelerator": aws.chip, "chips_per_host": aws.gpus, "fabric": aws.fabric,
                   "efa_interfaces": aws.efa_cards if aws.fabric == "efa" else 0}
    else:
        return {}
    limit = _node_limit(facts, item.get("path"))
    if limit is not None:
        derived["max_nodes"] = limit
    return derived


# Facts an offering may override on purpose: a raised quota is a user's own node limit.
_OVERRIDABLE = ("max_nodes",)


def with_machine_facts(item: dict[str, Any], fail: Callable[[str], Exception]) -> dict[str, Any]:
    """The offering with its machine facts filled in; `fail(message)` for a fact that contradicts the table."""
    derived = offering_machine_facts(item)
    if not derived and item.get("cloud") in ("gcp", "aws"):
        facts = hardware.current()
        known = facts.gcp_gpu_machines.keys() | facts.tpu_machines.keys() if item.get("cloud") == "gcp" \
            else facts.aws_gpu_instances.keys()
        raise fail(f"machine_type: {item.get('machine_type')!r} is not a {item.get('cloud')} machine type of the "
                   f"hardware facts table ({hardware.BUNDLED_FACTS.name}); known: {', '.join(sorted(known))}")
    filled = dict(item)
    for key, value in derived.items():
        if key in item and key not in _OVERRIDABLE and item[key] != value:
            raise fail(f"{key}: {item[key]!r} contradicts the hardware facts table: {item['machine_type']} has "
                       f"{key} {value!r}; leave {key} out (it comes from the table)")
        filled.setdefault(key, value)
    return filled


def with_chip_facts(item: dict[str, Any]) -> dict[str, Any]:
    """A catalog accelerator (id, mfu_class) with the chip's specs from the table; stated specs win."""
    facts = hardware.current()
    chip = facts.chips.get(str(item.get("id")))
    if chip is None:
        return item
    generation = facts.generation_of_chip(chip.id)
    specs: dict[str, Any] = {"family": chip.family, "peak_bf16_tflops": chip.peak_bf16_tflops, "hbm_gb": chip.hbm_gb,
                             "hbm_gbps": chip.hbm_gbps, "cores_per_chip": chip.tensorcores, "source": chip.source}
    if chip.peak_fp8_tflops is not None:
        specs["peak_fp8_tflops"] = chip.peak_fp8_tflops
    if generation is not None:
        specs["generation"] = generation.name
    return {**specs, **item}
