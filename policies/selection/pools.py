"""Pools a person can write by hand: a TPU pool from generation + topology (+ slices), a GPU pool
from accelerator + GPU count. Everything else (machine type, hosts, chips per host, GKE labels,
TPU VM type, guest accelerator, local SSDs, fabric) is derived from the hardware facts table
(policies/hardware/facts.toml) through policies/hardware/shapes, so a hand-written pool is exactly what
the planner would have written for the same hardware.

Errors name the component property (`TpuSlice.generation: 'v9' is not valid; allowed: ...`),
the message shape of `pulumi.InputPropertyError`.
"""

from __future__ import annotations

from typing import get_args

from accel.base.errors import invalid_arg
from accel.policies import hardware
from accel.policies.hardware import shapes
from accel.policies.plan import Capacity, GpuPool, Provisioning, TpuPool
from accel.policies.workload import ACCELERATOR_IDS

MAX_SLICES = 64  # slices one TpuSlice declares (one GKE node pool each)


def tpu_pool(generation: str, topology: str, slices: int = 1, *, component: str = "TpuSlice") -> TpuPool:
    """`slices` identical TPU slices of `generation` (v4, v5p, v5e, v6e, or tpu-v5p) in `topology`, validated
    as any TpuPool (what a component or a person's program builds from)."""
    return TpuPool(**_tpu_pool_fields(generation, topology, slices, component))


def planned_tpu_pool(generation: str, topology: str, slices: int) -> TpuPool:
    """The pool of a size the search chose, for make_plan: the same checks and hardware-table values as
    tpu_pool, assembled without pydantic's validation (model_construct), whose first use would build
    TpuPool's validator and load pydantic's plugin lookup (~10 ms of an `accel choose`). Nothing builds
    from it unchecked: the components check a pool and a plan in full where they take one (check_tpu_pool,
    TrainingClusterArgs)."""
    return TpuPool.model_construct(**_tpu_pool_fields(generation, topology, slices, "TpuSlice"))


def _tpu_pool_fields(generation: str, topology: str, slices: int, component: str) -> dict[str, object]:
    try:
        gen = shapes.generation(generation)
    except shapes.ShapeError:
        known = ", ".join(hardware.current().tpu_generations)
        raise invalid_arg(component, "generation", generation, f"allowed: {known}") from None
    try:
        shapes.check_topology(gen.name, topology)
    except shapes.ShapeError as error:
        raise invalid_arg(component, "topology", topology, str(error)) from None
    if not isinstance(slices, int) or isinstance(slices, bool) or not 1 <= slices <= MAX_SLICES:
        raise invalid_arg(component, "slices", slices, f"allowed: 1..{MAX_SLICES}")
    chips = shapes.topology_chips(topology)
    return dict(accelerator=gen.accelerator, topology=topology, chips_per_slice=chips, slices=slices,
                machine_type=shapes.machine_type(gen.name, topology),
                chips_per_host=shapes.chips_per_host(gen.name, topology),
                hosts_per_slice=shapes.hosts_per_slice(gen.name, topology),
                gke_accelerator=gen.gke_accelerator,
                tpu_vm_type=shapes.tpu_vm_type(gen.name, chips),
                runtime_version=gen.runtime_version)


def gpu_pool(accelerator: str, gpus: int, *, cloud: str = "gcp", machine_type: str | None = None,
             fabric: bool = False, component: str = "GpuNodePool") -> GpuPool:
    """Whole nodes carrying `gpus` GPUs of `accelerator` (e.g. h100-80gb) on `cloud`.

    The machine is `machine_type`, or else the table's first machine for that GPU with the most
    GPUs per node that divide `gpus`. `fabric=True` attaches the machine's scale-out fabric
    (GPUDirect on Google Cloud, which needs GcpNetwork's extra networks; EFA on AWS).
    """
    facts = hardware.current()
    machines = facts.gcp_gpu_machines if cloud == "gcp" else facts.aws_gpu_instances if cloud == "aws" else None
    if machines is None:
        raise invalid_arg(component, "cloud", cloud, "allowed: gcp, aws")
    # The chips a Plan may hold (the table's selectable ones); the table knows a few more machines.
    selectable = [m for m in machines.values() if m.chip in ACCELERATOR_IDS]
    candidates = [m for m in selectable if m.chip == accelerator]
    if not candidates:
        known = sorted({m.chip for m in selectable})
        raise invalid_arg(component, "accelerator", accelerator, f"GPUs on {cloud}: {', '.join(known)}")
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise invalid_arg(component, "gpus", gpus, "a whole number of GPUs, at least 1")
    if machine_type is not None:
        machine = next((m for m in candidates if m.name == machine_type), None)
        if machine is None:
            raise invalid_arg(component, "machine_type", machine_type,
                              f"{accelerator} on {cloud} comes in {', '.join(m.name for m in candidates)}")
    else:
        fitting = [m for m in candidates if gpus % m.gpus == 0]
        if not fitting:
            raise invalid_arg(component, "gpus", gpus, f"{accelerator} machines on {cloud} carry "
                              f"{sorted({m.gpus for m in candidates})} GPUs; ask for a multiple of one")
        machine = max(fitting, key=lambda m: m.gpus)  # max() keeps the first of equals: the table's order
    if gpus % machine.gpus:
        raise invalid_arg(component, "gpus", gpus, f"{machine.name} carries {machine.gpus} GPUs; ask for a multiple")
    nodes = gpus // machine.gpus
    if fabric and machine.fabric == "none":
        raise invalid_arg(component, "fabric", True, f"{machine.name} has no scale-out fabric")
    fabric_name = machine.fabric if fabric else "none"
    if cloud == "gcp":
        return GpuPool(accelerator=accelerator, machine_type=machine.name, gpus_per_node=machine.gpus, nodes=nodes,
                       guest_accelerator=machine.gke_accelerator, fabric=fabric_name,
                       extra_networks=facts.fabrics[fabric_name].extra_networks if fabric else 0,
                       local_ssd_count=machine.local_ssds if machine.bundled_ssd else 0,
                       compact_placement=fabric and nodes > 1)
    return GpuPool(accelerator=accelerator, machine_type=machine.name, gpus_per_node=machine.gpus, nodes=nodes,
                   fabric=fabric_name, efa_interfaces=machine.efa_cards if fabric else 0)


def pool_capacity(provisioning: str = "on-demand", reservation: str | None = None, *, component: str) -> Capacity:
    """The pool's capacity type; a reservation (or capacity block) id when the type needs one."""
    if provisioning not in get_args(Provisioning):
        raise invalid_arg(component, "provisioning", provisioning, "allowed: " + ", ".join(get_args(Provisioning)))
    return Capacity(provisioning=provisioning, reservation=reservation)
