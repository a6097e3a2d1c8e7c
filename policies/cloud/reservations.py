"""Reservations a stack holds, and whether the planned pools fit them (before `pulumi up`).

A stack declares the reservations it holds (`accel:reservations`: name, machine type, count, zone; a
Capacity Block also its window, `start` and `end`, which the node group is scaled around).
A GCP specific reservation (or a block of one) and an AWS On-Demand Capacity Reservation or
Capacity Block are all "this many machines of this type in this zone, under this name". Two pure
functions over typed data:

- `use_reservation(plan, reservations)`: a plan decided at run time (a hardware pin or a search)
  takes the declared reservation that holds its machine type in its region, in that zone, as
  capacity type `reservation` (`capacity-block` for an AWS Capacity Block): reserved capacity is
  preferred over buying on demand.
- `reserved_hourly(reservation, machines, on_demand_per_machine)`: what a fleet on it costs per hour, as
  the declaration says reserved capacity is billed (`committedUsdPerMachineHour`, or `marginal: zero` for
  capacity already paid for whether used or not, else the catalog's on-demand rate); machines beyond its
  count are priced at on-demand (`accel choose`, the Plan's figures and `accel plan`'s built cost alike).
- `reservation_problems(plan, reservations)`: what does not fit — machine type, zone, count — in
  words that name the reservation and the pool, so `accel plan` refuses it (exit 2).
- `declaration_problems(reservations, offerings)`: a declared machine type no offering sells, or a zone
  the catalog lists for none of that type's offerings (a typo, most likely), with the closest names;
  `accel choose --reservations` and `accel plan` both refuse them (exit 2) before anything is sized.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from datetime import timezone
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AfterValidator, AwareDatetime, Field, field_validator, model_validator

from accel.base.model import StrictModel
from accel.policies.cloud.capacity_blocks import CapacityBlockWindow, schedule_time, window_problem
from accel.policies.cloud.capacity_modes import QUEUED_PROVISIONING, load_modes
from accel.policies.cloud.commitments import DeclaredCommitment
from accel.policies.cloud.machine_counts import machine_count_problem
from accel.policies.plan import PREPAID_CELL, TOKENS_UNPRICED, Estimate, Option, Plan, serving_token_prices

if TYPE_CHECKING:
    from accel.policies.catalog.model import Catalog, Offering

RESERVED_TYPES = ("reservation", "capacity-block")
# ISO 8601 with a zone, kept in UTC: the zone the schedule is written in.
UtcDatetime = Annotated[AwareDatetime, AfterValidator(lambda moment: moment.astimezone(timezone.utc))]


class DeclaredReservation(StrictModel):
    """One reservation the stack holds (`accel:reservations[i]`)."""

    name: str = Field(min_length=1, description="GCP reservation name (or reservation/block path); AWS cr-... id")
    machineType: str = Field(min_length=1, description="Machine / instance type it reserves, e.g. a3-megagpu-8g")
    count: int = Field(gt=0, description="Machines it holds")
    zone: str = Field(min_length=1, description="Zone it is in, e.g. us-central1-a or us-east-1a")
    kind: Literal["reservation", "capacity-block"] = Field(
        "reservation", description="reservation: GCP specific reservation or AWS ODCR; capacity-block: AWS Capacity Block")
    # A Capacity Block runs only in its window and the node group is scaled around it, so both are required
    # for kind capacity-block. A reservation (ODCR, GCP specific reservation) is held until released: nothing
    # is scheduled around it, so a window there would be ignored, and is refused instead.
    start: UtcDatetime | None = Field(
        None, description="capacity-block only: when the block starts, ISO 8601 with a zone (e.g. 2030-01-06T11:30:00Z)")
    end: UtcDatetime | None = Field(
        None, description="capacity-block only: when the block ends, ISO 8601 with a zone")

    # How the reserved machines are billed (docs/scale.md, "Reserved prices"): at most one of the two.
    committedUsdPerMachineHour: float | None = Field(
        None, gt=0, le=10_000, description="What one reserved machine costs per hour under the commitment (your "
                                           "contract's rate: a committed-use discount or Capacity Block price)")
    marginal: Literal["zero"] | None = Field(
        None, description="zero: already paid for (billed whether used or not), so using it costs nothing more")
    # An UltraServer Capacity Block states its type (EC2 CapacityBlock.ultraserverType): p6e-gb200 is sold as
    # u-p6e-gb200x36 (9 instances, one NVLink domain) or u-p6e-gb200x72 (18), which the count alone cannot tell apart.
    ultraserverType: str | None = Field(
        None, min_length=1, description="capacity-block of UltraServers only: the block's EC2 UltraServer type as the "
        "console or DescribeCapacityBlocks shows it, e.g. u-p6e-gb200x72 (18 instances, one NVLink domain): then "
        "tensor parallelism may span the trays of one UltraServer")

    @field_validator("count")
    @classmethod
    def _a_count_a_cluster_can_use(cls, count: int) -> int:
        problem = machine_count_problem(count)
        if problem:
            raise ValueError(problem)
        return count

    @model_validator(mode="after")
    def _window_fits_the_kind(self) -> "DeclaredReservation":
        given = [key for key in ("start", "end") if getattr(self, key) is not None]
        if self.kind == "reservation":
            if given:
                raise ValueError(f"{' and '.join(given)}: only a kind capacity-block has a window; a reservation is "
                                 f"held until released, so remove {' and '.join(given)} (or set kind: capacity-block)")
            return self
        missing = [key for key in ("start", "end") if key not in given]
        if missing:
            raise ValueError(f"{' and '.join(missing)}: missing; a capacity-block needs its window, start and end as "
                             "the EC2 console shows them, in UTC (e.g. start: 2030-01-06T11:30:00Z, end: "
                             "2030-01-13T11:30:00Z): the node group scales out at the start and in before the end")
        assert self.start is not None and self.end is not None
        problem = window_problem(self.start, self.end)
        if problem:
            raise ValueError(f"start/end: {problem}")
        return self

    # The interface a price point's `reserved` slot offers the search (shared with DeclaredCommitment).
    @property
    def provisioning(self) -> str:
        return self.kind

    @property
    def holds_capacity(self) -> bool:
        return True

    @property
    def held_machines(self) -> int:
        return self.count

    @property
    def window(self) -> CapacityBlockWindow | None:
        """The block's window (kind capacity-block), else None."""
        if self.start is None or self.end is None:
            return None
        return CapacityBlockWindow(self.start, self.end)

    @model_validator(mode="after")
    def _ultraservers_of_the_machine(self) -> "DeclaredReservation":
        from accel.policies import hardware

        facts = hardware.current()
        if self.ultraserverType is None:
            # A block of a machine sold only as UltraServers holds whole ones whatever their type: a multiple of
            # the smallest (p6e-gb200: 9; p6e-gb300: 18, its only type known).
            smallest = facts.node_step(self.machineType) if facts.sold_only_as_ultraservers(self.machineType) else 1
            if self.kind == "capacity-block" and self.count % smallest:
                instance = facts.aws_gpu_instances[self.machineType]
                types = " or ".join(f"{name} of {size}" for name, size in instance.ultraserver_types)
                raise ValueError(f"count: {self.count} instances of {self.machineType} are not whole UltraServers "
                                 f"(it is sold only as UltraServers: {types} instances); give the block's count as "
                                 "EC2 shows it, and its ultraserverType")
            return self
        instance = facts.aws_gpu_instances.get(self.machineType)
        sold = [name for name, _ in instance.ultraserver_types] if instance is not None else []
        if not sold:
            raise ValueError(f"ultraserverType: {self.machineType} is not sold as UltraServers (policies/hardware/"
                             "facts.toml ultraserver_types); remove ultraserverType")
        if self.kind != "capacity-block":
            raise ValueError("ultraserverType: UltraServers are bought as Capacity Blocks; set kind: capacity-block")
        instances = facts.ultraserver_instances(self.machineType, self.ultraserverType)
        if instances is None:
            raise ValueError(f"ultraserverType: {self.ultraserverType!r} is not an UltraServer type of "
                             f"{self.machineType} ({_one_of(sold)})")
        if self.count % instances:
            raise ValueError(f"count: {self.count} instances is not a whole number of {self.ultraserverType} "
                             f"UltraServers of {instances}")
        return self

    @model_validator(mode="after")
    def _one_billing(self) -> "DeclaredReservation":
        if self.committedUsdPerMachineHour is not None and self.marginal is not None:
            raise ValueError("give committedUsdPerMachineHour (a committed price) or marginal: zero (already paid "
                             "for), not both")
        return self

    @property
    def block_rate(self) -> tuple[float, str] | None:
        """($/instance-hour, 'source, as of') EC2 sells a Capacity Block of this machine at in its zone
        (capacity_modes.yaml, aws-capacity-block price: per region, or per zone for UltraServers), for a kind
        capacity-block; None for a reservation, or where no rate was observed there."""
        if self.kind != "capacity-block":
            return None
        table = load_modes()
        for mode_id in ("aws-capacity-block", "aws-capacity-block-ultraserver"):
            price = table.modes[mode_id].price
            rates = (price.instance_usd or {}).get(self.machineType, {}) if price is not None else {}
            for where, usd in rates.items():
                if self.zone == where or _in_region(self.zone, where):
                    assert price is not None and price.source is not None
                    return usd, f"{price.source}, as of {table.sources[price.source].as_of}"
        return None

    def machine_hourly_usd(self, on_demand_per_machine: float) -> float:
        """What one reserved machine costs per hour: $0 when already paid, the committed rate, a Capacity Block's
        sourced rate (block_rate: a declared block bills what EC2 sells the block at, not on-demand), else the
        catalog's (on-demand) rate."""
        if self.marginal == "zero":
            return 0.0
        if self.committedUsdPerMachineHour is not None:
            return self.committedUsdPerMachineHour
        rate = self.block_rate
        return rate[0] if rate is not None else on_demand_per_machine

    def block_hours(self, run_hours: float) -> tuple[float, str | None] | None:
        """For a Capacity Block with its window: (hours billed, why the run does not fit in it or None). A block is
        paid up front for its whole window, used or not (aws-cb-purchase), and runs only until its node group is
        scaled in before the end (capacity_blocks.yaml). None for a reservation, which is held until released."""
        window = self.window
        if window is None:
            return None
        if run_hours <= window.usable_hours + 1e-9:
            return window.hours, None
        return max(window.hours, run_hours), (
            f"the run takes {run_hours:,.1f} h but capacity block {self.name!r} has {window.usable_hours:,.1f} h "
            f"({schedule_time(window.start)} to the node group's scale-in at {schedule_time(window.scale_in_at)}, "
            f"before its end at {schedule_time(window.end)}); declare a longer block, or a reservation")

    def billing_words(self) -> str:
        """'$98.32/h per machine committed', '$0 marginal (already paid)' or the catalog's price. That price is the
        machine's on-demand rate, except for a machine sold only through Capacity Blocks (p6e-gb200), whose catalog
        price is the blocks' effective rate: "on-demand" would name a way it is not sold."""
        if self.marginal == "zero":
            return "$0 marginal (already paid)"
        if self.committedUsdPerMachineHour is not None:
            return f"${self.committedUsdPerMachineHour:,.2f}/h per machine committed"
        rate = self.block_rate
        if rate is not None:
            return f"at the Capacity Block rate ${rate[0]:,.3f}/h per instance ({rate[1]})"
        return "at the catalog's price for the machine (no committed price declared)"

    def prepaid_words(self, machines: int) -> str | None:
        """Why a serving fleet of `machines` on this reservation states no price per million tokens, or None when it
        does: a reservation declared already paid for (marginal: zero) costs $0/h more to use, which is no price of a
        token (the money went in before, at a rate the declaration does not state). The committed rate, when
        declared, prices tokens as it prices the machines (committedUsdPerMachineHour)."""
        if self.marginal != "zero":
            return None
        beyond = machines - min(machines, self.count)
        overflow = f" ({beyond} machines beyond its {self.count} are billed on demand)" if beyond > 0 else ""
        return (f"{PREPAID_CELL}: reservation {self.name!r} is declared already paid for (marginal: zero), billed "
                f"whether used or not, so its $0/h prices no token{overflow}; declare its committedUsdPerMachineHour "
                "instead to price tokens at the committed rate")

    def hourly(self, machines: int, on_demand_per_machine: float) -> float:
        """$/h of `machines` machines: up to the count at the reserved rate, the overflow at on-demand (the
        interface a commitment offers too: DeclaredCommitment.hourly)."""
        held = min(machines, self.count)
        return held * self.machine_hourly_usd(on_demand_per_machine) + (machines - held) * on_demand_per_machine

    def price_words(self, machines: int, on_demand_per_machine: float) -> str:
        """How a fleet on the reservation is priced, with the overflow when it is bigger than the reservation."""
        held = min(machines, self.count)
        words = (f"reserved: {self.name!r} ({self.count} x {self.machineType} in {self.zone}), {held} machines "
                 f"{self.billing_words()} = ${held * self.machine_hourly_usd(on_demand_per_machine):,.2f}/h")
        if machines > held:
            words += (f"; overflow: {machines - held} machines beyond the reservation at on-demand "
                      f"${on_demand_per_machine:,.2f}/h each = ${(machines - held) * on_demand_per_machine:,.2f}/h")
        return words


def declared_clique_nodes(machine_type: str, reservations: Iterable[DeclaredReservation]) -> int | None:
    """Nodes of one NVLink clique of `machine_type` where the stack's Capacity Blocks of it say which UltraServers
    they are (ultraserverType) and that is larger than the hardware table's placement unit (p6e-gb200: 9, the
    smaller UltraServer, which a block of 18 might be two of): the smallest UltraServer among them, every block of
    the machine naming its type; None otherwise (the table's unit holds)."""
    from accel.policies import hardware

    facts = hardware.current()
    unit = facts.placement_units.get(machine_type)
    blocks = [r for r in reservations if isinstance(r, DeclaredReservation) and r.machineType == machine_type
              and r.kind == "capacity-block"]
    if unit is None or unit.level not in facts.kubernetes.nvlink_topology_levels or not blocks \
            or any(r.ultraserverType is None for r in blocks):
        return None
    smallest = min(facts.ultraserver_instances(machine_type, str(r.ultraserverType)) or 0 for r in blocks)
    return smallest if unit.nodes is not None and smallest > unit.nodes else None


def with_declared_cliques(catalog: "Catalog", reservations: Iterable[DeclaredReservation]) -> "Catalog":
    """The catalog whose offerings of a machine the stack's Capacity Blocks name the UltraServers of carry that
    clique (Offering.nvlink_clique_nodes, declared_clique_nodes): what the search and the Plan's layout read. The
    same catalog where no block says more than the table."""
    held = list(reservations)
    cliques = {o.machine_type: declared_clique_nodes(o.machine_type, held) for o in catalog.offerings}
    if not any(cliques.values()):
        return catalog
    offerings = tuple(o.model_copy(update={"nvlink_clique_nodes": cliques[o.machine_type]})
                      if cliques[o.machine_type] else o for o in catalog.offerings)
    return catalog.model_copy(update={"offerings": offerings})


def reserved_hourly(reservation: DeclaredReservation | DeclaredCommitment, machines: int,
                    on_demand_per_machine: float) -> float:
    """$/h of `machines` machines on the reservation (up to its count at the reserved rate, the overflow at
    on-demand) or under the commitment (as it bills them)."""
    return reservation.hourly(machines, on_demand_per_machine)


def reserved_words(reservation: DeclaredReservation | DeclaredCommitment, machines: int,
                   on_demand_per_machine: float) -> str:
    """How a fleet on the reservation or under the commitment is priced."""
    return reservation.price_words(machines, on_demand_per_machine)


def holding(reservations: Iterable, machine_type: str, region: str) -> DeclaredReservation | None:
    """The first declared reservation or Capacity Block that holds `machine_type` machines in `region`, else None.
    The one rule for a fleet on capacity the stack holds: a plan of that machine in that region is put on it
    (use_reservation), so a pin of it is timed as held (policies/selection/pin.py) and the search sizes it only on
    it, never through a queued mode there (policies/selection/candidates.py price_points)."""
    return next((r for r in reservations if r.holds_capacity and r.machineType == machine_type
                 and _in_region(r.zone, region)), None)


def region_of_reservation(reservation: DeclaredReservation, regions) -> str | None:
    """The region (of `regions`) the reservation's zone is in, or None."""
    return next((region for region in regions if _in_region(reservation.zone, region)), None)


def _pool(plan: Plan) -> tuple[str, int, str]:
    """(machine type, machines, what they are) of the plan's accelerator pool."""
    if plan.tpu is not None:
        return plan.tpu.machine_type, plan.tpu.hosts_per_slice * plan.tpu.slices, "TPU hosts"
    assert plan.gpu is not None
    return plan.gpu.machine_type, plan.gpu.nodes, "GPU nodes"


def _in_region(zone: str, region: str) -> bool:
    return zone.startswith(region) and len(zone) > len(region)


def reservation_holding(reservations: Iterable, provisioning: str, machine_type: str,
                        region: str) -> DeclaredReservation | None:
    """The declared reservation a fleet of `machine_type` in `region`, bought through `provisioning`, goes on: none
    for spot; for capacity sold only as reserved (p6e: Capacity Blocks) one of its kind; else the first that holds
    the machine there (holding). The one rule use_reservation and a pin's evaluation (selection.pin) apply."""
    if provisioning == "spot":
        return None
    return holding([r for r in reservations if provisioning not in RESERVED_TYPES or r.kind == provisioning],
                   machine_type, region)


def bill_on_reservation(match: DeclaredReservation, machine_type: str, machines: int, chosen: Option,
                        estimate: Estimate, inference) -> tuple[Option, Estimate]:
    """The fleet `chosen` (sized at the catalog's price, on demand or through a queued mode) and its estimate as
    the reservation `match` bills them: its $/h, hours (a Capacity Block's whole window), total and, for a serving
    fleet (`inference`, the workload's), its prices per million tokens. The one place this is priced: a pin's
    evaluation puts its fleet on the reservation with it before any line is written (selection.pin), and
    use_reservation a plan decided without the reservations."""
    hourly = round(reserved_hourly(match, machines, _on_demand_per_machine(chosen, machine_type, machines)), 6)
    # A Capacity Block is billed for its whole window, used or not; the run is what it was (reservation_problems
    # refuses one longer than the block).
    run = _run_hours(estimate.details, chosen.hours)
    block = match.block_hours(run)
    hours = block[0] if block is not None else chosen.hours
    total = round(hourly * hours, 2)
    update = {"provisioning": match.kind, "zone": match.zone, "hourly_usd": hourly, "total_usd": total, "hours": hours}
    # Nor the queued mode's legs, risk and wall-clock in the estimate's details (held capacity has none:
    # ModeTable.chains_legs); a block's run shorter than its window keeps its wall-clock, where it was.
    wall = round(run, 2) if block is not None and hours != run else None
    details = {key: wall if key == "capacity_wall_hours" else value for key, value in estimate.details.items()
               if key not in ("capacity_legs", "capacity_risk") and (key != "capacity_wall_hours" or wall is not None)}
    prices = _token_prices(estimate.details, inference, match, machines, hourly, chosen.hourly_usd)
    if prices is not None:   # a serving fleet's tokens priced as its machines now are (plan.serving_token_prices)
        for key in ("usd_per_million_tokens", "usd_per_million_tokens_at_target", TOKENS_UNPRICED):
            details.pop(key, None)
            update[key] = prices.get(key)
        details.update(prices)
    if wall is not None:
        details.setdefault("capacity_wall_hours", wall)
    return (chosen.model_copy(update=update),
            estimate.model_copy(update={"hourly_usd": hourly, "total_usd": total, "hours": hours, "details": details}))


def held_words(match: DeclaredReservation, machines: int, sized: Option, machine_type: str) -> str:
    """The rationale's line naming the reservation a fleet runs on and how it bills it; `sized`: the fleet as it
    was sized, at the catalog's price (bill_on_reservation's input)."""
    per_machine = _on_demand_per_machine(sized, machine_type, machines)
    return f"Capacity: the stack's {match.kind} {match.name!r}; {reserved_words(match, machines, per_machine)}."


def _on_demand_per_machine(sized: Option, machine_type: str, machines: int) -> float:
    """The on-demand $/h of one machine of a fleet sized at the catalog's price, which a reservation bills from: a
    queued mode's price (flex-start) has the mode's factor in it, divided back out (mode_prices.on_demand_hourly)."""
    per_machine = sized.hourly_usd / machines
    if sized.provisioning not in QUEUED_PROVISIONING:
        return per_machine
    # Imported here: mode_prices reads the catalog's Price model, which a stack's reservations need not load.
    from accel.policies.cloud.mode_prices import on_demand_hourly

    return on_demand_hourly(load_modes(), sized.cloud, machine_type, sized.provisioning, per_machine)


def held_mode(cloud: str, machine_type: str, match: DeclaredReservation) -> str | None:
    """The capacity mode of a fleet on the reservation: the held mode (no queue, no legs: ModeTable.chains_legs)."""
    held = load_modes().mode_for(cloud, machine_type, match.kind, held=True)
    return held.id if held else None


def use_reservation(plan: Plan, reservations: list[DeclaredReservation]) -> Plan:
    """The plan on the declared reservation of its machine type in its region, or unchanged when none holds it
    (reservation_problems then says why), or it is on one already (a pin or a search sized with the reservations
    is: selection.pin, candidates.reserved_groups)."""
    # A plan already on a named reservation keeps it; one on an offering sold only as reserved capacity (p6e:
    # Capacity Blocks) names none yet and takes the declared one of its kind.
    if not reservations or plan.capacity.provisioning in RESERVED_TYPES and plan.capacity.reservation:
        return plan
    machine_type, machines, _ = _pool(plan)
    match = reservation_holding(reservations, plan.capacity.provisioning, machine_type, plan.region)
    if match is None:
        return plan
    chosen, estimate = bill_on_reservation(match, machine_type, machines, plan.chosen, plan.estimate,
                                           plan.workload.inference)
    # Its capacity is the reservation's: the held mode (no queue, no legs), not the mode the plan was judged on.
    capacity = plan.capacity.model_copy(update={"provisioning": match.kind, "reservation": match.name,
                                                "mode": held_mode(plan.chosen.cloud, machine_type, match),
                                                "risk": None, "legs": None})
    before = f"Capacity mode {plan.capacity.mode}:" if plan.capacity.mode else None
    rationale = [*(line for line in plan.rationale if before is None or not line.startswith(before)),
                 held_words(match, machines, plan.chosen, machine_type)]
    return plan.model_copy(update={"chosen": chosen, "estimate": estimate, "capacity": capacity,
                                   "zones": [match.zone], "rationale": rationale})


def _token_prices(details: dict, inference, match: DeclaredReservation, machines: int, hourly: float,
                  sized_hourly: float) -> dict[str, float | str] | None:
    """A serving fleet's prices per million tokens on the reservation at `hourly` (its tokens/s as it was sized),
    or None where they stand as they were: a training fleet, or a reservation billed as it was priced
    (`sized_hourly`)."""
    served = details.get("tokens_per_second")
    prepaid = match.prepaid_words(machines)
    if served is None or inference is None or (prepaid is None and hourly == sized_hourly):
        return None
    return serving_token_prices(hourly, float(served), inference.tokens_per_second, prepaid)


def run_hours(plan: Plan) -> float:
    """How long the plan's fleet runs: its wall-clock less a booked mode's lead time (capacity_lead_days), else its
    hours (a booked or block plan's hours are the window it pays for)."""
    return _run_hours(plan.estimate.details, plan.chosen.hours)


def _run_hours(details: dict, hours: float) -> float:
    wall = float(details.get("capacity_wall_hours") or hours)
    return wall - 24.0 * float(details.get("capacity_lead_days") or 0.0)


def capacity_block_window(plan: Plan, reservations: list[DeclaredReservation]) -> CapacityBlockWindow | None:
    """The window of the Capacity Block the plan runs on (None for other capacity, or when it is not declared:
    reservation_problems says so)."""
    if plan.capacity.provisioning != "capacity-block":
        return None
    declared = next((r for r in reservations if r.name == plan.capacity.reservation), None)
    return declared.window if declared is not None else None


def reservation_problems(plan: Plan, reservations: list[DeclaredReservation]) -> list[str]:
    """Why the planned pools do not fit the declared reservations (empty when they fit, or none is declared;
    a capacity-block plan must declare its block, whose window the node group is scheduled around)."""
    if plan.capacity.provisioning == "capacity-block" and not any(
            r.name == plan.capacity.reservation for r in reservations):
        machine_type, machines, _ = _pool(plan)
        return [f"the plan runs on capacity block {plan.capacity.reservation!r}, which accel:reservations does not "
                "declare; a capacity block's node group is scaled at the block's start and end, so declare it: "
                f"{{name: {plan.capacity.reservation}, kind: capacity-block, machineType: {machine_type}, "
                f"count: {machines}, zone: {plan.zones[0]}, start: <block start>, end: <block end>}} (ISO 8601 "
                "in UTC as the EC2 console shows them, e.g. 2030-01-06T11:30:00Z)"]
    if not reservations:
        return []
    machine_type, machines, what = _pool(plan)
    provisioning, name = plan.capacity.provisioning, plan.capacity.reservation
    held = "; ".join(f"{r.name}: {r.count} x {r.machineType} in {r.zone}" for r in reservations)
    if provisioning not in RESERVED_TYPES:
        same_type = [r for r in reservations if r.machineType == machine_type]
        if not same_type:
            return [f"no declared reservation holds {machine_type}, the plan's machine type ({machines} {what} in "
                    f"{plan.region}); the stack holds {held}"]
        return [f"the plan is {provisioning} {machine_type} in {plan.region}, but the reservations of that type are "
                f"in other regions ({', '.join(f'{r.name} in {r.zone}' for r in same_type)})"]
    declared = next((r for r in reservations if r.name == name), None)
    if declared is None:
        return [f"the plan uses {provisioning} {name!r}, which accel:reservations does not declare; it holds {held}"]
    problems = []
    if declared.kind != provisioning:
        problems.append(f"{declared.name} is declared as a {declared.kind} but the plan uses it as {provisioning}")
    if declared.machineType != machine_type:
        problems.append(f"{declared.name} reserves {declared.machineType} but the pools are {machine_type}")
    if plan.zones[0] != declared.zone:
        problems.append(f"{declared.name} is in {declared.zone} but the pools are in {plan.zones[0]}")
    if declared.count < machines:
        problems.append(f"{declared.name} holds {declared.count} x {declared.machineType} but the pools need "
                        f"{machines} {what} ({machines - declared.count} more)")
    block = declared.block_hours(run_hours(plan))
    if block is not None and block[1] is not None:
        problems.append(block[1])
    return problems


# ----------------------------------------------------------------------------- the declaration itself

class DeclarationProblem(StrictModel):
    """A declared reservation's key whose value the catalog does not know, or a name declared twice
    (`reservations[index].key`)."""

    index: int = Field(ge=0, description="Position of the reservation in the declared list")
    key: Literal["name", "machineType", "zone", "instanceFamily", "region"]
    problem: str = Field(min_length=1, description="What is wrong and what is allowed, closest names first")


def _closest(value: str, known: Iterable[str]) -> list[str]:
    return difflib.get_close_matches(value, sorted(set(known)), n=3, cutoff=0.6)


def _one_of(names: list[str]) -> str:
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def declaration_problems(reservations: Iterable[DeclaredReservation], offerings: Iterable["Offering"],
                         catalog_key: str = "--catalog") -> list[DeclarationProblem]:
    """Declared reservations whose machine type no offering sells, or whose zone is none of the zones the
    catalog lists for that machine type: such a reservation could never be used, so it is a mistake to
    say, not a quiet "gave no feasible option". Each problem names what is allowed, closest first;
    `catalog_key` is where the user gives a catalog overlay (`--catalog`, or `accel:catalog` in a stack)."""
    from accel.policies.cloud.reservation_names import reservation_name_problem

    zones_of: dict[str, dict[str, set[str]]] = {}  # machine type -> region -> zones
    cloud_of: dict[str, str] = {}  # machine type -> the cloud that sells it
    for offering in offerings:
        cloud_of[offering.machine_type] = offering.cloud
        regions = zones_of.setdefault(offering.machine_type, {})
        for region, info in offering.regions.items():
            regions.setdefault(region, set()).update(info.zones)
    problems = []
    first_of: dict[tuple[str, str], int] = {}  # (name, zone or kind) -> the entry that declared it first
    for index, reservation in enumerate(reservations):
        # A name is unique within its zone (GCP reservations are zonal; an AWS cr-... id is unique everywhere):
        # one reservation declared twice would count its machines twice.
        where = reservation.kind if isinstance(reservation, DeclaredCommitment) else reservation.zone
        first = first_of.setdefault((reservation.name, where), index)
        if first != index:
            problems.append(DeclarationProblem(index=index, key="name", problem=(
                f"{reservation.name!r} in {where} is already entry {first}; one reservation declared twice would "
                "count its machines twice: declare it once with its whole count")))
            continue
        if isinstance(reservation, DeclaredCommitment):
            problems.extend(commitment_problems(index, reservation, zones_of))
            continue
        machine_type, zone = reservation.machineType, reservation.zone
        if machine_type not in zones_of:
            problems.append(DeclarationProblem(index=index, key="machineType",
                                               problem=_unsold_machine_problem(machine_type, zones_of)))
            continue
        name_problem = reservation_name_problem(reservation.name, cloud_of[machine_type])
        if name_problem:
            problems.append(DeclarationProblem(index=index, key="name", problem=name_problem))
            continue
        regions = zones_of[machine_type]
        known = set().union(*regions.values())
        if zone in known:
            continue
        near = _closest(zone, known)
        # The zones of the declared zone's own region when the catalog has it, else all of them.
        listed = sorted(z for region, zones in regions.items() if _in_region(zone, region) for z in zones) \
            or sorted(known)
        problems.append(DeclarationProblem(index=index, key="zone", problem=(
            f"{zone!r} is not a zone the catalog lists for {machine_type}"
            + (f"; did you mean {_one_of(near)}?" if near else "")
            + f" (it lists {machine_type} in {', '.join(listed)}; a reservation held in another zone needs "
              f"that zone added to the offering in a catalog overlay, {catalog_key})")))
    return problems


def _unsold_machine_problem(machine_type: str, zones_of: dict[str, dict[str, set[str]]]) -> str:
    """Why a declared machine type no offering sells is refused: the reason accel keeps a machine it knows out of the
    catalog (policies/catalog/not_offered.yaml), else the closest machine types it sells."""
    from accel.policies.catalog.not_offered import why_not_offered

    known = why_not_offered(machine_type)
    if known:
        return known
    near = _closest(machine_type, zones_of)
    allowed = f"did you mean {_one_of(near)}?" if near else f"the catalog sells {', '.join(sorted(zones_of))}"
    return f"{machine_type!r} is sold by no catalog offering; {allowed}"


def commitment_problems(index: int, commitment: DeclaredCommitment, zones_of: dict[str, dict[str, set[str]]]
                        ) -> list[DeclarationProblem]:
    """A commitment whose machine type or instance family no offering of its cloud sells, or whose region no such
    offering is listed in: it could never price anything, so it is a mistake to say."""
    if commitment.kind == "committed-use":
        assert commitment.machineType is not None
        if commitment.machineType not in zones_of:
            return [DeclarationProblem(index=index, key="machineType",
                                       problem=_unsold_machine_problem(commitment.machineType, zones_of))]
        regions = sorted(zones_of[commitment.machineType])
        key, known = "region", regions
    elif commitment.plan == "ec2-instance":
        assert commitment.instanceFamily is not None
        # EC2 instance types are FAMILY.SIZE (p5.48xlarge); Google's machine types have no dot.
        families = {machine.split(".", 1)[0] for machine in zones_of if "." in machine}
        if commitment.instanceFamily not in families:
            near = _closest(commitment.instanceFamily, families)
            allowed = f"did you mean {_one_of(near)}?" if near else f"the catalog's families: {', '.join(sorted(families))}"
            return [DeclarationProblem(index=index, key="instanceFamily", problem=(
                f"{commitment.instanceFamily!r} is the family of no catalog offering; {allowed}"))]
        key = "region"
        known = sorted({region for machine, regions in zones_of.items()
                        if machine.split(".", 1)[0] == commitment.instanceFamily for region in regions})
    else:
        return []
    if commitment.region in known:
        return []
    near = _closest(commitment.region or "", known)
    return [DeclarationProblem(index=index, key=key, problem=(
        f"{commitment.region!r} is not a region the catalog lists for it"
        + (f"; did you mean {_one_of(near)}?" if near else "") + f" (it lists {', '.join(known)})"))]
