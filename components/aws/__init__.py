"""AWS components: EKS cluster, GPU node groups (EFA, capacity blocks), network, storage.

    from accel.components.aws import EksCluster, EksClusterArgs, GpuNodeGroup, GpuNodeGroupArgs

Names load on first use (PEP 562): importing this package never pulls in pulumi_gcp.
"""

from typing import TYPE_CHECKING

from accel.base.lazy import lazy_exports

_EXPORTS = {
    "EksCluster": "accel.components.aws.cluster",
    "EksClusterArgs": "accel.components.aws.cluster",
    "GpuNodeGroup": "accel.components.aws.gpu",
    "GpuNodeGroupArgs": "accel.components.aws.gpu",
    "AwsNetwork": "accel.components.aws.network",
    "AwsNetworkArgs": "accel.components.aws.network",
    "TrainingStorage": "accel.components.aws.storage",
    "TrainingStorageArgs": "accel.components.aws.storage",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from accel.components.aws.cluster import EksCluster, EksClusterArgs
    from accel.components.aws.gpu import GpuNodeGroup, GpuNodeGroupArgs
    from accel.components.aws.network import AwsNetwork, AwsNetworkArgs
    from accel.components.aws.storage import TrainingStorage, TrainingStorageArgs
