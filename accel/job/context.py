"""What a job needs from the stack besides the Plan: the names the program declared.

Read from the mock-engine capture of the stack's program (the same run `accel plan` makes), so
the job names the namespace, LocalQueue, ServiceAccount, priority class, buckets, volumes and
GKE networks that `pulumi up` will create.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from accel.components.kubernetes.accelerator_stack import AcceleratorPool
from accel.components.kubernetes.pools import ExistingCluster, inventory_pools
from accel.mock_engine import Capture

SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
GKE_NETWORK = "kubernetes:networking.gke.io/v1:Network"
LOCAL_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue"
# The stack's default priority (AcceleratorStack declares low, normal and high).
DEFAULT_PRIORITY_SUFFIX = "-normal"


@dataclass(frozen=True)
class JobContext:
    stack: str
    namespace: str = "training"
    queue: str = "training"
    service_account: str | None = None
    priority_class: str | None = None
    dataset_bucket: str | None = None
    checkpoint_bucket: str | None = None
    volume_claims: tuple[str, ...] = ()
    gke_networks: tuple[str, ...] = field(default_factory=tuple)
    inventory_pool: AcceleratorPool | None = None   # existing clusters: the declared inventory entry used
    inventory_nodes: int | None = None              # ... and how many of its nodes the queue may use
    nvlink_domain_gpus: int | None = None           # ... and the NVLink domain it states (None: the hardware table's)


def _name(resource) -> str | None:
    return (resource.inputs.get("metadata") or {}).get("name")


def inventory_pool(existing: ExistingCluster | None, accelerator: str) -> AcceleratorPool | None:
    """The inventory entry the plan runs on (the one TrainingCluster gives the queue), as a pool."""
    if existing is None:
        return None
    return next((pool for pool in inventory_pools(existing) if pool.accelerator == accelerator), None)



def context_from_capture(stack: str, capture: Capture, existing: ExistingCluster | None = None,
                         accelerator: str | None = None) -> JobContext:
    outputs = capture.outputs
    queues = [r for r in capture.of_type(LOCAL_QUEUE)]
    namespace = outputs.get("namespace") or ((queues[0].inputs.get("metadata") or {}).get("namespace")
                                             if queues else "training")
    queue = outputs.get("localQueue") or (_name(queues[0]) if queues else "training")
    accounts = [_name(r) for r in capture.of_type(SERVICE_ACCOUNT)
                if (r.inputs.get("metadata") or {}).get("namespace") == namespace]
    priorities = [_name(r) for r in capture.of_type(PRIORITY_CLASS)]
    default = next((p for p in priorities if p and p.endswith(DEFAULT_PRIORITY_SUFFIX)), None)
    claims = tuple(n for r in capture.of_type(PVC)
                   if (r.inputs.get("metadata") or {}).get("namespace") == namespace and (n := _name(r)))
    networks = tuple(n for r in capture.of_type(GKE_NETWORK) if (n := _name(r)))
    return JobContext(
        stack=stack, namespace=namespace, queue=queue,
        service_account=accounts[0] if accounts else None,
        priority_class=default or (priorities[0] if priorities else None),
        dataset_bucket=outputs.get("datasetBucket"), checkpoint_bucket=outputs.get("checkpointBucket"),
        volume_claims=claims, gke_networks=networks,
        inventory_pool=inventory_pool(existing, accelerator) if accelerator else None,
        nvlink_domain_gpus=existing.stated_nvlink_domain(accelerator) if existing and accelerator else None)
