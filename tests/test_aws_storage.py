"""TrainingStorage: retained, private, encrypted buckets; versioned checkpoints; FSx; the pods' IRSA role."""

import json
from datetime import datetime, timezone

import pytest

from accel.base.errors import ComponentArgsError
from accel.components.aws.storage import TrainingStorage, TrainingStorageArgs, fsx_capacity_gib, training_access_policy
from accel.components.tags import ResourceTags
from accel.policies.plan import StoragePlan
from tests import harness

TAGS = ResourceTags(workload="llama-70b", stack="aws-dev", owner="ml-platform", ephemeral=True,
                    expires_at=datetime(2026, 5, 1, tzinfo=timezone.utc))
ISSUER = "https://oidc.eks.us-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
OIDC_ARN = f"arn:aws:iam::123456789012:oidc-provider/{ISSUER.removeprefix('https://')}"
BUCKET = "aws:s3/bucket:Bucket"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
FSX_ARGS = dict(vpc_id="vpc-1", filesystem_subnet_id="subnet-a", client_security_group_id="sg-nodes")


def args(plan=None, **overrides) -> TrainingStorageArgs:
    values = dict(plan=plan or StoragePlan(), tags=TAGS, oidc_provider_arn=OIDC_ARN, oidc_issuer=ISSUER,
                  dataset_bucket_name="llama-datasets-example", checkpoint_bucket_name="llama-checkpoints-example",
                  service_account_namespace="training", service_account_name="trainer")
    values.update(overrides)
    return TrainingStorageArgs(**values)


def build(plan=None, **overrides):
    return lambda: TrainingStorage("llama", args(plan, **overrides))


def rejected(declare, build_args) -> str:
    return str(harness.rejected(declare, build_args, ComponentArgsError))


def bucket_configs(capture):
    """Every resource that configures a bucket (everything under aws:s3/ except the buckets)."""
    return [r for r in capture.resources if r.type.startswith("aws:s3/") and r.type != BUCKET]


def test_dataset_and_checkpoint_buckets_are_retained_and_never_force_destroyed(declare):
    capture = declare(build())
    buckets = capture.of_type(BUCKET)
    assert sorted(b.name for b in buckets) == ["llama-checkpoints", "llama-datasets"]
    for bucket in buckets:
        assert bucket.retain_on_delete is True
        assert bucket.inputs["forceDestroy"] is False


def test_bucket_settings_survive_teardown_with_their_bucket(declare):
    """Deleting a public access block or lifecycle on destroy would weaken the retained bucket."""
    configs = bucket_configs(declare(build()))
    assert len(configs) == 11
    assert all(c.retain_on_delete for c in configs)


def test_buckets_say_what_they_hold_and_carry_no_expiry(declare):
    capture = declare(build())
    roles = {b.name: b.inputs["tags"]["accel:data-role"] for b in capture.of_type(BUCKET)}
    assert roles == {"llama-datasets": "dataset", "llama-checkpoints": "checkpoint"}
    for bucket in capture.of_type(BUCKET):
        assert bucket.inputs["tags"]["accel:workload"] == "llama-70b"
        assert "accel:expires-at" not in bucket.inputs["tags"] and "accel:ephemeral" not in bucket.inputs["tags"]


def test_public_access_is_blocked_on_both_buckets(declare):
    blocks = declare(build()).of_type("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    assert len(blocks) == 2
    for block in blocks:
        assert all(block.inputs[k] is True for k in
                   ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"))


def test_buckets_are_encrypted_and_refuse_plain_http(declare, mode):
    capture = declare(build())
    for encryption in capture.of_type("aws:s3/bucketServerSideEncryptionConfiguration:"
                                      "BucketServerSideEncryptionConfiguration"):
        assert encryption.inputs["rules"][0]["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "AES256"}
    policies = capture.of_type("aws:s3/bucketPolicy:BucketPolicy")
    assert len(policies) == 2
    if mode == "up":
        statement = json.loads(capture.named("llama-checkpoints-tls-only").inputs["policy"])["Statement"][0]
        assert statement["Effect"] == "Deny"
        assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        assert statement["Resource"] == ["arn:aws:s3:::llama-checkpoints-example",
                                         "arn:aws:s3:::llama-checkpoints-example/*"]


def test_only_checkpoints_are_versioned_and_old_versions_expire_after_the_retention(declare):
    capture = declare(build(StoragePlan(checkpoint_retention_days=45)))
    versionings = capture.of_type("aws:s3/bucketVersioning:BucketVersioning")
    assert [v.name for v in versionings] == ["llama-checkpoints-versioning"]
    assert versionings[0].inputs["versioningConfiguration"] == {"status": "Enabled"}
    assert capture.named("llama-checkpoints").urn in versionings[0].dependencies
    lifecycle = capture.named("llama-checkpoints-lifecycle")
    rules = {r["id"]: r for r in lifecycle.inputs["rules"]}
    assert rules["expire-old-checkpoint-versions"]["noncurrentVersionExpiration"] == {"noncurrentDays": 45}
    assert rules["abort-incomplete-uploads"]["abortIncompleteMultipartUpload"] == {"daysAfterInitiation": 7}
    assert versionings[0].urn in lifecycle.dependencies


def test_dataset_lifecycle_only_cleans_up_abandoned_uploads(declare):
    rules = declare(build()).named("llama-datasets-lifecycle").inputs["rules"]
    assert [r["id"] for r in rules] == ["abort-incomplete-uploads"]


def test_training_role_trusts_only_the_named_service_account(declare, mode):
    capture = declare(build(service_account_namespace="llm", service_account_name="pretrain"))
    role = capture.named("llama-training-role")
    statement = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert statement["Principal"] == {"Federated": OIDC_ARN}
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    host = ISSUER.removeprefix("https://")
    assert statement["Condition"]["StringEquals"] == {f"{host}:aud": "sts.amazonaws.com",
                                                      f"{host}:sub": "system:serviceaccount:llm:pretrain"}


def test_training_role_reads_datasets_and_writes_only_checkpoints(declare):
    policy = json.loads(declare(build()).named("llama-training-access").inputs["policy"])
    grants = {s["Sid"]: (set(s["Action"]), s["Resource"]) for s in policy["Statement"]}
    assert grants["ReadDatasets"] == ({"s3:GetObject"}, "arn:aws:s3:::llama-datasets-example/*")
    actions, resource = grants["ReadWriteCheckpoints"]
    assert resource == "arn:aws:s3:::llama-checkpoints-example/*"
    assert {"s3:PutObject", "s3:GetObject", "s3:AbortMultipartUpload"} <= actions
    every_action = {a for s in policy["Statement"] for a in s["Action"]}
    dataset_actions = {a for s in policy["Statement"] if "datasets" in s["Resource"] for a in s["Action"]}
    assert not {a for a in dataset_actions if a.startswith("s3:Put") or a.startswith("s3:Delete")}
    assert "s3:DeleteObjectVersion" not in every_action and "s3:*" not in every_action
    assert not any(a.startswith("s3:PutBucket") or a.startswith("s3:PutLifecycle") for a in every_action)


def test_existing_dataset_bucket_is_read_not_created(declare):
    capture = declare(build(dataset_bucket_name=None, existing_dataset_bucket="corp-datasets"))
    assert [b.name for b in capture.of_type(BUCKET)] == ["llama-checkpoints"]
    policy = json.loads(capture.named("llama-training-access").inputs["policy"])
    assert "arn:aws:s3:::corp-datasets/*" in [s["Resource"] for s in policy["Statement"]]


def test_kms_key_encrypts_buckets_and_is_granted_to_the_pods(declare):
    key = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    capture = declare(build(kms_key_arn=key))
    rule = capture.of_type("aws:s3/bucketServerSideEncryptionConfiguration:"
                           "BucketServerSideEncryptionConfiguration")[0].inputs["rules"][0]
    assert rule["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "aws:kms", "kmsMasterKeyId": key}
    assert rule["bucketKeyEnabled"] is True
    policy = json.loads(capture.named("llama-training-access").inputs["policy"])
    kms = next(s for s in policy["Statement"] if s["Sid"] == "UseBucketKey")
    assert set(kms["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey"} and kms["Resource"] == key


def test_fsx_lustre_is_persistent_2_in_the_gpu_zone_and_retained(declare):
    capture = declare(build(StoragePlan(filesystem="fsx-lustre", filesystem_capacity_gib=3000), **FSX_ARGS))
    filesystem = capture.named("llama-lustre")
    assert filesystem.type == FSX
    assert filesystem.inputs["deploymentType"] == "PERSISTENT_2"
    assert filesystem.inputs["storageCapacity"] == 4800
    assert filesystem.inputs["perUnitStorageThroughput"] == 250
    assert filesystem.inputs["subnetIds"] == "subnet-a"
    assert filesystem.retain_on_delete is True
    assert filesystem.inputs["tags"]["accel:data-role"] == "dataset"


def test_fsx_is_linked_to_the_dataset_bucket_without_deleting_data(declare, mode):
    capture = declare(build(StoragePlan(filesystem="fsx-lustre"), **FSX_ARGS))
    link = capture.named("llama-lustre-datasets")
    assert link.type == "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
    assert link.inputs["fileSystemPath"] == "/datasets"
    assert link.inputs["deleteDataInFilesystem"] is False
    assert link.inputs["s3"]["autoImportPolicy"]["events"] == ["NEW", "CHANGED", "DELETED"]
    assert link.retain_on_delete is True
    assert link.inputs["dataRepositoryPath"] == "s3://llama-datasets-example"


def test_lustre_ports_are_open_only_between_nodes_and_file_servers(declare):
    capture = declare(build(StoragePlan(filesystem="fsx-lustre"), **FSX_ARGS))
    rules = [r for r in capture.resources if r.type.startswith("aws:vpc/securityGroup")]
    assert {(r.inputs["fromPort"], r.inputs["toPort"]) for r in rules} == {(988, 988), (1018, 1023)}
    assert all(r.inputs["ipProtocol"] == "tcp" and "cidrIpv4" not in r.inputs for r in rules)
    into_nodes = [r for r in rules if r.inputs["securityGroupId"] == "sg-nodes"]
    assert len(into_nodes) == 2


def test_scratch_filesystem_is_a_cache_deleted_with_the_stack(declare):
    capture = declare(build(StoragePlan(filesystem="fsx-lustre"), filesystem_data_role="scratch", **FSX_ARGS))
    filesystem = capture.named("llama-lustre")
    assert filesystem.retain_on_delete is False
    assert filesystem.inputs["tags"]["accel:data-role"] == "scratch"
    assert all(b.retain_on_delete for b in capture.of_type(BUCKET))


@pytest.mark.parametrize("requested,allowed", [(0, 1200), (1200, 1200), (1201, 2400), (2400, 2400),
                                               (2401, 4800), (10000, 12000)])
def test_fsx_capacity_rounds_up_to_a_persistent_2_size(requested, allowed):
    assert fsx_capacity_gib(requested) == allowed


def test_policy_without_a_checkpoint_bucket_grants_no_writes():
    policy = json.loads(training_access_policy("aws", "data", None))
    actions = {a for s in policy["Statement"] for a in s["Action"]}
    assert actions == {"s3:ListBucket", "s3:GetBucketLocation", "s3:GetObject"}


def test_outputs_name_the_buckets_role_and_service_account():
    holder = {}

    def program():
        holder["storage"] = TrainingStorage("llama", args())

    from tests.harness import run
    run(program, mode="up")
    storage = holder["storage"]
    assert (storage.service_account_namespace, storage.service_account_name) == ("training", "trainer")
    assert storage.filesystem_id is None and storage.training_role_arn is not None


@pytest.mark.parametrize("build_args,expected", [
    (lambda: args(StoragePlan(filesystem="managed-lustre")), "plan.filesystem"),
    (lambda: args(StoragePlan(filesystem="fsx-lustre")), "vpc_id"),
    (lambda: args(StoragePlan(filesystem="fsx-lustre", dataset_bucket=False), **FSX_ARGS), "linked to the dataset"),
    (lambda: args(StoragePlan(filesystem="fsx-lustre"), fsx_throughput_per_tib=200, **FSX_ARGS),
     "fsx_throughput_per_tib"),
    (lambda: args(StoragePlan(dataset_bucket=False, checkpoint_bucket=False)), "nothing to store"),
    (lambda: args(service_account_namespace="Training"), "service_account_namespace"),
    (lambda: args(checkpoint_bucket_name="Bad_Bucket"), "checkpoint_bucket_name"),
    (lambda: args(existing_dataset_bucket="corp-data"), "not both"),
    (lambda: args(kms_key_arn="alias/mine"), "kms_key_arn"),
    (lambda: TrainingStorage("Llama", args(dataset_bucket_name=None)), "TrainingStorageArgs.name"),
])
def test_invalid_args_name_the_field_and_register_nothing(declare, build_args, expected):
    message = rejected(declare, build_args)
    assert message.startswith("TrainingStorageArgs.") and expected in message


def test_every_taggable_storage_resource_carries_the_owner(declare):
    capture = declare(build(StoragePlan(filesystem="fsx-lustre"), **FSX_ARGS))
    tagged = [r for r in capture.resources if r.custom and "tags" in r.inputs]
    assert {BUCKET, FSX, "aws:iam/role:Role", "aws:ec2/securityGroup:SecurityGroup"} <= {r.type for r in tagged}
    assert all(r.inputs["tags"]["accel:owner"] == "ml-platform" for r in tagged)
