"""`pulumi preview --json` documents built from `accel plan --json`, in the CLI's real step format.

The step shape follows the fixtures in tests/fixtures/review (a real preview's keys: `op`, `urn`,
`provider`, `newState` {urn, custom, type, inputs, parent, protect, retainOnDelete}, `detailedDiff`),
with the root `pulumi:pulumi:Stack` step first, named `<project>-<stack>` as the engine names it.
"""

from __future__ import annotations

from typing import Any

STACK_TYPE = "pulumi:pulumi:Stack"


def root_urn(stack: str, project: str = "accel") -> str:
    return f"urn:pulumi:{stack}::{project}::{STACK_TYPE}::{project}-{stack}"


def create_everything(plan: dict[str, Any], project: str = "accel") -> dict[str, Any]:
    """The preview of a first `pulumi up`: every resource the plan declares is a create."""
    stack = plan["stack"]
    root = root_urn(stack, project)
    steps = [{"op": "create", "urn": root,
              "newState": {"urn": root, "custom": False, "type": STACK_TYPE, "inputs": {}}, "detailedDiff": None}]
    for resource in plan["resources"]:
        state = {"urn": resource["urn"], "custom": resource.get("custom", True), "type": resource["type"],
                 "inputs": resource["inputs"], "parent": resource.get("parent") or root,
                 "protect": resource.get("protect", False), "retainOnDelete": resource.get("retain_on_delete", False)}
        steps.append({"op": "create", "urn": resource["urn"], "newState": state, "detailedDiff": None})
    return {"steps": steps, "changeSummary": {"create": len(steps)}, "duration": 1}
