"""Whether a service may be bought through a queued capacity mode (flex-start, queued provisioning).

The rule, stated once: a queued mode provisions for a bounded run, at most its longest request
(capacity_modes.yaml `limits.max_duration_hours`: flex-start and queued provisioning run at most seven days,
gke-flex-start, gcp-flex-start-vms), after which every node is removed. A service is one long run: every
replica provisioned together expires together, and the new capacity waits in the queue. So a serving workload
whose `inference.hours` exceed the mode's longest request is not served through it; one within it may be (GKE
allows flex-start for serving, gke-flex-start). Training is not judged here: a longer run is chained in legs
(policies/cloud/obtainability.py queued_legs), which a checkpoint makes safe and a service cannot use.
"""

from __future__ import annotations

from accel.base.units import hours_text
from accel.policies.catalog.model import Offering
from accel.policies.cloud.capacity_modes import QUEUED_PROVISIONING, CapacityMode
from accel.policies.plan import Plan
from accel.policies.workload import WorkloadSpec


def service_outlives(spec: WorkloadSpec, mode: CapacityMode | None) -> str | None:
    """Why this serving workload cannot be served through `mode` (its hours, the mode's longest request and its
    source), or None when it can: not serving, not a queued mode, no limit in the table, or within it."""
    if spec.kind != "inference" or spec.inference is None or mode is None:
        return None
    limit = mode.limits.max_duration_hours
    if mode.provisioning not in QUEUED_PROVISIONING or limit is None or spec.inference.hours <= limit:
        return None
    return (f"a service of {spec.inference.hours:,g} h (inference.hours) outlives {mode.provisioning}'s longest "
            f"request, {limit:,g} h ({hours_text(limit)}, {mode.id}: {mode.limits.source}): every node is removed "
            f"when its request ends, the replicas provisioned together expire together and new capacity waits in "
            f"the queue")


def instead_words(offering: Offering, limit_hours: float, pinned: bool = False) -> str:
    """What a service refused a queued mode on this offering can do instead (a pin's own keys when `pinned`)."""
    reservation = f"a declared reservation of {offering.machine_type} (accel:reservations or accel choose --reservations FILE"
    if pinned:
        reservation += ", without the hardware pin"
    choices = [reservation + ")"]
    if offering.has_spot():
        choices.append(("hardware.spot: true" if pinned else "constraints.spot: required")
                       + " where spot is acceptable (reclaimed in waves)")
    choices.append("another machine" + (" in the pin" if pinned else " (constraints.accelerators)"))
    choices.append(f"or inference.hours at most {limit_hours:,g}")
    return "; ".join(choices)


def refusal(spec: WorkloadSpec, offering: Offering, mode: CapacityMode | None, pinned: bool = False) -> str | None:
    """service_outlives with what to do instead, or None when the service may use the mode."""
    why = service_outlives(spec, mode)
    if why is None:
        return None
    assert mode is not None and mode.limits.max_duration_hours is not None
    return f"{why}; instead: {instead_words(offering, mode.limits.max_duration_hours, pinned)}"


def pinned_plan_refusal(plan: Plan) -> str | None:
    """Why a pinned serving Plan cannot be built on its capacity type (refusal, with a stack's keys), or None."""
    workload, chosen = plan.workload, plan.chosen
    if workload.kind != "inference" or plan.capacity.provisioning not in QUEUED_PROVISIONING:
        return None
    from accel.policies.cloud.capacity_modes import load_modes

    mode = load_modes().mode_for(chosen.cloud, chosen.machine_type, plan.capacity.provisioning)
    why = service_outlives(workload, mode)
    if why is None:
        return None
    assert mode is not None and mode.limits.max_duration_hours is not None
    return (f"{why}; instead: re-run `accel choose --write-stack` (a declared reservation of {chosen.machine_type} "
            f"in accel:reservations is sized there), or set inference.hours in accel:workload at most "
            f"{mode.limits.max_duration_hours:,g}")
