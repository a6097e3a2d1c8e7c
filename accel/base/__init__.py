"""The bottom layer: errors, the YAML reader, the strict base model, units.

Everything else in accel may import it; it imports nothing else of accel. `errors` and
`units` use only the standard library, so the guardrail pack can use them on its own.
"""
