"""Does a pinned Plan say what the program builds from it? Its shape must; its price may drift.

A pinned Plan is a hand-editable block of a stack file. The program builds pools from `tpu` /
`gpu`, while the cost a reviewer and the budget guardrails read is the Plan's own estimate. So the
built accelerator pools (priced by accel.policies.cloud.pricing) are compared with the Plan:
- a different number of pools, nodes or chips is a contradiction: refused, naming the field;
- a different $/h under the catalog version the Plan was priced with means the figures were
  edited (or the pin was hand-made): refused too;
- a different $/h under an earlier catalog accel knows is price drift: shown, pinned vs now, never
  refused (a price change must never silently change the hardware, nor block a stack that did not
  change). The earlier catalog's prices are not kept, so the pinned figure cannot be checked: the
  stack's cost is repriced from the current catalog (the built cost) and the pinned figure is only
  shown beside it, marked unverified;
- a catalog version accel does not know (neither the current one nor an earlier bundled one) is
  refused: its prices can be checked against nothing, and a forged "price drift" must not pass.
"""

from __future__ import annotations

import math

from accel.policies.plan import Plan
from accel.policies.cloud.pricing import BuiltCost
from pydantic import Field

from accel.base.model import StrictModel

STACK_KEY = "accel:plan"

# The versions the bundled catalog (policies/catalog/catalog.yaml) carried before the current one,
# from `git log -p policies/catalog/catalog.yaml` (its `version:` lines). Add the old version here
# when the catalog's version is raised, so pins made with it still read as drift.
EARLIER_CATALOG_VERSIONS = ("2026.04.1", "2026.11.1", "2026.11.2")


def catalog_is_known(pinned: str, current: str) -> bool:
    """The pinned catalog is the current one or an earlier bundled one; an overlay's version
    ('2026.11.2+mine') counts by its bundled base, as the loader writes it."""
    base = pinned.split("+", 1)[0]
    return pinned == current or base == current.split("+", 1)[0] or base in EARLIER_CATALOG_VERSIONS


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
    if not catalog_is_known(plan.catalog.version, built.catalog_version):
        known = ", ".join((*EARLIER_CATALOG_VERSIONS, built.catalog_version))
        return [f"{STACK_KEY}.catalog.version is {plan.catalog.version!r}, a catalog accel does not know (known: "
                f"{known}), so its figures ({_usd(pinned)}/h) cannot be checked against any prices; the "
                f"{len(built.accelerator_pools)} pools it builds cost {_usd(now)}/h at catalog "
                f"{built.catalog_version}"], None
    if _same(now, pinned):
        return [], None
    if built.catalog_version == plan.catalog.version:
        return [f"{STACK_KEY}.chosen.hourly_usd says {_usd(pinned)}/h but the {len(built.accelerator_pools)} "
                f"pools it builds cost {_usd(now)}/h at catalog {built.catalog_version}, the catalog the pin "
                f"names: the pinned figures do not match the pinned hardware"], None
    note = (f"prices moved since the pin: {_usd(pinned)}/h at catalog {plan.catalog.version} (its prices are not "
            f"kept, so that figure is unverified) -> {_usd(now)}/h at catalog {built.catalog_version} for the same "
            f"hardware; the cost shown is repriced from catalog {built.catalog_version}; the pinned hardware is kept")
    return [], PriceDrift(pinned_hourly_usd=pinned, now_hourly_usd=round(now, 2), pinned_catalog=plan.catalog.version,
                          now_catalog=built.catalog_version, note=note)
