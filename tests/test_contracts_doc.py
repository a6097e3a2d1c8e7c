"""docs/contracts.md documents what other tools rely on, and the sources cite only files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.main import get_command

from accel.cli import COMMANDS, _register_commands, app
from accel.policies.plan import Capacity, GpuPool, Option, Plan, TpuPool
from accel.stack.settings import StackSettings

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS = (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8")
SOURCES = [p for d in ("accel", "policies", "components") for p in (ROOT / d).rglob("*.py")]


def fields(model) -> list[str]:
    return [*model.model_fields, *model.model_computed_fields]


@pytest.mark.parametrize("model", [Plan, Option, TpuPool, GpuPool, Capacity])
def test_every_plan_field_is_in_the_contracts(model):
    missing = [name for name in fields(model) if f"`{name}`" not in CONTRACTS and f" {name}," not in CONTRACTS]
    assert missing == [], f"docs/contracts.md does not mention {model.__name__} fields {missing}"


def test_every_stack_key_is_in_the_contracts():
    assert [key for key in StackSettings.model_fields if f"accel:{key}" not in CONTRACTS] == []


def test_every_command_and_option_is_in_the_contracts():
    _register_commands()  # the command line registers only the command being run; the contract covers all
    cli = get_command(app)
    assert sorted(cli.commands) == sorted(COMMANDS)  # type: ignore[attr-defined]
    missing = []
    for name, command in cli.commands.items():  # type: ignore[attr-defined]
        if f"accel {name}" not in CONTRACTS:
            missing.append(name)
        for parameter in command.params:
            longest = max((o for o in parameter.opts if o.startswith("--")), key=len, default=None)
            if longest and longest != "--help" and f"`{longest}" not in CONTRACTS and f" {longest} " not in CONTRACTS:
                missing.append(f"{name} {longest}")
    assert missing == []


def test_docs_cited_by_the_sources_exist():
    cited = {m for path in SOURCES for m in re.findall(r"(?<![\w/.-])docs/[\w./-]+\.md", path.read_text(encoding="utf-8"))}
    assert cited, "the sources cite their docs"
    assert sorted(c for c in cited if not (ROOT / c).is_file()) == []


def test_no_source_cites_a_design_file_outside_the_repository():
    assert [str(p.relative_to(ROOT)) for p in SOURCES if "DESIGN.md" in p.read_text(encoding="utf-8")] == []
