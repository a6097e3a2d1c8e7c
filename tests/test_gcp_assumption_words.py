"""The plan-time assumptions of the GCP build tell a person what to change in words the stack accepts, whether
the stack pins its Plan (accel:plan) or decides it from accel:workload and accel:hardware."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from accel.base.errors import UsageError
from accel.components.gcp.assumptions import gcp_assumptions
from accel.policies.plan import Plan
from accel.stack.program import read_stack
from accel.stack.words import in_stack_words

ROOT = Path(__file__).resolve().parent.parent


def stack_config(stack: str) -> dict:
    return yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]


def program_config(config: dict) -> dict[str, str]:
    """Fully qualified config as the CLI hands it to the program (objects JSON-encoded)."""
    return {"gcp:project": "acme-proj", **{key: value if isinstance(value, str) else json.dumps(value)
                                      for key, value in config.items()}}


def lustre_warning(plan: Plan) -> str:
    """The Managed Lustre on TPU assumption as `accel plan` prints it (in the stack file's words)."""
    return in_stack_words(next(m for m in gcp_assumptions(plan) if "Managed Lustre" in m))


def test_the_lustre_on_tpu_warning_names_a_key_a_pinned_plan_turns_the_filesystem_off_with():
    config = stack_config("llama-70b-tpu")
    plan = Plan.model_validate(config["accel:plan"])
    assert plan.tpu is not None and plan.storage.filesystem == "managed-lustre"
    path, value = re.search(r"pulumi config set --path '([^']+)' (\S+);", lustre_warning(plan)).groups()
    namespace, *keys = path.split(".")
    edited = config[namespace]
    for key in keys[:-1]:
        edited = edited[key]
    edited[keys[-1]] = value
    assert Plan.model_validate(config["accel:plan"]).storage.filesystem == "none"


def test_the_lustre_on_tpu_warning_names_a_key_a_stack_deciding_its_plan_turns_the_filesystem_off_with(tmp_path):
    """llama-70b-v5p pins hardware, not a Plan: setting accel:plan.storage.filesystem there leaves a Plan with only
    its storage, which the stack refuses; the warning names the catalog overlay such a stack reads instead."""
    config = stack_config("llama-70b-v5p")
    assert "accel:plan" not in config and "accel:hardware" in config
    plan = read_stack(program_config(config), "llama-70b-v5p").plan
    assert plan.tpu is not None and plan.storage.filesystem == "managed-lustre"
    warning = lustre_warning(plan)
    with pytest.raises(UsageError, match="accel:plan"):
        read_stack(program_config({**config, "accel:plan": {"storage": {"filesystem": "none"}}}), "llama-70b-v5p")
    key, path, value = re.search(r"with (accel:\w+) naming an overlay that sets assumptions\.(\S+) to (\d+) \(",
                                 warning).groups()
    overlay: dict = {}
    *parents, last = path.split(".")
    node = overlay.setdefault("assumptions", {})
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = yaml.safe_load(value)
    (tmp_path / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    edited = read_stack(program_config({**config, key: str(tmp_path / "overlay.yaml")}), "llama-70b-v5p").plan
    assert (edited.storage.filesystem, edited.chosen) == ("none", plan.chosen)
