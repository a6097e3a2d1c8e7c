"""Every shipped stack passes the guardrail pack under the documented example config, or its header
says it is an example of a refusal and names the rules that refuse it."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel.offline_plan import evaluate_guardrails, load_policy_config

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "policies" / "guardrails" / "policy-config.example.json"
REFUSAL = "Example of a refusal"


def header(stack: str) -> str:
    lines = (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text().splitlines()
    return "\n".join(line for line in lines if line.startswith("#"))


def mandatory(plan: dict) -> list[str]:
    violations, note = evaluate_guardrails(plan["resources"], load_policy_config(EXAMPLE))
    assert note is None
    return sorted({v["policy"] for v in violations if v["level"] == "mandatory"})


SHIPPED_STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml")
                        for p in (Path(__file__).resolve().parent.parent / "stacks").glob("Pulumi.*.yaml"))


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_a_stack_passes_the_example_config_or_its_header_names_the_refusal(planned_stacks, stack):
    refused = mandatory(planned_stacks[stack])
    if REFUSAL in header(stack):
        assert refused, f"{stack} says it is refused but passes"
        assert all(policy in header(stack) for policy in refused)
    else:
        assert refused == []
