"""README's "Use the components in your own Pulumi program" passes the tool's own checks.

The python block and the stack file the section shows are written to a fresh project (its own
`Pulumi.yaml`, project name `user`) and planned with `accel plan -C DIR -s dev`, as the README tells a
user to: the guardrail pack must pass. Without the tags the README gives, the plan fails, and its fixes
name the `ResourceTags(...)` arguments, never the `accel:` stack keys a user project cannot set.
(tests/test_reuse.py runs the same block from an installed wheel; here the checkout's accel is used.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Use the components in your own Pulumi program"
ACCEL = Path(sys.executable).with_name("accel")
pytestmark = pytest.mark.skipif(not ACCEL.is_file(), reason="needs the installed accel script beside python")


def section_blocks(language: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def user_project(tmp_path: Path, program: str) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: user\nruntime: python\n", encoding="utf-8")
    (tmp_path / "Pulumi.dev.yaml").write_text(section_blocks("yaml")[0], encoding="utf-8")
    (tmp_path / "__main__.py").write_text(program, encoding="utf-8")
    return tmp_path


def plan(project: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "400"}  # one line per message, so phrases are not split by wrapping
    return subprocess.run([str(ACCEL), "plan", "-C", str(project), "-s", "dev"], capture_output=True, text=True,
                          env=env, cwd=project, timeout=300)


def test_the_readme_program_plans_with_every_guardrail_passing(tmp_path):
    outcome = plan(user_project(tmp_path, section_blocks("python")[0]))
    assert outcome.returncode == 0, outcome.stdout[-3000:] + outcome.stderr[-2000:]
    assert "Guardrails: all passed" in outcome.stdout


def test_without_its_tags_the_fix_says_what_to_pass_resource_tags_not_a_stack_key(tmp_path):
    program = section_blocks("python")[0]
    bare = re.sub(r"ResourceTags\((workload=.*?owner=\"[^\"]*\").*?\)", r"ResourceTags(\1)", program, flags=re.S)
    assert "ttl=" not in bare and "cost_center=" not in bare, "the README's tags call changed shape"
    outcome = plan(user_project(tmp_path, bare))
    assert outcome.returncode == 4, outcome.stdout[-3000:]
    assert 'ResourceTags(..., ephemeral=True, ttl="24h")' in outcome.stdout
    assert "ResourceTags(..., owner=..., cost_center=...)" in outcome.stdout
    assert "accel:ttl" not in outcome.stdout and "accel:costCenter" not in outcome.stdout
