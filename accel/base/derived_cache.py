"""A cache of derived data on disk, keyed by everything the data is derived from.

`accel choose` derives the same things from the same files on every run: the checked hardware
facts table, the validated bundled catalog, the capacity mode table, the MFU model and the whole-run
model fitted on the published runs. Those are
kept in the user's cache directory and reused while nothing they come from has changed, the way
Python keeps compiled bytecode beside a source file:

- the data files they are read from, by content (SHA-256 of the bytes);
- the code that reads and checks them, by each source file's path, size and modification time
  (what Python checks before reusing a .pyc), over whole packages (`accel.base` and the ones the
  caller names, e.g. `accel.policies`), so a change anywhere in them invalidates the entry;
- the Python and pydantic versions (a pickle of a model is only read back by the same pydantic).

Standard library only, platformdirs imported when first used and pydantic's version only looked
up, never imported: the hardware facts table, which the guardrail pack imports on its own (with
neither), reads through it.

An entry is a pickle written by this user into this user's cache directory (the same trust as the
.pyc files Python writes and then executes). A cache that cannot be read or written is skipped
without a word: the value is computed as if there were no cache. `ACCEL_CACHE_DIR` moves the cache
(tests point it at a temporary directory); `ACCEL_CACHE_DIR=off` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

CACHE_DIR_VARIABLE = "ACCEL_CACHE_DIR"
FORMAT = 1  # bump when the layout of an entry changes
KEEP = 8  # entries kept per kind: a few checkouts or versions side by side, not every one ever run
_BASE = Path(__file__).resolve().parent
_fingerprints: dict[tuple[Path, ...], str] = {}


def cache_dir() -> Path | None:
    """Where entries live: $ACCEL_CACHE_DIR, else the platform's user cache directory; None when off."""
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    if configured is not None:
        return None if configured.strip().lower() in ("", "off", "0", "false", "no") else Path(configured)
    if sys.platform.startswith("linux"):
        # The XDG base directory rule, as platformdirs applies it on Linux, without its ~20 ms import
        # on every `accel choose` (docs/choose.md, start-up).
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        return Path(xdg if xdg.strip() else os.path.expanduser("~/.cache")) / "accel"
    try:
        from platformdirs import user_cache_path
    except ImportError:  # the guardrail pack's environment may hold nothing but pulumi-policy
        return None
    return user_cache_path("accel", appauthor=False)


def _source_files(root: Path) -> Iterable[os.DirEntry[str]]:
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__" and not entry.name.startswith("."):
                yield from _source_files(Path(entry.path))
        elif entry.name.endswith(".py"):
            yield entry


def code_fingerprint(code: Iterable[Path] = ()) -> str:
    """Path, size and mtime of every source file under accel.base and the `code` folders, and the
    Python that reads a pickle back; computed once per process for each set of folders."""
    roots = tuple(dict.fromkeys((_BASE, *(Path(root).resolve() for root in code))))
    fingerprint = _fingerprints.get(roots)
    if fingerprint is None:
        digest = hashlib.sha256(f"{FORMAT} {sys.implementation.cache_tag} {sys.version}".encode())
        for root in roots:
            for entry in _source_files(root):
                status = entry.stat()
                digest.update(f"\n{entry.path} {status.st_size} {status.st_mtime_ns}".encode())
        fingerprint = _fingerprints[roots] = digest.hexdigest()
    return fingerprint


def _pydantic_version() -> str:
    """The pydantic that pickled (or will read back) a model; "none" where it is not loaded: the
    guardrail pack reads the hardware table without pydantic, and a value derived without it
    holds no model. Looked up, never imported."""
    module = sys.modules.get("pydantic.version")
    return str(getattr(module, "VERSION", "none"))


def key_of(files: Iterable[Path], code: Iterable[Path] = (), extra: Any = ()) -> str:
    """The entry key for a value derived from these files' contents (and `extra`, a repr-able value
    standing for any other input) by the code under `code` as it is now."""
    digest = hashlib.sha256(f"{code_fingerprint(code)} pydantic {_pydantic_version()}".encode())
    from accel.base.errors import UsageError
    from accel.base.safe_files import read_bytes

    for file in files:
        try:  # a regular file within the bound, or no cache (compute() reports it in its own words)
            content = read_bytes(file, "input")   # safe_files' default bound, the YAML files' too
        except UsageError as error:
            raise OSError(str(error)) from None
        digest.update(b"\0" + str(file).encode() + b"\0" + content)
    digest.update(b"\0" + repr(extra).encode())
    return digest.hexdigest()


def cached(kind: str, files: Iterable[Path], compute: Callable[[], T], *, code: Iterable[Path] = (),
           extra: Any = ()) -> T:
    """`compute()`, or the value it returned before for the same files, code and `extra`.

    `kind` names the entry's folder (e.g. "catalog"); `code` the package folders whose sources
    compute the value (accel.base always counts). An error raised by `compute` (bad input) is
    never cached: it is raised again on every run.
    """
    directory = cache_dir()
    if directory is None:
        return compute()
    try:
        key = key_of(files, code, extra)
    except OSError:  # an input that cannot be read: let compute() report it in its own words
        return compute()
    entry = directory / kind / f"{key}.pickle"
    try:
        with entry.open("rb") as handle:
            return pickle.load(handle)  # noqa: S301 (written by this user, like a .pyc)
    except Exception:  # noqa: BLE001 (missing, unreadable, truncated or foreign: a miss, never an error)
        pass
    value = compute()
    _store(entry, value)
    return value


def _store(entry: Path, value: Any) -> None:
    """Write atomically (a concurrent run reads the old entry or the new one, never half of one)
    and keep the KEEP newest entries of the kind; any failure leaves the cache as it was."""
    import tempfile  # only a miss writes (~2 ms of imports a warm run skips)

    try:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        entry.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".", suffix=".tmp")
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        return
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(payload)
        os.replace(temporary, entry)
        newest_first = sorted(entry.parent.glob("*.pickle"), key=lambda path: path.stat().st_mtime_ns, reverse=True)
        for old in newest_first[KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
