"""TrainingStorage: dataset and checkpoint buckets, optional FSx for Lustre, and the pods' IAM role.

Data outlives the compute. Every bucket (and every resource that configures it: public access
block, encryption, versioning, lifecycle, TLS-only policy) is `retain_on_delete`, so tearing the
stack down leaves the bucket in the cloud *with* its protections; buckets are never
force-destroyed. Checkpoints are versioned: an overwritten or deleted checkpoint stays
recoverable for `checkpoint_retention_days`.

Training pods get one IAM role through IRSA, trusted only by
`system:serviceaccount:<namespace>:<service account>`: read on the dataset bucket, read and
write on the checkpoint bucket, nothing else (no version deletes, no bucket settings).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

import pulumi

from accel.base.errors import invalid_arg
from accel.components.aws.common import data_tags, irsa_trust, resource_tags
from accel.components.tags import ResourceTags
from accel.policies.plan import StoragePlan
from accel.components.kubernetes.names import DNS_LABEL, DNS_SUBDOMAIN

_ARGS = "TrainingStorageArgs"
_BUCKET_NAME = re.compile(r"^(?!xn--)(?!.*\.\.)(?!\d+\.\d+\.\d+\.\d+$)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_KMS_ARN = re.compile(r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[0-9a-f-]+$")
# Autonamed buckets are "<component>-checkpoints-<7 random>", which must fit S3's 63 characters.
_AUTONAME_COMPONENT = re.compile(r"^[a-z0-9][a-z0-9-]{0,41}[a-z0-9]$")
FSX_THROUGHPUTS = (125, 250, 500, 1000)  # MB/s per TiB, PERSISTENT_2 SSD
LUSTRE_PORTS = ((988, 988), (1018, 1023))
DATASET_MOUNT_PATH = "/datasets"


def fsx_capacity_gib(requested: int) -> int:
    """PERSISTENT_2 SSD sizes are 1200 GiB, 2400 GiB, then multiples of 2400 GiB: round up."""
    if requested <= 1200:
        return 1200
    return math.ceil(requested / 2400) * 2400


@dataclass(frozen=True)
class TrainingStorageArgs:
    plan: StoragePlan
    tags: ResourceTags
    oidc_provider_arn: pulumi.Input[str]
    oidc_issuer: pulumi.Input[str]
    service_account_namespace: str = "training"
    service_account_name: str = "trainer"
    dataset_bucket_name: str | None = None      # default: autonamed "<name>-datasets-xxxxxxx"
    checkpoint_bucket_name: str | None = None
    existing_dataset_bucket: str | None = None  # read an existing bucket instead of creating one
    kms_key_arn: str | None = None              # default: SSE-S3 (AES256)
    incomplete_upload_days: int = 7
    # FSx for Lustre, when plan.filesystem == "fsx-lustre": same zone as the GPU nodes.
    vpc_id: pulumi.Input[str] | None = None
    filesystem_subnet_id: pulumi.Input[str] | None = None
    client_security_group_id: pulumi.Input[str] | None = None
    fsx_throughput_per_tib: int = 250
    # "dataset": retained like the buckets (files written to it exist nowhere else).
    # "scratch": a pure cache of the dataset bucket, deleted with the stack.
    filesystem_data_role: Literal["dataset", "scratch"] = "dataset"

    def __post_init__(self) -> None:
        plan = self.plan if isinstance(self.plan, StoragePlan) else _coerce_plan(self.plan)
        object.__setattr__(self, "plan", plan)
        if not isinstance(self.tags, ResourceTags):
            raise invalid_arg(_ARGS, "tags", self.tags, "expected accel.components.tags.ResourceTags")
        if not DNS_LABEL.fullmatch(self.service_account_namespace or ""):
            raise invalid_arg(_ARGS, "service_account_namespace", self.service_account_namespace,
                          "a Kubernetes namespace: lowercase letters, digits and '-', at most 63 characters")
        if not DNS_SUBDOMAIN.fullmatch(self.service_account_name or ""):
            raise invalid_arg(_ARGS, "service_account_name", self.service_account_name,
                          "a Kubernetes service account name: lowercase letters, digits, '-' and '.'")
        for field_name in ("dataset_bucket_name", "checkpoint_bucket_name", "existing_dataset_bucket"):
            value = getattr(self, field_name)
            if value is not None and not _BUCKET_NAME.fullmatch(value):
                raise invalid_arg(_ARGS, field_name, value,
                              "an S3 bucket name: 3-63 lowercase letters, digits, '.' and '-', "
                              "starting and ending with a letter or digit")
        if self.existing_dataset_bucket and self.dataset_bucket_name:
            raise invalid_arg(_ARGS, "dataset_bucket_name", self.dataset_bucket_name,
                          "give either dataset_bucket_name (create) or existing_dataset_bucket (reuse), not both")
        if not (self.has_dataset or plan.checkpoint_bucket):
            raise invalid_arg(_ARGS, "plan", plan.model_dump(),
                          "nothing to store: enable dataset_bucket or checkpoint_bucket, "
                          "or pass existing_dataset_bucket")
        if self.kms_key_arn is not None and not _KMS_ARN.fullmatch(self.kms_key_arn):
            raise invalid_arg(_ARGS, "kms_key_arn", self.kms_key_arn,
                          "a KMS key ARN, arn:aws:kms:<region>:<account>:key/<id>")
        if not isinstance(self.incomplete_upload_days, int) or not 1 <= self.incomplete_upload_days <= 365:
            raise invalid_arg(_ARGS, "incomplete_upload_days", self.incomplete_upload_days, "between 1 and 365 days")
        self._check_filesystem()

    def _check_filesystem(self) -> None:
        plan = self.plan
        if plan.filesystem not in ("none", "fsx-lustre"):
            raise invalid_arg(_ARGS, "plan.filesystem", plan.filesystem,
                          "on AWS: 'none' or 'fsx-lustre' (filestore and managed-lustre are GCP)")
        if plan.filesystem == "none":
            return
        needed = ("vpc_id", "filesystem_subnet_id", "client_security_group_id")
        missing = [f for f in needed if getattr(self, f) is None]
        if missing:
            raise invalid_arg(_ARGS, missing[0], None,
                          f"FSx for Lustre needs vpc_id, filesystem_subnet_id (the GPU nodes' zone) and "
                          f"client_security_group_id (the node security group); missing: {', '.join(missing)}")
        if not self.has_dataset:
            raise invalid_arg(_ARGS, "plan.filesystem", plan.filesystem,
                          "FSx for Lustre is linked to the dataset bucket; enable plan.dataset_bucket or "
                          "pass existing_dataset_bucket")
        if self.fsx_throughput_per_tib not in FSX_THROUGHPUTS:
            raise invalid_arg(_ARGS, "fsx_throughput_per_tib", self.fsx_throughput_per_tib,
                          f"PERSISTENT_2 allows {', '.join(map(str, FSX_THROUGHPUTS))} MB/s per TiB")
        if self.filesystem_data_role not in ("dataset", "scratch"):
            raise invalid_arg(_ARGS, "filesystem_data_role", self.filesystem_data_role, "'dataset' or 'scratch'")

    @property
    def has_dataset(self) -> bool:
        return bool(self.existing_dataset_bucket) or self.plan.dataset_bucket

    @property
    def service_account_subject(self) -> str:
        return f"system:serviceaccount:{self.service_account_namespace}:{self.service_account_name}"

    @classmethod
    def for_plan(cls, plan, *, cluster, network, tags: ResourceTags, **overrides) -> "TrainingStorageArgs":
        """Storage for a Plan, trusted by the EksCluster's OIDC provider, FSx in the GPU zone."""
        values: dict[str, Any] = dict(plan=plan.storage, tags=tags, oidc_provider_arn=cluster.oidc_provider_arn,
                                      oidc_issuer=cluster.oidc_issuer)
        if plan.storage.filesystem == "fsx-lustre":
            values.update(vpc_id=network.vpc_id, filesystem_subnet_id=network.private_subnet_ids[plan.zones[0]],
                          client_security_group_id=network.node_security_group_id)
        values.update(overrides)
        return cls(**values)


def _coerce_plan(value: Any) -> StoragePlan:
    try:
        return StoragePlan.model_validate(value)
    except Exception as error:  # pydantic ValidationError; re-raise with the field named
        raise invalid_arg(_ARGS, "plan", value, f"expected a StoragePlan ({error})") from None


def training_access_policy(partition: str, dataset_bucket: str | None, checkpoint_bucket: str | None,
                           kms_key_arn: str | None = None) -> str:
    """Read on the dataset bucket, read/write on the checkpoint bucket; nothing else."""
    def arn(bucket: str) -> str:
        return f"arn:{partition}:s3:::{bucket}"

    statements: list[dict[str, Any]] = []
    if dataset_bucket:
        statements += [
            {"Sid": "ListDatasets", "Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
             "Resource": arn(dataset_bucket)},
            {"Sid": "ReadDatasets", "Effect": "Allow", "Action": ["s3:GetObject"],
             "Resource": f"{arn(dataset_bucket)}/*"},
        ]
    if checkpoint_bucket:
        statements += [
            {"Sid": "ListCheckpoints", "Effect": "Allow",
             "Action": ["s3:ListBucket", "s3:GetBucketLocation", "s3:ListBucketMultipartUploads"],
             "Resource": arn(checkpoint_bucket)},
            # DeleteObject only adds a delete marker: versioning keeps the bytes for the retention period.
            {"Sid": "ReadWriteCheckpoints", "Effect": "Allow",
             "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
                        "s3:ListMultipartUploadParts"],
             "Resource": f"{arn(checkpoint_bucket)}/*"},
        ]
    if kms_key_arn:
        actions = ["kms:Decrypt"] + (["kms:GenerateDataKey"] if checkpoint_bucket else [])
        statements.append({"Sid": "UseBucketKey", "Effect": "Allow", "Action": actions, "Resource": kms_key_arn})
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def tls_only_policy(bucket_arn: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
        "Resource": [bucket_arn, f"{bucket_arn}/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }]})


class TrainingStorage(pulumi.ComponentResource):
    """Retained S3 buckets (+ optional FSx for Lustre) and the IRSA role of the training pods."""

    dataset_bucket: pulumi.Output[str] | None
    checkpoint_bucket: pulumi.Output[str] | None
    training_role_arn: pulumi.Output[str]
    service_account_namespace: str
    service_account_name: str
    filesystem_id: pulumi.Output[str] | None
    filesystem_dns_name: pulumi.Output[str] | None
    filesystem_mount_name: pulumi.Output[str] | None
    filesystem_capacity_gib: int | None

    def __init__(self, name: str, args: TrainingStorageArgs, opts: pulumi.ResourceOptions | None = None):
        if not isinstance(args, TrainingStorageArgs):
            raise invalid_arg(_ARGS, "args", type(args).__name__, "pass a TrainingStorageArgs")
        creates_unnamed_bucket = ((args.plan.dataset_bucket and not args.existing_dataset_bucket
                                   and not args.dataset_bucket_name)
                                  or (args.plan.checkpoint_bucket and not args.checkpoint_bucket_name))
        if creates_unnamed_bucket and not _AUTONAME_COMPONENT.fullmatch(name):
            raise invalid_arg(_ARGS, "name", name, "autonamed buckets take the component name: use 2-43 lowercase "
                          "letters, digits and '-', or pass dataset_bucket_name / checkpoint_bucket_name")
        super().__init__("accel:aws:TrainingStorage", name, None, opts)
        import pulumi_aws as aws

        self._aws, self._name, self._args = aws, name, args
        self._partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        plan = args.plan

        self.dataset_bucket = None
        self.checkpoint_bucket = None
        dataset_bucket_resource = None
        if args.existing_dataset_bucket:
            self.dataset_bucket = pulumi.Output.from_input(args.existing_dataset_bucket)
        elif plan.dataset_bucket:
            dataset_bucket_resource = self._bucket("datasets", "dataset", args.dataset_bucket_name, versioned=False)
            self.dataset_bucket = dataset_bucket_resource.bucket
        if plan.checkpoint_bucket:
            self.checkpoint_bucket = self._bucket("checkpoints", "checkpoint", args.checkpoint_bucket_name,
                                                  versioned=True).bucket

        role = aws.iam.Role(
            f"{name}-training-role",
            description=f"Training pods ({args.service_account_subject}): read datasets, write checkpoints",
            assume_role_policy=pulumi.Output.all(args.oidc_provider_arn, args.oidc_issuer).apply(
                lambda v: irsa_trust(v[0], v[1], [args.service_account_subject])),
            tags=resource_tags(args.tags, f"{name}-training-role"),
            opts=pulumi.ResourceOptions(parent=self),
        )
        aws.iam.RolePolicy(
            f"{name}-training-access",
            role=role.id,
            policy=pulumi.Output.all(self._partition, self.dataset_bucket, self.checkpoint_bucket).apply(
                lambda v: training_access_policy(v[0], v[1], v[2], args.kms_key_arn)),
            opts=pulumi.ResourceOptions(parent=self),
        )

        self.filesystem_id = self.filesystem_dns_name = self.filesystem_mount_name = None
        self.filesystem_capacity_gib = None
        if plan.filesystem == "fsx-lustre":
            self._lustre(dataset_bucket_resource)

        self.training_role_arn = role.arn
        self.service_account_namespace = args.service_account_namespace
        self.service_account_name = args.service_account_name
        self.register_outputs({
            "dataset_bucket": self.dataset_bucket,
            "checkpoint_bucket": self.checkpoint_bucket,
            "training_role_arn": self.training_role_arn,
            "filesystem_id": self.filesystem_id,
        })

    def _retained(self, depends_on=()) -> pulumi.ResourceOptions:
        # On the resource itself: a component's retain_on_delete does not reach its children.
        return pulumi.ResourceOptions(parent=self, retain_on_delete=True, depends_on=list(depends_on))

    def _bucket(self, suffix: str, role: str, bucket_name: str | None, *, versioned: bool):
        aws, args = self._aws, self._args
        name = f"{self._name}-{suffix}"
        tags = data_tags(args.tags, role, name)
        bucket = aws.s3.Bucket(name, bucket=bucket_name, force_destroy=False, tags=tags, opts=self._retained())
        aws.s3.BucketPublicAccessBlock(
            f"{name}-public-access-block", bucket=bucket.id, block_public_acls=True, block_public_policy=True,
            ignore_public_acls=True, restrict_public_buckets=True, opts=self._retained())
        aws.s3.BucketOwnershipControls(
            f"{name}-ownership", bucket=bucket.id, rule={"object_ownership": "BucketOwnerEnforced"},
            opts=self._retained())
        default = ({"sse_algorithm": "aws:kms", "kms_master_key_id": args.kms_key_arn} if args.kms_key_arn
                   else {"sse_algorithm": "AES256"})
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-encryption", bucket=bucket.id,
            rules=[{"apply_server_side_encryption_by_default": default, "bucket_key_enabled": bool(args.kms_key_arn)}],
            opts=self._retained())
        bucket_arn = pulumi.Output.all(self._partition, bucket.bucket).apply(lambda v: f"arn:{v[0]}:s3:::{v[1]}")
        aws.s3.BucketPolicy(f"{name}-tls-only", bucket=bucket.id, policy=bucket_arn.apply(tls_only_policy),
                            opts=self._retained())

        rules: list[dict[str, Any]] = [{
            "id": "abort-incomplete-uploads", "status": "Enabled", "filter": {"prefix": ""},
            "abort_incomplete_multipart_upload": {"days_after_initiation": args.incomplete_upload_days},
        }]
        lifecycle_after = []
        if versioned:
            versioning = aws.s3.BucketVersioning(
                f"{name}-versioning", bucket=bucket.id, versioning_configuration={"status": "Enabled"},
                opts=self._retained())
            lifecycle_after.append(versioning)
            rules += [
                {"id": "expire-old-checkpoint-versions", "status": "Enabled", "filter": {"prefix": ""},
                 "noncurrent_version_expiration": {"noncurrent_days": args.plan.checkpoint_retention_days}},
                {"id": "remove-expired-delete-markers", "status": "Enabled", "filter": {"prefix": ""},
                 "expiration": {"expired_object_delete_marker": True}},
            ]
        aws.s3.BucketLifecycleConfiguration(f"{name}-lifecycle", bucket=bucket.id, rules=rules,
                                            opts=self._retained(lifecycle_after))
        return bucket

    def _lustre(self, dataset_bucket_resource) -> None:
        aws, args, name = self._aws, self._args, self._name
        retain = args.filesystem_data_role == "dataset"
        child = pulumi.ResourceOptions(parent=self)
        sg_tags = resource_tags(args.tags, f"{name}-lustre")
        lustre_sg = aws.ec2.SecurityGroup(
            f"{name}-lustre-sg", vpc_id=args.vpc_id,
            description="FSx for Lustre: Lustre ports from the nodes and between file servers",
            tags=sg_tags, opts=child)
        for from_port, to_port in LUSTRE_PORTS:
            suffix = f"{from_port}" if from_port == to_port else f"{from_port}-{to_port}"
            for source_name, source in (("nodes", args.client_security_group_id), ("self", lustre_sg.id)):
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-lustre-from-{source_name}-{suffix}", security_group_id=lustre_sg.id,
                    referenced_security_group_id=source, ip_protocol="tcp", from_port=from_port, to_port=to_port,
                    description=f"Lustre {suffix} from {source_name}", tags=sg_tags, opts=child)
                aws.vpc.SecurityGroupEgressRule(
                    f"{name}-lustre-to-{source_name}-{suffix}", security_group_id=lustre_sg.id,
                    referenced_security_group_id=source, ip_protocol="tcp", from_port=from_port, to_port=to_port,
                    description=f"Lustre {suffix} to {source_name}", tags=sg_tags, opts=child)
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-nodes-from-lustre-{suffix}", security_group_id=args.client_security_group_id,
                referenced_security_group_id=lustre_sg.id, ip_protocol="tcp", from_port=from_port, to_port=to_port,
                description=f"Lustre {suffix} from the file servers", tags=sg_tags, opts=child)

        capacity = fsx_capacity_gib(args.plan.filesystem_capacity_gib)
        fs_tags = data_tags(args.tags, args.filesystem_data_role, f"{name}-lustre")
        fs_opts = self._retained() if retain else child
        filesystem = aws.fsx.LustreFileSystem(
            f"{name}-lustre",
            deployment_type="PERSISTENT_2",
            storage_type="SSD",
            storage_capacity=capacity,
            per_unit_storage_throughput=args.fsx_throughput_per_tib,
            file_system_type_version="2.15",
            data_compression_type="LZ4",
            subnet_ids=args.filesystem_subnet_id,
            security_group_ids=[lustre_sg.id],
            kms_key_id=args.kms_key_arn,
            copy_tags_to_backups=True,
            skip_final_backup=False,  # whoever deletes it on purpose still gets a backup
            tags=fs_tags,
            opts=fs_opts,
        )
        depends = [dataset_bucket_resource] if dataset_bucket_resource is not None else []
        aws.fsx.DataRepositoryAssociation(
            f"{name}-lustre-datasets",
            file_system_id=filesystem.id,
            data_repository_path=pulumi.Output.from_input(self.dataset_bucket).apply(lambda b: f"s3://{b}"),
            file_system_path=DATASET_MOUNT_PATH,
            batch_import_meta_data_on_create=True,
            delete_data_in_filesystem=False,
            s3={"auto_import_policy": {"events": ["NEW", "CHANGED", "DELETED"]}},
            tags=fs_tags,
            opts=(self._retained(depends) if retain
                  else pulumi.ResourceOptions(parent=self, depends_on=depends)),
        )
        self.filesystem_id = filesystem.id
        self.filesystem_dns_name = filesystem.dns_name
        self.filesystem_mount_name = filesystem.mount_name
        self.filesystem_capacity_gib = capacity
