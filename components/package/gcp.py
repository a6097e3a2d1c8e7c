"""Google Cloud components as the component package serves them (accel:index:<Name>).

Each facade declares its inputs and outputs in full, a docstring per field, although the classes look
alike: Pulumi's schema inference reads a field's description only from the class that declares it, and
the outputs only from the facade's own annotations (package/__init__.py says more). What they share is one
call, common.serve."""

from typing import NotRequired, Optional, TypedDict

import pulumi

from accel.components.package.common import Ownership, Storage, given, serve, storage_plan, tags


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

    SERVES = "accel.components.gcp:TpuSlice"

    nodePoolNames: pulumi.Output[list[str]]
    """The GKE node pools, one per slice."""
    nodeSelector: pulumi.Output[dict[str, str]]
    """Node selector a workload uses to land on these slices."""

    def __init__(self, name: str, args: TpuSliceInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.gcp.tpu import TpuSliceArgs

        built = TpuSliceArgs.from_shape(
            args["generation"], args["topology"], args.get("slices", 1), cluster=args["cluster"],
            location=args["location"], zone=args["zone"], tags=tags(args["ownership"]),
            provisioning=args.get("provisioning", "on-demand"), reservation=args.get("reservation"),
            project=args.get("project"))
        serve(self, name, built, opts)


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

    SERVES = "accel.components.gcp:GpuNodePool"

    nodePoolName: pulumi.Output[str]
    """The GKE node pool."""

    def __init__(self, name: str, args: GpuNodePoolInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.gcp.gpu import GpuNodePoolArgs

        built = GpuNodePoolArgs.from_gpus(
            args["accelerator"], args["gpus"], cluster=args["cluster"], location=args["location"], zone=args["zone"],
            tags=tags(args["ownership"]), machine_type=args.get("machineType"),
            provisioning=args.get("provisioning", "on-demand"), reservation=args.get("reservation"),
            project=args.get("project"))
        serve(self, name, built, opts)


class TpuVmSliceInputs(TypedDict):
    """TPU VMs without GKE (one per slice, or one queued resource), from generation and topology."""

    generation: str
    """TPU generation: v4, v5p, v5e or v6e."""
    topology: str
    """Slice topology valid for the generation, e.g. 2x2x4 (v4, v5p) or 4x4 (v5e, v6e)."""
    slices: NotRequired[int]
    """Identical slices (multislice), 1 to 64; default 1."""
    zone: str
    """The zone of the TPU VMs."""
    network: pulumi.Input[str]
    """VPC network the TPU VMs attach to."""
    subnetwork: pulumi.Input[str]
    """Subnetwork of that VPC, in the zone's region."""
    provisioning: NotRequired[str]
    """Capacity type: on-demand (default), spot, reservation, queued."""
    reservation: NotRequired[str]
    """Reservation name when provisioning is reservation."""
    project: NotRequired[str]
    """Google Cloud project; required for queued provisioning."""
    serviceAccountEmail: NotRequired[pulumi.Input[str]]
    """Service account the TPU VMs run as; default: the project's default."""
    runtimeVersion: NotRequired[str]
    """TPU VM software version; default: the generation's."""
    ownership: Ownership
    """Labels for cost and ownership."""


class TpuVmSlice(pulumi.ComponentResource):
    """TPU VMs without GKE: a V2 VM per slice, or one queued resource for every slice (accel:gcp:TpuVmSlice)."""

    SERVES = "accel.components.gcp:TpuVmSlice"

    nodeIds: pulumi.Output[list[str]]
    """The TPU VM node ids, one per slice."""
    acceleratorType: pulumi.Output[str]
    """The TPU VM accelerator type, e.g. v5p-32."""
    runtimeVersion: pulumi.Output[str]
    """The TPU VM software version."""

    def __init__(self, name: str, args: TpuVmSliceInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.gcp.tpu import TpuVmSliceArgs
        from accel.policies.selection.pools import pool_capacity, tpu_pool

        component = "TpuVmSlice"
        built = TpuVmSliceArgs(
            pool=tpu_pool(args["generation"], args["topology"], args.get("slices", 1), component=component),
            capacity=pool_capacity(args.get("provisioning", "on-demand"), args.get("reservation"), component=component),
            zone=args["zone"], network=args["network"], subnetwork=args["subnetwork"], tags=tags(args["ownership"]),
            project=args.get("project"), service_account_email=args.get("serviceAccountEmail"),
            runtime_version=args.get("runtimeVersion"))
        serve(self, name, built, opts)


class GkeClusterInputs(TypedDict):
    """A private GKE Standard cluster with Workload Identity, a least-privilege node account and a system pool."""

    project: str
    """Google Cloud project (names the Workload Identity pool)."""
    location: str
    """Region (regional cluster) or zone (zonal cluster)."""
    network: pulumi.Input[str]
    """VPC network id or name."""
    subnetwork: pulumi.Input[str]
    """Subnetwork with the pods and services secondary ranges."""
    nodeZones: NotRequired[list[str]]
    """Zones the nodes may run in; default: GKE's."""
    podsRangeName: NotRequired[str]
    """Secondary range of the pods; default pods."""
    servicesRangeName: NotRequired[str]
    """Secondary range of the services; default services."""
    releaseChannel: NotRequired[str]
    """RAPID, REGULAR (default), STABLE, EXTENDED or UNSPECIFIED."""
    clusterName: NotRequired[str]
    """GKE name of the cluster; default: the component's name."""
    masterAuthorizedCidrs: NotRequired[list[str]]
    """Who may reach the control plane's IP endpoint."""
    privateEndpoint: NotRequired[bool]
    """The IP endpoint only inside the VPC; default false."""
    dnsEndpoint: NotRequired[bool]
    """Allow the IAM-authenticated DNS endpoint from outside the VPC; default true."""
    multiNetworking: NotRequired[bool]
    """Multi-networking for GPUDirect pools; default false."""
    filesystem: NotRequired[str]
    """none (default), filestore or managed-lustre: enables that CSI driver."""
    systemMachineType: NotRequired[str]
    """Machine type of the system pool; default e2-standard-4."""
    systemNodesPerZone: NotRequired[int]
    """System nodes per zone; default 1."""
    ownership: Ownership
    """Labels for cost and ownership."""


class GkeCluster(pulumi.ComponentResource):
    """A private GKE Standard cluster ready for TPU slices and GPU node pools (accel:gcp:GkeCluster)."""

    SERVES = "accel.components.gcp:GkeCluster"
    RENAMED_OUTPUTS = {"clusterName": "name"}

    clusterName: pulumi.Output[str]
    """Name of the GKE cluster."""
    endpoint: pulumi.Output[str]
    """The control plane's IP endpoint."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig using gke-gcloud-auth-plugin (secret)."""
    nodeServiceAccountEmail: pulumi.Output[str]
    """The nodes' service account."""
    workloadPool: pulumi.Output[str]
    """The Workload Identity pool, <project>.svc.id.goog."""

    def __init__(self, name: str, args: GkeClusterInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.gcp.cluster import GkeClusterArgs

        optional = given(args, GkeClusterInputs)
        built = GkeClusterArgs(project=args["project"], location=args["location"], network=args["network"],
                               subnetwork=args["subnetwork"], tags=tags(args["ownership"]), **optional)
        serve(self, name, built, opts)


class GcpNetworkInputs(TypedDict):
    """The private VPC a training cluster lives in. GPUDirect fabric networks come from a Plan (TrainingCluster)."""

    region: str
    """Region of the subnet, e.g. us-east5."""
    project: NotRequired[str]
    """Google Cloud project; default: the provider's."""
    nodeCidr: NotRequired[str]
    """Node subnet range; default 10.0.0.0/20."""
    podsCidr: NotRequired[str]
    """Pods secondary range; default 10.16.0.0/14."""
    servicesCidr: NotRequired[str]
    """Services secondary range; default 10.20.0.0/20."""
    mtu: NotRequired[int]
    """MTU of the VPC; default 8896 (jumbo frames)."""
    iapSsh: NotRequired[bool]
    """Allow SSH through IAP only; default false."""
    filesystem: NotRequired[str]
    """none (default), filestore, or managed-lustre (adds private services access)."""
    privateServiceCidr: NotRequired[str]
    """Peering range for Google-managed services; default 10.32.0.0/20."""
    ownership: Ownership
    """Labels for cost and ownership."""


class GcpNetwork(pulumi.ComponentResource):
    """VPC, node subnet with GKE secondary ranges, Cloud NAT and least-open firewalls (accel:gcp:GcpNetwork)."""

    SERVES = "accel.components.gcp:GcpNetwork"

    networkId: pulumi.Output[str]
    """The VPC's id (GkeCluster.network)."""
    networkName: pulumi.Output[str]
    """The VPC's name."""
    subnetId: pulumi.Output[str]
    """The node subnet's id (GkeCluster.subnetwork)."""
    subnetName: pulumi.Output[str]
    """The node subnet's name."""
    podsRangeName: pulumi.Output[str]
    """Secondary range of the pods."""
    servicesRangeName: pulumi.Output[str]
    """Secondary range of the services."""

    def __init__(self, name: str, args: GcpNetworkInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.gcp.network import GcpNetworkArgs

        optional = given(args, GcpNetworkInputs)
        built = GcpNetworkArgs(region=args["region"], tags=tags(args["ownership"]), **optional)
        serve(self, name, built, opts)


class GcpTrainingStorageInputs(TypedDict):
    """Retained dataset and checkpoint buckets, an optional filesystem, and the training pods' identity."""

    project: str
    """Google Cloud project (bucket names and the Workload Identity member)."""
    location: str
    """Bucket location: the compute region."""
    storage: NotRequired[Storage]
    """What to keep; default: both buckets, no filesystem."""
    namespace: NotRequired[str]
    """Kubernetes namespace of the training pods; default training."""
    ksaName: NotRequired[str]
    """Their Kubernetes service account; default training."""
    datasetBucketName: NotRequired[str]
    """Dataset bucket name; default <project>-<name>-datasets."""
    checkpointBucketName: NotRequired[str]
    """Checkpoint bucket name; default <project>-<name>-checkpoints."""
    existingDatasetBucket: NotRequired[str]
    """Read from (and grant on) a dataset bucket this stack does not own."""
    existingCheckpointBucket: NotRequired[str]
    """Write checkpoints to a bucket this stack does not own."""
    zone: NotRequired[str]
    """Zone of the filesystem, when storage.filesystem is set."""
    networkName: NotRequired[pulumi.Input[str]]
    """VPC name of the filesystem (GcpNetwork.networkName), when storage.filesystem is set."""
    ownership: Ownership
    """Labels for cost and ownership."""


class GcpTrainingStorage(pulumi.ComponentResource):
    """Buckets that outlive every cluster, and who may touch them (accel:gcp:TrainingStorage).

    On a fresh project, make it depend on the GKE cluster (dependsOn): the Workload Identity pool
    exists only once a Workload Identity cluster does."""

    SERVES = "accel.components.gcp:TrainingStorage"

    datasetBucket: pulumi.Output[Optional[str]]
    """The dataset bucket, if any."""
    checkpointBucket: pulumi.Output[Optional[str]]
    """The checkpoint bucket, if any."""
    serviceAccountEmail: pulumi.Output[str]
    """The Google service account of the training pods."""
    namespace: pulumi.Output[str]
    """Kubernetes namespace of the training pods."""
    ksaName: pulumi.Output[str]
    """Kubernetes service account bound to serviceAccountEmail."""

    def __init__(self, name: str, args: GcpTrainingStorageInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.gcp.storage import TrainingStorageArgs

        optional = given(args, GcpTrainingStorageInputs, but=("storage",))
        built = TrainingStorageArgs(project=args["project"], location=args["location"], tags=tags(args["ownership"]),
                                    storage=storage_plan("GcpTrainingStorage", args.get("storage")), **optional)
        serve(self, name, built, opts)
