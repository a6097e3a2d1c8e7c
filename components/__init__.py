"""accel's Pulumi components. Public API (README, "Use the components in your own Pulumi program"):

    from accel.components import TrainingCluster, TrainingClusterArgs, ResourceTags
    from accel.components.gcp import TpuSlice, TpuSliceArgs, GpuNodePool, GpuNodePoolArgs, ...
    from accel.components.aws import GpuNodeGroup, GpuNodeGroupArgs, ...
    from accel.components.kubernetes import AcceleratorStack, AcceleratorStackArgs, ...

Names load on first use (PEP 562), so a program imports only the provider SDKs it uses.
"""

from typing import TYPE_CHECKING

from accel.base.lazy import lazy_exports

_EXPORTS = {
    "TrainingCluster": "accel.components.training_cluster",
    "TrainingClusterArgs": "accel.components.training_cluster",
    "TrainingClusterError": "accel.components.training_cluster",
    "ResourceTags": "accel.components.tags",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from accel.components.tags import ResourceTags
    from accel.components.training_cluster import TrainingCluster, TrainingClusterArgs, TrainingClusterError
