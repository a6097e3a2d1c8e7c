"""Tab completion of stack names (`accel plan -s llama-<TAB>`): the stack files of the project the shell
is in, as `accel plan` would look them up. Completion never fails: outside a project it offers nothing."""

from __future__ import annotations

from pathlib import Path


def complete_stack(incomplete: str) -> list[str]:
    from accel.base.errors import AccelError
    from accel.stack.config import available_stacks, find_project_dir, load_project

    try:
        stacks = available_stacks(load_project(find_project_dir(Path.cwd())))
    except (AccelError, OSError):
        return []
    return [name for name in stacks if name.startswith(incomplete)]
