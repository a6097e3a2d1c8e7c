"""The one mock harness: run Pulumi code on the mock engine and get back what it declared.

Use `run(program)` (or the `declare` fixture in conftest) and assert on the returned
Capture *after* the program has finished: an assertion inside an `apply` can run before the
children register, and in preview an apply on an unknown never runs at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from accel.mock_engine import Capture, CapturedResource, run_program

__all__ = ["Capture", "CapturedResource", "run", "rejected", "MODES"]

MODES = ("preview", "up")


def run(program: Callable[[], None], *, mode: str = "preview", stack: str = "test",
        config: Mapping[str, str] | None = None,
        answers: Mapping[str, Callable[[dict], dict]] | None = None) -> Capture:
    """Run `program` as the body of a stack in `mode` ('preview' or 'up')."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    return run_program(program, stack=stack, config=config, preview=(mode == "preview"), answers=answers)


def rejected(declare: Callable[..., Capture], build: Callable[[], object], error_type: type[Exception],
             match: str | None = None) -> Exception:
    """Run `build` as a program: it must raise `error_type` before registering any resource.

    Returns the error so the test can assert on its message.
    """
    caught: list[Exception] = []

    def program() -> None:
        try:
            build()
        except error_type as error:
            caught.append(error)

    capture = declare(program)
    assert caught, f"the invalid args were accepted (no {error_type.__name__} raised)"
    if match is not None:
        assert re.search(match, str(caught[0])), f"{str(caught[0])!r} does not match {match!r}"
    assert capture.resources == [], "resources registered before the args were rejected"
    return caught[0]
