"""Pulumi's own rule for a stack reference a command hands to the Pulumi CLI (`accel destroy-after-run -s`).

A reference is `stack`, `owner/stack` or `owner/project/stack` (pulumi/pulumi, read at 1b59498 of 2026-08-21):
- the split on '/': pkg/backend/httpstate/backend.go:1086 (`parseStackName`, 1 to 3 parts);
- owner: pkg/backend/httpstate/backend.go:140 (`stackOwnerRegexp`: 3 to 40 letters, digits, '-' or '_', starting
  and ending with a letter or digit);
- project: sdk/go/common/tokens/project.go:28 (`ValidateProjectName`: 1 to 100 letters, digits, '-', '_', '.');
- stack: sdk/go/common/tokens/stack_name.go:54 (`ParseStackName`: the same alphabet, 1 to 100 characters).
So `../x` is refused by Pulumi itself (owner '..'), and by accel before it looks for the CLI.
"""

from __future__ import annotations

import re

from accel.base.errors import UsageError

_OWNER = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_-]{1,38}[a-zA-Z0-9]")
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")  # a project or a stack


def stack_reference_problem(reference: str) -> str | None:
    """Why the Pulumi CLI would refuse `reference` as a stack, or None."""
    parts = reference.split("/")
    if len(parts) > 3:
        return "at most owner/project/stack: Pulumi splits a stack reference into 1 to 3 parts on '/'"
    *qualifiers, name = parts
    if not _NAME.fullmatch(name):
        return "a stack name is 1 to 100 letters, digits, '-', '_' or '.'"
    if qualifiers and not _OWNER.fullmatch(qualifiers[0]):
        return (f"its owner {qualifiers[0]!r} is not an organization or user name (3 to 40 letters, digits, '-' or "
                "'_', starting and ending with a letter or digit)")
    if len(qualifiers) == 2 and not _NAME.fullmatch(qualifiers[1]):
        return f"its project {qualifiers[1]!r} is not a project name (1 to 100 letters, digits, '-', '_' or '.')"
    return None


def check_stack_reference(reference: str, option: str = "-s/--stack") -> str:
    """`reference` if Pulumi takes it as a stack; a UsageError naming `option` and the rule otherwise."""
    problem = stack_reference_problem(reference)
    if problem:
        raise UsageError(f"{option}: {reference!r} is not a Pulumi stack (stack, org/stack or org/project/stack): "
                         f"{problem}")
    return reference
