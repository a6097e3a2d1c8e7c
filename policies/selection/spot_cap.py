"""Why a spot training ladder stops where it does, in words a refusal can carry.

On spot the search keeps the sizes the zone's spot pool holds that finish sooner than every smaller one
(selection.sizing, docs/capacity.md "Where the spot boundary comes from"). So a spot fleet can stop well below
max_chips: at the pool one zone is expected to hold, or below it where larger fleets finish later through the
reclaim waves and drains. Both figures are estimates of the class's `obtainability.spot` in
policies/cloud/capacity_modes.yaml, which a workload overrides; a refusal that only said "the fastest fleet
(256 chips)" left the user to guess that an estimate, not the deadline or max_chips, set that size.
"""

from __future__ import annotations

from accel.policies.catalog.model import Offering
from accel.policies.cloud.obtainability import SpotModel
from accel.policies.selection.capacity import Obtaining
from accel.policies.selection.ladders import Size
from accel.policies.workload import WorkloadSpec


def spot_cap_words(spec: WorkloadSpec, obtain: Obtaining, offering: Offering, model: SpotModel,
                   top: Size, held_top: Size, ladder_top: Size) -> str:
    """What ended the spot ladder at `top` and what would move it, or "" when spot did not end it.

    `held_top`: the largest size within the spot pool (pool_hosts); `ladder_top`: the largest size the offering
    would reach without spot (max_chips, the global batch, the node limit). The spot words name the pool's
    figures, where they live and the fields that change the outcome: constraints.spot (under `required` only:
    with `allowed` the offering was sized on demand too, and says so itself), constraints.deadline_days, and the
    class's constraints.capacity.obtainability figures."""
    cls = obtain.obtain_class(offering) or "its class"
    overridden = obtain.overrides.get(cls, {}).get("spot")
    source = (f"your constraints.capacity.obtainability.{cls}.spot figures" if overridden else
              f"estimates in policies/cloud/capacity_modes.yaml; yours go in "
              f"constraints.capacity.obtainability.{cls}.spot")
    pool = f"the {model.pool_hosts:g}-host {cls} spot pool one zone is expected to hold"
    if top.hosts < held_top.hosts:
        # What makes a larger fleet slower there: the model's terms that are not switched off (obtainability.py).
        causes = ["slower to obtain"]
        if model.waves_per_week > 0 and model.wave_fraction > 0:
            causes.append("hit by more reclaim waves")
        if model.drains_per_week > 0 and model.drain_hours > 0 and model.drain_pool_fraction < 1:
            causes.append(f"stalled by drains that leave {model.drain_pool_fraction * model.pool_hosts:g}")
        why = (f"spot stops at {top.hosts} hosts: in {pool}, a larger fleet finishes later "
               f"({', '.join(causes)}; {source})")
    elif held_top.hosts < ladder_top.hosts:
        why = f"spot stops at {top.hosts} hosts, {pool} ({source})"
    else:
        return ""
    remedy = ("allow on-demand or another capacity mode (constraints.spot: allowed) or set a later "
              "constraints.deadline_days" if spec.constraints.spot == "required" else
              "set a later constraints.deadline_days for spot")
    return f"{why}; {remedy}"
