"""Spot alternates: what `accel choose` offers is what the node group and the mandatory guardrail accept.

The rule is the hardware table's (AwsGpuInstance.can_stand_in_for): same GPU count, a GPU of the same
compute capability (the same kernels) with at least the primary's memory. p4de (A100 80GB) stands in
for p4d (A100 40GB); newcomer audit 2026-11-26 finding 5 had the guardrail refuse that pair.
"""

from __future__ import annotations

from types import SimpleNamespace

from accel.policies.catalog import load_catalog
from accel.policies.guardrails.rules.accelerators import alternate_problems
from accel.policies.selection.plan_builder import _spot_alternates


def test_every_alternate_the_plan_builder_offers_passes_the_guardrail():
    offered = 0
    for offering in load_catalog().offerings:
        if offering.cloud != "aws" or not offering.spot_alternates:
            continue
        alternates = _spot_alternates(offering)
        offered += len(alternates)
        assert alternate_problems([offering.machine_type, *alternates]) == [], offering.id
    assert offered > 0


def test_the_p4d_offering_keeps_its_p4de_alternate():
    p4d = next(o for o in load_catalog().offerings if o.machine_type == "p4d.24xlarge")
    assert _spot_alternates(p4d) == ["p4de.24xlarge"]


def test_an_alternate_the_guardrail_would_refuse_is_not_offered():
    # A catalog entry listing an A100 machine as the spot alternate of an H100 one (mutated).
    mutated = SimpleNamespace(machine_type="p5.48xlarge", spot_alternates=["p4de.24xlarge", "p5e.48xlarge"])
    assert alternate_problems(["p5.48xlarge", "p4de.24xlarge"])  # the guardrail refuses the pair
    assert _spot_alternates(mutated) == ["p5e.48xlarge"]
