"""What every Google Cloud component shares: argument errors, names, zones, capacity, labels.

Nothing here registers a resource. Everything raises `ComponentArgsError` (through `invalid_arg`) before a component
declares its first child, so a wrong plan never leaves a half-built stack behind.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any

import pulumi

from accel.base.errors import invalid_arg
from accel.components.tags import ResourceTags
from accel.policies.plan import Capacity

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"

# GCE/GKE resource names: lowercase letter first, then letters, digits, dashes.
_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_REGION = re.compile(r"^[a-z]+-[a-z]+\d+$")
_ZONE = re.compile(r"^[a-z]+-[a-z]+\d+-[a-z]$")
# Pulumi auto-names append "-" and seven random characters.
AUTONAME_SUFFIX = 8
# Flex-start VMs (also behind queued provisioning) run for up to seven days (GKE flex-start docs).
FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600
# The system pool autoscales this many nodes per zone above its initial count (GkeCluster); the
# network's address ranges count them (GcpNetworkArgs.for_plan).
SYSTEM_POOL_EXTRA_NODES = 2


def child_opts(parent: pulumi.Resource, **extra: Any) -> pulumi.ResourceOptions:
    """Options for a child: parented to the component, so it inherits the component's providers, and
    waiting for what the component was told to wait for (Pulumi does not pass a component's depends_on
    to its children; see `inherit_dependencies`)."""
    inherited = list(getattr(parent, "_accel_depends_on", ()))
    if inherited:
        own = extra.pop("depends_on", None) or []
        extra["depends_on"] = [*inherited, *(own if isinstance(own, (list, tuple)) else [own])]
    return pulumi.ResourceOptions(parent=parent, **extra)


def inherit_dependencies(component: pulumi.Resource, opts: pulumi.ResourceOptions | None) -> None:
    """Make every child built with child_opts wait for the component's own depends_on (e.g. the Google
    APIs the stack enables: GoogleApis). A list of resources only; Outputs are not expanded."""
    depends_on = opts.depends_on if opts is not None else None
    if depends_on is None:
        return
    resources = depends_on if isinstance(depends_on, (list, tuple)) else [depends_on]
    component._accel_depends_on = [r for r in resources if isinstance(r, pulumi.Resource)]  # type: ignore[attr-defined]


def check_name(component: str, name: str, *, longest_suffix: str = "", limit: int = 63,
               autonamed: bool = True, field: str = "name") -> None:
    """A name must make valid GCP names once a child suffix (and Pulumi's auto-name suffix) are added."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise invalid_arg(component, field, name,
                           "must start with a lowercase letter and contain only lowercase letters, digits and '-'")
    longest = len(name) + len(longest_suffix) + (AUTONAME_SUFFIX if autonamed else 0)
    if longest > limit:
        suffix_note = " plus the 8-character auto-name suffix" if autonamed else ""
        raise invalid_arg(component, field, name,
                           f"too long: '{name}{longest_suffix}'{suffix_note} is {longest} characters; "
                           f"GCP allows {limit}")


def region_of(location: str) -> str:
    """us-central1-a -> us-central1; a region is returned unchanged."""
    return location.rsplit("-", 1)[0] if _ZONE.fullmatch(location) else location


def is_zone(location: str) -> bool:
    return bool(_ZONE.fullmatch(location))


def check_location(component: str, field: str, location: str) -> None:
    if not isinstance(location, str) or not (_REGION.fullmatch(location) or _ZONE.fullmatch(location)):
        raise invalid_arg(component, field, location, "expected a region like us-central1 or a zone like us-central1-a")


def check_zone(component: str, field: str, zone: str, *, within: str | None = None) -> None:
    """`zone` must be a zone name, and in the same region as `within` when given."""
    if not isinstance(zone, str) or not _ZONE.fullmatch(zone):
        raise invalid_arg(component, field, zone, "expected one zone like us-central1-a")
    if within is not None and region_of(zone) != region_of(within):
        raise invalid_arg(component, field, zone, f"must be a zone of {region_of(within)} (the cluster's region)")


def check_cidr(component: str, field: str, cidr: str) -> ipaddress.IPv4Network:
    try:
        network = ipaddress.ip_network(cidr, strict=True)
    except (TypeError, ValueError) as error:
        raise invalid_arg(component, field, cidr, f"not an IPv4 CIDR block like 10.0.0.0/20 ({error})") from None
    if not isinstance(network, ipaddress.IPv4Network):
        raise invalid_arg(component, field, cidr, "must be an IPv4 range")
    return network


def check_disjoint(component: str, ranges: dict[str, ipaddress.IPv4Network]) -> None:
    items = list(ranges.items())
    for i, (field_a, a) in enumerate(items):
        for field_b, b in items[i + 1:]:
            if a.overlaps(b):
                raise invalid_arg(component, field_b, str(b), f"overlaps {field_a}={str(a)!r}; ranges must be disjoint")


@dataclass(frozen=True)
class CapacityMode:
    """How a pool gets its machines, after checking that GKE accepts the combination."""

    spot: bool
    provisioning: str          # on-demand | spot | reservation | flex-start | queued
    reservation: str | None

    @property
    def scales_from_zero(self) -> bool:
        """flex-start and queued provisioning create nodes only when a workload asks for them."""
        return self.provisioning in ("flex-start", "queued")


def resolve_capacity(component: str, capacity: Capacity) -> CapacityMode:
    """Mirror GKE's capacity rules. The Plan holds one capacity type (`provisioning`, with `spot`
    derived from it), so spot can never meet flex-start, queued provisioning or a reservation here."""
    provisioning = capacity.provisioning
    if provisioning == "capacity-block":
        raise invalid_arg(component, "capacity.provisioning", provisioning,
                           "capacity blocks are an AWS offering; on Google Cloud use reservation, flex-start or queued")
    if provisioning == "reservation" and not capacity.reservation:
        raise invalid_arg(component, "capacity.reservation", capacity.reservation,
                           "provisioning 'reservation' needs the reservation name")
    if capacity.reservation:
        from accel.policies.cloud.reservation_names import reservation_name_problem

        problem = reservation_name_problem(capacity.reservation, "gcp")
        if problem:
            raise invalid_arg(component, "capacity.reservation", capacity.reservation, problem)
    if capacity.reservation and provisioning != "reservation":
        raise invalid_arg(component, "capacity.reservation", capacity.reservation,
                           f"a reservation is only used with provisioning 'reservation', not {provisioning!r}")
    return CapacityMode(spot=capacity.spot, provisioning=provisioning, reservation=capacity.reservation)


def node_pool_capacity_args(mode: CapacityMode) -> dict[str, Any]:
    """node_config fields for the capacity mode (GKE node pool API)."""
    fields: dict[str, Any] = {"spot": mode.spot}
    if mode.provisioning == "reservation":
        fields["reservation_affinity"] = {
            "consume_reservation_type": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": [mode.reservation],
        }
    elif mode.scales_from_zero:
        # Dynamic Workload Scheduler capacity must not be taken from reservations.
        fields["reservation_affinity"] = {"consume_reservation_type": "NO_RESERVATION"}
    if mode.scales_from_zero:
        # GKE's queued provisioning runs on flex-start VMs: a queued pool needs both
        # --flex-start and --enable-queued-provisioning (GKE "flex-start with queued provisioning").
        fields["flex_start"] = True
    return fields


def max_run_duration_args(component: str, max_run_duration: str | None,
                          mode: CapacityMode | None = None) -> dict[str, Any]:
    """node_config.max_run_duration: GKE deletes each node this long after it started.

    A TTL stack's second line of defence: if the reaper never runs, the accelerators still stop.
    Flex-start VMs (flex-start and queued pools) live at most seven days, so a longer bound is refused.
    """
    if max_run_duration is None:
        return {}
    if not re.fullmatch(r"[1-9][0-9]*s", max_run_duration):
        raise invalid_arg(component, "max_run_duration", max_run_duration, "whole seconds ending in 's', e.g. '43200s'")
    if mode is not None and mode.scales_from_zero and int(max_run_duration[:-1]) > FLEX_START_MAX_RUN_SECONDS:
        raise invalid_arg(component, "max_run_duration", max_run_duration,
                           f"{mode.provisioning} capacity runs on flex-start VMs, which last at most seven days "
                           f"('{FLEX_START_MAX_RUN_SECONDS}s')")
    return {"max_run_duration": max_run_duration}


def compute_labels(tags: ResourceTags, mode: CapacityMode | None = None, **extra: str) -> dict[str, str]:
    """GCP labels for compute: the stack's tags, plus spot and provisioning so a reaper can find them."""
    if mode is not None:
        extra = {"provisioning": mode.provisioning, **extra}
        if mode.spot:
            extra = {"spot": "true", **extra}
    return tags.gcp_labels(**extra)


def data_labels(tags: ResourceTags, role: str) -> dict[str, str]:
    """GCP labels for data: the stack's tags without expiry, plus data-role.

    Data outlives the stack that made it, so it never carries the stack's expiry, ttl or ephemeral
    marks: a cleanup script that trusts labels must not find a reason to delete it.
    """
    labels = tags.gcp_labels(**{"data-role": role})
    for marker in ("expires-at", "ttl", "ephemeral"):
        labels.pop(marker, None)
    return labels


def service_account_id(component: str, base: str, suffix: str) -> str:
    """A service-account id (6-30 chars, [a-z][-a-z0-9]*[a-z0-9]) derived from the component name."""
    account_id = f"{base[:30 - len(suffix) - 1].rstrip('-')}-{suffix}"
    if not re.fullmatch(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$", account_id):
        raise invalid_arg(component, "service_account_id", account_id,
                           "service account ids are 6-30 characters: lowercase letters, digits, '-'")
    return account_id
