"""The Kubernetes layer as the component package serves it (accel:index:AcceleratorStack)."""

from typing import NotRequired, Optional, TypedDict

import pulumi

from accel.base.errors import invalid_arg
from accel.components.package.common import Ownership, child, given, model, serve, tags


class NodeToleration(TypedDict):
    """A node taint the pool's pods tolerate (the chip's own taint is always tolerated)."""

    key: str
    """Taint key."""
    operator: NotRequired[str]
    """Exists (default) or Equal."""
    value: NotRequired[str]
    """Taint value, with operator Equal."""
    effect: NotRequired[str]
    """NoSchedule (default), PreferNoSchedule or NoExecute."""


class AcceleratorPool(TypedDict):
    """Chips of one kind on nodes that share labels: one Kueue ResourceFlavor, and quota in the ClusterQueue."""

    accelerator: str
    """Catalog accelerator id, e.g. tpu-v5p, h100-80gb, l4."""
    chips: int
    """Chips (TPU chips or GPUs) the queue may admit on these nodes."""
    name: NotRequired[str]
    """Flavor name suffix; default: the accelerator."""
    nodeLabels: NotRequired[dict[str, str]]
    """Labels that select the nodes; TPU pools get GKE's accelerator (and topology) labels."""
    topology: NotRequired[str]
    """TPU slice topology, e.g. 2x2x4."""
    tolerations: NotRequired[list[NodeToleration]]
    """Extra taints the pods tolerate."""


class AcceleratorStackInputs(TypedDict):
    """Device plugin or GPU Operator, Kueue, JobSet, and the queues, priorities and identity of one workload."""

    pools: list[AcceleratorPool]
    """The accelerator pools: the ClusterQueue's quota is exactly their chips."""
    kubeconfig: NotRequired[pulumi.Input[str]]
    """Kubeconfig of the cluster; default: the Kubernetes provider passed in the options (or the ambient one)."""
    namespace: NotRequired[str]
    """Workload namespace (and ClusterQueue name); default training."""
    serviceAccount: NotRequired[str]
    """The workload's ServiceAccount; default trainer."""
    queue: NotRequired[str]
    """The LocalQueue workloads submit to; default training."""
    gkeServiceAccountEmail: NotRequired[pulumi.Input[str]]
    """Bind the ServiceAccount to this Google service account (GKE Workload Identity)."""
    eksRoleArn: NotRequired[pulumi.Input[str]]
    """Bind the ServiceAccount to this IAM role (EKS IRSA)."""
    installDevicePlugin: NotRequired[bool]
    """Install the NVIDIA device plugin (nodes with drivers, e.g. EKS NVIDIA AMIs); default false."""
    installGpuOperator: NotRequired[bool]
    """Install the NVIDIA GPU Operator (nodes without drivers); default false."""
    installKueue: NotRequired[bool]
    """Install Kueue; default true (false when the cluster already runs it)."""
    installJobset: NotRequired[bool]
    """Install JobSet; default true."""
    ownership: Ownership
    """Labels for cost and ownership."""


class AcceleratorStack(pulumi.ComponentResource):
    """Kueue, JobSet, device plugins and the queues of one workload, on any cluster (accel:kubernetes:AcceleratorStack)."""

    SERVES = "accel.components.kubernetes:AcceleratorStack"
    RENAMED_OUTPUTS = {"serviceAccount": "service_account_name", "localQueue": "local_queue_name",
                       "clusterQueue": "cluster_queue_name", "resourceFlavors": "flavor_names"}

    namespace: pulumi.Output[str]
    """The workload namespace."""
    serviceAccount: pulumi.Output[str]
    """The workload's ServiceAccount."""
    localQueue: pulumi.Output[str]
    """The LocalQueue workloads name in kueue.x-k8s.io/queue-name."""
    clusterQueue: pulumi.Output[str]
    """The ClusterQueue holding the chip quota."""
    resourceFlavors: pulumi.Output[list[str]]
    """One ResourceFlavor per pool."""
    chipQuota: pulumi.Output[dict[str, int]]
    """Quota per extended resource (google.com/tpu, nvidia.com/gpu)."""

    def __init__(self, name: str, args: AcceleratorStackInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.kubernetes import AcceleratorStackArgs, CloudIdentity
        from accel.components.kubernetes.pools import InventoryEntry, inventory_pool

        component = "AcceleratorStack"
        if "gkeServiceAccountEmail" in args and "eksRoleArn" in args:
            raise invalid_arg(component, "eksRoleArn", args["eksRoleArn"],
                              "give one identity: gkeServiceAccountEmail (GKE) or eksRoleArn (EKS)")
        identity = (CloudIdentity.gke_workload_identity(args["gkeServiceAccountEmail"])
                    if "gkeServiceAccountEmail" in args
                    else CloudIdentity.eks_irsa(args["eksRoleArn"]) if "eksRoleArn" in args else None)
        # An inventory entry's internal price is for `accel choose` on an existing cluster; a queue never reads it.
        pools = [inventory_pool(model(component, f"pools[{i}]", InventoryEntry, {"usdPerChipHour": 0, **pool}))
                 for i, pool in enumerate(args["pools"])]
        built = AcceleratorStackArgs(tags=tags(args["ownership"]), pools=pools, identity=identity,
                                     **given(args, AcceleratorStackInputs,
                                             but=("kubeconfig", "gkeServiceAccountEmail", "eksRoleArn")))

        def through_kubeconfig(facade: pulumi.ComponentResource) -> pulumi.ResourceOptions:
            """The stack's Kubernetes resources on the cluster the kubeconfig names, through a provider of its own."""
            import pulumi_kubernetes as k8s

            provider = k8s.Provider(f"{name}-cluster", kubeconfig=args["kubeconfig"], opts=child(facade))
            return pulumi.ResourceOptions(parent=facade, providers={"kubernetes": provider})

        serve(self, name, built, opts, through_kubeconfig if "kubeconfig" in args else child)
