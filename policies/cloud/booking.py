"""Booked capacity modes: EC2 Capacity Blocks for ML and GCP calendar-mode future reservations, as modes the
search can buy a fleet through (policies/selection/capacity.py). Both sell a fixed window booked ahead and
billed whole, used or not; neither can be cancelled. Pure functions over the limits in capacity_modes.yaml:

- `window_days(mode, run_hours)`: the shortest window the mode sells that covers the run (Capacity Blocks:
  1-14 days, then 7-day steps to 182; calendar mode: 1-90 whole days), None past the longest. A longer run is
  not offered in the mode: a second window cannot be booked now (Capacity Blocks start at most 8 weeks ahead,
  calendar mode shows 60 days of GPU availability), so a chain would not be a booking but a hope;
- `supply_problem(mode, hosts, chips)`: why the mode cannot supply the fleet (per-request and total limits).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

from accel.policies.cloud.capacity_modes import CapacityMode
from accel.policies.cloud.obtainability import capacity_block_days, capacity_blocks

# The modes the search can book (mode id -> the obtainability section its lead time is read from).
BOOKED_MODES = {"aws-capacity-block": "capacity-block", "gcp-calendar": "calendar"}


class Booking(NamedTuple):
    """A booked mode as the search weighs it for one offering: its limits, its lead time and its price."""

    mode: CapacityMode
    lead_days: float
    lead_is_estimate: bool
    # $/instance-hour the mode's price table gives for (machine, region), with 'source, as of'; None: no sourced
    # price, the fleet is priced at on-demand list and the price is an upper bound.
    instance_usd: dict[str, tuple[float, str]]

    @property
    def id(self) -> str:
        return self.mode.id

    @property
    def provisioning(self) -> str:
        return self.mode.provisioning

    @property
    def lead_hours(self) -> float:
        return self.lead_days * 24.0

    @property
    def max_hosts(self) -> int | None:
        """The most hosts the search books through the mode: 256 instances across Capacity Blocks, one
        calendar-mode request."""
        limits = self.mode.limits
        return limits.max_hosts_total or limits.max_hosts_per_request

    @property
    def words(self) -> str:
        return "capacity blocks" if self.id == "aws-capacity-block" else "a calendar-mode reservation"


def window_days(mode: CapacityMode, run_hours: float) -> int | None:
    """Days of the shortest window the mode sells covering `run_hours`, or None past its longest."""
    limits = mode.limits
    longest = (limits.max_duration_hours or 0) / 24
    if limits.duration_grid == "capacity-block":
        return capacity_block_days(run_hours, longest)
    days = max(1, math.ceil(run_hours / 24 - 1e-9), math.ceil((limits.min_duration_hours or 0) / 24 - 1e-9))
    return days if days <= longest else None


def supply_problem(mode: CapacityMode, hosts: int, chips: int, tpu: bool) -> str | None:
    """Why the mode cannot supply `hosts` machines (`chips` chips), or None when it can."""
    limits = mode.limits
    if limits.hosts_per_request:
        if capacity_blocks(hosts, tuple(limits.hosts_per_request), limits.max_hosts_total or 0) is None:
            return (f"{hosts} instances is past the {limits.max_hosts_total} capacity blocks allow across blocks "
                    f"({limits.max_hosts_per_request} per block; {limits.source})")
        if block_sizes(mode, hosts) is None:
            return (f"{hosts} instances is not full {limits.max_hosts_per_request}-instance blocks and at most one "
                    f"smaller block (blocks hold {', '.join(str(n) for n in limits.hosts_per_request)} instances; "
                    f"{limits.source}): the stack builds one node group per block")
        return None
    if tpu and limits.max_chips_per_request is not None:
        if chips > limits.max_chips_per_request:
            return (f"{chips} TPU chips is past the {limits.max_chips_per_request} one calendar-mode request "
                    f"allows ({limits.source}; more takes the account team)")
        return None
    if limits.max_hosts_per_request is not None and hosts > limits.max_hosts_per_request:
        return (f"{hosts} VMs is past the {limits.max_hosts_per_request} one calendar-mode request allows "
                f"({limits.source}; more takes the account team)")
    return None


def block_sizes(mode: CapacityMode, hosts: int) -> list[int] | None:
    """The Capacity Blocks a fleet of `hosts` is bought as, one node group each: full blocks of the largest size,
    then at most one smaller block (the layout a GPU pool split at the largest block expresses: Plan
    gpu.nodes_per_pool); None when `hosts` is not such a sum or is past the total across blocks."""
    limits = mode.limits
    if not limits.hosts_per_request or hosts <= 0 or hosts > (limits.max_hosts_total or 0):
        return None
    largest = max(limits.hosts_per_request)
    full, rest = divmod(hosts, largest)
    if rest and rest not in limits.hosts_per_request:
        return None
    return [largest] * full + ([rest] if rest else [])


def booked_fleet_sizes(mode: CapacityMode, most: int) -> tuple[int, ...]:
    """Every fleet size up to `most` hosts the mode sells as blocks (block_sizes), smallest first."""
    limits = mode.limits
    return _fleet_sizes(tuple(limits.hosts_per_request or ()), limits.max_hosts_total or 0, most)


@lru_cache(maxsize=64)
def _fleet_sizes(counts: tuple[int, ...], total: int, most: int) -> tuple[int, ...]:
    """booked_fleet_sizes, once per limits (a search asks for every offering of the mode)."""
    if not counts:
        return ()
    largest = max(counts)
    return tuple(hosts for hosts in range(1, min(most, total) + 1) if hosts % largest in (0, *counts))


def blocks_words(mode: CapacityMode, hosts: int) -> str:
    """'2 blocks of 64, 32 instances' / '1 block of 32 instances' (Capacity Blocks), else ''."""
    if not mode.limits.hosts_per_request:
        return ""
    blocks = block_sizes(mode, hosts) or []
    sizes = ", ".join(str(size) for size in blocks)
    return f"{len(blocks)} block{'s' if len(blocks) != 1 else ''} of {sizes} instances"
