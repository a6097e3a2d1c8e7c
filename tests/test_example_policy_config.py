"""Every shipped stack passes the guardrail pack under the documented example config, or its header
says it is an example of a refusal and names the rules that refuse it."""

from __future__ import annotations

from copy import deepcopy
from pathlib import Path

import pytest
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    StackValidationArgs,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import unknown_checking_proxy

from accel.offline_plan import evaluate_guardrails, load_policy_config
from accel.policies.guardrails.rules import all_policies

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "policies" / "guardrails" / "policy-config.example.json"
REFUSAL = "Example of a refusal"
POLICIES = {p.name: p for p in all_policies()}


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


# --- a pin tampered past what the Plan says, seen by the pack as the CLI hands it over ------------


def hand_built_stack_args(resources: list[dict], policy: str) -> StackValidationArgs:
    """The StackValidationArgs the CLI's analyzer builds: resource_type, props, name, urn, parent linked."""
    built = {r["urn"]: PolicyResource(r["type"], unknown_checking_proxy(deserialize_properties(r["inputs"])), r["urn"],
                                      r["name"], PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0),
                                                                       [], r.get("parent")), None, None, [], {})
             for r in resources}
    for raw in resources:
        built[raw["urn"]].parent = built.get(raw.get("parent") or "")
    settings = {k: v["default"] for k, v in POLICIES[policy].config_schema.properties.items() if "default" in v}
    settings |= load_policy_config(EXAMPLE).get(policy, {})
    return StackValidationArgs(list(built.values()), settings, {})


def tpu_pools_to(resources: list[dict], slices: int) -> list[dict]:
    """The stack's resources with its TPU slice pools copied until there are `slices` of them."""
    pools = [r for r in resources if r["type"] == "gcp:container/nodePool:NodePool"
             and str(r["inputs"].get("nodeConfig", {}).get("machineType", "")).startswith("ct")]
    extra = []
    for index in range(len(pools), slices):
        copy = deepcopy(pools[index % len(pools)])
        copy["name"] = f"{copy['name']}-copy{index}"
        copy["urn"] = f"{copy['urn']}-copy{index}"
        extra.append(copy)
    return [*resources, *extra]


def budget_messages(resources: list[dict], policy: str) -> list[str]:
    messages: list[str] = []
    POLICIES[policy].validate(hand_built_stack_args(resources, policy), lambda m, urn=None: messages.append(m))
    return messages


@pytest.mark.parametrize("policy", ["budget-hourly-limit", "budget-run-limit"])
def test_the_shipped_tpu_stack_passes_the_budget_rules_with_hand_built_cli_args(planned_stacks, policy):
    assert budget_messages(planned_stacks["llama-70b-tpu"]["resources"], policy) == []


@pytest.mark.parametrize("policy", ["budget-hourly-limit", "budget-run-limit"])
def test_forty_tpu_pools_under_a_plan_that_says_fewer_trip_the_budget_rules(planned_stacks, policy):
    plan = planned_stacks["llama-70b-tpu"]
    assert plan["plan"]["chosen"]["slices"] < 40  # the Plan the TrainingCluster carries still says its own count
    [message] = budget_messages(tpu_pools_to(plan["resources"], 40), policy)
    assert "40 accelerator pool(s)" in message and f"violates {policy}" in message
