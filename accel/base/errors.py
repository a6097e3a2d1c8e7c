"""User-facing errors: one root (AccelError), one input-error shape (UsageError, exit 2).

A message names the file or field, the value and what is allowed. Standard library only.

Commands raise UsageError (exit 2), NothingFeasible (exit 3) or GuardrailFailure (exit 4);
`fail()` prints the message to stderr without a traceback and exits with the code.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

EXIT_INVALID = 2
EXIT_INFEASIBLE = 3
EXIT_GUARDRAIL = 4


class AccelError(Exception):
    exit_code = 1


class UsageError(AccelError):
    """Bad input: a file, a key, a value. Exit 2."""

    exit_code = EXIT_INVALID


class ComponentArgsError(UsageError, ValueError):
    """Component arguments that cannot be built: the message names the component, the property,
    the value and what is allowed. A ValueError too, so a Pulumi program that uses the components
    directly sees the usual Python error for a bad argument.

    The one error of every component on every cloud (GCP, AWS, Kubernetes); build it with
    `invalid_arg` so every message has the same shape."""

    component: str | None = None
    field: str | None = None
    value: Any = None


def invalid_arg(component: str, field: str, value: Any, allowed: str) -> ComponentArgsError:
    """`Component.property: value is not valid; what is allowed` (the one message shape)."""
    error = ComponentArgsError(f"{component}.{field}: {value!r} is not valid; {allowed}")
    error.component, error.field, error.value = component, field, value
    return error


class NothingFeasible(AccelError):
    exit_code = EXIT_INFEASIBLE


class GuardrailFailure(AccelError):
    exit_code = EXIT_GUARDRAIL


def fail(error: AccelError) -> NoReturn:
    print(f"error: {error}", file=sys.stderr)
    raise SystemExit(error.exit_code)
