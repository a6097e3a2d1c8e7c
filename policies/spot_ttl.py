"""The TTL a spot stack written by `accel choose --write-stack` carries: its estimated run, plus slack.

A spot stack without an expiry is refused by the guardrails (nothing would ever reap it), and a
TTL shorter than the run would reap it mid-training. The TTL counts from the last `pulumi up`, so
it covers building the cluster, the run at its estimated goodput, and restarts after preemption.
"""

from __future__ import annotations

import math

# Why each term: cluster build and first image pulls take up to ~2 h on large fleets; the
# estimate already includes goodput losses, but spot preemption waves cluster in time, so a
# quarter more wall-clock keeps a run that is a little late from being reaped.
SETUP_HOURS = 2
RUN_SLACK = 1.25


def ttl_for_run(estimated_hours: float) -> str:
    """'26h' for a 19-hour run: whole hours, in the TTL grammar `accel reap` reads (accel.base.units)."""
    if not estimated_hours > 0 or math.isinf(estimated_hours):
        raise ValueError(f"an estimated run of {estimated_hours!r} hours has no TTL")
    return f"{math.ceil(estimated_hours * RUN_SLACK + SETUP_HOURS)}h"


def ttl_covers_run(ttl: str, estimated_hours: float) -> bool | None:
    """Whether a stack's TTL lasts the run (so `accel reap` cannot destroy it mid-run); None when it is not a TTL."""
    from accel.base.units import UnitError, parse_ttl

    try:
        return parse_ttl(ttl).total_seconds() >= estimated_hours * 3600
    except UnitError:
        return None
