"""Labels and tags: every billable resource says who pays for it and what it is for."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy

from accel.policies.guardrails.rules.common import (
    BILLABLE_TYPES,
    UNKNOWN,
    cloud,
    config,
    labels,
    marker_key,
    schema,
    violation,
)

OWNERSHIP = "ownership-labels"
DEFAULT_KEYS = ["owner", "workload", "cost-center"]
DEFAULT_REJECTED = ["unknown", ""]


def _validate_ownership(args, report_violation) -> None:
    if args.resource_type not in BILLABLE_TYPES:
        return
    settings = config(args)
    keys = list(settings.get("requiredKeys") or DEFAULT_KEYS)
    rejected = list(settings.get("rejectedValues", DEFAULT_REJECTED))
    present = labels(args.resource_type, args.props)
    kind = "tags" if cloud(args.resource_type) == "aws" else "labels"
    missing, placeholder = [], []
    for key in keys:
        full = marker_key(args.resource_type, key)
        unwritable = _key_problem(args.resource_type, full)
        if unwritable:
            # A required key no resource of this cloud can carry would flag every resource forever: say the
            # configuration is wrong, by the cloud's own rule (policies/tagging/rules.yaml).
            report_violation(violation(
                args, OWNERSHIP, f"requiredKeys has {key!r}, which the cloud refuses as a {kind[:-1]} key "
                                 f"{full!r} ({unwritable})",
                f"name keys the cloud takes in the policy config's {OWNERSHIP}.requiredKeys"))
            continue
        value = present.get(full)
        if value is UNKNOWN:
            continue
        if value is None:
            missing.append(full)
        elif str(value) in rejected:
            placeholder.append(f"{full}={value!r}")
    if not (missing or placeholder):
        return
    problems = []
    if missing:
        problems.append(f"missing {kind} {', '.join(missing)}")
    if placeholder:
        problems.append(f"placeholder values {', '.join(placeholder)}")
    report_violation(violation(
        args, OWNERSHIP, "; ".join(problems) + ", so its cost cannot be attributed",
        "give the component ResourceTags(..., owner=..., cost_center=...) "
        f"(a resource of your own: stamp ResourceTags.{'aws_tags' if kind == 'tags' else 'gcp_labels'}() on it)",
    ))


def _key_problem(resource_type: str, key: str) -> str | None:
    from accel.policies.tagging import aws_tag_key_problem, gcp_label_key_problem

    return aws_tag_key_problem(key) if cloud(resource_type) == "aws" else gcp_label_key_problem(key)


POLICIES = [
    ResourceValidationPolicy(
        name=OWNERSHIP,
        description="Billable resources carry owner, workload and cost-center labels (AWS: accel:-prefixed tags).",
        validate=_validate_ownership,
        enforcement_level=EnforcementLevel.ADVISORY,
        config_schema=schema(
            requiredKeys={"type": "array", "items": {"type": "string"}, "default": DEFAULT_KEYS,
                          "description": "Label keys every billable resource must carry (AWS adds the accel: prefix)"},
            rejectedValues={"type": "array", "items": {"type": "string"}, "default": DEFAULT_REJECTED,
                            "description": "Values that count as not set (the ResourceTags default is 'unknown')"},
        ),
    ),
]
