"""An EC2 Capacity Block's window, and the scheduled scaling AWS documents around it.

A Capacity Block's instances can run only between its start and end, and EC2 starts terminating
them a fixed time before the end. AWS's procedure for EKS managed node groups: create the group
at size 0, scale it out to the block's size at the start and back to 0 before EC2's terminations
begin, with scheduled actions on the group's Auto Scaling group (sources and the figures in
capacity_blocks.yaml). This module turns a window into those two actions, as plain data: the
component declares them, the guardrail checks a stack has them, neither decides the times itself.

Plain dataclasses, not pydantic: the guardrail pack imports this and must start without pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path

from accel.base.safe_files import read_text

from accel.base.yaml_files import parse_yaml  # libyaml, duplicate keys refused

FACTS_FILE = Path(__file__).with_name("capacity_blocks.yaml")
# The wire format of aws.autoscaling.Schedule start_time ("YYYY-MM-DDThh:mm:ssZ", UTC; pulumi_aws docs).
SCHEDULE_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True)
class CapacityBlockFacts:
    as_of: str
    sources: dict[str, str]
    ec2_terminates_before_end: timedelta
    drain_margin: timedelta

    @property
    def scale_in_before_end(self) -> timedelta:
        """How long before the block's end the group is scaled to 0."""
        return self.ec2_terminates_before_end + self.drain_margin


@lru_cache(maxsize=None)
def load_capacity_block_facts(path: Path = FACTS_FILE) -> CapacityBlockFacts:
    data = parse_yaml(read_text(path, "capacity blocks table"))
    return CapacityBlockFacts(
        as_of=str(data["as_of"]), sources={str(k): str(v) for k, v in data["sources"].items()},
        ec2_terminates_before_end=timedelta(minutes=int(data["ec2_terminates_before_end_minutes"])),
        drain_margin=timedelta(minutes=int(data["drain_margin_minutes"])))


@dataclass(frozen=True)
class ScheduledScaling:
    """One scheduled action on the node group's Auto Scaling group (aws.autoscaling.Schedule inputs)."""

    role: str          # "scale-out" at the block's start, "scale-in" before its end
    start_time: str    # UTC, SCHEDULE_TIME_FORMAT
    min_size: int
    max_size: int
    desired_capacity: int


@dataclass(frozen=True)
class CapacityBlockWindow:
    """When a Capacity Block is active: [start, end), both timezone-aware."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        problem = window_problem(self.start, self.end)
        if problem:
            raise ValueError(problem)

    @property
    def scale_in_at(self) -> datetime:
        return self.end - load_capacity_block_facts().scale_in_before_end

    @property
    def hours(self) -> float:
        """The whole window, which the block is paid for up front, used or not."""
        return (self.end - self.start).total_seconds() / 3600

    @property
    def usable_hours(self) -> float:
        """The hours a run has on the block: from its start to the node group's scale-in before its end."""
        return (self.scale_in_at - self.start).total_seconds() / 3600

    def scaling(self, nodes: int) -> list[ScheduledScaling]:
        """Scale out to `nodes` at the block's start; scale in to 0 before EC2 terminates its instances.

        The node group's max stays `nodes` after the scale-in (min and desired 0), so the group keeps
        its shape for upgrades at size 0 and for the next block."""
        return [
            ScheduledScaling("scale-out", schedule_time(self.start), min_size=0, max_size=nodes,
                             desired_capacity=nodes),
            ScheduledScaling("scale-in", schedule_time(self.scale_in_at), min_size=0, max_size=nodes,
                             desired_capacity=0),
        ]


def schedule_time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime(SCHEDULE_TIME_FORMAT)


def window_problem(start: datetime, end: datetime) -> str | None:
    """Why [start, end) is not a Capacity Block window the node group can be scheduled around, or None."""
    if start.tzinfo is None or end.tzinfo is None:
        return "start and end need a time zone: write them in UTC, e.g. 2030-01-06T11:30:00Z"
    if end <= start:
        return f"end ({schedule_time(end)}) must be after start ({schedule_time(start)})"
    facts = load_capacity_block_facts()
    if end - start <= facts.scale_in_before_end:
        minutes = int(facts.scale_in_before_end.total_seconds() // 60)
        return (f"the block ({schedule_time(start)} to {schedule_time(end)}) is too short: the node group is "
                f"scaled in {minutes} minutes before its end (EC2 terminates its instances "
                f"{int(facts.ec2_terminates_before_end.total_seconds() // 60)} minutes before; "
                "policies/cloud/capacity_blocks.yaml), which leaves no time to run")
    return None
