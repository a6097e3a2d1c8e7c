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


def nvlink_group_spans_nodes(accelerator: str, machine_type: str | None, group_nodes: int,
                             stated_domain_gpus: int | None = None) -> bool:
    """Whether a group of pods that talk over NVLink (a training job's pods, one serving replica's leader and
    workers, the fabric check's pods) sits on `group_nodes` nodes of one NVLink domain that spans machines (GB200
    NVL72), so each pod claims an IMEX channel of an NVIDIA ComputeDomain (accel/job/compute_domain.py). The one
    decision: the job's manifests, the stack's DRA driver (needs_compute_domain) and the offline check (rule
    nvidia/compute-domain-claim) all ask it. The domain is the chip's (on its machine type where the table states
    the machine's own), so a cloud machine type (a4x-highgpu-4g) and an existing cluster's inventory of the same
    chip (accel:cluster, whose pool is named after the inventory entry, not a machine type) decide alike, unless
    the inventory states its own domain (`stated_domain_gpus`: inventory nvlink_domain_gpus, GB200 NVL4: 4)."""
    return group_nodes > 1 and hardware.current().nvlink_domain_spans_nodes(accelerator, machine_type,
                                                                            stated_domain_gpus)


def needs_compute_domain(plan: Plan, stated_domain_gpus: int | None = None) -> bool:
    """Whether the stack installs NVIDIA's DRA driver: some group of pods it runs shares an NVLink domain across
    nodes. The largest is the fleet (the training job, and `accel job --validate`'s fabric check over every node,
    serving plans included), and a group of fewer nodes (a serving replica) claims one only where the fleet would
    (nvlink_group_spans_nodes). `stated_domain_gpus`: an existing cluster's inventory's own NVLink domain."""
    return (plan.gpu is not None
            and nvlink_group_spans_nodes(plan.gpu.accelerator, plan.gpu.machine_type, plan.gpu.nodes,
                                         stated_domain_gpus))
