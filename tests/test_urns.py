"""URNs in `accel plan --json` are the engine's: root `pulumi:pulumi:Stack` named `<project>-<stack>`,
a child's type chain its parents' whole chain without the stack type (tests/fixtures/urns, real documents)."""

from __future__ import annotations

import json
from pathlib import Path

import pulumi
import pytest

from accel.mock_engine import run_program
from tests.preview_documents import create_everything, root_urn

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REAL = json.loads((FIXTURES / "urns" / "engine_urns.json").read_text())
STACK_TYPE = "pulumi:pulumi:Stack"


class Thing(pulumi.ComponentResource):
    def __init__(self, type_token: str, name: str, parent: pulumi.Resource | None = None):
        super().__init__(type_token, name, None, pulumi.ResourceOptions(parent=parent))
        self.register_outputs({})


def declare_like(document: dict) -> dict[str, str]:
    """Declare the document's resources (same types, names and parents) on the mock engine: {name: urn}."""
    def program() -> None:
        made: dict[str, pulumi.Resource] = {}
        by_urn = {r["urn"]: r for r in document["resources"]}
        for resource in document["resources"]:
            if resource["type"] == STACK_TYPE:
                continue
            parent = by_urn.get(resource["parent"])
            made[resource["urn"]] = Thing(resource["type"], resource["name"],
                                          None if parent is None or parent["type"] == STACK_TYPE
                                          else made[resource["parent"]])
    capture = run_program(program, project=document["project"], stack=document["stack"])
    return {r.name: r.urn for r in capture.resources}


@pytest.mark.parametrize("document", [d for d in REAL["documents"] if len(d["resources"]) > 1],
                         ids=lambda d: d["source"])
def test_the_mock_engine_forms_urns_as_the_real_engine_did(document):
    declared = declare_like(document)
    for resource in document["resources"]:
        if resource["type"] != STACK_TYPE:
            assert declared[resource["name"]] == resource["urn"]


@pytest.mark.parametrize("document", REAL["documents"], ids=lambda d: d["source"])
def test_the_root_stack_is_named_project_dash_stack(document):
    [root] = [r for r in document["resources"] if r["type"] == STACK_TYPE]
    assert root["urn"] == root_urn(document["stack"], document["project"])


def test_a_grandchild_carries_its_parents_whole_type_chain_without_the_stack():
    def program() -> None:
        outer = Thing("test:index:Outer", "outer")
        middle = Thing("test:index:Middle", "middle", outer)
        Thing("test:index:Inner", "inner", middle)
    urns = {r.name: r.urn for r in run_program(program, project="p", stack="s").resources}
    assert urns == {"outer": "urn:pulumi:s::p::test:index:Outer::outer",
                    "middle": "urn:pulumi:s::p::test:index:Outer$test:index:Middle::middle",
                    "inner": "urn:pulumi:s::p::test:index:Outer$test:index:Middle$test:index:Inner::inner"}


def test_every_plan_urn_is_its_parents_chain_plus_its_type(every_stack):
    for plan in every_stack.values():
        by_urn = {r["urn"]: r for r in plan["resources"]}
        for resource in plan["resources"]:
            parent = by_urn.get(resource["parent"])
            chain = resource["type"] if parent is None else parent["urn"].split("::")[2] + "$" + resource["type"]
            assert resource["urn"] == f"urn:pulumi:{plan['stack']}::accel::{chain}::{resource['name']}"


def test_plan_and_review_fixture_urns_match_one_for_one():
    """The review fixtures: a real-format preview of the stack and its `accel plan --json` name the same URNs."""
    plan = json.loads((FIXTURES / "review" / "plan_head.json").read_text())
    preview = json.loads((FIXTURES / "review" / "preview_create.json").read_text())
    preview_urns = {s["urn"] for s in preview["steps"] if s["newState"]["type"] != STACK_TYPE}
    assert preview_urns == {r["urn"] for r in plan["resources"]}


def test_a_preview_built_from_a_plan_counts_each_resource_once(planned_stacks):
    plan = planned_stacks["llama-70b-tpu"]
    steps = create_everything(plan)["steps"]
    assert len({s["urn"] for s in steps}) == len(steps) == len(plan["resources"]) + 1
