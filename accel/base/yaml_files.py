"""Reading a user's YAML (or JSON) file: one way, with errors that name the file and the spot.

Workload files, stack files, catalog overlays and policy configs all come through here, so a
missing file, a directory, an unreadable file or a syntax error reads the same everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from accel.base.errors import UsageError


def read_yaml_file(path: Path, what: str, *, error: type[UsageError] = UsageError, shown: str | None = None) -> Any:
    """Parse `path`; raise `error` (exit 2) naming `shown` (default: the path) on any failure.

    `what` names the file's role in messages, e.g. "workload file" or "stack file".
    """
    shown = shown or str(path)
    if path.is_dir():
        raise error(f"{shown}: is a directory; expected a {what}")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{shown}: no such {what}") from None
    except (PermissionError, UnicodeDecodeError) as problem:
        raise error(f"{shown}: cannot read the {what} ({problem.__class__.__name__})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as problem:
        mark = getattr(problem, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        detail = getattr(problem, "problem", None) or str(problem).splitlines()[0]
        raise error(f"{shown}: not valid YAML{where}: {detail}") from None
