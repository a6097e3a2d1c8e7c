"""The components other languages use: a Pulumi component package (provider/PulumiPlugin.yaml).

Pulumi serves Python components to TypeScript, Go, C#, Java and YAML programs by inferring a schema
from type annotations (`pulumi.provider.experimental`: component_provider_host and its Analyzer).
The analyzer reads plain TypedDict args of scalars, lists and maps, and cannot read postponed
annotations (`from __future__ import annotations`, so this module has none) nor dataclasses that hold
pydantic models, which is what the Python API's `...Args` are. Each component here is therefore a thin
facade: `*Inputs` with only what a person writes, converted to the Python API's args (which derive
and validate the rest), then the Python component declared as the only child.

Names are unique across the package (the analyzer puts every type in one `index` module), so the two
clouds' storage and GPU components carry their cloud in the name.
"""

import json
from typing import NotRequired, Optional, TypedDict

import pulumi

from accel.components.tags import ResourceTags


class Ownership(TypedDict):
    """Who pays, and what for: stamped as labels / tags on every billable resource."""

    workload: str
    """The workload the resources serve, e.g. llama-8b."""
    owner: NotRequired[str]
    """Team or person that owns the resources."""
    costCenter: NotRequired[str]
    """Cost center billed."""


def _tags(ownership: Ownership) -> ResourceTags:
    return ResourceTags(workload=ownership["workload"], stack=pulumi.get_stack(),
                        owner=ownership.get("owner", "unknown"), cost_center=ownership.get("costCenter", "unknown"))


def _child(parent: pulumi.Resource) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent)


def _block_window(start: str | None, end: str | None):
    """The capacity block's window from its two ISO 8601 inputs (None when neither is given)."""
    from datetime import datetime

    from accel.base.errors import invalid_arg
    from accel.policies.capacity_blocks import CapacityBlockWindow

    if start is None and end is None:
        return None
    try:
        return CapacityBlockWindow(datetime.fromisoformat(str(start)), datetime.fromisoformat(str(end)))
    except (TypeError, ValueError) as error:
        raise invalid_arg("AwsGpuNodeGroup", "capacityBlockStart/capacityBlockEnd", f"{start} .. {end}",
                          f"both, ISO 8601 with a zone, end after start ({error})") from None


class TpuSliceInputs(TypedDict):
    """TPU slices on an existing GKE cluster, from generation and topology."""

    generation: str
    """TPU generation: v4, v5p, v5e or v6e."""
    topology: str
    """Slice topology valid for the generation, e.g. 2x2x4 (v4, v5p) or 4x4 (v5e, v6e)."""
    slices: NotRequired[int]
    """Identical slices (multislice), 1 to 64; default 1."""
    cluster: pulumi.Input[str]
    """Name of the GKE cluster."""
    location: str
    """The cluster's location (region or zone)."""
    zone: str
    """The zone every slice is placed in (COMPACT placement)."""
    provisioning: NotRequired[str]
    """Capacity type: on-demand (default), spot, reservation, flex-start, queued."""
    reservation: NotRequired[str]
    """Reservation name when provisioning is reservation."""
    project: NotRequired[str]
    """Google Cloud project; default: the provider's."""
    ownership: Ownership
    """Labels for cost and ownership."""


class TpuSlice(pulumi.ComponentResource):
    """N identical TPU slices on GKE: one node pool per slice (accel:gcp:TpuSlice)."""

    nodePoolNames: pulumi.Output[list[str]]
    """The GKE node pools, one per slice."""
    nodeSelector: pulumi.Output[dict[str, str]]
    """Node selector a workload uses to land on these slices."""

    def __init__(self, name: str, args: TpuSliceInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.gcp.tpu import TpuSlice as GkeTpuSlice, TpuSliceArgs

        built = TpuSliceArgs.from_shape(
            args["generation"], args["topology"], args.get("slices", 1), cluster=args["cluster"],
            location=args["location"], zone=args["zone"], tags=_tags(args["ownership"]),
            provisioning=args.get("provisioning", "on-demand"), reservation=args.get("reservation"),
            project=args.get("project"))
        super().__init__("accel:index:TpuSlice", name, None, opts)
        inner = GkeTpuSlice(name, built, _child(self))
        self.nodePoolNames = pulumi.Output.all(*inner.node_pool_names)
        self.nodeSelector = pulumi.Output.from_input(inner.node_selector)
        self.register_outputs({"nodePoolNames": self.nodePoolNames, "nodeSelector": self.nodeSelector})


class GpuNodePoolInputs(TypedDict):
    """A GKE node pool of whole GPU machines, from accelerator and GPU count."""

    accelerator: str
    """GPU, e.g. h100-80gb, a100-80gb, l4."""
    gpus: int
    """Total GPUs; a multiple of the machine's GPUs per node."""
    machineType: NotRequired[str]
    """Machine type; default: the largest machine of that GPU that divides the count."""
    cluster: pulumi.Input[str]
    """Name of the GKE cluster."""
    location: str
    """The cluster's location (region or zone)."""
    zone: str
    """The zone of the pool."""
    provisioning: NotRequired[str]
    """Capacity type: on-demand (default), spot, reservation, flex-start, queued."""
    reservation: NotRequired[str]
    """Reservation name when provisioning is reservation."""
    project: NotRequired[str]
    """Google Cloud project; default: the provider's."""
    ownership: Ownership
    """Labels for cost and ownership."""


class GpuNodePool(pulumi.ComponentResource):
    """Whole GPU machines in a GKE node pool (accel:gcp:GpuNodePool)."""

    nodePoolName: pulumi.Output[str]
    """The GKE node pool."""

    def __init__(self, name: str, args: GpuNodePoolInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.gcp.gpu import GpuNodePool as GkeGpuNodePool, GpuNodePoolArgs

        built = GpuNodePoolArgs.from_gpus(
            args["accelerator"], args["gpus"], cluster=args["cluster"], location=args["location"], zone=args["zone"],
            tags=_tags(args["ownership"]), machine_type=args.get("machineType"),
            provisioning=args.get("provisioning", "on-demand"), reservation=args.get("reservation"),
            project=args.get("project"))
        super().__init__("accel:index:GpuNodePool", name, None, opts)
        inner = GkeGpuNodePool(name, built, _child(self))
        self.nodePoolName = inner.node_pool_name
        self.register_outputs({"nodePoolName": self.nodePoolName})


class AwsGpuNodeGroupInputs(TypedDict):
    """An EKS managed node group of whole GPU instances, from accelerator and GPU count."""

    accelerator: str
    """GPU, e.g. h100-80gb, a10g, l40s."""
    gpus: int
    """Total GPUs; a multiple of the instance's GPUs."""
    instanceType: NotRequired[str]
    """Instance type; default: the largest instance of that GPU that divides the count."""
    clusterName: pulumi.Input[str]
    """Name of the EKS cluster."""
    nodeRoleArn: pulumi.Input[str]
    """IAM role the nodes run as."""
    subnetIds: dict[str, pulumi.Input[str]]
    """Private subnet per availability zone."""
    securityGroupIds: list[pulumi.Input[str]]
    """Security groups of the nodes."""
    provisioning: NotRequired[str]
    """Capacity type: on-demand (default), spot, capacity-block, reservation."""
    reservation: NotRequired[str]
    """Capacity reservation or capacity block id."""
    capacityBlockStart: NotRequired[str]
    """Capacity blocks: when the block starts, ISO 8601 with a zone (e.g. 2030-01-06T11:30:00Z)."""
    capacityBlockEnd: NotRequired[str]
    """Capacity blocks: when the block ends; the group is scaled in an hour before."""
    ownership: Ownership
    """Tags for cost and ownership."""


class AwsGpuNodeGroup(pulumi.ComponentResource):
    """Whole GPU instances in an EKS managed node group (accel:aws:GpuNodeGroup)."""

    nodeGroupName: pulumi.Output[str]
    """The EKS node group."""

    def __init__(self, name: str, args: AwsGpuNodeGroupInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.aws.gpu import GpuNodeGroup, GpuNodeGroupArgs

        built = GpuNodeGroupArgs.from_gpus(
            args["accelerator"], args["gpus"], cluster_name=args["clusterName"], node_role_arn=args["nodeRoleArn"],
            subnet_ids=args["subnetIds"], security_group_ids=args["securityGroupIds"], tags=_tags(args["ownership"]),
            machine_type=args.get("instanceType"), provisioning=args.get("provisioning", "on-demand"),
            reservation=args.get("reservation"),
            capacity_block_window=_block_window(args.get("capacityBlockStart"), args.get("capacityBlockEnd")))
        super().__init__("accel:index:AwsGpuNodeGroup", name, None, opts)
        inner = GpuNodeGroup(name, built, _child(self))
        self.nodeGroupName = inner.node_group_name
        self.register_outputs({"nodeGroupName": self.nodeGroupName})


class TrainingClusterInputs(TypedDict):
    """A whole training cluster from a Plan (`accel choose --json` .chosen plan, or `accel:plan`)."""

    planJson: str
    """The Plan as JSON (schema 2), as `accel choose --write-stack` pins it."""
    gcpProject: NotRequired[str]
    """Google Cloud project, for Google Cloud plans."""
    apiAccessCidrs: list[str]
    """Who may reach the Kubernetes API's public endpoint."""
    ownership: Ownership
    """Labels / tags for cost and ownership."""


class TrainingCluster(pulumi.ComponentResource):
    """Network, cluster, accelerator pools, storage and the Kubernetes layer a Plan asks for."""

    clusterName: pulumi.Output[str]
    """Name of the Kubernetes cluster."""
    kubeconfig: pulumi.Output[Optional[str]]
    """Kubeconfig of the cluster (secret)."""

    def __init__(self, name: str, args: TrainingClusterInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.training_cluster import TrainingCluster as Cluster, TrainingClusterArgs
        from accel.policies.plan import Plan

        plan = Plan.model_validate(json.loads(args["planJson"]))
        built = TrainingClusterArgs(plan=plan, tags=_tags(args["ownership"]), gcp_project=args.get("gcpProject"),
                                    api_access_cidrs=list(args["apiAccessCidrs"]))
        super().__init__("accel:index:TrainingCluster", name, None, opts)
        inner = Cluster(name, built, _child(self))
        self.clusterName = inner.cluster_name
        self.kubeconfig = inner.kubeconfig
        self.register_outputs({"clusterName": self.clusterName, "kubeconfig": self.kubeconfig})


COMPONENTS = [TpuSlice, GpuNodePool, AwsGpuNodeGroup, TrainingCluster]
"""What the package serves (provider/__main__.py)."""

__all__ = ["COMPONENTS", "Ownership", *(c.__name__ for c in COMPONENTS),
           *(f"{c.__name__}Inputs" for c in COMPONENTS)]
