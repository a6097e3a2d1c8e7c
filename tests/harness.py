"""The one mock harness: run Pulumi code on the mock engine and get back what it declared.

Use `run(program)` (or the `declare` fixture in conftest) and assert on the returned
Capture *after* the program has finished: an assertion inside an `apply` can run before the
children register, and in preview an apply on an unknown never runs at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from accel.mock_engine import Capture, CapturedResource, run_program

__all__ = ["Capture", "CapturedResource", "run", "MODES"]

MODES = ("preview", "up")


def run(program: Callable[[], None], *, mode: str = "preview", stack: str = "test",
        config: Mapping[str, str] | None = None,
        answers: Mapping[str, Callable[[dict], dict]] | None = None) -> Capture:
    """Run `program` as the body of a stack in `mode` ('preview' or 'up')."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    return run_program(program, stack=stack, config=config, preview=(mode == "preview"), answers=answers)
