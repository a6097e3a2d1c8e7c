"""Every top-level key of `accel plan --json` is documented in docs/contracts.md, section 2.2.

The keys are read from the source of `PlanResult.to_json` (the one place the document is built), so a
key added there without its line in the contract fails here, without running a plan.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS = (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8")


def plan_json_keys() -> list[str]:
    tree = ast.parse((ROOT / "accel" / "offline_plan.py").read_text(encoding="utf-8"))
    to_json = next(node for cls in tree.body if isinstance(cls, ast.ClassDef) and cls.name == "PlanResult"
                   for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == "to_json")
    returned = next(node.value for node in ast.walk(to_json) if isinstance(node, ast.Return))
    assert isinstance(returned, ast.Dict)
    return [key.value for key in returned.keys if isinstance(key, ast.Constant)]


def plan_section() -> str:
    match = re.search(r"### 2\.2 `accel plan --json`\n(.*?)\n### ", CONTRACTS, re.S)
    assert match, "docs/contracts.md has a section 2.2 for accel plan --json"
    return match.group(1)


def test_the_plan_document_has_the_keys_tools_rely_on():
    keys = plan_json_keys()
    assert {"stack", "resources", "summary", "cost", "plan", "policy", "needed_before_up", "job",
            "warnings"} <= set(keys)


def test_every_top_level_key_of_plan_json_is_in_section_2_2():
    section = plan_section()
    assert [key for key in plan_json_keys() if f'"{key}":' not in section] == []


def test_the_keys_a_newcomer_found_undocumented_are_explained_in_words():
    section = plan_section()
    for key in ("needed_before_up", "job", "warnings"):
        assert re.search(rf"^`{key}` (lists|is|are) ", section, re.M), f"{key} has no sentence saying what it holds"
