"""TrainingStorage: buckets and filesystems that survive destroy, and one narrowly-bound training identity."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from accel.base.errors import ComponentArgsError
from accel.components.gcp.storage import TrainingStorage, TrainingStorageArgs
from accel.components.tags import ResourceTags
from accel.policies.plan import StoragePlan
from tests import harness

TAGS = ResourceTags(workload="llama-70b", stack="dev", owner="ml-platform", cost_center="research",
                    ephemeral=True, expires_at=datetime(2026, 12, 1, tzinfo=timezone.utc))
BUCKET = "gcp:storage/bucket:Bucket"
BUCKET_IAM = "gcp:storage/bucketIAMMember:BucketIAMMember"
DATA_TYPES = (BUCKET, "gcp:filestore/instance:Instance", "gcp:lustre/instance:Instance")


def storage_args(**overrides) -> TrainingStorageArgs:
    return TrainingStorageArgs(**{"project": "acme-ml", "location": "us-central1", "tags": TAGS, **overrides})


def declare_storage(declare, **overrides):
    built = {}

    def program():
        built["storage"] = TrainingStorage("run", storage_args(**overrides))

    return declare(program), built["storage"]


def rejected(declare, match: str, **overrides) -> ComponentArgsError:
    return harness.rejected(declare, lambda: TrainingStorage("run", storage_args(**overrides)), ComponentArgsError, match)


LUSTRE = dict(storage=StoragePlan(filesystem="managed-lustre", filesystem_capacity_gib=18000),
              zone="us-central1-a", network_name="train-vpc")
FILESTORE = dict(storage=StoragePlan(filesystem="filestore", filesystem_capacity_gib=10240),
                 zone="us-central1-a", network_name="train-vpc")


def test_dataset_and_checkpoint_buckets_are_named_after_the_project(declare):
    capture, storage = declare_storage(declare)
    names = {b.name: b.inputs["name"] for b in capture.of_type(BUCKET)}
    assert names == {"run-datasets": "acme-ml-run-datasets", "run-checkpoints": "acme-ml-run-checkpoints"}


@pytest.mark.parametrize("extra", [{}, LUSTRE, FILESTORE], ids=["buckets", "lustre", "filestore"])
def test_every_data_resource_survives_destroy(declare, extra):
    capture, _ = declare_storage(declare, **extra)
    data = [r for r in capture.resources if r.type in DATA_TYPES]
    assert len(data) == (2 if not extra else 3)
    for resource in data:
        assert resource.retain_on_delete is True, resource.name
        assert resource.protect is False, resource.name  # reap must still be able to destroy the stack
        assert resource.inputs["deletionPolicy"] == "ABANDON"
        assert resource.inputs["labels"]["data-role"] in ("dataset", "checkpoint")


def test_buckets_are_private_and_never_force_destroyed(declare):
    for bucket in declare_storage(declare)[0].of_type(BUCKET):
        assert bucket.inputs["uniformBucketLevelAccess"] is True
        assert bucket.inputs["publicAccessPrevention"] == "enforced"
        assert bucket.inputs["forceDestroy"] is False
        assert bucket.inputs["location"] == "us-central1"


def test_buckets_say_which_data_they_hold(declare):
    capture, _ = declare_storage(declare)
    assert capture.named("run-datasets").inputs["labels"]["data-role"] == "dataset"
    assert capture.named("run-checkpoints").inputs["labels"]["data-role"] == "checkpoint"


def test_data_never_carries_the_stacks_expiry(declare):
    for bucket in declare_storage(declare)[0].of_type(BUCKET):
        labels = bucket.inputs["labels"]
        assert "expires-at" not in labels and "ephemeral" not in labels
        assert (labels["workload"], labels["stack"], labels["owner"]) == ("llama-70b", "dev", "ml-platform")


def test_checkpoints_keep_overwritten_versions_for_the_retention_days(declare):
    capture, _ = declare_storage(declare, storage=StoragePlan(checkpoint_retention_days=14))
    bucket = capture.named("run-checkpoints").inputs
    assert bucket["versioning"] == {"enabled": True}
    assert bucket["softDeletePolicy"] == {"retentionDurationSeconds": 7 * 86400}
    noncurrent = [r for r in bucket["lifecycleRules"] if r["action"]["type"] == "Delete"]
    assert noncurrent == [{"action": {"type": "Delete"},
                           "condition": {"daysSinceNoncurrentTime": 14, "withState": "ARCHIVED"}}]


def test_datasets_are_not_versioned_and_never_expire(declare):
    bucket = declare_storage(declare)[0].named("run-datasets").inputs
    assert "versioning" not in bucket
    assert all(r["action"]["type"] != "Delete" for r in bucket["lifecycleRules"])


def test_training_pods_impersonate_the_account_through_one_kubernetes_service_account(declare):
    capture, storage = declare_storage(declare, namespace="llm", ksa_name="trainer")
    (binding,) = capture.of_type("gcp:serviceaccount/iAMMember:IAMMember")
    assert binding.inputs["role"] == "roles/iam.workloadIdentityUser"
    assert binding.inputs["member"] == "serviceAccount:acme-ml.svc.id.goog[llm/trainer]"
    assert binding.inputs["serviceAccountId"] == "projects/acme-ml/serviceAccounts/run-train@acme-ml.iam.gserviceaccount.com"
    assert (storage.namespace, storage.ksa_name) == ("llm", "trainer")


def test_training_account_reads_datasets_and_writes_checkpoints_only(declare):
    capture, _ = declare_storage(declare)
    grants = {(b.inputs["bucket"], b.inputs["role"]) for b in capture.of_type(BUCKET_IAM)}
    assert grants == {("acme-ml-run-datasets", "roles/storage.objectViewer"),
                      ("acme-ml-run-checkpoints", "roles/storage.objectUser")}
    for binding in capture.of_type(BUCKET_IAM):
        assert binding.inputs["member"] == "serviceAccount:run-train@acme-ml.iam.gserviceaccount.com"
    assert capture.of_type("gcp:projects/iAMMember:IAMMember") == []


def test_ksa_annotation_names_the_google_account(declare):
    seen = []

    def program():
        TrainingStorage("run", storage_args()).ksa_annotations["iam.gke.io/gcp-service-account"].apply(seen.append)

    declare(program)
    assert seen == ["run-train@acme-ml.iam.gserviceaccount.com"]


def test_an_existing_dataset_bucket_is_read_not_created(declare):
    capture, _ = declare_storage(declare, existing_dataset_bucket="corpus-2026")
    assert [b.name for b in capture.of_type(BUCKET)] == ["run-checkpoints"]
    assert ("corpus-2026", "roles/storage.objectViewer") in {
        (b.inputs["bucket"], b.inputs["role"]) for b in capture.of_type(BUCKET_IAM)}


def test_no_buckets_when_the_plan_has_none(declare):
    capture, storage = declare_storage(declare, storage=StoragePlan(dataset_bucket=False, checkpoint_bucket=False))
    assert capture.of_type(BUCKET) == [] and capture.of_type(BUCKET_IAM) == []
    assert storage.dataset_bucket is None and storage.checkpoint_bucket is None


def test_managed_lustre_sits_on_the_training_vpc(declare):
    capture, _ = declare_storage(declare, **LUSTRE)
    (lustre,) = capture.of_type("gcp:lustre/instance:Instance")
    assert lustre.inputs["capacityGib"] == "18000"
    assert lustre.inputs["perUnitStorageThroughput"] == "1000"
    assert lustre.inputs["location"] == "us-central1-a"
    assert lustre.inputs["network"] == "projects/acme-ml/global/networks/train-vpc"


def test_filestore_is_zonal_and_deletion_protected(declare):
    capture, _ = declare_storage(declare, **FILESTORE)
    (filestore,) = capture.of_type("gcp:filestore/instance:Instance")
    assert filestore.inputs["tier"] == "ZONAL"
    assert filestore.inputs["location"] == "us-central1-a"
    assert filestore.inputs["fileShares"]["capacityGb"] == 10240
    assert filestore.inputs["deletionProtectionEnabled"] is True
    assert filestore.inputs["networks"][0]["network"] == "train-vpc"


def test_lustre_capacity_must_be_a_tier_step(declare):
    error = rejected(declare, "multiples of 9000 GiB", **{**LUSTRE, "storage": StoragePlan(
        filesystem="managed-lustre", filesystem_capacity_gib=10000)})
    assert error.field == "storage.filesystem_capacity_gib"


def test_filestore_below_its_tier_minimum_is_rejected(declare):
    rejected(declare, "starts at 1024 GiB", **{**FILESTORE, "storage": StoragePlan(
        filesystem="filestore", filesystem_capacity_gib=512)})


def test_filesystem_needs_the_vpc(declare):
    rejected(declare, "attaches to the training VPC", **{**LUSTRE, "network_name": None})


def test_fsx_is_aws(declare):
    rejected(declare, "FSx for Lustre is AWS", storage=StoragePlan(filesystem="fsx-lustre"))


def test_bucket_names_may_not_mention_google(declare):
    rejected(declare, "may not contain 'google'", checkpoint_bucket_name="google-ckpt")


def test_namespace_must_be_a_kubernetes_name(declare):
    error = rejected(declare, "Kubernetes name", namespace="Training")
    assert error.field == "namespace"


def test_creating_and_adopting_the_same_bucket_is_ambiguous(declare):
    rejected(declare, "not both", checkpoint_bucket_name="ckpt-a", existing_checkpoint_bucket="ckpt-b")
