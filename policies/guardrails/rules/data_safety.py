"""Data safety: datasets and checkpoints outlive the compute that uses them.

A data resource is a bucket, filesystem or disk marked `data-role` = dataset|checkpoint
(GCP label) or `accel:data-role` (AWS tag). Tearing a stack down, by hand or by
`accel reap`, must never delete one.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from accel.policies.guardrails.rules.common import (
    BUCKET_TYPES,
    STORAGE_TYPES,
    UNKNOWN,
    abandons_on_delete,
    cloud,
    cluster_facts,
    config,
    data_role,
    get,
    is_true,
    label,
    marker_key,
    number,
    retain_on_delete,
    schema,
    violation,
)

RETAINED = "data-retained-on-delete"
NO_FORCE_DESTROY = "data-no-force-destroy"
CHECKPOINT_VERSIONING = "checkpoint-versioning"
EPHEMERAL_KEEPS_DATA = "ephemeral-stack-keeps-data"
DECLARES_ROLE = "storage-declares-data-role"

_AWS_VERSIONING_TYPES = ("aws:s3/bucketVersioning:BucketVersioning", "aws:s3/bucketVersioningV2:BucketVersioningV2")


def _retention_fix(resource_type: str) -> str:
    fix = "pass opts=pulumi.ResourceOptions(retain_on_delete=True) on the data resource itself"
    if cloud(resource_type) == "gcp":
        fix += ' (or set deletion_policy="ABANDON")'
    return fix + "; a retain_on_delete on the parent component does not reach it"


def _validate_retained(args, report_violation) -> None:
    role = data_role(args.resource_type, args.props)
    if role is None:
        return
    retained = retain_on_delete(args.opts)
    if retained or args.opts.protect or abandons_on_delete(args.props):
        return
    if retained is None:
        return  # the engine did not say (CLI analyzer); `accel plan` checks it offline
    report_violation(violation(
        args, RETAINED,
        f"it holds {role}s but neither retain_on_delete nor protect is set, so destroying the stack deletes it",
        _retention_fix(args.resource_type),
    ))


def _validate_no_force_destroy(args, report_violation) -> None:
    if args.resource_type not in BUCKET_TYPES:
        return
    role = data_role(args.resource_type, args.props)
    if role is None:
        return
    if is_true(get(args.props, "forceDestroy")):
        report_violation(violation(
            args, NO_FORCE_DESTROY,
            f"it holds {role}s and forceDestroy is true, so deleting the bucket deletes every object in it",
            "set force_destroy=False (the default)",
        ))


def _linked(versioning, bucket) -> bool:
    """Is this versioning resource about this bucket? By name, by dependency, or by naming convention."""
    target = get(versioning.props, "bucket")
    name = get(bucket.props, "bucket")
    if isinstance(target, str) and isinstance(name, str) and target == name:
        return True
    if bucket in (versioning.dependencies or []) or bucket in (versioning.property_dependencies or {}).get("bucket", []):
        return True
    same_parent = (versioning.parent is bucket.parent) or (
        versioning.parent is not None and bucket.parent is not None and versioning.parent.urn == bucket.parent.urn)
    return same_parent and versioning.name.startswith(bucket.name)


def _validate_checkpoint_versioning(args, report_violation) -> None:
    versionings = [r for r in args.resources if r.resource_type in _AWS_VERSIONING_TYPES]
    for bucket in args.resources:
        if bucket.resource_type not in BUCKET_TYPES or data_role(bucket.resource_type, bucket.props) != "checkpoint":
            continue
        props = bucket.props
        if cloud(bucket.resource_type) == "gcp":
            enabled = get(props, "versioning", "enabled")
            soft_delete = get(props, "softDeletePolicy", "retentionDurationSeconds")
            if enabled is UNKNOWN or soft_delete is UNKNOWN or is_true(enabled) or (number(soft_delete) or 0) > 0:
                continue
            report_violation(violation(
                bucket, CHECKPOINT_VERSIONING,
                "it holds checkpoints but has neither object versioning nor a soft delete policy, "
                "so an overwritten or deleted checkpoint is gone",
                'set versioning={"enabled": True} (with a lifecycle rule for noncurrent versions) '
                'or soft_delete_policy={"retention_duration_seconds": 604800}',
            ), bucket.urn)
            continue
        inline = get(props, "versioning", "enabled")
        if inline is UNKNOWN or is_true(inline):
            continue
        statuses = [get(v.props, "versioningConfiguration", "status") for v in versionings if _linked(v, bucket)]
        if any(s is UNKNOWN or s == "Enabled" for s in statuses):
            continue
        found = f"its BucketVersioning says {statuses[0]!r}" if statuses else "no BucketVersioning resource enables it"
        report_violation(violation(
            bucket, CHECKPOINT_VERSIONING,
            f"it holds checkpoints but versioning is off ({found}), so an overwritten checkpoint is gone",
            'add aws.s3.BucketVersioning(bucket=<this bucket>.id, versioning_configuration={"status": "Enabled"})',
        ), bucket.urn)


def _ephemeral_stack(resources) -> str | None:
    """Why the stack counts as ephemeral, or None."""
    found = cluster_facts(resources)
    if found is not None and found[1].short_lived:
        return "its TrainingCluster is ephemeral" if found[1].ephemeral else "its TrainingCluster runs on spot capacity"
    for resource in resources:
        if is_true(label(resource.resource_type, resource.props, "ephemeral")):
            key = marker_key(resource.resource_type, "ephemeral")
            return f"{resource.resource_type} '{resource.name}' is marked {key}=true"
    return None


def _validate_ephemeral_keeps_data(args, report_violation) -> None:
    reason = _ephemeral_stack(args.resources)
    if reason is None:
        return
    for resource in args.resources:
        role = data_role(resource.resource_type, resource.props)
        if role is None:
            continue
        retained = retain_on_delete(resource.opts) or abandons_on_delete(resource.props)
        if resource.opts.protect and not retained:
            report_violation(violation(
                resource, EPHEMERAL_KEEPS_DATA,
                f"the stack is ephemeral ({reason}) and this {role} store is protect=True, "
                "so `accel reap` cannot tear the stack down",
                _retention_fix(resource.resource_type).replace("pass ", "use ", 1) + " instead of protect",
            ), resource.urn)
        elif retain_on_delete(resource.opts) is False and not retained:
            report_violation(violation(
                resource, EPHEMERAL_KEEPS_DATA,
                f"the stack is ephemeral ({reason}) and tearing it down would delete this {role} store",
                _retention_fix(resource.resource_type)
                + ", or move the data into a long-lived stack and read it through a StackReference",
            ), resource.urn)


def _validate_declares_role(args, report_violation) -> None:
    if args.resource_type not in STORAGE_TYPES:
        return
    allowed = list(config(args).get("allowedRoles") or ["dataset", "checkpoint", "scratch"])
    key = marker_key(args.resource_type, "data-role")
    role = label(args.resource_type, args.props, "data-role")
    if role is UNKNOWN:
        return
    if role is None:
        what = f"it has no {key} {'tag' if cloud(args.resource_type) == 'aws' else 'label'}, so the data guardrails cannot tell whether it holds data"
    elif role not in allowed:
        what = f"{key}={role!r} is not one of {', '.join(allowed)}"
    else:
        return
    report_violation(violation(
        args, DECLARES_ROLE, what,
        f"mark it {key}=dataset or {key}=checkpoint (then it must be retained), or {key}=scratch",
    ))


POLICIES = [
    ResourceValidationPolicy(
        name=RETAINED,
        description="Buckets, filesystems and disks holding datasets or checkpoints survive stack deletion.",
        validate=_validate_retained,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name=NO_FORCE_DESTROY,
        description="Buckets holding datasets or checkpoints are not force-destroyed with their contents.",
        validate=_validate_no_force_destroy,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name=CHECKPOINT_VERSIONING,
        description="Checkpoint buckets keep overwritten and deleted objects (versioning or soft delete).",
        validate=_validate_checkpoint_versioning,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name=EPHEMERAL_KEEPS_DATA,
        description="An ephemeral (spot/TTL) stack contains no data store that its teardown would delete or block on.",
        validate=_validate_ephemeral_keeps_data,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name=DECLARES_ROLE,
        description="Every bucket, filesystem and disk says what it holds (data-role), so data rules can protect it.",
        validate=_validate_declares_role,
        enforcement_level=EnforcementLevel.ADVISORY,
        config_schema=schema(
            allowedRoles={"type": "array", "items": {"type": "string"},
                          "default": ["dataset", "checkpoint", "scratch"],
                          "description": "Accepted values of the data-role label / accel:data-role tag"},
        ),
    ),
]
