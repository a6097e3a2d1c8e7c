"""Does a pinned Plan say what the program builds from it? Its shape must; its price may drift.

A pinned Plan is a hand-editable block of a stack file. The program builds pools from `tpu` /
`gpu`, while the cost a reviewer and the budget guardrails read is the Plan's own estimate. So the
built accelerator pools (priced by accel.policies.cloud.pricing) are compared with the Plan:
- a different number of pools, nodes or chips is a contradiction: refused, naming the field;
- a different $/h under the catalog version the Plan was priced with means the figures were
  edited (or the pin was hand-made): refused too;
- a different $/h under a newer catalog is price drift: shown, pinned vs now, never refused
  (a price change must never silently change the hardware, nor block a stack that did not change).
"""

from __future__ import annotations

import math

from accel.policies.plan import Plan
from accel.policies.cloud.pricing import BuiltCost
from pydantic import Field

from accel.base.model import StrictModel

STACK_KEY = "accel:plan"


class PriceDrift(StrictModel):
    pinned_hourly_usd: float
    now_hourly_usd: float
    pinned_catalog: str
    now_catalog: str
    note: str = Field(description="One line for people")


def repin_hint(stack: str) -> str:
    return (f"re-pin with `accel choose WORKLOAD.yaml --write-stack {stack}` (it rewrites {STACK_KEY} from the "
            f"workload), or delete {STACK_KEY} to decide at run time")


def shape_contradictions(plan: Plan, built: BuiltCost) -> list[str]:
    """Each pool/node/chip count where the Plan and the built accelerator pools disagree."""
    if plan.tpu is not None:
        wanted = {"tpu.slices": (plan.tpu.slices, len(built.accelerator_pools), "node pools")}
    else:
        wanted = {"gpu.pools": (plan.gpu.pools, len(built.accelerator_pools), "node pools")}
    wanted["chosen.hosts"] = (plan.chosen.hosts, built.nodes, "nodes")
    wanted["chosen.chips"] = (plan.chosen.chips, built.chips, "chips")
    return [f"{STACK_KEY}.{field} says {says:,} but the program builds {builds:,} {what}"
            for field, (says, builds, what) in wanted.items() if says != builds]


def _usd(amount: float) -> str:
    """Exact to the cent: the two figures a reader compares must not round to the same text."""
    return f"${amount:,.2f}"


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=0.01)


def check_pin(plan: Plan, built: BuiltCost, stack: str) -> tuple[list[str], PriceDrift | None]:
    """(contradictions, drift): contradictions refuse the pin; drift only informs.

    Pools that are not priced (an unknown machine type) leave the price unchecked, never guessed."""
    problems = shape_contradictions(plan, built)
    if problems or any(not p.priced for p in built.accelerator_pools):
        return problems, None
    now, pinned = built.accelerator_hourly_usd, plan.chosen.hourly_usd
    if _same(now, pinned):
        return [], None
    if built.catalog_version == plan.catalog.version:
        return [f"{STACK_KEY}.chosen.hourly_usd says {_usd(pinned)}/h but the {len(built.accelerator_pools)} "
                f"pools it builds cost {_usd(now)}/h at catalog {built.catalog_version}, the catalog the pin "
                f"names: the pinned figures do not match the pinned hardware"], None
    note = (f"prices moved since the pin: {_usd(pinned)}/h at catalog {plan.catalog.version} -> {_usd(now)}/h at "
            f"catalog {built.catalog_version} for the same hardware; the pinned hardware is kept")
    return [], PriceDrift(pinned_hourly_usd=pinned, now_hourly_usd=round(now, 2), pinned_catalog=plan.catalog.version,
                          now_catalog=built.catalog_version, note=note)
