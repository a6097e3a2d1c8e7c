"""Values the suite's workers build once per run and share: the plans of every stack.

pytest-xdist runs the suite in several worker processes, and a session fixture runs once per
worker. A stack's plan is the same in every worker (the same code, stack file and catalog), so
the first worker to need it plans it and pickles it into the run's own temporary directory
(`<basetemp>/popen-gwN`'s parent, fresh for every run, so never stale); the others read it back.
A file lock per value (fcntl.flock, released by the kernel if a worker dies) makes one worker
build while the others wait for it or, for a batch, build the next value nobody has taken yet.
Each worker then keeps what it read (functools.cache / session fixtures), as before.

Without xdist (`-n 0`) or without fcntl, every value is built in the process, as before.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # not POSIX: no sharing, each process builds its own
    fcntl = None  # type: ignore[assignment]

_run_dir: Path | None = None
_MISSING = object()


def share_within(run_dir: Path | None) -> None:
    """Share values through `run_dir` (None: build everything in this process)."""
    global _run_dir
    _run_dir = run_dir if fcntl is not None else None
    if _run_dir is not None:
        _run_dir.mkdir(parents=True, exist_ok=True)


def run_dir_of(basetemp: Path) -> Path | None:
    """The directory every worker of this run shares, or None when this process runs alone."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    return basetemp.parent / "shared-between-workers"


def directory() -> Path | None:
    """The directory this run's workers share, or None when values are not shared."""
    return _run_dir


def shared_value(key: str, build: Callable[[], Any]) -> Any:
    """`build()`, built once per run by the first worker to ask, read back by the others."""
    return _take(key, build, wait=True)


def shared_values(builders: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """{key: builder()} for every key, each built once per run; workers asking at once split the work:
    a worker skips a value another one is building, builds the next, and reads the skipped ones last."""
    values = {key: _take(key, build, wait=False) for key, build in builders.items()}
    return {key: _take(key, builders[key], wait=True) if value is _MISSING else value
            for key, value in values.items()}


def _take(key: str, build: Callable[[], Any], *, wait: bool) -> Any:
    if _run_dir is None:
        return build()
    stored = _run_dir / f"{key}.pickle"
    with open(_run_dir / f"{key}.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return _MISSING  # another worker is building it
        try:
            if stored.exists():
                return pickle.loads(stored.read_bytes())
            value = build()
            partial = stored.with_suffix(f".{os.getpid()}.partial")
            partial.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
            partial.replace(stored)
            return value
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
