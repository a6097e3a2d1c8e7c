"""Config that only the user can give and that `pulumi up` needs, which offline planning can do without.

A GCP plan builds in the user's project (`gcp:project`); a stack that exposes a public Kubernetes
API endpoint (EKS) lets in only the user's own ranges (`accel:apiAccessCidrs`). Neither has a
safe default. Under `pulumi up` a missing key stops the program with the exact command to set it;
under `accel plan` (offline, nothing is created) the program plans with a visible placeholder and
reports the same commands, so a freshly written stack plans at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from accel.policies.cloud.reservation_names import GCP_PROJECT_ID
from accel.policies.plan import Plan

PLACEHOLDER_PROJECT = "your-gcp-project"
# "This network" (RFC 1122): never the source of a connection, so it admits nobody, and it is
# not a documentation range. Only offline plans ever carry it.
PLACEHOLDER_CIDR = "0.0.0.0/32"

_offline = False


@contextmanager
def offline_placeholders() -> Iterator[None]:
    """While active (accel plan), missing deploy keys get placeholders instead of stopping the program."""
    global _offline
    saved, _offline = _offline, True
    try:
        yield
    finally:
        _offline = saved


def placeholders_allowed() -> bool:
    return _offline


@dataclass(frozen=True)
class DeployKey:
    """One key `pulumi up` still needs: what it is for, and the command that sets it."""

    key: str
    why: str
    set_command: str
    placeholder: object

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "why": self.why, "command": self.set_command}


_PROJECT_ID = re.compile(GCP_PROJECT_ID)   # the one rule, with its source (policies/cloud/reservation_names.py)


def project_id_problem(project: object) -> str | None:
    """Why `gcp:project` cannot be a Google Cloud project id, or None. A typo here would only surface at `pulumi up`,
    as the provider's 403 or 404 for a project nobody can reach."""
    if isinstance(project, str) and _PROJECT_ID.fullmatch(project):
        return None
    return (f"gcp:project: {project!r} is not a Google Cloud project id: 6 to 30 lowercase letters, digits or hyphens, "
            "starting with a letter and not ending with a hyphen (the project's id, not its display name or number)")


def missing_deploy_keys(plan: Plan, config: Mapping[str, str], api_access_cidrs: list[str],
                        stack: str) -> list[DeployKey]:
    """The keys this stack's plan needs for `pulumi up` that its config does not set."""
    missing = []
    if plan.cloud == "gcp" and not config.get("gcp:project"):
        missing.append(DeployKey(
            "gcp:project", "the Google Cloud project to build in (its id, not its name)",
            f"pulumi config set gcp:project <your-project-id> -s {stack}", PLACEHOLDER_PROJECT))
    if plan.cloud == "aws" and not api_access_cidrs:
        missing.append(DeployKey(
            "accel:apiAccessCidrs",
            "the EKS API endpoint is public: the ranges allowed to reach it (your office/VPN/CI egress; "
            "documentation ranges such as 203.0.113.0/24 are refused); Helm releases and Kubernetes "
            "objects are applied through it",
            f"pulumi config set --path 'accel:apiAccessCidrs[0]' <your-egress-ip>/32 -s {stack}",
            [PLACEHOLDER_CIDR]))
    return missing


def missing_keys_message(missing: list[DeployKey]) -> str:
    lines = ["`pulumi up` needs config only you can give; set it with:"]
    lines += [f"  {key.set_command}    # {key.key}: {key.why}" for key in missing]
    return "\n".join(lines)
