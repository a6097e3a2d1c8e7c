"""The guardrail policy pack: CrossGuard rules run by `pulumi preview --policy-pack` and,
offline over a mock-captured graph, by `accel plan` (see offline.py and docs/guardrails.md).

Importing this package is cheap; the rules live in `accel.policies.guardrails.rules`.
"""
