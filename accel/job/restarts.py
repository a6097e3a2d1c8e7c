"""How many times a job may restart: the failures the goodput model expects over the run, with headroom."""

from __future__ import annotations

import math

from accel.policies.catalog import load_catalog
from accel.policies.estimator.estimate import resolve
from accel.policies.plan import Plan

from accel.job import plan_view
from accel.job.facts import runtime


def expected_restarts(plan: Plan) -> float:
    """Spot: preemptions per host-day x hosts x days. Otherwise the restarts that cost (1 - goodput) of the run."""
    resolved = resolve(plan.workload, load_catalog().defaults)
    hw = plan_view.hardware(plan)
    hours = plan_view.run_hours(plan)
    if hw.spot:
        return resolved.preemptions_per_host_day.get(hw.cloud, 0.0) * hw.nodes * hours / 24.0
    loss_hours = (resolved["restart_minutes"] + resolved["checkpoint_interval_minutes"] / 2.0) / 60.0
    return (1.0 - plan_view.goodput(plan)) * hours / loss_hours


def max_restarts(plan: Plan) -> tuple[int, str]:
    """(JobSet failurePolicy.maxRestarts, why) from runtime.yaml `restarts`."""
    rules = runtime()["restarts"]
    expected = expected_restarts(plan)
    value = max(int(rules["minimum"]), math.ceil(expected * rules["headroom"]))
    capacity = "spot preemptions" if plan_view.hardware(plan).spot else "failures on on-demand capacity"
    return value, (f"{expected:.1f} {capacity} expected over the {plan_view.run_hours(plan):.0f} h run "
                   f"x {rules['headroom']} headroom (at least {rules['minimum']})")
