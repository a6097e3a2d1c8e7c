"""Entry point the Pulumi CLI runs for `--policy-pack policies/guardrails`.

PolicyPack(...) starts the analyzer's gRPC server and never returns, so it is built here
and nowhere else; the rules stay importable from `accel.policies.guardrails.rules`.
"""

import sys
from pathlib import Path

# The CLI runs this directory as a script. In a checkout (policies/guardrails under a Pulumi project
# holding accel/) the rules come from the checkout; a copy of the pack alone gets them from the
# accel distribution its requirements.txt installs.
_HERE = Path(__file__).resolve().parent
_CHECKOUT = _HERE.parent.parent
if (_CHECKOUT / "Pulumi.yaml").is_file() and (_CHECKOUT / "accel" / "__init__.py").is_file() \
        and str(_CHECKOUT) not in sys.path:
    sys.path.insert(0, str(_CHECKOUT))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from accel.policies.guardrails.rules import PACK_NAME, all_policies  # noqa: E402

PolicyPack(
    name=PACK_NAME,
    enforcement_level=EnforcementLevel.ADVISORY,
    policies=all_policies(),
    description="Guardrails for accel training stacks: budget, data safety, expiry, exposure, "
                "accelerator sanity, ownership labels.",
)
