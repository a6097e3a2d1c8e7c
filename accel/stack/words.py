"""Say component arguments in the words of the stack file.

The components name their Python properties (`GkeClusterArgs.upgrade_pause`) in the warnings and
guardrail fixes they raise: that is right for a Pulumi program that builds them directly. A person
who runs `accel plan` or reads `accel review` wrote a stack file instead, so the command line
rewrites those phrases into the stack key they can change and the command that changes it. Each
phrase the components use is listed once here; tests/test_stack_words.py scans every command's
output for Python names that slipped through.
"""

from __future__ import annotations

import re

# Python phrase (a regular expression over component messages) -> what the stack file user does.
STACK_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"GkeClusterArgs\.upgrade_pause"),
     "accel:upgradePause in the stack file (pulumi config set --path 'accel:upgradePause.start' <UTC time>, "
     "and .end)"),
    (re.compile(r"give the component ResourceTags\(\.\.\., ephemeral=True, ttl=\"24h\"\) \(or expires_at=\.\.\.\)"),
     "set accel:ttl or accel:expiresAt in the stack file (pulumi config set accel:ttl 24h)"),
    (re.compile(r"give the component ResourceTags\(\.\.\., owner=\.\.\., cost_center=\.\.\.\) "
                r"\(a resource of your own: stamp ResourceTags\.(?:aws_tags|gcp_labels)\(\) on it\)"),
     "set owner and cost_center in the workload spec (or accel:owner / accel:costCenter in the stack config); "
     "the stack program stamps them on every resource it declares"),
    # A stack pins its Plan (accel:plan) or decides it from accel:workload / accel:hardware, where the filesystem
    # follows the catalog's storage assumptions (policies/estimator/estimate.py filesystem_plan): a key for each.
    (re.compile(r"set TrainingClusterArgs\.plan\.storage\.filesystem to 'none'"),
     "turn the filesystem off in the stack file: a stack that pins its plan (accel:plan) with pulumi config set "
     "--path 'accel:plan.storage.filesystem' none; a stack that decides it (accel:workload, accel:hardware) with "
     "accel:catalog naming an overlay that sets assumptions.storage.filesystem_max_cost_fraction.value to 0"),
)


def in_stack_words(message: str) -> str:
    """`message` with every component-level phrase replaced by the stack key and the command."""
    for pattern, words in STACK_WORDS:
        message = pattern.sub(words, message)
    return message
