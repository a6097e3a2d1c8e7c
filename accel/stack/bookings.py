"""A plan the search bought through a booked mode (an EC2 Capacity Block, a GCP calendar-mode reservation) names
no block or reservation yet: the user books it first (neither can be cancelled), then declares it in
`accel:reservations`. This step binds the plan to that declaration, or, when there is none, says what to book and
how (a `needed_before_up` entry). Offline (`accel plan`) the stack is planned on a visible placeholder of the
booking so every resource of the mode shows; under `pulumi up` the missing declaration stops the program, so a
placeholder is never applied (accel/stack/deploy_keys.py).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

from accel.policies.cloud.booking import BOOKED_MODES
from accel.policies.cloud.reservations import DeclaredReservation
from accel.policies.plan import Plan
from accel.stack.deploy_keys import DeployKey

# Placeholders only an offline plan carries (`pulumi up` stops on the missing declaration first): an all-zero
# reservation id EC2 never issues, and a GCE name that says what it stands for.
PLACEHOLDER_BLOCK_ID = "cr-00000000000000000"
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


def declared_booking(plan: Plan, reservations: list[DeclaredReservation]) -> DeclaredReservation | None:
    """The declared block or reservation that holds the plan's fleet: its kind, machine type, region, enough."""
    machine_type, machines = _pool(plan)
    return next((r for r in reservations
                 if r.kind == plan.capacity.provisioning and r.machineType == machine_type
                 and r.zone.startswith(plan.region) and r.count >= machines), None)


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
                        ) -> tuple[DeclaredReservation, DeployKey]:
    """The booking to make, as a placeholder declaration (offline plans only) and the needed_before_up entry that
    says what to book, how, and the commands that declare it (as accel:reservations[index])."""
    machine_type, machines = _pool(plan)
    zone = plan.zones[0]
    details = plan.estimate.details
    window_days = int(details.get("capacity_window_days") or math.ceil(plan.chosen.hours / 24 - 1e-9))
    lead_days = float(details.get("capacity_lead_days") or 0)
    if plan.capacity.provisioning == "capacity-block":
        now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
        earliest = now + timedelta(days=lead_days)
        start = earliest.replace(hour=BLOCK_HOUR, minute=BLOCK_MINUTE, second=0, microsecond=0)
        if start < earliest:
            start += timedelta(days=1)
        end = start + timedelta(days=window_days)
        placeholder = DeclaredReservation(name=PLACEHOLDER_BLOCK_ID, machineType=machine_type, count=machines,
                                          zone=zone, kind="capacity-block", start=start, end=end)
        why = (f"the plan runs on an EC2 Capacity Block you buy first (paid up front, not cancellable): {machines} x "
               f"{machine_type} in {zone} for {window_days} days, from about {lead_days:g} days ahead (estimate); "
               f"find one with `aws ec2 describe-capacity-block-offerings --region {plan.region} --instance-type "
               f"{machine_type} --instance-count {machines} --capacity-duration-hours {window_days * 24}`, buy it "
               f"with `aws ec2 purchase-capacity-block --region {plan.region} --capacity-block-offering-id "
               "<cb-... from the offering> --instance-platform Linux/UNIX`, then declare the block it returns "
               "(its cr-... id, start and end). Offline plans use the placeholder block "
               f"{PLACEHOLDER_BLOCK_ID} starting {start:%Y-%m-%dT%H:%MZ}")
        command = declare_command(stack, index, {
            "name": "<cr-...-id>", "kind": "capacity-block", "machineType": machine_type, "count": str(machines),
            "zone": "<block-zone>", "start": "<block-start-UTC-e.g.-2030-01-06T11:30:00Z>",
            "end": "<block-end-UTC>"})
        return placeholder, DeployKey("accel:reservations", why, command, placeholder)
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
    return placeholder, DeployKey("accel:reservations", why, command, placeholder)


def on_booking(plan: Plan, reservations: list[DeclaredReservation], stack: str
               ) -> tuple[Plan, list[DeclaredReservation], DeployKey | None]:
    """(plan bound to its booking, the reservations the stack then holds, the needed_before_up entry when the
    booking is not declared yet). A plan not bought through a booked mode, or already naming its booking, passes."""
    if not needs_booking(plan):
        return plan, list(reservations), None
    held = declared_booking(plan, reservations)
    if held is not None:
        return bind(plan, held), list(reservations), None
    placeholder, key = booking_placeholder(plan, stack, index=len(reservations))
    return bind(plan, placeholder), [*reservations, placeholder], key
