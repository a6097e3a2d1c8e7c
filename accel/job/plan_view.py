"""The few facts the job layer reads from a Plan (schema 2, docs/contracts.md), in one place."""

from __future__ import annotations

from dataclasses import dataclass

from accel.components.kubernetes import workloads
from accel.policies.plan import SERVED_PRECISION, Plan


@dataclass(frozen=True)
class Hardware:
    family: str                 # gpu | tpu
    cloud: str                  # gcp | aws | kubernetes
    accelerator: str            # e.g. tpu-v6e, h100-80gb
    machine_type: str
    chips_per_node: int
    nodes_per_slice: int        # TPU: hosts per slice; GPU: all nodes (one "slice")
    slices: int
    topology: str | None
    tpu_generation: str | None
    gke_accelerator: str | None  # cloud.google.com/gke-tpu-accelerator or gke-accelerator value
    fabric: str                 # none | gpudirect-tcpx | gpudirect-tcpxo | rdma | efa
    efa_interfaces: int
    spot: bool
    provisioning: str

    @property
    def nodes(self) -> int:
        return self.nodes_per_slice * self.slices


def hardware(plan: Plan) -> Hardware:
    capacity = plan.capacity
    if plan.tpu is not None:
        tpu = plan.tpu
        return Hardware("tpu", plan.cloud, tpu.accelerator, tpu.machine_type, tpu.chips_per_host,
                        tpu.hosts_per_slice, tpu.slices, tpu.topology, tpu.generation, tpu.gke_accelerator,
                        "none", 0, capacity.spot, capacity.provisioning)
    gpu = plan.gpu
    assert gpu is not None  # the Plan validator pairs family and pool
    return Hardware("gpu", plan.cloud, gpu.accelerator, gpu.machine_type, gpu.gpus_per_node, gpu.nodes, 1,
                    None, None, gpu.guest_accelerator, gpu.fabric, gpu.efa_interfaces, capacity.spot,
                    capacity.provisioning)


is_serving = workloads.is_serving   # one rule for what the cluster installs and what the job writes


def rank_nodes(plan: Plan) -> int:
    """The nodes a GPU training job starts ranks on: those holding the Plan's whole model replicas (tensor x
    context x pipeline x data GPUs). A fleet sized past whole replicas (36 A4X trays for 16-tray replicas, whose 18-tray
    NVLink racks are placed whole) keeps the rest idle: a launcher started on every node would make a world size
    Megatron-style TP x PP sharding refuses (144 GPUs for 64-GPU replicas). Every node elsewhere (TPU, serving,
    no layout)."""
    hw = hardware(plan)
    layout = plan.parallelism
    if hw.family != "gpu" or layout is None or workloads.is_serving(plan):
        return hw.nodes
    gpus = layout.replica_gpus * layout.data   # tensor x context x pipeline x data
    return min(hw.nodes, -(-gpus // hw.chips_per_node))


def framework(plan: Plan) -> str:
    return plan.workload.framework


def precision(plan: Plan) -> str:
    return plan.workload.training.precision if plan.workload.training else "bf16"


def stated_assumption(plan: Plan, name: str) -> float | str | None:
    """The value of the estimate's assumption `name`, or None for a plan stating none."""
    return next((a.value for a in plan.estimate.assumptions if a.name == name), None)


def serving_precision(plan: Plan) -> tuple[str, str]:
    """(the workload's inference.precision, the precision the plan sized weights and KV cache at). The second is the
    estimate's own decision, its 'serving precision' assumption (bf16 where fp8 was asked of a chip without fp8
    tensor cores); a plan stating none is taken to serve what it was asked."""
    inference = plan.workload.inference
    asked = inference.precision if inference is not None else "bf16"
    stated = stated_assumption(plan, SERVED_PRECISION)
    return asked, str(stated) if stated is not None else asked


def serving_layout(plan: Plan) -> tuple[int, int]:
    """(replicas, chips per replica) of a serving plan (components/kubernetes/workloads.py)."""
    return workloads.serving_layout(plan)


def usable_hbm_per_gpu(plan: Plan) -> float:
    """Bytes usable on each GPU of a serving replica, as the estimate sized it: its catalog accelerator's HBM times
    the workload's hbm_usable_fraction."""
    from accel.policies.catalog import load_catalog
    from accel.policies.estimator.estimate import resolve

    catalog = load_catalog()
    return catalog.accelerator(plan.chosen.accelerator).hbm_bytes * resolve(plan.workload, catalog.defaults)[
        "hbm_usable_fraction"]


def run_hours(plan: Plan) -> float:
    """The hours the job runs: the plan's, except on a booked window or a declared Capacity Block, which is paid
    for whole (the plan's hours) while the run inside it is shorter (reservations.run_hours)."""
    if "capacity_window_days" not in plan.estimate.details:
        return plan.chosen.hours
    from accel.policies.cloud.reservations import run_hours as booked_run_hours

    return booked_run_hours(plan)


def goodput(plan: Plan) -> float:
    return plan.chosen.goodput


def has_storage(plan: Plan) -> tuple[bool, bool, str]:
    """(dataset bucket, checkpoint bucket, filesystem kind)."""
    storage = plan.storage
    return storage.dataset_bucket, storage.checkpoint_bucket, storage.filesystem
