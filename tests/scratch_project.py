"""A project as a user clones it (Pulumi.yaml and the program, an empty stacks/), with the stack files a test gives,
for tests that run `accel plan -s` / `accel job -s` from a scratch directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OWNER_CONFIG = {"gcp:project": "acme-ml", "accel:owner": "jdoe", "accel:costCenter": "research-1234"}


def scratch_project(root: Path, stacks: dict[str, dict[str, Any]] | None = None) -> Path:
    """Copy the project's Pulumi.yaml and __main__.py into `root` and write stacks/Pulumi.NAME.yaml for each
    NAME -> config mapping of `stacks`; returns `root`."""
    for name in ("Pulumi.yaml", "__main__.py"):
        (root / name).write_text((ROOT / name).read_text())
    (root / "stacks").mkdir(exist_ok=True)
    for stack, config in (stacks or {}).items():
        (root / "stacks" / f"Pulumi.{stack}.yaml").write_text(json.dumps({"config": config}))
    return root


def workload_stack(workload: dict[str, Any]) -> dict[str, Any]:
    """The config of a GCP stack that names an owner and a cost centre and decides `workload` at plan time."""
    return {**OWNER_CONFIG, "accel:workload": workload}
