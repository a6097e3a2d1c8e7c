"""What the stack file says about the stack's explicit AWS or Google provider: its identity, account and endpoint.

The providers are explicit (training_cluster.py builds them with the plan's region), and an explicit provider reads no
aws:* / gcp:* stack config by itself (pulumi/pulumi-aws#1307, "by design"), so the stack program reads those keys
(accel/stack/provider_config.py, its table accel/stack/provider_keys.yaml) and hands them over here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProviderSettings:
    """Keyword arguments of the provider (`profile`, `assume_roles`, ...), as plain data; those named in `secret` are
    credentials or were secrets in the stack file, and reach the provider as secrets."""

    args: Mapping[str, Any] = field(default_factory=dict)
    secret: frozenset[str] = frozenset()

    def provider_args(self) -> dict[str, Any]:
        import pulumi

        return {name: pulumi.Output.secret(value) if name in self.secret else value
                for name, value in self.args.items()}
