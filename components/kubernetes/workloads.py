"""Which workload kinds a Plan runs as, so the stack installs the controllers they need.

`accel job` writes a JobSet for training (and for the fabric check), and for serving a Deployment
when a replica fits on one node, a LeaderWorkerSet when a replica spans nodes. The same function
decides both the manifests (accel/job/manifests.py) and whether AcceleratorStack installs the
LeaderWorkerSet controller, so the two cannot disagree.
"""

from __future__ import annotations

from accel.policies import hardware
from accel.policies.plan import Plan


def serving_layout(plan: Plan) -> tuple[int, int]:
    """(replicas, chips per replica) of a serving plan, from the estimate's breakdown."""
    details = plan.estimate.details
    replicas = int(details.get("replicas", 1))
    replica_chips = int(details.get("replica_chips", plan.chosen.chips // max(replicas, 1)))
    return replicas, replica_chips


def chips_per_node(plan: Plan) -> int:
    if plan.tpu is not None:
        return plan.tpu.chips_per_host
    assert plan.gpu is not None  # the Plan validator pairs family and pool
    return plan.gpu.gpus_per_node


def nodes_per_replica(plan: Plan) -> int:
    """Nodes one serving replica spans (1 for a replica on one node or less)."""
    _, replica_chips = serving_layout(plan)
    return max(1, -(-replica_chips // chips_per_node(plan)))


def is_serving(plan: Plan) -> bool:
    return plan.workload.kind == "inference"


def needs_leader_worker_set(plan: Plan) -> bool:
    """A serving replica spanning nodes runs as a LeaderWorkerSet (one leader and its workers per replica)."""
    return is_serving(plan) and nodes_per_replica(plan) > 1


def needs_compute_domain(plan: Plan) -> bool:
    """A GPU job on several nodes whose NVLink domain spans machines (GB200 NVL72): the cluster runs NVIDIA's DRA
    driver and the job claims a ComputeDomain (accel/job/compute_domain.py); the same function decides both.
    The domain is the pool's chip's (on its machine type where the table states the machine's own), so a cloud
    machine type (a4x-highgpu-4g) and an existing cluster's inventory of the same chip (accel:cluster, whose
    pool is named after the inventory entry, not a machine type) decide alike."""
    return (plan.gpu is not None and plan.gpu.nodes > 1
            and hardware.current().nvlink_domain_spans_nodes(plan.gpu.accelerator, plan.gpu.machine_type))
