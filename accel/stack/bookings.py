"""A plan the search bought through a booked mode (an EC2 Capacity Block, a GCP calendar-mode reservation) names
no block or reservation yet: the user books it first (neither can be cancelled), then declares it in
`accel:reservations`. This step binds the plan to that declaration, or, when there is none, says what to book and
how (a `needed_before_up` entry). Offline (`accel plan`) the stack is planned on a visible placeholder of the
booking so every resource of the mode shows; under `pulumi up` the missing declaration stops the program, so a
placeholder is never applied (accel/stack/deploy_keys.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from accel.policies.cloud.booking import BOOKED_MODES
from accel.policies.cloud.reservations import DeclaredReservation
from accel.policies.plan import Plan
from accel.stack.deploy_keys import DeployKey

# Placeholders only an offline plan carries (`pulumi up` stops on the missing declaration first): an all-zero
# reservation id EC2 never issues, and a GCE name that says what it stands for.
PLACEHOLDER_BLOCK_ID = "cr-00000000000000000"   # the first; a fleet of several blocks counts up from it
PLACEHOLDER_CALENDAR_NAME = "calendar-reservation-to-book"
# EC2 Capacity Blocks start and end at 11:30 UTC (aws-cb-purchase in policies/cloud/capacity_modes.yaml).
BLOCK_HOUR, BLOCK_MINUTE = 11, 30


def needs_booking(plan: Plan) -> bool:
    """The plan was bought through a booked mode and names no block or reservation yet."""
    return plan.capacity.mode in BOOKED_MODES and not plan.capacity.reservation


def _pool(plan: Plan) -> tuple[str, int]:
    if plan.tpu is not None:
        return plan.tpu.machine_type, plan.tpu.hosts_per_slice * plan.tpu.slices
    assert plan.gpu is not None
    return plan.gpu.machine_type, plan.gpu.nodes


def bookings_needed(plan: Plan) -> list[int]:
    """Machines of each block or reservation the plan needs: a Capacity Block per GPU node group (the plan splits
    a fleet of several blocks at the block size), else one for the whole fleet."""
    if plan.capacity.provisioning == "capacity-block" and plan.gpu is not None:
        return plan.gpu.pool_sizes
    return [_pool(plan)[1]]


def declared_bookings(plan: Plan, reservations: list[DeclaredReservation]) -> list[DeclaredReservation] | None:
    """The declared blocks or reservation that hold the plan's fleet, one per needed booking in order: of its kind
    and machine type, in its region, each holding its share; several blocks in one zone and one window (a node
    group each, scaled together). None when the declarations do not cover it."""
    machine_type, _ = _pool(plan)
    usable = [r for r in reservations if r.kind == plan.capacity.provisioning and r.machineType == machine_type
              and r.zone.startswith(plan.region)]
    found: list[DeclaredReservation] = []
    for size in bookings_needed(plan):
        match = next((r for r in usable if r not in found and r.count >= size
                      and (not found or (r.zone, r.start, r.end) == (found[0].zone, found[0].start, found[0].end))),
                     None)
        if match is None:
            return None
        found.append(match)
    return found


def bind(plan: Plan, reservation: DeclaredReservation) -> Plan:
    """The plan on the block or reservation: its name and its zone (its price stays the one the search paid)."""
    chosen = plan.chosen.model_copy(update={"zone": reservation.zone})
    capacity = plan.capacity.model_copy(update={"reservation": reservation.name})
    return plan.model_copy(update={"chosen": chosen, "capacity": capacity, "zones": [reservation.zone]})


def declare_command(stack: str, index: int, fields: dict[str, str]) -> str:
    """The `pulumi config set --path` commands that declare accel:reservations[index] (docs/contracts.md: each
    needed_before_up entry's command sets the key; --path stores numbers as numbers)."""
    return " && ".join(f"pulumi config set --path 'accel:reservations[{index}].{key}' {value} -s {stack}"
                       for key, value in fields.items())


def booking_placeholder(plan: Plan, stack: str, index: int = 0, now: datetime | None = None
                        ) -> tuple[list[DeclaredReservation], DeployKey]:
    """The bookings to make, as placeholder declarations (offline plans only) and the needed_before_up entry that
    says what to book, how, and the commands that declare them (from accel:reservations[index] on)."""
    machine_type, machines = _pool(plan)
    sizes = bookings_needed(plan)
    zone = plan.zones[0]
    details = plan.estimate.details
    window_days = int(details.get("capacity_window_days") or math.ceil(plan.chosen.hours / 24 - 1e-9))
    lead_days = float(details.get("capacity_lead_days") or 0)
    if plan.capacity.provisioning == "capacity-block":
        # Anchored on the plan's catalog date, not the clock: the same stack file plans the same resources every
        # day (a pull request's preview shows no change nobody made); the placeholder is never applied anyway.
        now = (now or _catalog_day(plan)).astimezone(timezone.utc)
        earliest = now + timedelta(days=lead_days)
        start = earliest.replace(hour=BLOCK_HOUR, minute=BLOCK_MINUTE, second=0, microsecond=0)
        if start < earliest:
            start += timedelta(days=1)
        end = start + timedelta(days=window_days)
        placeholders = [DeclaredReservation(name=placeholder_block_id(i), machineType=machine_type, count=size,
                                            zone=zone, kind="capacity-block", start=start, end=end)
                        for i, size in enumerate(sizes)]
        blocks = (f"{len(sizes)} blocks of {', '.join(str(n) for n in sizes)} instances, all in one zone for the "
                  "same window (a node group each)" if len(sizes) > 1 else f"{machines} instances")
        searches = " and ".join(
            f"`aws ec2 describe-capacity-block-offerings --region {plan.region} --instance-type {machine_type} "
            f"--instance-count {size} --capacity-duration-hours {window_days * 24}`" for size in dict.fromkeys(sizes))
        why = (f"the plan runs on EC2 Capacity Blocks you buy first (paid up front, not cancellable): {blocks} of "
               f"{machine_type} in {plan.region} for {window_days} days, from about {lead_days:g} days ahead "
               f"(estimate); find them with {searches}, buy each with `aws ec2 purchase-capacity-block --region "
               f"{plan.region} --capacity-block-offering-id <cb-... from the offering> --instance-platform "
               "Linux/UNIX`, then declare each block it returns (its cr-... id, zone, start and end). Offline plans "
               f"use placeholder blocks ({placeholders[0].name}...) starting {start:%Y-%m-%dT%H:%MZ} (the catalog's date "
               "plus the lead time: an illustration, not a booking)")
        command = " && ".join(declare_command(stack, index + i, {
            "name": "<cr-...-id>", "kind": "capacity-block", "machineType": machine_type, "count": str(size),
            "zone": "<block-zone>", "start": "<block-start-UTC-e.g.-2030-01-06T11:30:00Z>",
            "end": "<block-end-UTC>"}) for i, size in enumerate(sizes))
        return placeholders, DeployKey("accel:reservations", why, command, placeholders[0])
    placeholder = DeclaredReservation(name=PLACEHOLDER_CALENDAR_NAME, machineType=machine_type, count=machines,
                                      zone=zone)
    why = (f"the plan runs on a calendar-mode future reservation you submit first (not cancellable once "
           f"submitted): {machines} x {machine_type} in {zone} for {window_days} days, from about {lead_days:g} days "
           f"ahead (estimate); see when it can be had with `gcloud compute advice calendar-mode --region "
           f"{plan.region} ...` and submit it with `gcloud compute future-reservations create NAME "
           f"--reservation-mode=CALENDAR --machine-type={machine_type} --total-count={machines} --zone={zone} "
           "--start-time=... --end-time=...` (cloud.google.com/compute/docs/instances/create-future-reservations-"
           "calendar-mode), then declare the reservation it delivers. Offline plans use the placeholder name "
           f"{PLACEHOLDER_CALENDAR_NAME}")
    command = declare_command(stack, index, {
        "name": "<reservation-name>", "kind": "reservation", "machineType": machine_type, "count": str(machines),
        "zone": zone})
    return [placeholder], DeployKey("accel:reservations", why, command, placeholder)


def _catalog_day(plan: Plan) -> datetime:
    """Midnight UTC of the day the plan's catalog is as of (`2026-11-26`)."""
    return datetime.fromisoformat(plan.catalog.as_of[:10]).replace(tzinfo=timezone.utc)


def placeholder_block_id(index: int) -> str:
    """cr-00000000000000000, cr-00000000000000001, ...: ids EC2 never issues."""
    return f"cr-{index:017x}"


@dataclass(frozen=True)
class Booked:
    """What on_booking found: the plan bound to its booking, the reservations the stack then holds, the block id
    of each GPU node group (several Capacity Blocks; else empty), and the needed_before_up entry when the booking
    is not declared yet."""

    plan: Plan
    reservations: list[DeclaredReservation]
    block_ids: tuple[str, ...] = ()
    needed: DeployKey | None = None


def on_booking(plan: Plan, reservations: list[DeclaredReservation], stack: str) -> Booked:
    """The plan on its declared booking, or on placeholders with what to book. A plan not bought through a booked
    mode, or already naming its booking, passes unchanged."""
    if not needs_booking(plan):
        return Booked(plan, list(reservations))
    held = declared_bookings(plan, reservations)
    needed = None
    if held is None:
        held, needed = booking_placeholder(plan, stack, index=len(reservations))
        reservations = [*reservations, *held]
    ids = tuple(r.name for r in held) if len(held) > 1 else ()
    return Booked(bind(plan, held[0]), list(reservations), ids, needed)
