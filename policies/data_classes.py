"""Can a resource hold data? One classification for the reaper, destroy-after-run and the review.

Deny by default: a type is "stateless" only when it is on the allow-list below (networks, IAM,
compute whose disks are scratch, Kubernetes objects that only point at storage, accel's own
controllers); "data" when it is a known storage type; anything else is "unknown", which the reaper
treats as possibly holding data (the stack is kept, with the reason) and the review lists with the
data. A new storage type a program adds is therefore safe before anyone has heard of it.

Plain data and pure functions, standard library only (the policy pack may load it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

DataClass = Literal["data", "stateless", "unknown"]

# Known to hold data: every storage, database, snapshot or volume type (by class name, any provider
# and module, `-native` providers included); the guardrails' storage types
# (policies/storage_types.py) are among them (tests/test_bad_input_battery.py checks each).
DATA_CLASS_NAMES = frozenset({
    "Bucket", "BucketV2", "BucketObject", "BucketObjectv2", "Object", "Disk", "RegionDisk", "Volume",
    "Snapshot", "RegionSnapshot", "Image", "MachineImage", "PersistentVolume", "PersistentVolumeClaim",
    "FileSystem", "LustreFileSystem", "OpenZfsFileSystem", "OntapFileSystem", "OntapVolume", "OpenZfsVolume",
    "WindowsFileSystem", "Dataset", "Table", "Database", "DatabaseInstance", "Repository", "Backup",
    "StoragePool",
})
# Modules whose every type holds data (managed databases, file and object stores).
DATA_MODULES = frozenset({
    "filestore", "lustre", "parallelstore", "netapp", "sql", "alloydb", "spanner", "bigtable", "bigquery",
    "redis", "memcache", "firestore", "datastore", "storage", "s3", "s3control", "ebs", "efs", "fsx", "rds",
    "docdb", "dynamodb", "elasticache", "memorydb", "redshift", "neptune", "opensearch", "backup", "glacier",
    "artifactregistry", "ecr", "kms",
})
# Sub-resources of a data module that hold no data themselves: deleting one leaves the data.
STATELESS_IN_DATA_MODULES = frozenset({
    "storage/bucketIAMMember", "storage/bucketIAMBinding", "storage/bucketIAMPolicy", "storage/bucketAccessControl",
    "storage/notification", "s3/bucketPolicy", "s3/bucketVersioning", "s3/bucketVersioningV2",
    "s3/bucketLifecycleConfiguration", "s3/bucketLifecycleConfigurationV2", "s3/bucketOwnershipControls",
    "s3/bucketPublicAccessBlock", "s3/bucketServerSideEncryptionConfiguration",
    "s3/bucketServerSideEncryptionConfigurationV2", "s3/bucketNotification", "s3/bucketCorsConfiguration",
    "s3/bucketCorsConfigurationV2", "s3/bucketLogging", "s3/bucketLoggingV2", "fsx/dataRepositoryAssociation",
    "ebs/encryptionByDefault", "ebs/defaultKmsKey", "artifactregistry/repositoryIamMember",
})
# Known to hold nothing a destroy could lose (module prefixes, `provider:module`).
STATELESS_MODULES = frozenset({
    "gcp:compute", "gcp:container", "gcp:tpu", "gcp:serviceaccount", "gcp:projects", "gcp:servicenetworking",
    "gcp:iam", "gcp:dns", "gcp:networkconnectivity", "gcp:networksecurity", "gcp:vpcaccess", "gcp:gkehub",
    "aws:ec2", "aws:vpc", "aws:eks", "aws:iam", "aws:autoscaling", "aws:ec2transitgateway", "aws:route53",
    "aws:cloudwatch", "aws:lb", "aws:alb", "aws:ssm",
    "kubernetes:core/v1", "kubernetes:apps/v1", "kubernetes:batch/v1", "kubernetes:rbac.authorization.k8s.io/v1",
    "kubernetes:scheduling.k8s.io/v1", "kubernetes:kueue.x-k8s.io/v1beta1", "kubernetes:kueue.x-k8s.io/v1beta2",
    "kubernetes:jobset.x-k8s.io/v1alpha2", "kubernetes:leaderworkerset.x-k8s.io/v1", "kubernetes:policy/v1",
    "kubernetes:networking.k8s.io/v1", "kubernetes:storage.k8s.io/v1", "kubernetes:node.k8s.io/v1",
    "kubernetes:resource.nvidia.com/v1beta1", "kubernetes:yaml",
})
# ... except these, whose data is lost with them (checked before the module allow-list).
DATA_IN_STATELESS_MODULES = frozenset({
    "gcp:compute/disk", "gcp:compute/regionDisk", "gcp:compute/snapshot", "gcp:compute/regionSnapshot",
    "gcp:compute/image", "gcp:compute/machineImage", "gcp:compute/instantSnapshot", "aws:ec2/volume",
    "aws:ec2/snapshot", "aws:ec2/ami", "aws:ec2/amiCopy", "aws:ebs/snapshot",
})
# Providers whose resources hold no data at all (generated values, certificates, timers).
STATELESS_PROVIDERS = frozenset({"random", "tls", "time", "pulumi", "accel"})
# Charts accel installs (components/kubernetes/charts.yaml): controllers with no volumes of their own.
STATELESS_CHARTS = frozenset({"kueue", "jobset", "nvidia-device-plugin", "gpu-operator", "aws-efa-k8s-device-plugin"})
HELM_RELEASE_TYPES = frozenset({"kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v4:Chart"})


def _parts(type_token: str) -> tuple[str, str, str]:
    parts = str(type_token).split(":")
    if len(parts) != 3:
        return (parts[0] if parts else ""), "", parts[-1] if parts else ""
    return parts[0], parts[1], parts[2]


def _spec(inputs: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (inputs or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def classify(type_token: str, inputs: Mapping[str, Any] | None = None, *, custom: bool = True) -> tuple[DataClass, str]:
    """("data" | "stateless" | "unknown", why) for a resource of this type with these inputs.

    `custom=False` is a component resource (it holds nothing; its children are classified)."""
    provider, module, class_name = _parts(type_token)
    module_root = module.split("/")[0].split(".")[0]
    if not custom or provider in STATELESS_PROVIDERS:
        return "stateless", "a component or a generated value"
    if class_name == "PersistentVolume" and provider == "kubernetes":
        if _spec(inputs).get("persistentVolumeReclaimPolicy") == "Retain":
            return "stateless", "a PersistentVolume with reclaim policy Retain: the data stays where it points"
        return "data", "a PersistentVolume whose reclaim policy is not Retain: deleting it may delete its volume"
    if class_name == "PersistentVolumeClaim" and provider == "kubernetes":
        if _spec(inputs).get("volumeName"):
            return "stateless", "a claim bound to a named PersistentVolume (classified on its own)"
        return "data", "a dynamically provisioned claim: deleting it deletes its volume under reclaim policy Delete"
    if type_token in HELM_RELEASE_TYPES:
        chart = str((inputs or {}).get("chart") or "").rstrip("/").rsplit("/", 1)[-1]
        if chart in STATELESS_CHARTS:
            return "stateless", f"the {chart} chart accel installs (no volumes)"
        return "unknown", f"a Helm release of chart {chart or '?'!r}, which may create volumes, so it may hold data"
    if f"{provider}:{module}" in DATA_IN_STATELESS_MODULES:
        return "data", "a disk, snapshot or image"
    if module in STATELESS_IN_DATA_MODULES:
        return "stateless", "a setting of a storage resource, not its data"
    if class_name in DATA_CLASS_NAMES or module_root in DATA_MODULES:
        return "data", "a storage, database or snapshot type"
    prefix = f"{provider}:{module}" if provider == "kubernetes" else f"{provider}:{module.split('/')[0]}"
    if prefix in STATELESS_MODULES or (provider == "kubernetes" and module.startswith("yaml")):
        return "stateless", "network, identity, compute or a Kubernetes object"
    if class_name.endswith(("IAMMember", "IAMBinding", "IAMPolicy", "IamMember", "IamBinding", "IamPolicy")):
        return "stateless", "an access grant"
    return "unknown", "a type accel does not classify, so it may hold data"


def holds_data(type_token: str, inputs: Mapping[str, Any] | None = None, *, custom: bool = True) -> bool:
    """True for "data" and "unknown": what must be retained (or labelled scratch) before a destroy."""
    return classify(type_token, inputs, custom=custom)[0] != "stateless"
