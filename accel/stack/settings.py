"""What a stack file may say under `accel:`, validated in one place.

The stack program (`__main__.py`) reads Pulumi config into these types; so does nothing else.
Every problem becomes a UsageError that names the stack file and the key, so `pulumi up` and
`accel plan` stop with the same clear message instead of a traceback.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from accel.base.cidrs import documentation_range_problem
from accel.base.errors import UsageError
from accel.base.mappings import without_none
from accel.base.model import describe_validation_error
from accel.components.kubernetes.pools import ExistingCluster
from accel.policies.lifecycle import Lifecycle, LifecycleError
from accel.policies.plan import Plan
from accel.policies.cloud.reservations import DeclaredReservation
from accel.base.model import StrictModel
from accel.policies.workload import HardwarePin, WorkloadSpec

PROJECT = "accel"


class UpgradePauseWindow(StrictModel):
    """A window in which GKE may not upgrade nodes (a maintenance exclusion)."""

    start: datetime
    end: datetime

    @model_validator(mode="after")
    def _gke_can_hold_it(self) -> "UpgradePauseWindow":
        # The stack program's cluster is on the REGULAR channel (accel/stack/program.py builds GkeClusterArgs
        # with its default), so GKE's rule for that channel applies.
        from datetime import timezone

        from accel.policies.cloud.gke_rules import upgrade_pause_problem

        problem = upgrade_pause_problem(self.start, self.end, now=datetime.now(timezone.utc), channel="REGULAR")
        if problem:
            raise ValueError(problem)
        return self


class StackSettings(StrictModel):
    """The `accel:*` keys of a stack file (camelCase as written there)."""

    workload: WorkloadSpec | None = Field(None, description="The workload; required unless a plan is pinned")
    plan: Plan | None = Field(None, description="A pinned Plan written by `accel choose --write-stack`")
    hardware: HardwarePin | None = Field(None, description="A hardware pin: estimate this, search nothing")
    objective: Literal["cost", "time"] = "cost"
    catalog: str | None = Field(None, description="Catalog file or overlay for unpinned decisions")
    owner: str = "unknown"
    costCenter: str = "unknown"
    ephemeral: bool | None = None
    ttl: str | None = None
    expiresAt: str | None = None
    cluster: ExistingCluster | None = Field(None, description="Bring-your-own Kubernetes cluster and its inventory")
    apiAccessCidrs: list[str] = Field(default_factory=list,
                                      description="CIDRs allowed to reach the Kubernetes API's public endpoint")
    upgradePause: UpgradePauseWindow | None = None
    namespace: str = Field("training", description="Kubernetes namespace of the training workload")
    reservations: list[DeclaredReservation] = Field(
        default_factory=list, description="Reservations the stack holds; the plan takes them and must fit them "
                                          "(docs/scale.md)")

    @field_validator("reservations", mode="before")
    @classmethod
    def _no_commitments_yet(cls, entries: Any) -> Any:
        from accel.policies.cloud.commitments import COMMITMENT_KINDS

        for index, entry in enumerate(entries if isinstance(entries, list) else ()):
            if isinstance(entry, dict) and entry.get("kind") in COMMITMENT_KINDS:
                raise ValueError(f"entry {index} ({entry.get('name')!r}) is a {entry['kind']} commitment; a stack takes "
                                 "reservations and capacity blocks only for now, commitments are weighed by "
                                 "`accel choose --reservations FILE` (docs/scale.md, 'Commitments')")
        return entries

    @field_validator("owner", "costCenter")
    @classmethod
    def _every_cloud_can_carry_it(cls, value: str) -> str:
        # The workload's own rule (WorkloadSpec.owner / cost_center), so `accel choose` and the stack agree.
        from accel.policies.tagging import ownership_problem

        problem = ownership_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("apiAccessCidrs")
    @classmethod
    def _cidrs_can_reach_an_endpoint(cls, cidrs: list[str]) -> list[str]:
        import ipaddress

        for cidr in cidrs:
            try:
                ipaddress.ip_network(cidr, strict=True)
            except ValueError as error:
                raise ValueError(f"{cidr!r} is not a CIDR block like 198.18.7.0/24 ({error})") from None
            problem = documentation_range_problem(cidr)
            if problem:
                raise ValueError(problem)
        return cidrs

    @field_validator("namespace")
    @classmethod
    def _a_namespace_kubernetes_takes(cls, namespace: str) -> str:
        # A Namespace's name is an RFC 1123 label (Kubernetes ValidateNamespaceName, IsDNS1123Label), the rule
        # components/kubernetes/names.py holds; checked here so the message names accel:namespace, not a
        # component argument.
        from accel.components.kubernetes.names import DNS_LABEL

        if not DNS_LABEL.fullmatch(namespace):
            raise ValueError(f"{namespace!r} is not a Kubernetes namespace name: 1 to 63 lowercase letters, digits "
                             "or '-', starting and ending with a letter or digit")
        return namespace

    def resolved_workload(self, source: str) -> WorkloadSpec:
        """The workload, with `accel:hardware` applied as its pin."""
        workload = self.workload or (self.plan.workload if self.plan else None)
        if workload is None:
            raise UsageError(f"{source}: accel:workload: missing; describe the workload "
                             "(see examples/) or pin a plan with `accel choose WORKLOAD --write-stack STACK`")
        if self.hardware is not None:
            workload = workload.model_copy(update={"hardware": self.hardware})
        return workload

    def lifecycle(self, source: str) -> Lifecycle:
        values = {"ephemeral": self.ephemeral, "ttl": self.ttl, "expiresAt": self.expiresAt}
        try:
            lifecycle = Lifecycle.from_config(without_none(values))
        except LifecycleError as error:
            raise UsageError(f"{source}: {error}") from None
        _check_expiry_within_the_longest_ttl(lifecycle, source)
        return lifecycle


def _check_expiry_within_the_longest_ttl(lifecycle: Lifecycle, source: str) -> None:
    """An expiry further away than the longest TTL accel takes (ten years) is a stack that is never reaped: the
    same bound accel:ttl has (accel/base/units.py MAX_TTL), applied to the fixed date."""
    from datetime import timezone

    from accel.base.units import MAX_TTL

    if lifecycle.expires_at is None:
        return
    today = datetime.now(timezone.utc)
    if lifecycle.expires_at > today + MAX_TTL:
        raise UsageError(f"{source}: accel:expiresAt: {lifecycle.expires_at.isoformat()} is more than "
                         f"{MAX_TTL.days:,} days (ten years) from now, the longest lifetime accel takes; an ephemeral "
                         "stack that far off is never reaped: give the date the stack should go (or accel:ttl)")


# Keys whose values are objects or arrays in the stack file (JSON-encoded in Pulumi config).
_STRUCTURED = {"workload", "plan", "hardware", "cluster", "apiAccessCidrs", "upgradePause", "reservations"}


def check_known_key(key: str, source: str) -> None:
    """UsageError naming `key` (an `accel:` stack key) when no setting has that name, with the closest one."""
    name = key.partition(":")[2]
    if name not in StackSettings.model_fields:
        hint = difflib.get_close_matches(name, list(StackSettings.model_fields), n=1)
        suggestion = f"; did you mean 'accel:{hint[0]}'?" if hint else \
            f"; known keys: {', '.join('accel:' + k for k in StackSettings.model_fields)}"
        raise UsageError(f"{source}: {key}: unknown key{suggestion}")


def settings_from_config(config: Mapping[str, str], source: str) -> StackSettings:
    """Build StackSettings from fully qualified Pulumi config (`accel:workload` -> JSON string).

    Keys of other namespaces are not settings: aws:* and gcp:* go to the stack's providers or are refused
    (accel/stack/provider_config.py), pulumi:tags is read by accel/stack/program.py.
    """
    values: dict[str, Any] = {}
    for key, raw in config.items():
        namespace, _, name = key.partition(":")
        if namespace != PROJECT:
            continue
        check_known_key(key, source)
        values[name] = _decode(raw, key, source) if name in _STRUCTURED else raw
    try:
        settings = StackSettings.model_validate(values)
    except ValidationError as error:
        raise UsageError(describe_validation_error(error, source, StackSettings, path_prefix="accel:")) from None
    _check_pin_matches_workload(settings, source)
    _check_ttl_covers_the_run(settings, source)
    return settings


def _check_ttl_covers_the_run(settings: StackSettings, source: str) -> None:
    """A TTL shorter than the pinned run would have the reaper destroy the fleet mid-run."""
    from accel.policies.spot_ttl import ttl_covers_run, ttl_for_run

    if settings.plan is None or settings.ttl is None:
        return
    hours = settings.plan.estimate.hours
    # An unreadable TTL (None) is reported, with the key, by lifecycle().
    if hours and ttl_covers_run(settings.ttl, hours) is False:
        needed = ttl_for_run(hours)
        raise UsageError(f"{source}: accel:ttl: {settings.ttl!r} is shorter than the pinned run "
                         f"({hours:,.1f} h estimated), so `accel reap` would destroy the stack mid-run; set "
                         f"accel:ttl to at least {needed} (`pulumi config set accel:ttl {needed}`), or re-pin with "
                         f"`accel choose WORKLOAD.yaml --write-stack STACK`, which refreshes it")


def _decode(raw: Any, key: str, source: str) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        raise UsageError(f"{source}: {key}: expected a YAML object or list, got the text {raw!r}") from None


def _check_pin_matches_workload(settings: StackSettings, source: str) -> None:
    """A pinned plan made for another workload would build the wrong cluster."""
    if settings.plan is None or settings.workload is None:
        return
    pinned, current = settings.plan.workload, settings.workload
    if pinned.model_dump(exclude={"hardware"}) != current.model_dump(exclude={"hardware"}):
        changed = sorted(k for k in WorkloadSpec.model_fields
                         if k != "hardware" and getattr(pinned, k) != getattr(current, k))
        raise UsageError(
            f"{source}: accel:plan was chosen for a different workload (changed: {', '.join(changed)}); "
            f"re-run `accel choose WORKLOAD.yaml --write-stack STACK` to pin a new plan")
