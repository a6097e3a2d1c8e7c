"""TrainingCluster: a Plan composed into network, cluster, accelerator pools, storage and Kubernetes.

This is the only module where the clouds meet. It decides nothing: the Plan says which cloud,
which pools and which storage; this module wires the per-cloud components together in the
order their references require, then puts the same Kubernetes layer (device plugin, Kueue,
JobSet, queue, identity, and GKE's GPUDirect network objects where the plan has a fabric) on
whatever cluster resulted. Provider packages are imported inside
the per-cloud builders, so a GCP stack never loads pulumi_aws and vice versa.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import pulumi
from pydantic import ValidationError

from accel.components.kubernetes.accelerator_stack import AcceleratorStack, AcceleratorStackArgs, CloudIdentity
from accel.components.kubernetes.gke_networks import GkeNetworkAttachment, gpudirect_attachments
from accel.components.kubernetes.storage_mounts import StorageMount
from accel.components.kubernetes.workloads import needs_compute_domain, needs_leader_worker_set
from accel.components.kubernetes.pools import (
    ExistingCluster,
    device_plugin_needed,
    existing_cluster_provider,
    gpu_node_arch,
    inventory_pools,
    plan_pools,
)
from accel.base.errors import ComponentArgsError
from accel.base.model import describe_validation_error, revalidated
from accel.components.provider_settings import ProviderSettings
from accel.components.tags import ResourceTags, aws_default_tags_problem, gcp_default_labels_problem
from accel.policies.cloud.capacity_blocks import CapacityBlockWindow
from accel.policies.lifecycle import Lifecycle, format_timestamp, node_max_run_duration
from accel.policies.plan import GpuPool, Plan

TYPE = "accel:cluster:TrainingCluster"


class TrainingClusterError(ComponentArgsError):
    """Arguments the composer cannot build; names the field and what is needed."""


@dataclass(frozen=True)
class TrainingClusterArgs:
    plan: Plan
    tags: ResourceTags
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    gcp_project: str | None = None                 # required for GCP plans (gcp:project)
    existing_cluster: ExistingCluster | None = None  # required for plans on cloud "kubernetes"
    api_access_cidrs: Sequence[str] = ()           # who may reach the Kubernetes API's public endpoint
    upgrade_pause: tuple[datetime, datetime] | None = None  # GKE: no node upgrades in this window
    namespace: str = "training"
    service_account: str = "trainer"
    queue: str = "training"
    # AWS capacity-block plans: when the block runs (accel:reservations start/end); its node groups are
    # scaled out at the start and in before the end (components/aws/gpu.py).
    capacity_block_window: CapacityBlockWindow | None = None
    # A fleet on several Capacity Blocks: the block id of each GPU node group, in the plan's pool order (one
    # group per block, all in the window above); empty: every group on the plan's one reservation.
    capacity_block_ids: Sequence[str] = ()
    # AWS plans: tags the stack's provider stamps on every resource it manages (the stack file's
    # aws:defaultTags.tags). The provider here is explicit, and an explicit provider reads no aws:* config
    # (pulumi/pulumi-aws#1307: "by design"), so the stack program hands them over.
    aws_default_tags: Mapping[str, str] = field(default_factory=dict)
    # GCP plans: the same for the Google provider's default labels (the stack file's gcp:defaultLabels).
    gcp_default_labels: Mapping[str, str] = field(default_factory=dict)
    # The rest of what the stack file says about each provider (its identity, account, endpoint: aws:profile,
    # aws:assumeRoles, gcp:impersonateServiceAccount, ...), handed over for the same reason
    # (accel/stack/provider_keys.yaml).
    aws_provider: ProviderSettings = field(default_factory=ProviderSettings)
    gcp_provider: ProviderSettings = field(default_factory=ProviderSettings)
    # A bring-your-own cluster's provider: the stack's kubernetes:* keys accel:cluster does not already say.
    kubernetes_provider: ProviderSettings = field(default_factory=ProviderSettings)

    def __post_init__(self) -> None:
        self.validate()  # the arguments check themselves on construction (one convention, every cloud)

    def validate(self) -> None:
        cloud = self.plan.cloud
        if cloud == "gcp" and not self.gcp_project:
            raise TrainingClusterError("gcp:project: missing; a GCP plan needs the project to build in: set "
                                       "gcp:project in the stack file")
        if cloud == "kubernetes" and self.existing_cluster is None:
            raise TrainingClusterError("existing_cluster: a plan on cloud 'kubernetes' runs on a cluster you "
                                       "bring; declare it under accel:cluster (kubeconfig, context, inventory)")
        if (self.plan.capacity.provisioning == "capacity-block") != (self.capacity_block_window is not None):
            raise TrainingClusterError(
                "capacity_block_window: a capacity-block plan needs its block's window (declare start and end on "
                "its accel:reservations entry) and no other plan takes one; the plan's capacity is "
                f"{self.plan.capacity.provisioning}")
        if self.capacity_block_ids:
            pools = self.plan.gpu.pools if self.plan.gpu is not None else 0
            if self.plan.capacity.provisioning != "capacity-block" or len(self.capacity_block_ids) != pools:
                raise TrainingClusterError(
                    f"capacity_block_ids: {len(self.capacity_block_ids)} block ids for a {self.plan.capacity.provisioning} "
                    f"plan of {pools} GPU node groups; give one block id per node group of a capacity-block plan")
        laid_out = self.plan.gpu.nvlink_clique_nodes if self.plan.gpu is not None else None
        if cloud == "kubernetes" and self.existing_cluster is not None and laid_out is not None:
            # The Plan's layout spans trays only within the clique the inventory's nodes are labelled with, and the
            # job places its groups by that same clique: the two must be the inventory's one figure. (A plan laid
            # out without one keeps tensor parallelism in the tray, which any inventory runs.)
            stated = self.existing_cluster.labelled_clique_nodes(self.plan.gpu.accelerator)
            if laid_out != stated:
                said = (f"nodes labelled by NVLink cliques of {stated} (nvlink_clique_label)" if stated is not None
                        else "no NVLink clique label on its nodes (nvlink_clique_label unset)")
                raise TrainingClusterError(
                    f"plan.gpu.nvlink_clique_nodes: the plan was laid out for NVLink cliques of {laid_out} nodes, but "
                    f"existing_cluster.inventory says {said}; "
                    "re-run `accel choose --write-stack` against this inventory")
        if cloud != "kubernetes" and self.existing_cluster is not None:
            raise TrainingClusterError(f"existing_cluster: the plan builds a new cluster on {cloud}; remove "
                                       "accel:cluster or choose with clouds: [kubernetes]")
        if self.aws_default_tags:
            found = aws_default_tags_problem(self.aws_default_tags, self.tags)
            if found:
                raise TrainingClusterError(f"aws_default_tags.{found[0]}: {found[1]}")
        if self.gcp_default_labels:
            found = gcp_default_labels_problem(self.gcp_default_labels, self.tags)
            if found:
                raise TrainingClusterError(f"gcp_default_labels{'.' if found[0] else ''}{found[0]}: {found[1]}")
        # The plan checked in full, whoever built it: make_plan assembles one without pydantic's validation
        # (policies/selection/plan_builder.py), and a plan read from a file was validated when read.
        try:
            revalidated(self.plan)
        except ValidationError as error:
            raise TrainingClusterError(describe_validation_error(error, "TrainingCluster", Plan, ("plan",))) from None

    def facts(self) -> dict[str, Any]:
        """What policies and reviewers need to know about this cluster, as plain data."""
        expires_at = self.lifecycle.expires_at
        return {
            "plan": self.plan.model_dump(mode="json"),
            "hourlyUsd": round(self.plan.estimate.hourly_usd, 2),
            "runUsd": round(self.plan.estimate.total_usd, 2),
            "ephemeral": self.lifecycle.ephemeral,
            "expiresAt": format_timestamp(expires_at) if expires_at else None,
            "ttl": self.lifecycle.ttl,
        }


@dataclass
class _Built:
    """What a cloud builder hands to the Kubernetes layer and to the stack's exports."""

    provider: pulumi.ProviderResource
    kubeconfig: pulumi.Input[str] | None
    cluster_name: pulumi.Input[str]
    identity: CloudIdentity | None = None
    dataset_bucket: pulumi.Input[str] | None = None
    checkpoint_bucket: pulumi.Input[str] | None = None
    gpu_fabric: str = "none"  # GKE GPUDirect fabric of the GPU pool; its NICs need GKE networks
    gpu_arch: Literal["amd64", "arm64"] = "amd64"  # the GPU nodes' kubernetes.io/arch: picks the node installers
    gke_networks: Sequence[GkeNetworkAttachment] = ()
    storage_mounts: Sequence[StorageMount] = ()  # stores the training pods mount (PV + PVC each)


class TrainingCluster(pulumi.ComponentResource):
    """Everything one training (or serving) workload needs, on the cloud its Plan chose."""

    def __init__(self, name: str, args: TrainingClusterArgs, opts: pulumi.ResourceOptions | None = None):
        args.validate()
        facts = args.facts()
        # The facts are this component's inputs so guardrails (budget, expiry) can read them
        # under `pulumi preview --policy-pack` as well as offline.
        super().__init__(TYPE, name, facts, opts)
        builders = {"gcp": _build_gcp, "aws": _build_aws, "kubernetes": _build_existing}
        built = builders[args.plan.cloud](self, name, args)

        existing = args.existing_cluster
        self.kubernetes = AcceleratorStack(
            f"{name}-k8s",
            AcceleratorStackArgs(
                tags=args.tags,
                pools=_existing_cluster_pools(existing, args.plan) if existing else plan_pools(args.plan),
                namespace=args.namespace,
                service_account=args.service_account,
                queue=args.queue,
                identity=built.identity,
                install_device_plugin=(existing.gpu_setup == "device-plugin" and existing.has_gpus) if existing
                else device_plugin_needed(args.plan),
                install_gpu_operator=bool(existing and existing.gpu_setup == "gpu-operator" and existing.has_gpus),
                install_kueue=existing.install_kueue if existing else True,
                install_jobset=existing.install_jobset if existing else True,
                install_lws=needs_leader_worker_set(args.plan),
                install_dra_driver=needs_compute_domain(
                    args.plan, existing.stated_nvlink_domain(args.plan.pool.accelerator) if existing else None),
                dra_driver_root="/home/kubernetes/bin/nvidia" if args.plan.cloud == "gcp" else "/",
                gpu_fabric=built.gpu_fabric,
                gpu_arch=built.gpu_arch,
                gke_networks=built.gke_networks,
                storage_mounts=built.storage_mounts,
            ),
            opts=pulumi.ResourceOptions(parent=self, provider=built.provider),
        )
        self.cluster_name = pulumi.Output.from_input(built.cluster_name)
        self.kubeconfig = pulumi.Output.secret(built.kubeconfig) if built.kubeconfig is not None else None
        self.dataset_bucket = built.dataset_bucket
        self.checkpoint_bucket = built.checkpoint_bucket
        self.namespace = self.kubernetes.namespace
        self.local_queue = self.kubernetes.local_queue_name
        # GKE GPUDirect plans: what training pods carry to reach the GPU NICs ({} otherwise).
        self.gke_network_names = self.kubernetes.gke_network_names
        self.pod_network_annotations = self.kubernetes.pod_network_annotations
        self.register_outputs({
            **facts,
            "clusterName": self.cluster_name,
            "datasetBucket": self.dataset_bucket,
            "checkpointBucket": self.checkpoint_bucket,
            "namespace": self.namespace,
            "localQueue": self.local_queue,
            "podNetworkAnnotations": self.pod_network_annotations,
        })


def _existing_cluster_pools(existing: ExistingCluster, plan: Plan):
    """On a shared cluster the queue gets what the plan uses, not the whole inventory."""
    accelerator = plan.pool.accelerator
    pools = [pool.model_copy(update={"chips": plan.chosen.chips})
             for pool in inventory_pools(existing) if pool.accelerator == accelerator]
    if not pools:
        raise TrainingClusterError(f"existing_cluster.inventory: the plan uses {accelerator}, which "
                                   "the declared inventory does not have; re-run the choice or declare it")
    return pools[:1]


def gpu_pool_names(name: str, plan: Plan) -> list[tuple[str, GpuPool]]:
    """The child name and single pool of each GPU node pool / node group: `<name>-gpu` for a fleet of one
    pool (the names stacks already have), `<name>-gpu-00`, `-01`, ... for a split fleet."""
    assert plan.gpu is not None
    pools = plan.gpu.split()
    if len(pools) == 1:
        return [(f"{name}-gpu", pools[0])]
    return [(f"{name}-gpu-{index:02d}", pool) for index, pool in enumerate(pools)]


def _build_gcp(parent: TrainingCluster, name: str, args: TrainingClusterArgs) -> _Built:
    import pulumi_gcp as gcp
    import pulumi_kubernetes as k8s

    from accel.components.gcp.apis import GoogleApis, GoogleApisArgs
    from accel.components.gcp.assumptions import gcp_assumptions
    from accel.components.gcp.cluster import GkeCluster, GkeClusterArgs, UpgradePause
    from accel.components.gcp.gpu import GpuNodePool, GpuNodePoolArgs
    from accel.components.gcp.network import GcpNetwork, GcpNetworkArgs
    from accel.components.gcp.storage import TrainingStorage, TrainingStorageArgs
    from accel.components.gcp.tpu import TpuSlice, TpuSliceArgs

    plan, tags, project = args.plan, args.tags, args.gcp_project
    assert project is not None  # validate() guarantees it
    default_labels = {"default_labels": dict(args.gcp_default_labels)} if args.gcp_default_labels else {}
    provider = gcp.Provider(f"{name}-gcp", project=project, region=plan.region, **default_labels,
                            **args.gcp_provider.provider_args(),
                            opts=pulumi.ResourceOptions(parent=parent))
    # The APIs the stack calls, on before anything calls them (a fresh project has them off).
    apis = GoogleApis(f"{name}-apis", GoogleApisArgs.for_plan(plan, project=project),
                      opts=pulumi.ResourceOptions(parent=parent, providers=[provider]))
    child = pulumi.ResourceOptions(parent=parent, providers=[provider], depends_on=apis.services)
    for message in gcp_assumptions(plan):
        pulumi.log.warn(message, resource=parent)

    network = GcpNetwork(f"{name}-net", GcpNetworkArgs.for_plan(plan, tags=tags, project=project), opts=child)
    pause = UpgradePause(*args.upgrade_pause) if args.upgrade_pause else None
    cluster = GkeCluster(name, GkeClusterArgs.for_plan(
        plan, tags=tags, project=project, network=network,
        master_authorized_cidrs=tuple(args.api_access_cidrs), upgrade_pause=pause), opts=child)
    max_run = node_max_run_duration(args.lifecycle)  # a TTL also bounds each accelerator node's life
    accelerators: list[pulumi.Resource]
    if plan.tpu is not None:
        accelerators = [TpuSlice(f"{name}-tpu", TpuSliceArgs.for_plan(plan, tags=tags, cluster=cluster.ref,
                                                                      max_run_duration=max_run), opts=child)]
    else:
        # One node pool per pool of the fleet's layout (Plan gpu.pools; docs/scale.md).
        accelerators = [GpuNodePool(name_, GpuNodePoolArgs.for_plan(
            plan, tags=tags, cluster=cluster.ref, network=network, max_run_duration=max_run, pool=pool), opts=child)
            for name_, pool in gpu_pool_names(name, plan)]
    # Everything on the Kubernetes side waits for the API endpoint and every node pool: Helm waits
    # for its pods to be ready, and they need nodes to run on.
    kubernetes = k8s.Provider(f"{name}-gke", kubeconfig=cluster.kubeconfig,
                              opts=pulumi.ResourceOptions(parent=parent, depends_on=[cluster, *accelerators]))
    built = _Built(provider=kubernetes, kubeconfig=cluster.kubeconfig, cluster_name=cluster.name)
    if plan.gpu is not None:
        # The pool's extra node networks reach pods only through GKE Network objects.
        built.gpu_fabric = plan.gpu.fabric
        built.gpu_arch = gpu_node_arch(plan.gpu)
        built.gke_networks = gpudirect_attachments(plan.gpu.fabric, network.extra_networks)
    if not plan.storage.is_empty:
        storage = TrainingStorage(name, TrainingStorageArgs.for_plan(
            plan, tags=tags, project=project, network=network, namespace=args.namespace,
            ksa_name=args.service_account, workload_pool_dependencies=[cluster.cluster]), opts=child)
        built.identity = CloudIdentity.gke_workload_identity(storage.service_account_email)
        built.dataset_bucket, built.checkpoint_bucket = storage.dataset_bucket, storage.checkpoint_bucket
        built.storage_mounts = _gke_mounts(storage, project, plan, plan.zones[0])
    return built


def _gke_mounts(storage, project: str, plan: Plan, zone: str) -> list[StorageMount]:
    """GCS FUSE volumes for the buckets, and the Filestore or Managed Lustre instance, ready to mount."""
    mounts = []
    if storage.dataset_bucket is not None:
        mounts.append(StorageMount.gcs_bucket("datasets", storage.dataset_bucket, read_only=True))
    if storage.checkpoint_bucket is not None:
        mounts.append(StorageMount.gcs_bucket("checkpoints", storage.checkpoint_bucket, read_only=False))
    filesystem, capacity = plan.storage.filesystem, plan.storage.filesystem_capacity_gib
    if filesystem == "filestore" and storage.filesystem is not None:
        instance = storage.filesystem
        ip = instance.networks.apply(lambda networks: networks[0].ip_addresses[0] if networks else "")
        location = zone if storage.filestore_zonal else plan.region
        mounts.append(StorageMount.filestore("filesystem", location, instance.name, "data", ip, capacity))
    elif filesystem == "managed-lustre" and storage.filesystem is not None:
        instance = storage.filesystem
        # mount_point is IP@tcp:/filesystem
        ip = instance.mount_point.apply(lambda point: (point or "").split("@", 1)[0])
        mounts.append(StorageMount.managed_lustre("filesystem", project, zone, instance.instance_id, "data", ip,
                                                  capacity))
    return mounts


def _build_aws(parent: TrainingCluster, name: str, args: TrainingClusterArgs) -> _Built:
    import pulumi_aws as aws
    import pulumi_kubernetes as k8s

    from accel.components.aws.cluster import FSX_CSI_ADDON, EksCluster, EksClusterArgs
    from accel.components.aws.gpu import GpuNodeGroup, GpuNodeGroupArgs
    from accel.components.aws.network import AwsNetwork, AwsNetworkArgs
    from accel.components.aws.storage import TrainingStorage, TrainingStorageArgs
    from accel.components.aws.common import is_availability_zone

    plan, tags = args.plan, args.tags
    default_tags = {"default_tags": {"tags": dict(args.aws_default_tags)}} if args.aws_default_tags else {}
    provider = aws.Provider(f"{name}-aws", region=plan.region, **default_tags, **args.aws_provider.provider_args(),
                            opts=pulumi.ResourceOptions(parent=parent))
    child = pulumi.ResourceOptions(parent=parent, providers=[provider])

    # EKS needs subnets in two Availability Zones even when the GPU nodes (EFA, placement group) use one zone; a
    # Local Zone (p6e-gb200 in us-east-1-dfw-2a) does not count, its subnet is for the nodes only.
    available = aws.get_availability_zones(region=plan.region, state="available",
                                           opts=pulumi.InvokeOptions(parent=parent, provider=provider)).names
    in_region = sum(1 for zone in plan.zones if is_availability_zone(zone, plan.region))
    extra_zones = [zone for zone in available if zone not in plan.zones][: max(0, 2 - in_region)]
    network = AwsNetwork(f"{name}-net", AwsNetworkArgs.for_plan(plan, tags, extra_zones=extra_zones), opts=child)
    overrides: dict = {"public_access_cidrs": tuple(args.api_access_cidrs)} if args.api_access_cidrs else {}
    if plan.storage.filesystem == "fsx-lustre":
        # Pods mount FSx for Lustre only through its CSI driver (an EKS managed add-on).
        overrides["addons"] = (*EksClusterArgs.__dataclass_fields__["addons"].default, FSX_CSI_ADDON)
    cluster = EksCluster(name, EksClusterArgs.for_network(network, tags, **overrides), opts=child)
    assert plan.gpu is not None  # TPUs exist only on GCP; the Plan validator pairs family and pool
    # One managed node group per pool of the fleet's layout (Plan gpu.pools; docs/scale.md).
    blocks = list(args.capacity_block_ids) or [plan.capacity.reservation] * plan.gpu.pools
    gpu_groups = [GpuNodeGroup(name_, GpuNodeGroupArgs.for_plan(
                      plan, cluster=cluster, network=network, tags=tags, pool=pool,
                      capacity=plan.capacity.model_copy(update={"reservation": block}),
                      capacity_block_window=args.capacity_block_window), opts=child)
                  for (name_, pool), block in zip(gpu_pool_names(name, plan), blocks)]
    # The Kubernetes side waits for the API endpoint and every node group (Helm waits for its pods).
    kubernetes = k8s.Provider(f"{name}-eks", kubeconfig=cluster.kubeconfig,
                              opts=pulumi.ResourceOptions(parent=parent, depends_on=[cluster, *gpu_groups]))
    built = _Built(provider=kubernetes, kubeconfig=cluster.kubeconfig, cluster_name=cluster.name)
    if not plan.storage.is_empty:
        storage = TrainingStorage(name, TrainingStorageArgs.for_plan(
            plan, cluster=cluster, network=network, tags=tags,
            service_account_namespace=args.namespace, service_account_name=args.service_account), opts=child)
        built.identity = CloudIdentity.eks_irsa(storage.training_role_arn)
        built.dataset_bucket, built.checkpoint_bucket = storage.dataset_bucket, storage.checkpoint_bucket
        if storage.filesystem_id is not None:
            # The FSx CSI driver (EKS add-on aws-fsx-csi-driver) mounts it; the claim makes it usable.
            built.storage_mounts = [StorageMount.fsx_lustre(
                "filesystem", storage.filesystem_id, storage.filesystem_dns_name, storage.filesystem_mount_name,
                int(storage.filesystem_capacity_gib))]
    return built


def _build_existing(parent: TrainingCluster, name: str, args: TrainingClusterArgs) -> _Built:
    existing = args.existing_cluster
    assert existing is not None  # validate() guarantees it
    provider = existing_cluster_provider(existing, f"{name}-byo", opts=pulumi.ResourceOptions(parent=parent),
                                         settings=args.kubernetes_provider)
    return _Built(provider=provider, kubeconfig=None, cluster_name=existing.name)
