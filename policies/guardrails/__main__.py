"""Entry point the Pulumi CLI runs for `--policy-pack policies/guardrails`.

PolicyPack(...) starts the analyzer's gRPC server and never returns, so it is built here
and nowhere else; the rules stay importable from `accel.policies.guardrails.rules`.
"""

import sys
from pathlib import Path

# The CLI runs this directory as a script; the rules import `policies.*` from the repo root.
_REPO_ROOT = Path(__file__).resolve().parents[2]
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from accel.policies.guardrails.rules import PACK_NAME, all_policies  # noqa: E402

PolicyPack(
    name=PACK_NAME,
    enforcement_level=EnforcementLevel.ADVISORY,
    policies=all_policies(),
    description="Guardrails for accel training stacks: budget, data safety, expiry, exposure, "
                "accelerator sanity, ownership labels.",
)
