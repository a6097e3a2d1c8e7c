"""Every guardrail, grouped by concern. `all_policies()` is what the pack and the offline runner run.

Rules read only property dicts: no provider SDK (pulumi_gcp, pulumi_aws) is imported here,
so the pack starts fast and runs in a venv with just pulumi-policy.
"""

from __future__ import annotations

from pulumi_policy import Policy

from accel.policies.guardrails.rules import (
    accelerators,
    budget,
    capacity,
    cloud_apis,
    data_safety,
    exposure,
    labels,
    lifecycle,
)

PACK_NAME = "accel-guardrails"
MODULES = (budget, data_safety, lifecycle, exposure, accelerators, capacity, cloud_apis, labels)


def all_policies() -> list[Policy]:
    policies = [policy for module in MODULES for policy in module.POLICIES]
    names = [p.name for p in policies]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"duplicate guardrail ids: {sorted(duplicates)}")
    return policies


def policy_ids() -> list[str]:
    return [p.name for p in all_policies()]
