"""The plan-time assumptions of the GCP build tell a person what to change in words the stack accepts."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from accel.components.gcp.assumptions import gcp_assumptions
from accel.policies.plan import Plan

ROOT = Path(__file__).resolve().parent.parent


def test_the_lustre_on_tpu_warning_names_a_stack_key_that_turns_the_filesystem_off():
    config = yaml.safe_load((ROOT / "stacks" / "Pulumi.llama-70b-tpu.yaml").read_text())["config"]
    plan = Plan.model_validate(config["accel:plan"])
    assert plan.tpu is not None and plan.storage.filesystem == "managed-lustre"
    warning = next(m for m in gcp_assumptions(plan) if "Managed Lustre" in m)
    path, value = re.search(r"pulumi config set --path '([^']+)' (\S+)\)", warning).groups()
    namespace, *keys = path.split(".")
    edited = config[namespace]
    for key in keys[:-1]:
        edited = edited[key]
    edited[keys[-1]] = value
    assert Plan.model_validate(config["accel:plan"]).storage.filesystem == "none"
