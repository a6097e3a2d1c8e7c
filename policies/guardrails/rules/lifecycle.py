"""Ephemeral stacks: spot and short-lived compute carries an expiry, and spot only where allowed.

`accel reap` destroys stacks whose expiry has passed; a spot or ephemeral stack without one
runs (and bills) until somebody remembers it.
"""

from __future__ import annotations

from datetime import datetime, timezone

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from accel.policies.guardrails.rules.common import (
    BILLABLE_TYPES,
    TRAINING_CLUSTER,
    UNKNOWN,
    ClusterFacts,
    cloud,
    cluster_facts,
    config,
    is_true,
    label,
    marker_key,
    number,
    schema,
    ttl_hours,
    uses_spot,
    violation,
)

HAS_EXPIRY = "ephemeral-has-expiry"
SPOT_ALLOWED = "spot-allowed-by-workload"


def parse_expiry(value: str) -> datetime | None:
    """The expires-at label format (2026-11-22t18-00-00z) or ISO 8601; None if neither."""
    try:
        return datetime.strptime(value, "%Y-%m-%dt%H-%M-%Sz").replace(tzinfo=timezone.utc)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _check_values(args, report_violation, expires_at, ttl, where: str, fix: str) -> None:
    """Whatever expiry is given must parse and, when maxTtlHours is set, not exceed it."""
    if expires_at is not None and parse_expiry(expires_at) is None:
        report_violation(violation(
            args, HAS_EXPIRY, f"{where} expiry {expires_at!r} is neither ISO 8601 nor 2026-11-22t18-00-00z",
            fix))
    if ttl is not None:
        hours = ttl_hours(ttl)
        limit = number(config(args).get("maxTtlHours"))
        if hours is None:
            report_violation(violation(
                args, HAS_EXPIRY, f"{where} ttl {ttl!r} is not a duration such as 90m, 72h, 3d, 2w or 1d12h", fix))
        elif limit is not None and hours > limit:
            report_violation(violation(
                args, HAS_EXPIRY, f"{where} ttl {ttl} ({hours:g} h) exceeds maxTtlHours={limit:g}",
                f"shorten the ttl to at most {limit:g}h or raise maxTtlHours in the policy config"))


def _validate_cluster(args, report_violation) -> None:
    facts = ClusterFacts(args.props)
    if not facts.short_lived:
        return
    why = "ephemeral" if facts.ephemeral else "on spot capacity"
    fix = "set an expiry on the stack (expiresAt or ttl, e.g. ttl: 72h) so `accel reap` can tear it down"
    if facts.expires_at is None and facts.ttl is None:
        report_violation(violation(args, HAS_EXPIRY, f"the cluster is {why} but has no expiresAt or ttl", fix))
        return
    _check_values(args, report_violation, facts.expires_at, facts.ttl, "the cluster's", fix)


def _validate_resource(args, report_violation) -> None:
    ephemeral = label(args.resource_type, args.props, "ephemeral")
    spot = uses_spot(args.resource_type, args.props)
    if not (is_true(ephemeral) or spot):
        return
    expires_key = marker_key(args.resource_type, "expires-at")
    ttl_key = marker_key(args.resource_type, "ttl")
    expires_at = label(args.resource_type, args.props, "expires-at")
    ttl = label(args.resource_type, args.props, "ttl")
    if expires_at is UNKNOWN or ttl is UNKNOWN:
        return
    kind = "tag" if cloud(args.resource_type) == "aws" else "label"
    fix = (f"stamp the {expires_key} (or {ttl_key}) {kind}: give the component "
           'ResourceTags(..., ephemeral=True, ttl="24h") (or expires_at=...) so `accel reap` can find it')
    if not expires_at and not ttl:
        why = "runs on spot capacity" if spot else f"is marked {marker_key(args.resource_type, 'ephemeral')}=true"
        report_violation(violation(args, HAS_EXPIRY, f"it {why} but has no {expires_key} or {ttl_key} {kind}", fix))
        return
    _check_values(args, report_violation, expires_at or None, ttl or None, f"its {kind}", fix)


def _validate_expiry(args, report_violation) -> None:
    if args.resource_type == TRAINING_CLUSTER:
        _validate_cluster(args, report_violation)
    elif args.resource_type in BILLABLE_TYPES or args.resource_type == "aws:ec2/launchTemplate:LaunchTemplate":
        _validate_resource(args, report_violation)


def _validate_spot_allowed(args, report_violation) -> None:
    allow_spot = config(args).get("allowSpot", True)
    found = cluster_facts(args.resources)
    workload_says_never = found is not None and found[1].spot_policy == "never"
    if allow_spot and not workload_says_never:
        return
    if allow_spot:
        name = found[1].workload_name or found[0].name
        why = f"workload '{name}' sets constraints.spot: never"
        fix = "set node pools to on-demand capacity, or change the workload to spot: allowed and re-run `accel choose`"
    else:
        why = "the policy config sets allowSpot=false"
        fix = "use on-demand or reserved capacity for this stack"
    if found is not None and found[1].spot:
        report_violation(violation(found[0], SPOT_ALLOWED, f"its plan chose spot capacity but {why}", fix),
                         found[0].urn)
    for resource in args.resources:
        if uses_spot(resource.resource_type, resource.props):
            report_violation(violation(resource, SPOT_ALLOWED, f"it runs on spot capacity but {why}", fix),
                             resource.urn)


POLICIES = [
    ResourceValidationPolicy(
        name=HAS_EXPIRY,
        description="Spot and ephemeral stacks and resources carry an expiry (expires-at or ttl) for `accel reap`.",
        validate=_validate_expiry,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=schema(
            maxTtlHours={"type": "number", "minimum": 0,
                         "description": "Longest ttl allowed on an ephemeral stack, in hours; unset = no cap"},
        ),
    ),
    StackValidationPolicy(
        name=SPOT_ALLOWED,
        description="Spot capacity appears only where the workload (and the platform) allow spot.",
        validate=_validate_spot_allowed,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=schema(
            allowSpot={"type": "boolean", "default": True,
                       "description": "false forbids spot capacity in every stack this pack checks"},
        ),
    ),
]
