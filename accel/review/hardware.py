"""Accelerator pools read back from resource inputs: what a node pool or TPU VM will run on.

The plan says what was chosen; the preview says what each resource will actually be. Reading
both lets a review show a replaced node pool's topology before and after even when no plan
file was passed. Only accelerator-bearing resources are recognised; everything else is None.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from accel.policies import hardware
from accel.policies.hardware.shapes import ShapeError, parse_tpu_vm_type
from accel.review.property_paths import is_unknown

# Machine facts (which chip a machine type carries, how many per host) come from the hardware
# facts table, accel.policies.hardware, read at call time.


@dataclass(frozen=True)
class AcceleratorPool:
    kind: str                      # tpu | gpu
    accelerator: str
    machine_type: str | None = None
    nodes: str | None = None       # "4", or "0–8 (autoscaling)"
    chips: int | None = None
    topology: str | None = None
    spot: bool | None = None
    location: str | None = None


def _known(value: Any) -> Any:
    return None if value is None or is_unknown(value) else value


def _int(value: Any) -> int | None:
    """Whole numbers; the mock engine's protobuf round trip turns 32 into 32.0."""
    value = _known(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None


def _topology_chips(topology: str | None) -> int | None:
    if not topology or not re.fullmatch(r"\d+(x\d+){1,2}", topology):
        return None
    return math.prod(int(d) for d in topology.split("x"))


def _gke_nodes(inputs: dict[str, Any]) -> tuple[str | None, int | None]:
    """(what to show, the most nodes the pool can have). Autoscaling wins over initialNodeCount."""
    autoscaling = _known(inputs.get("autoscaling")) or {}
    if isinstance(autoscaling, dict):
        low = _int(autoscaling.get("totalMinNodeCount", autoscaling.get("minNodeCount")))
        high = _int(autoscaling.get("totalMaxNodeCount", autoscaling.get("maxNodeCount")))
        if low is not None or high is not None:
            return f"{low if low is not None else '?'}–{high if high is not None else '?'} (autoscaling)", high
    count = _int(inputs.get("nodeCount"))
    if count is None:
        count = _int(inputs.get("initialNodeCount"))
    return (str(count) if count is not None else None), count


def _gke_node_pool(inputs: dict[str, Any]) -> AcceleratorPool | None:
    node_config = _known(inputs.get("nodeConfig")) or {}
    machine = _known(node_config.get("machineType"))
    if not isinstance(machine, str):
        return None
    nodes_text, nodes = _gke_nodes(inputs)
    spot = bool(_known(node_config.get("spot")) or _known(node_config.get("preemptible")))
    locations = _known(inputs.get("nodeLocations"))
    location = ", ".join(locations) if isinstance(locations, list) and locations else _known(inputs.get("location"))
    facts = hardware.current()
    generation = facts.generation_of_machine_prefix(machine.split("-", 1)[0])
    if generation is not None:
        topology = _known((_known(inputs.get("placementPolicy")) or {}).get("tpuTopology"))
        host = facts.tpu_machines.get(machine)
        chips = _topology_chips(topology)
        if chips is None and host is not None and nodes is not None:
            chips = nodes * host.chips
        return AcceleratorPool("tpu", facts.chips[generation.accelerator].name, machine, nodes_text, chips, topology,
                               spot, location)
    gpus = _gce_gpus(machine, node_config.get("guestAccelerators"))
    if gpus is None:
        return None
    gpu, per_node = gpus
    chips = nodes * per_node if nodes is not None and per_node is not None else None
    return AcceleratorPool("gpu", gpu, machine, nodes_text, chips, None, spot, location)


def _gce_gpus(machine: str, guest_accelerators: Any) -> tuple[str, int | None] | None:
    """(GPU name, GPUs per VM) of a Compute Engine machine: its attached guest accelerators (N1, G2 with a
    count), else the GPUs an accelerator-optimized machine type carries (hardware table); None for neither."""
    accelerators = _known(guest_accelerators) or []
    if accelerators and isinstance(accelerators[0], dict):
        return str(_known(accelerators[0].get("type")) or "GPU"), _int(accelerators[0].get("count"))
    facts = hardware.current()
    built_in = facts.gcp_gpu_machines.get(machine)
    return None if built_in is None else (facts.chips[built_in.chip].name, built_in.gpus)


def _gce_instance(inputs: dict[str, Any]) -> AcceleratorPool | None:
    """A Compute Engine VM created directly (not in a node pool): one VM, its GPUs by machine type or guest
    accelerators; spot when its scheduling says SPOT (or the older preemptible)."""
    machine = _known(inputs.get("machineType"))
    if not isinstance(machine, str):
        return None
    gpus = _gce_gpus(machine, inputs.get("guestAccelerators"))
    if gpus is None:
        return None
    return AcceleratorPool("gpu", gpus[0], machine, "1", gpus[1], None, gce_spot(inputs), _known(inputs.get("zone")))


def gce_spot(inputs: dict[str, Any]) -> bool:
    """A Compute Engine VM's scheduling says Spot (provisioningModel SPOT, or the older preemptible)."""
    scheduling = _known(inputs.get("scheduling")) or {}
    return isinstance(scheduling, dict) and (_known(scheduling.get("provisioningModel")) == "SPOT"
                                             or _known(scheduling.get("preemptible")) is True)


def _tpu_accelerator(accelerator_type: Any, config: Any) -> tuple[str, int | None, str | None] | None:
    if isinstance(_known(accelerator_type), str):
        try:
            generation, chips = parse_tpu_vm_type(accelerator_type)
        except ShapeError:
            return f"TPU {accelerator_type}", None, None
        return hardware.current().chips[generation.accelerator].name, chips, None
    if isinstance(_known(config), dict):
        topology = _known(config.get("topology"))
        config_type = str(_known(config.get("type")) or "?")
        generation = hardware.current().generation_of_config_type(config_type)
        name = hardware.current().chips[generation.accelerator].name if generation else f"TPU {config_type.lower()}"
        return name, _topology_chips(topology), topology
    return None


def _tpu_vm(inputs: dict[str, Any]) -> AcceleratorPool | None:
    found = _tpu_accelerator(inputs.get("acceleratorType"), inputs.get("acceleratorConfig"))
    if found is None:
        return None
    scheduling = _known(inputs.get("schedulingConfig")) or {}
    spot = bool(_known(scheduling.get("spot")) or _known(scheduling.get("preemptible")))
    accelerator, chips, topology = found
    return AcceleratorPool("tpu", accelerator, _known(inputs.get("acceleratorType")), "1 slice", chips,
                           topology, spot, _known(inputs.get("zone")))


def _tpu_queued_resource(inputs: dict[str, Any]) -> AcceleratorPool | None:
    tpu = _known(inputs.get("tpu")) or {}
    specs = _known(tpu.get("nodeSpecs")) or []
    if not specs or not isinstance(specs[0], dict):
        return None
    node = _known(specs[0].get("node")) or {}
    found = _tpu_accelerator(node.get("acceleratorType"), node.get("acceleratorConfig"))
    if found is None:
        return None
    accelerator, chips, topology = found
    slices = len(specs)  # one node spec per slice
    total = chips * slices if chips is not None else None
    return AcceleratorPool("tpu", accelerator, _known(node.get("acceleratorType")), f"{slices} slice(s)", total,
                           topology, None, _known(inputs.get("zone")))


def _aws_gpu(instance_type: str) -> tuple[str, int] | None:
    """(chip name, GPUs per instance) of an AWS GPU instance type in the hardware table, else None."""
    facts = hardware.current()
    instance = facts.aws_gpu_instances.get(instance_type)
    return (facts.chips[instance.chip].name, instance.gpus) if instance else None


def _eks_node_group(inputs: dict[str, Any]) -> AcceleratorPool | None:
    types = [t for t in (_known(inputs.get("instanceTypes")) or []) if isinstance(t, str)]
    gpus = [_aws_gpu(t) for t in types]
    if not types or gpus[0] is None:
        return None
    gpu, per_node = gpus[0]
    scaling = _known(inputs.get("scalingConfig")) or {}
    desired, low, high = (_int(scaling.get(k)) for k in ("desiredSize", "minSize", "maxSize"))
    nodes_text = str(desired) if desired is not None else None
    if high is not None and high != desired:
        nodes_text = f"{low if low is not None else '?'}–{high} (desired {desired if desired is not None else '?'})"
    most = high if high is not None else desired
    spot = str(_known(inputs.get("capacityType")) or "").upper() == "SPOT"
    return AcceleratorPool("gpu", gpu, ", ".join(types), nodes_text,
                           most * per_node if most is not None else None, None, spot, None)


def _ec2_instance(inputs: dict[str, Any]) -> AcceleratorPool | None:
    instance_type = _known(inputs.get("instanceType"))
    found = _aws_gpu(instance_type) if isinstance(instance_type, str) else None
    if found is None:
        return None
    spot = _known(inputs.get("instanceMarketOptions")) is not None
    return AcceleratorPool("gpu", found[0], instance_type, "1", found[1], None, spot,
                           _known(inputs.get("availabilityZone")))


READERS = {
    "gcp:container/nodePool:NodePool": _gke_node_pool,
    "gcp:tpu/v2Vm:V2Vm": _tpu_vm,
    "gcp:tpu/v2QueuedResource:V2QueuedResource": _tpu_queued_resource,
    "aws:eks/nodeGroup:NodeGroup": _eks_node_group,
    "aws:ec2/instance:Instance": _ec2_instance,
    "gcp:compute/instance:Instance": _gce_instance,
}


def accelerator_pool(type_token: str, inputs: dict[str, Any] | None) -> AcceleratorPool | None:
    reader = READERS.get(type_token)
    if reader is None or not inputs:
        return None
    try:
        return reader(inputs)
    except (AttributeError, TypeError, ValueError, IndexError):
        return None  # an odd shape is shown in the resource list, not guessed at here
