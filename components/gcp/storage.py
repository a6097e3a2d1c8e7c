"""TrainingStorage: the buckets that must outlive every cluster, and who may touch them.

- A dataset bucket and a checkpoint bucket in the compute region: uniform bucket-level
  access, public access prevention enforced, label `data-role`, `force_destroy=False` and
  `retain_on_delete=True` on the bucket itself, so `pulumi destroy` (and `accel reap`) leave
  the data in place.
- Checkpoints keep overwritten versions for the plan's retention days (object versioning +
  a lifecycle rule on noncurrent versions) and deleted objects for a soft-delete window.
- Optional Filestore or Managed Lustre instance for high-throughput reads, with the same
  retention, on the training VPC.
- One Google service account for training pods, bound through Workload Identity to exactly
  one Kubernetes service account (`serviceAccount:<project>.svc.id.goog[<ns>/<ksa>]`); it
  may read datasets and read/write checkpoint objects, and nothing else.

Bucket names default to `<project>-<name>-datasets|checkpoints`: project ids are globally
unique, so the names are too, and a rebuilt stack finds its data under the same name (adopt
it with `existing_checkpoint_bucket` or `pulumi import`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

import pulumi
import pulumi_gcp as gcp

from accel.base.errors import invalid_arg
from accel.components.gcp._common import (
    check_name,
    check_zone,
    child_opts,
    inherit_dependencies,
    data_labels,
    service_account_id,
)
from accel.components.tags import ResourceTags
from accel.policies.plan import Plan, StoragePlan
from accel.components.kubernetes.names import DNS_LABEL

COMPONENT = "TrainingStorage"
DATASET_READ_ROLE = "roles/storage.objectViewer"
# Create, overwrite and delete objects; no bucket or IAM administration.
CHECKPOINT_WRITE_ROLE = "roles/storage.objectUser"
WORKLOAD_IDENTITY_ROLE = "roles/iam.workloadIdentityUser"
KSA_ANNOTATION = "iam.gke.io/gcp-service-account"
# Belt and braces with retain_on_delete: the provider itself abandons rather than deletes, and a
# policy pack running under the CLI (which cannot see retain_on_delete) can see this.
ABANDON = "ABANDON"
FILESTORE_MIN_GIB = {"BASIC_SSD": 2560, "ZONAL": 1024, "REGIONAL": 1024, "ENTERPRISE": 1024}
# Managed Lustre tiers (MB/s per TiB) -> minimum capacity and step, in GiB.
LUSTRE_MIN_GIB = {1000: 9000, 500: 18000, 250: 36000, 125: 72000}
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9_.-]{1,61}[a-z0-9]$")


@dataclass(frozen=True)
class TrainingStorageArgs:
    project: str
    location: str                               # bucket location: the compute region
    tags: ResourceTags
    storage: StoragePlan = field(default_factory=StoragePlan)
    namespace: str = "training"                 # Kubernetes namespace of the training pods
    ksa_name: str = "training"                  # their Kubernetes service account
    dataset_bucket_name: str | None = None
    checkpoint_bucket_name: str | None = None
    existing_dataset_bucket: str | None = None     # read from (and grant on) a bucket this stack does not own
    existing_checkpoint_bucket: str | None = None
    training_account_id: str | None = None
    soft_delete_days: int = 7
    # Filesystem (storage.filesystem): placement, network, tier.
    zone: str | None = None
    network_name: pulumi.Input[str] | None = None   # the VPC's name (GcpNetwork.network_name)
    filesystem_role: Literal["dataset", "checkpoint"] = "dataset"
    filestore_tier: Literal["BASIC_SSD", "ZONAL", "REGIONAL", "ENTERPRISE"] = "ZONAL"
    lustre_throughput_mbps_per_tib: Literal[125, 250, 500, 1000] = 1000
    network_dependencies: Sequence[pulumi.Resource] = ()  # e.g. GcpNetwork.private_service_connection
    # The `<project>.svc.id.goog` pool exists only once a Workload Identity cluster does: on a fresh
    # project the binding fails with "Identity Pool does not exist" unless it waits for the cluster
    # (terraform-google-kubernetes-engine#916). Pass the GKE cluster resource (GkeCluster.cluster).
    workload_pool_dependencies: Sequence[pulumi.Resource] = ()

    @classmethod
    def for_plan(cls, plan: Plan, *, tags: ResourceTags, project: str, network: Any,
                 **overrides: Any) -> "TrainingStorageArgs":
        """The Plan's buckets and filesystem, the filesystem on the GcpNetwork in the plan's zone."""
        dependencies = [d for d in [network.private_service_connection] if d is not None]
        return cls(**{"project": project, "location": plan.region, "tags": tags, "storage": plan.storage,
                      "zone": plan.zones[0], "network_name": network.network_name,
                      "network_dependencies": dependencies, **overrides})

    def __post_init__(self) -> None:
        check_args(self)  # the arguments check themselves on construction (one convention, every cloud)


def _check_bucket_name(field_name: str, bucket: str) -> None:
    if not _BUCKET.fullmatch(bucket) or "google" in bucket or bucket.startswith("goog"):
        raise invalid_arg(COMPONENT, field_name, bucket,
                           "bucket names are 3-63 characters of lowercase letters, digits, '-', '_' and '.', "
                           "start and end with a letter or digit, and may not contain 'google' or start with 'goog'")


def _default_bucket(project: str, name: str, role: str) -> str:
    suffix = f"-{role}"
    return f"{project}-{name}"[: 63 - len(suffix)].rstrip("-.") + suffix


def validate(name: str, args: TrainingStorageArgs) -> dict[str, str | None]:
    """Check args before anything registers; returns the bucket names to create (None = none)."""
    check_args(args)
    buckets: dict[str, str | None] = {}
    for role, wanted, explicit, existing in (
        ("datasets", args.storage.dataset_bucket, args.dataset_bucket_name, args.existing_dataset_bucket),
        ("checkpoints", args.storage.checkpoint_bucket, args.checkpoint_bucket_name, args.existing_checkpoint_bucket),
    ):
        if existing is not None:
            buckets[role] = None
            continue
        bucket = (explicit or _default_bucket(args.project, name, role)) if wanted else None
        if bucket is not None:
            _check_bucket_name(f"{role[:-1]}_bucket_name", bucket)
        buckets[role] = bucket
    return buckets


def check_args(args: TrainingStorageArgs) -> None:
    """Everything about the arguments that does not depend on the component's name."""
    if not args.project:
        raise invalid_arg(COMPONENT, "project", args.project, "needed for bucket names and the Workload Identity pool")
    if not args.location:
        raise invalid_arg(COMPONENT, "location", args.location, "a region such as us-central1")
    for field_name in ("namespace", "ksa_name"):
        value = getattr(args, field_name)
        if not isinstance(value, str) or not DNS_LABEL.fullmatch(value):
            raise invalid_arg(COMPONENT, field_name, value, "a Kubernetes name: lowercase letters, digits, '-'")
    if args.soft_delete_days != 0 and not 7 <= args.soft_delete_days <= 90:
        raise invalid_arg(COMPONENT, "soft_delete_days", args.soft_delete_days, "0 (off) or 7..90 days")
    for role, explicit, existing in (("datasets", args.dataset_bucket_name, args.existing_dataset_bucket),
                                     ("checkpoints", args.checkpoint_bucket_name, args.existing_checkpoint_bucket)):
        if existing is not None:
            _check_bucket_name(f"existing_{role[:-1]}_bucket", existing)
            if explicit is not None:
                raise invalid_arg(COMPONENT, f"{role[:-1]}_bucket_name", explicit,
                                   f"either create a bucket or adopt existing_{role[:-1]}_bucket, not both")
    filesystem = args.storage.filesystem
    capacity = args.storage.filesystem_capacity_gib
    if filesystem == "fsx-lustre":
        raise invalid_arg(COMPONENT, "storage.filesystem", filesystem, "FSx for Lustre is AWS; use managed-lustre")
    if filesystem != "none":
        if args.network_name is None:
            raise invalid_arg(COMPONENT, "network_name", None, f"{filesystem} attaches to the training VPC; set it")
        needs_zone = filesystem == "managed-lustre" or args.filestore_tier in ("BASIC_SSD", "ZONAL")
        if needs_zone:
            if args.zone is None:
                raise invalid_arg(COMPONENT, "zone", None, f"{filesystem} is zonal: give the zone of the nodes")
            check_zone(COMPONENT, "zone", args.zone, within=args.location)
    if filesystem == "filestore":
        minimum = FILESTORE_MIN_GIB[args.filestore_tier]
        if capacity < minimum:
            raise invalid_arg(COMPONENT, "storage.filesystem_capacity_gib", capacity,
                               f"Filestore {args.filestore_tier} starts at {minimum} GiB")
    if filesystem == "managed-lustre":
        step = LUSTRE_MIN_GIB[args.lustre_throughput_mbps_per_tib]
        if capacity < step or capacity % step:
            raise invalid_arg(COMPONENT, "storage.filesystem_capacity_gib", capacity,
                               f"Managed Lustre at {args.lustre_throughput_mbps_per_tib} MB/s per TiB takes "
                               f"multiples of {step} GiB (minimum {step})")


class TrainingStorage(pulumi.ComponentResource):
    """Dataset and checkpoint buckets that survive destroy, an optional filesystem, and one training identity."""

    def __init__(self, name: str, args: TrainingStorageArgs, opts: pulumi.ResourceOptions | None = None):
        check_name(COMPONENT, name, longest_suffix="-checkpoints-write")
        buckets = validate(name, args)
        account_id = args.training_account_id or service_account_id(COMPONENT, name, "train")
        if args.training_account_id is not None and not re.fullmatch(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$", account_id):
            raise invalid_arg(COMPONENT, "training_account_id", account_id,
                               "service account ids are 6-30 characters: lowercase letters, digits, '-'")
        super().__init__("accel:gcp:TrainingStorage", name, None, opts)
        inherit_dependencies(self, opts)

        project = args.project
        self.namespace = args.namespace
        self.ksa_name = args.ksa_name
        self.workload_identity_member = f"serviceAccount:{project}.svc.id.goog[{args.namespace}/{args.ksa_name}]"

        account = gcp.serviceaccount.Account(
            f"{name}-training",
            account_id=account_id,
            project=project,
            display_name=f"Training pods of {name}",
            description=f"Impersonated by {args.namespace}/{args.ksa_name} through Workload Identity",
            opts=child_opts(self),
        )
        email = account.account_id.apply(lambda a: f"{a}@{project}.iam.gserviceaccount.com")
        member = email.apply(lambda e: f"serviceAccount:{e}")
        self.workload_identity_binding = gcp.serviceaccount.IAMMember(
            f"{name}-training-wi",
            service_account_id=email.apply(lambda e: f"projects/{project}/serviceAccounts/{e}"),
            role=WORKLOAD_IDENTITY_ROLE,
            member=self.workload_identity_member,
            opts=child_opts(self, depends_on=list(args.workload_pool_dependencies)),
        )

        self.dataset_bucket_resource = None
        self.checkpoint_bucket_resource = None
        dataset_bucket: pulumi.Input[str] | None = args.existing_dataset_bucket
        checkpoint_bucket: pulumi.Input[str] | None = args.existing_checkpoint_bucket
        if buckets["datasets"] is not None:
            self.dataset_bucket_resource = self._bucket(name, "datasets", buckets["datasets"], args, versioned=False)
            dataset_bucket = self.dataset_bucket_resource.name
        if buckets["checkpoints"] is not None:
            self.checkpoint_bucket_resource = self._bucket(name, "checkpoints", buckets["checkpoints"], args,
                                                           versioned=True)
            checkpoint_bucket = self.checkpoint_bucket_resource.name

        self.bucket_bindings = []
        if dataset_bucket is not None:
            self.bucket_bindings.append(gcp.storage.BucketIAMMember(
                f"{name}-datasets-read", bucket=dataset_bucket, role=DATASET_READ_ROLE, member=member,
                opts=child_opts(self)))
        if checkpoint_bucket is not None:
            self.bucket_bindings.append(gcp.storage.BucketIAMMember(
                f"{name}-checkpoints-write", bucket=checkpoint_bucket, role=CHECKPOINT_WRITE_ROLE, member=member,
                opts=child_opts(self)))

        self.filesystem = None
        # Zonal Filestore tiers live in the zone, the others in the region (the CSI volume handle names it).
        self.filestore_zonal = args.filestore_tier in ("BASIC_SSD", "ZONAL")
        if args.storage.filesystem == "filestore":
            self.filesystem = self._filestore(name, args)
        elif args.storage.filesystem == "managed-lustre":
            self.filesystem = self._lustre(name, args)

        self.dataset_bucket = pulumi.Output.from_input(dataset_bucket) if dataset_bucket is not None else None
        self.checkpoint_bucket = pulumi.Output.from_input(checkpoint_bucket) if checkpoint_bucket is not None else None
        self.dataset_bucket_url = self.dataset_bucket.apply(lambda b: f"gs://{b}") if self.dataset_bucket else None
        self.checkpoint_bucket_url = (self.checkpoint_bucket.apply(lambda b: f"gs://{b}")
                                      if self.checkpoint_bucket else None)
        self.service_account_email = email
        self.ksa_annotations = {KSA_ANNOTATION: email}
        self.register_outputs({
            "dataset_bucket": self.dataset_bucket,
            "checkpoint_bucket": self.checkpoint_bucket,
            "service_account_email": email,
            "namespace": args.namespace,
            "ksa_name": args.ksa_name,
        })

    def _bucket(self, name: str, role: str, bucket_name: str, args: TrainingStorageArgs,
                versioned: bool) -> gcp.storage.Bucket:
        lifecycle: list[dict] = [
            {"action": {"type": "AbortIncompleteMultipartUpload"}, "condition": {"age": 1}},
        ]
        extra: dict = {}
        if versioned:
            extra["versioning"] = {"enabled": True}
            lifecycle.append({
                "action": {"type": "Delete"},
                "condition": {"days_since_noncurrent_time": args.storage.checkpoint_retention_days,
                              "with_state": "ARCHIVED"},
            })
        extra["soft_delete_policy"] = {"retention_duration_seconds": args.soft_delete_days * 86400}
        return gcp.storage.Bucket(
            f"{name}-{role}",
            name=bucket_name,
            project=args.project,
            location=args.location,
            storage_class="STANDARD",
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            force_destroy=False,
            deletion_policy=ABANDON,
            lifecycle_rules=lifecycle,
            labels=data_labels(args.tags, role[:-1]),
            **extra,
            opts=child_opts(self, retain_on_delete=True),
        )

    def _filestore(self, name: str, args: TrainingStorageArgs) -> gcp.filestore.Instance:
        zonal = args.filestore_tier in ("BASIC_SSD", "ZONAL")
        protected = {} if args.filestore_tier == "BASIC_SSD" else {
            "deletion_protection_enabled": True,
            "deletion_protection_reason": f"holds {args.filesystem_role} data of {args.tags.workload}",
        }
        return gcp.filestore.Instance(
            f"{name}-filestore",
            project=args.project,
            location=args.zone if zonal else args.location,
            tier=args.filestore_tier,
            file_shares={"name": "data", "capacity_gb": args.storage.filesystem_capacity_gib},
            networks=[{"network": args.network_name, "modes": ["MODE_IPV4"], "connect_mode": "DIRECT_PEERING"}],
            labels=data_labels(args.tags, args.filesystem_role),
            description=f"{args.filesystem_role} filesystem for {args.tags.workload}",
            deletion_policy=ABANDON,
            **protected,
            opts=child_opts(self, retain_on_delete=True, depends_on=list(args.network_dependencies)),
        )

    def _lustre(self, name: str, args: TrainingStorageArgs) -> gcp.lustre.Instance:
        network = pulumi.Output.from_input(args.network_name).apply(
            lambda n: n if str(n).startswith("projects/") else f"projects/{args.project}/global/networks/{n}")
        return gcp.lustre.Instance(
            f"{name}-lustre",
            instance_id=f"{name}-lustre",
            project=args.project,
            location=args.zone,
            filesystem="data",
            capacity_gib=str(args.storage.filesystem_capacity_gib),
            per_unit_storage_throughput=str(args.lustre_throughput_mbps_per_tib),
            network=network,
            labels=data_labels(args.tags, args.filesystem_role),
            description=f"{args.filesystem_role} filesystem for {args.tags.workload}",
            deletion_policy=ABANDON,
            opts=child_opts(self, retain_on_delete=True, depends_on=list(args.network_dependencies)),
        )
