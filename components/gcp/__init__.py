"""Google Cloud components: GKE cluster, TPU slices (GKE or TPU VMs), GPU node pools, network, storage.

    from accel.components.gcp import TpuSlice, TpuSliceArgs, GpuNodePool, GpuNodePoolArgs

Names load on first use (PEP 562), so importing this package pulls in pulumi_gcp only when a
component is used, and never pulumi_aws.
"""

from typing import TYPE_CHECKING

from accel.base.lazy import lazy_exports

_EXPORTS = {
    "GkeCluster": "accel.components.gcp.cluster",
    "GkeClusterArgs": "accel.components.gcp.cluster",
    "ClusterRef": "accel.components.gcp.cluster",
    "UpgradePause": "accel.components.gcp.cluster",
    "TpuSlice": "accel.components.gcp.tpu",
    "TpuSliceArgs": "accel.components.gcp.tpu",
    "TpuVmSlice": "accel.components.gcp.tpu",
    "TpuVmSliceArgs": "accel.components.gcp.tpu",
    "GpuNodePool": "accel.components.gcp.gpu",
    "GpuNodePoolArgs": "accel.components.gcp.gpu",
    "GcpNetwork": "accel.components.gcp.network",
    "GcpNetworkArgs": "accel.components.gcp.network",
    "TrainingStorage": "accel.components.gcp.storage",
    "TrainingStorageArgs": "accel.components.gcp.storage",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from accel.components.gcp.cluster import ClusterRef, GkeCluster, GkeClusterArgs, UpgradePause
    from accel.components.gcp.gpu import GpuNodePool, GpuNodePoolArgs
    from accel.components.gcp.network import GcpNetwork, GcpNetworkArgs
    from accel.components.gcp.storage import TrainingStorage, TrainingStorageArgs
    from accel.components.gcp.tpu import TpuSlice, TpuSliceArgs, TpuVmSlice, TpuVmSliceArgs
