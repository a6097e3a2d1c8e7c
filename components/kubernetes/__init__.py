"""The Kubernetes layer: device plugin / GPU Operator, Kueue, JobSet, queues, identity, GKE GPU networks."""

from accel.components.kubernetes.accelerator_stack import (
    AcceleratorPool,
    AcceleratorStack,
    AcceleratorStackArgs,
    AcceleratorStackError,
    CloudIdentity,
    Toleration,
)
from accel.components.kubernetes.gke_networks import (
    GkeNetworkAttachment,
    gpudirect_attachments,
    pod_network_annotations,
)
from accel.components.kubernetes.pools import (
    ExistingCluster,
    InventoryEntry,
    device_plugin_needed,
    eks_gpu_pool,
    existing_cluster_provider,
    gke_gpu_pool,
    gke_tpu_pool,
    inventory_pools,
    plan_pools,
)

__all__ = [
    "AcceleratorPool", "AcceleratorStack", "AcceleratorStackArgs", "AcceleratorStackError", "CloudIdentity",
    "Toleration", "ExistingCluster", "InventoryEntry", "device_plugin_needed", "eks_gpu_pool",
    "existing_cluster_provider", "gke_gpu_pool", "gke_tpu_pool", "inventory_pools", "plan_pools",
    "GkeNetworkAttachment", "gpudirect_attachments", "pod_network_annotations",
]
