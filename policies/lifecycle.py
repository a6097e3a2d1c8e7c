"""Spot-environment lifecycle: when a stack expires, and whether the reaper may destroy it.

Pure decisions over plain data; no Pulumi engine and no CLI. The stack program reads a
`Lifecycle` from its config and stamps `stack_tags()` (as `pulumi:tags`) and resource labels;
`accel reap` reads those tags back and asks `reap_decision()` what to do.

Stack config (the stack file):   accel:ephemeral, accel:ttl, accel:expiresAt
Stack tags (what the reaper reads): accel:ephemeral = "true", accel:ttl or accel:expires-at
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime, timedelta, timezone
from enum import Enum
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator
from accel.base.units import TTL_EXAMPLES, UnitError, as_utc, format_timestamp, humanize_duration, parse_timestamp, parse_ttl
from accel.policies.data_classes import classify
from accel.policies.storage_types import STORAGE_TYPES  # noqa: F401 (re-exported; tests import it from here)

# Stack config keys (project namespace "accel"; bare keys in the stack file mean the same).
CONFIG_EPHEMERAL = "accel:ephemeral"
CONFIG_TTL = "accel:ttl"
CONFIG_EXPIRES_AT = "accel:expiresAt"

# Stack tag keys. Tags are the marker the reaper trusts; config is only where they come from.
TAG_EPHEMERAL = "accel:ephemeral"
TAG_TTL = "accel:ttl"
TAG_EXPIRES_AT = "accel:expires-at"

# Every storage resource (policies/storage_types.py) must be retained on delete at teardown unless
# it is labelled data-role=scratch: destroy then drops it from state and leaves it in the cloud.
SCRATCH_ROLE = "scratch"

# A TTL, expiry or ephemeral marker that cannot be understood; the message names the key.
LifecycleError = UnitError


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise LifecycleError(f"expected true or false, got {value!r}")


class Lifecycle(BaseModel):
    """How long a stack lives. Either a TTL (renewed by every `pulumi up`) or a fixed expiry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ephemeral: bool = False
    ttl: str | None = None
    expires_at: datetime | None = None

    @field_validator("ephemeral", mode="before")
    @classmethod
    def _ephemeral_is_boolean(cls, value: Any) -> bool:
        return _parse_bool(value)

    @field_validator("ttl", mode="before")
    @classmethod
    def _ttl_parses(cls, value: Any) -> str | None:
        if value is None:
            return None
        parse_ttl(value)
        return value.strip().lower()

    @field_validator("expires_at", mode="before")
    @classmethod
    def _expiry_is_utc_instant(cls, value: Any) -> datetime | None:
        return None if value is None else parse_timestamp(value)

    @model_validator(mode="before")
    @classmethod
    def _expiry_implies_ephemeral(cls, data: Any) -> Any:
        if isinstance(data, dict) and "ephemeral" not in data and (
            data.get("ttl") is not None or data.get("expires_at") is not None
        ):
            return {**data, "ephemeral": True}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Lifecycle:
        if self.ttl is not None and self.expires_at is not None:
            raise LifecycleError(
                f"set either {CONFIG_TTL} ({self.ttl!r}) or {CONFIG_EXPIRES_AT} "
                f"({format_timestamp(self.expires_at)!r}), not both"
            )
        if not self.ephemeral and (self.ttl is not None or self.expires_at is not None):
            raise LifecycleError(
                f"{CONFIG_EPHEMERAL} is false but an expiry is set; remove {CONFIG_EPHEMERAL} "
                f"or the {CONFIG_TTL}/{CONFIG_EXPIRES_AT}"
            )
        if self.ephemeral and self.ttl is None and self.expires_at is None:
            raise LifecycleError(
                f"{CONFIG_EPHEMERAL} is true but neither {CONFIG_TTL} ({TTL_EXAMPLES}) nor "
                f"{CONFIG_EXPIRES_AT} (e.g. 2026-11-22T18:00:00Z) is set, so it would never be reaped"
            )
        return self

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Lifecycle:
        """Read accel:ephemeral / accel:ttl / accel:expiresAt from stack config values.

        Keys may be namespaced ('accel:ttl') or bare ('ttl', as `pulumi.Config("accel")` sees
        them); other keys are ignored. Raises LifecycleError naming the key.
        """
        fields = {}
        for field, key in (("ephemeral", CONFIG_EPHEMERAL), ("ttl", CONFIG_TTL), ("expires_at", CONFIG_EXPIRES_AT)):
            bare = key.split(":", 1)[1]
            for candidate in (key, bare):
                if candidate in config and config[candidate] is not None:
                    fields[field] = config[candidate]
                    break
        key_of = {"ephemeral": CONFIG_EPHEMERAL, "ttl": CONFIG_TTL, "expires_at": CONFIG_EXPIRES_AT}
        try:
            return cls.model_validate(fields)
        except LifecycleError:
            raise
        except ValidationError as error:
            lines = []
            for problem in error.errors():
                message = problem["msg"].removeprefix("Value error, ")
                location = str(problem["loc"][0]) if problem["loc"] else None
                lines.append(f"{key_of[location]}: {message}" if location in key_of else message)
            raise LifecycleError("\n".join(lines)) from None

    @property
    def ttl_delta(self) -> timedelta | None:
        return parse_ttl(self.ttl) if self.ttl is not None else None

    def expiry(self, last_update: datetime | None) -> datetime | None:
        """The fixed expiry, or last update + TTL; None when the TTL has no update to count from."""
        if self.expires_at is not None:
            return self.expires_at
        if self.ttl is not None and last_update is not None:
            return as_utc(last_update) + parse_ttl(self.ttl)
        return None

    def resource_tag_fields(self) -> dict[str, Any]:
        """Keyword arguments for accel.components.tags.ResourceTags (ephemeral, expires_at, ttl)."""
        return {"ephemeral": self.ephemeral, "expires_at": self.expires_at, "ttl": self.ttl}

    def outputs(self) -> dict[str, Any]:
        """What the stack exports as `lifecycle`."""
        return {
            "ephemeral": self.ephemeral,
            "ttl": self.ttl,
            "expiresAt": format_timestamp(self.expires_at) if self.expires_at else None,
        }


def stack_tags(lifecycle: Lifecycle) -> dict[str, str]:
    """The `pulumi:tags` a stack file must carry for this lifecycle (empty when not ephemeral)."""
    if not lifecycle.ephemeral:
        return {}
    tags = {TAG_EPHEMERAL: "true"}
    if lifecycle.ttl is not None:
        tags[TAG_TTL] = lifecycle.ttl
    if lifecycle.expires_at is not None:
        tags[TAG_EXPIRES_AT] = format_timestamp(lifecycle.expires_at)
    return tags


def stack_tag_problems(lifecycle: Lifecycle, declared: Mapping[str, Any] | None) -> list[str]:
    """Where the stack file's `pulumi:tags` disagree with its lifecycle config (empty = consistent).

    A stack whose config says ephemeral but whose tags do not is never reaped, so the program
    should surface these as errors before anything is created.
    """
    declared = {str(k): str(v) for k, v in (declared or {}).items()}
    wanted = stack_tags(lifecycle)
    problems = [
        f"pulumi:tags: {key} must be {value!r} (got {declared[key]!r})" if key in declared
        else f"pulumi:tags: missing {key}: {value!r}"
        for key, value in wanted.items()
        if declared.get(key) != value
    ]
    problems += [
        f"pulumi:tags: {key} is set but the stack config does not make the stack ephemeral this way; remove it"
        for key in (TAG_EPHEMERAL, TAG_TTL, TAG_EXPIRES_AT)
        if key in declared and key not in wanted
    ]
    return problems


def node_max_run_duration(lifecycle: Lifecycle) -> str | None:
    """GKE node_config.max_run_duration ('43200s') for a TTL stack: a second line of defence.

    Only a TTL maps onto it: a fixed expiry would need a value that shrinks on every preview,
    and a node_config change replaces the node pool.
    """
    ttl = lifecycle.ttl_delta
    return None if ttl is None else f"{int(ttl.total_seconds())}s"


def expiry(tags: Mapping[str, str], last_update: datetime | None) -> datetime | None:
    """When a stack with these tags expires: accel:expires-at, or last update + accel:ttl.

    With both tags the earlier one wins. None when the stack carries no expiry tag, or only a
    TTL and no update to count from. Raises LifecycleError naming the tag it cannot read.
    """
    candidates = []
    if TAG_EXPIRES_AT in tags:
        try:
            candidates.append(parse_timestamp(tags[TAG_EXPIRES_AT]))
        except LifecycleError as error:
            raise LifecycleError(f"{TAG_EXPIRES_AT}: {error}") from None
    if TAG_TTL in tags:
        try:
            ttl = parse_ttl(tags[TAG_TTL])
        except LifecycleError as error:
            raise LifecycleError(f"{TAG_TTL}: {error}") from None
        if last_update is not None:
            candidates.append(as_utc(last_update) + ttl)
    return min(candidates) if candidates else None


class Reason(str, Enum):
    EXPIRED = "expired"
    FRESH = "fresh"
    NOT_EPHEMERAL = "not ephemeral"
    UPDATE_IN_PROGRESS = "update in progress"
    UNPARSEABLE_TAG = "unparseable tag"
    NO_EXPIRY = "no expiry"
    NEVER_DEPLOYED = "never deployed"
    BUSY_PAST_LIMIT = "busy past the limit"


# Reasons the reaper could not decide for a stack that says it is ephemeral: its compute may be
# running past its expiry, so the run must fail (the schedule goes red) rather than skip quietly.
UNDECIDED_REASONS: frozenset[Reason] = frozenset({Reason.UNPARSEABLE_TAG, Reason.NO_EXPIRY, Reason.BUSY_PAST_LIMIT})

# How long an expired stack may stay locked by someone else's update before that counts as stuck.
DEFAULT_BUSY_LIMIT = timedelta(hours=6)


class Decision(BaseModel):
    """What the reaper does with one stack, and why, in words a person can check."""

    model_config = ConfigDict(frozen=True)

    stack: str
    action: Literal["destroy", "skip"]
    reason: Reason
    detail: str
    expires_at: datetime | None = None

    @property
    def undecided(self) -> bool:
        """The stack is marked ephemeral but the reaper cannot tell whether or when it may go."""
        return self.reason in UNDECIDED_REASONS


class StackSummaryLike(Protocol):
    """The fields of pulumi.automation.StackSummary this module reads."""

    name: str
    update_in_progress: bool | None
    last_update: datetime | None


def is_marked_ephemeral(tags: Mapping[str, str]) -> bool:
    return str(tags.get(TAG_EPHEMERAL, "")).strip().lower() == "true"


def uses_ttl(tags: Mapping[str, str]) -> bool:
    return is_marked_ephemeral(tags) and TAG_TTL in tags


def reap_decision(
    summary: StackSummaryLike,
    tags: Mapping[str, str],
    now: datetime,
    last_deployed: datetime | None = None,
    busy_limit: timedelta = DEFAULT_BUSY_LIMIT,
) -> Decision:
    """Destroy an ephemeral stack whose expiry has passed; skip everything else, saying why.

    `last_deployed` is the end of the stack's last `pulumi up` (from its history); a TTL counts
    from it when given, else from the summary's last update (any operation). A stack whose
    marker or expiry cannot be read, or that has stayed busy more than `busy_limit` past its
    expiry, is skipped as undecided (`Decision.undecided`).
    """
    name = summary.name
    now = as_utc(now)
    marker = tags.get(TAG_EPHEMERAL)
    if marker is None or str(marker).strip().lower() == "false":
        return Decision(stack=name, action="skip", reason=Reason.NOT_EPHEMERAL,
                        detail=f"no {TAG_EPHEMERAL}=true tag")
    if not is_marked_ephemeral(tags):
        return Decision(stack=name, action="skip", reason=Reason.UNPARSEABLE_TAG,
                        detail=f"{TAG_EPHEMERAL}: expected 'true' or 'false', got {marker!r}")
    try:
        expires_at = expiry(tags, last_deployed if last_deployed is not None else summary.last_update)
    except LifecycleError as error:
        return Decision(stack=name, action="skip", reason=Reason.UNPARSEABLE_TAG, detail=str(error))
    if summary.update_in_progress:
        return busy_decision(name, expires_at, now, busy_limit)
    if expires_at is None:
        if TAG_TTL in tags:  # the TTL counts from the end of a `pulumi up`; none has finished yet
            return Decision(stack=name, action="skip", reason=Reason.NEVER_DEPLOYED,
                            detail=f"{TAG_TTL} is set but no `pulumi up` has finished, so nothing is deployed")
        return Decision(stack=name, action="skip", reason=Reason.NO_EXPIRY,
                        detail=f"{TAG_EPHEMERAL} is true but neither {TAG_EXPIRES_AT} nor {TAG_TTL} is set")
    stamp = format_timestamp(expires_at)
    if expires_at <= now:
        return Decision(stack=name, action="destroy", reason=Reason.EXPIRED, expires_at=expires_at,
                        detail=f"expired {humanize_duration(now - expires_at)} ago ({stamp})")
    return Decision(stack=name, action="skip", reason=Reason.FRESH, expires_at=expires_at,
                    detail=f"expires in {humanize_duration(expires_at - now)} ({stamp})")


def busy_decision(stack: str, expires_at: datetime | None, now: datetime,
                  busy_limit: timedelta = DEFAULT_BUSY_LIMIT) -> Decision:
    """A stack locked by a running update: wait for it, unless it expired more than `busy_limit` ago."""
    now = as_utc(now)
    if expires_at is not None and now - expires_at > busy_limit:
        return Decision(stack=stack, action="skip", reason=Reason.BUSY_PAST_LIMIT, expires_at=expires_at,
                        detail=f"expired {humanize_duration(now - expires_at)} ago ({format_timestamp(expires_at)}) "
                               f"and still locked by an update, longer than the {humanize_duration(busy_limit)} "
                               "limit; look for a stuck update (`pulumi cancel`)")
    return Decision(stack=stack, action="skip", reason=Reason.UPDATE_IN_PROGRESS, expires_at=expires_at,
                    detail="an update is running; the next run will look again")


def _data_role(inputs: Mapping[str, Any]) -> str | None:
    """`data-role` from GCP labels or `accel:data-role` from AWS tags, as components/tags.py stamps them."""
    for key, markers in (("labels", "data-role"), ("tags", "accel:data-role")):
        value = inputs.get(key)
        if isinstance(value, Mapping) and isinstance(value.get(markers), str):
            return value[markers]
    return None


def teardown_blockers(resources: Iterable[Mapping[str, Any]]) -> list[str]:
    """Why destroying a stack with this state would lose data or fail half-way (empty = safe).

    `resources` are the `deployment.resources` of `pulumi stack export`. Anything that can hold data
    (policies/data_classes.py: a known storage type, or a type accel does not know) must be
    retainOnDelete (or GCP deletionPolicy ABANDON) unless labelled data-role=scratch; nothing may
    be protect, and nothing destroy would delete may be deletionPolicy PREVENT or a GKE cluster
    with deletion protection on.
    """
    problems = []
    for resource in resources:
        urn = str(resource.get("urn", "?"))
        if resource.get("delete"):  # the old copy of a replacement, already on its way out
            continue
        inputs = resource.get("inputs") or {}
        policy = str(inputs.get("deletionPolicy") or "").upper()
        kind, why = classify(str(resource.get("type") or ""), inputs, custom=resource.get("custom", True) is not False)
        if kind != "stateless":
            role = _data_role(inputs)
            retained = bool(resource.get("retainOnDelete")) or policy == "ABANDON"
            if role != SCRATCH_ROLE and not retained:
                if kind == "unknown":
                    problems.append(f"{urn}: is of type {resource.get('type')}, {why}; it is not retain_on_delete, "
                                    "so destroying could delete data: the stack is kept (retain it on delete, or "
                                    "label it data-role=scratch)")
                else:
                    holds = f"holds {role} data" if role else "has no data-role label, so it may hold data"
                    problems.append(f"{urn}: {holds} and is not retain_on_delete; destroying would delete it")
        if resource.get("protect"):
            problems.append(f"{urn}: protected, so destroy would fail half-way "
                            "(keep data with retain_on_delete, not protect)")
        if resource.get("retainOnDelete"):
            continue  # destroy never asks the provider to delete it, so nothing below can make it fail
        if policy == "PREVENT":
            problems.append(f"{urn}: deletionPolicy PREVENT, so destroy would fail half-way (use ABANDON)")
        if resource.get("type") == "gcp:container/cluster:Cluster" and inputs.get("deletionProtection") is True:
            problems.append(f"{urn}: deletion_protection is on, so destroy would fail; ephemeral clusters "
                            "set deletion_protection=False")
    return problems
