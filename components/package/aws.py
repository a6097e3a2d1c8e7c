"""AWS components as the component package serves them (accel:index:<Name>; names carry the cloud where
Google Cloud has a component of the same name, since the analyzer puts every type in one module).

Each facade declares its inputs and outputs in full, a docstring per field, although the classes look
alike: Pulumi's schema inference reads a field's description only from the class that declares it, and
the outputs only from the facade's own annotations (package/__init__.py says more). What they share is one
call, common.serve."""

from typing import NotRequired, Optional, TypedDict

import pulumi

from accel.components.package.common import Ownership, Storage, given, serve, storage_plan, tags


def _block_window(start: Optional[str], end: Optional[str]):
    """The capacity block's window from its two ISO 8601 inputs (None when neither is given)."""
    from datetime import datetime

    from accel.base.errors import invalid_arg
    from accel.policies.cloud.capacity_blocks import CapacityBlockWindow

    if start is None and end is None:
        return None
    try:
        return CapacityBlockWindow(datetime.fromisoformat(str(start)), datetime.fromisoformat(str(end)))
    except (TypeError, ValueError) as error:
        raise invalid_arg("AwsGpuNodeGroup", "capacityBlockStart/capacityBlockEnd", f"{start} .. {end}",
                          f"both, ISO 8601 with a zone, end after start ({error})") from None


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

    SERVES = "accel.components.aws:GpuNodeGroup"

    nodeGroupName: pulumi.Output[str]
    """The EKS node group."""

    def __init__(self, name: str, args: AwsGpuNodeGroupInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.aws.gpu import GpuNodeGroupArgs

        built = GpuNodeGroupArgs.from_gpus(
            args["accelerator"], args["gpus"], cluster_name=args["clusterName"], node_role_arn=args["nodeRoleArn"],
            subnet_ids=args["subnetIds"], security_group_ids=args["securityGroupIds"], tags=tags(args["ownership"]),
            machine_type=args.get("instanceType"), provisioning=args.get("provisioning", "on-demand"),
            reservation=args.get("reservation"),
            capacity_block_window=_block_window(args.get("capacityBlockStart"), args.get("capacityBlockEnd")))
        serve(self, name, built, opts)


class AwsNetworkInputs(TypedDict):
    """A VPC for EKS: private node subnets, NAT-only public subnets, an S3 gateway endpoint, security groups."""

    region: str
    """AWS region, e.g. us-east-1."""
    zones: list[str]
    """At least two availability zones of the region (EKS); GPU nodes use the first."""
    cidrBlock: NotRequired[str]
    """VPC range, /16 to /20; default 10.0.0.0/16."""
    nat: NotRequired[str]
    """per-az (default: one NAT gateway per zone) or single (cheaper, one zone)."""
    ownership: Ownership
    """Tags for cost and ownership."""


class AwsNetwork(pulumi.ComponentResource):
    """VPC, private node subnets, NAT, S3 endpoint, node and control-plane security groups (accel:aws:AwsNetwork)."""

    SERVES = "accel.components.aws:AwsNetwork"

    vpcId: pulumi.Output[str]
    """The VPC."""
    privateSubnetIds: pulumi.Output[dict[str, str]]
    """Private (node) subnet per zone."""
    publicSubnetIds: pulumi.Output[dict[str, str]]
    """Public (NAT only) subnet per zone."""
    nodeSecurityGroupId: pulumi.Output[str]
    """Security group of the nodes."""
    controlPlaneSecurityGroupId: pulumi.Output[str]
    """Security group of the EKS control plane."""

    def __init__(self, name: str, args: AwsNetworkInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.aws.network import AwsNetworkArgs

        built = AwsNetworkArgs(region=args["region"], zones=list(args["zones"]), tags=tags(args["ownership"]),
                               **given(args, AwsNetworkInputs))
        serve(self, name, built, opts)


class EksClusterInputs(TypedDict):
    """An EKS control plane with an OIDC provider (IRSA), managed core add-ons and a system node group."""

    region: str
    """AWS region, e.g. us-east-1."""
    subnetIds: list[pulumi.Input[str]]
    """Private subnets in at least two availability zones."""
    controlPlaneSecurityGroupId: pulumi.Input[str]
    """Security group of the control plane (AwsNetwork.controlPlaneSecurityGroupId)."""
    nodeSecurityGroupId: pulumi.Input[str]
    """Security group of the nodes (AwsNetwork.nodeSecurityGroupId)."""
    publicAccessCidrs: NotRequired[list[str]]
    """Who may reach the public API endpoint; required unless privateEndpoint."""
    privateEndpoint: NotRequired[bool]
    """The API server only from inside the VPC; default false."""
    clusterName: NotRequired[str]
    """EKS name of the cluster; default: the component's name."""
    kubernetesVersion: NotRequired[str]
    """Kubernetes minor version; default: the newest EKS release in policies/cloud/eks_versions.yaml."""
    systemInstanceTypes: NotRequired[list[str]]
    """Instance types of the system node group; default m6i.xlarge."""
    systemNodes: NotRequired[int]
    """Nodes of the system node group; default 2."""
    adminPrincipalArns: NotRequired[list[str]]
    """Extra IAM roles or users given cluster-admin (e.g. CI)."""
    secretsKmsKeyArn: NotRequired[str]
    """KMS key that encrypts Kubernetes secrets."""
    ownership: Ownership
    """Tags for cost and ownership."""


class EksCluster(pulumi.ComponentResource):
    """EKS control plane, OIDC provider, managed core add-ons and a system node group (accel:aws:EksCluster)."""

    SERVES = "accel.components.aws:EksCluster"
    RENAMED_OUTPUTS = {"clusterName": "name"}

    clusterName: pulumi.Output[str]
    """Name of the EKS cluster."""
    endpoint: pulumi.Output[str]
    """The API server endpoint."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig using `aws eks get-token` (secret)."""
    oidcProviderArn: pulumi.Output[str]
    """The IAM OIDC provider of the cluster (IRSA)."""
    oidcIssuer: pulumi.Output[str]
    """The cluster's OIDC issuer, without https://."""
    nodeRoleArn: pulumi.Output[str]
    """IAM role of the nodes (AwsGpuNodeGroup.nodeRoleArn)."""
    clusterSecurityGroupId: pulumi.Output[str]
    """The security group EKS creates for the cluster."""

    def __init__(self, name: str, args: EksClusterInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.aws.cluster import EksClusterArgs

        optional = given(args, EksClusterInputs)
        built = EksClusterArgs(region=args["region"], subnet_ids=list(args["subnetIds"]),
                               control_plane_security_group_id=args["controlPlaneSecurityGroupId"],
                               node_security_group_id=args["nodeSecurityGroupId"], tags=tags(args["ownership"]),
                               **optional)
        serve(self, name, built, opts)


class AwsTrainingStorageInputs(TypedDict):
    """Retained S3 buckets, optional FSx for Lustre, and the IRSA role of the training pods."""

    storage: NotRequired[Storage]
    """What to keep; default: both buckets, no filesystem."""
    oidcProviderArn: pulumi.Input[str]
    """The cluster's IAM OIDC provider (EksCluster.oidcProviderArn)."""
    oidcIssuer: pulumi.Input[str]
    """The cluster's OIDC issuer (EksCluster.oidcIssuer)."""
    serviceAccountNamespace: NotRequired[str]
    """Kubernetes namespace of the training pods; default training."""
    serviceAccountName: NotRequired[str]
    """Their Kubernetes service account; default trainer."""
    datasetBucketName: NotRequired[str]
    """Dataset bucket name; default: autonamed <name>-datasets-..."""
    checkpointBucketName: NotRequired[str]
    """Checkpoint bucket name; default: autonamed <name>-checkpoints-..."""
    existingDatasetBucket: NotRequired[str]
    """Read an existing dataset bucket instead of creating one."""
    kmsKeyArn: NotRequired[str]
    """KMS key of the buckets; default SSE-S3."""
    vpcId: NotRequired[pulumi.Input[str]]
    """VPC of the FSx for Lustre filesystem, when storage.filesystem is fsx-lustre."""
    filesystemSubnetId: NotRequired[pulumi.Input[str]]
    """Subnet of the filesystem: the GPU nodes' zone."""
    clientSecurityGroupId: NotRequired[pulumi.Input[str]]
    """Security group of the filesystem's clients (the nodes)."""
    ownership: Ownership
    """Tags for cost and ownership."""


class AwsTrainingStorage(pulumi.ComponentResource):
    """Retained S3 buckets (+ optional FSx for Lustre) and the IRSA role of the training pods (accel:aws:TrainingStorage)."""

    SERVES = "accel.components.aws:TrainingStorage"

    datasetBucket: pulumi.Output[Optional[str]]
    """The dataset bucket, if any."""
    checkpointBucket: pulumi.Output[Optional[str]]
    """The checkpoint bucket, if any."""
    trainingRoleArn: pulumi.Output[str]
    """IAM role of the training pods (annotate their service account with it)."""
    filesystemId: pulumi.Output[Optional[str]]
    """The FSx for Lustre filesystem, if any."""

    def __init__(self, name: str, args: AwsTrainingStorageInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.aws.storage import TrainingStorageArgs

        optional = given(args, AwsTrainingStorageInputs, but=("storage",))
        built = TrainingStorageArgs(plan=storage_plan("AwsTrainingStorage", args.get("storage")),
                                    tags=tags(args["ownership"]), oidc_provider_arn=args["oidcProviderArn"],
                                    oidc_issuer=args["oidcIssuer"], **optional)
        serve(self, name, built, opts)
