"""Opening a file a user (or a pull request) names: a regular file, read within a size bound.

Every file accel reads comes through `read_text` (workloads, catalogs, reservations, stack files,
previews, plans, event logs, policy configs, manifests), and every file it writes through
`write_text`, so no input can make accel read without bound or hang, and every way a path can be
wrong reads the same: exit 2 (UsageError) naming the path, never a traceback.

Why each step:
- The file is opened with O_NONBLOCK (and O_NOCTTY) and checked with fstat on the open descriptor,
  not stat-then-open: a FIFO with no writer would block `open()` for ever, and a check on the name
  could be raced by a symlink swap. Anything but a regular file (a character device such as
  /dev/zero reports size 0 and never ends; a FIFO; a socket; a directory) is refused.
- At most `max_bytes + 1` bytes are read, so even a file that grows while it is read is bounded.
- Every OSError gets a message: a symlink loop (ELOOP), a name too long (ENAMETOOLONG), a path
  through a file (ENOTDIR), a missing file, no permission.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from accel.base.errors import UsageError

DEFAULT_MAX_BYTES = 16 * 1024 * 1024

_REASONS = {
    errno.ENOENT: "no such file",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ELOOP: "too many levels of symbolic links (a symlink loop?)",
    errno.ENAMETOOLONG: "file name too long",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "is a directory",
    errno.ENXIO: "not a regular file (a socket or a device with nothing behind it)",
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "no space left on the device",
}


def describe_os_error(error: OSError) -> str:
    """A person's words for an OSError, without the path (the caller names it)."""
    return _REASONS.get(error.errno or 0) or (error.strerror or error.__class__.__name__).lower()


def _a(what: str) -> str:
    return f"{'an' if what[:1].lower() in 'aeiou' else 'a'} {what}"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def is_directory(path: str | Path) -> bool:
    """Path.is_dir() without its exceptions (a name too long raises in Python 3.11): anything that
    cannot be a directory is False, and the reader then says what it is."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def read_bytes(path: str | Path, what: str = "file", *, max_bytes: int = DEFAULT_MAX_BYTES,
               error: type[UsageError] = UsageError, shown: str | None = None) -> bytes:
    """The bytes of the regular file at `path`; `error` (exit 2) naming `shown` on anything else.

    `what` names the file's role in messages ("workload file", "preview JSON")."""
    shown = str(path) if shown is None else shown
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise error(f"{shown}: file not found (no such {what})") from None
    except OSError as problem:
        raise error(f"{shown}: cannot open the {what}: {describe_os_error(problem)}") from None
    except ValueError as problem:  # an embedded NUL byte in the name
        raise error(f"{shown}: not a usable file name ({problem})") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            kind = _kind(status.st_mode)
            raise error(f"{shown}: is {kind}; expected {_a(what)}" if stat.S_ISDIR(status.st_mode) else
                        f"{shown}: is {kind}, not a regular file; expected {_a(what)}")
        if status.st_size > max_bytes:
            raise error(f"{shown}: {status.st_size:,} bytes; accel reads {_a(what)} of at most {max_bytes:,} bytes")
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(descriptor, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise error(f"{shown}: more than {max_bytes:,} bytes; accel reads {_a(what)} of at most {max_bytes:,} bytes")
        return b"".join(chunks)
    except OSError as problem:
        raise error(f"{shown}: cannot read the {what}: {describe_os_error(problem)}") from None
    finally:
        os.close(descriptor)


def read_text(path: str | Path, what: str = "file", *, max_bytes: int = DEFAULT_MAX_BYTES,
              error: type[UsageError] = UsageError, shown: str | None = None) -> str:
    """The UTF-8 text of the regular file at `path` (read_bytes), or `error` naming the byte that is not UTF-8."""
    shown = str(path) if shown is None else shown
    data = read_bytes(path, what, max_bytes=max_bytes, error=error, shown=shown)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as problem:
        raise error(f"{shown}: the {what} is not UTF-8 text (byte {problem.start:,})") from None


def check_writable(path: str | Path, what: str = "file", *, error: type[UsageError] = UsageError) -> None:
    """`error` (exit 2) naming the path when a file cannot be written there: a missing folder, a
    directory, a device or FIFO, a name too long, a path through a file. Call it before slow work."""
    target = Path(path)
    try:
        status = os.stat(target)
    except FileNotFoundError:
        status = None
        if not target.parent.is_dir():
            raise error(f"{target}: cannot write the {what}: the folder {target.parent} does not exist") from None
    except OSError as problem:
        raise error(f"{target}: cannot write the {what}: {describe_os_error(problem)}") from None
    except ValueError as problem:
        raise error(f"{target}: not a usable file name ({problem})") from None
    # A character device (/dev/null, /dev/stdout) takes the bytes and returns; a FIFO with no reader
    # would block the open for ever, and a directory or socket cannot be written.
    if status is not None and not (stat.S_ISREG(status.st_mode) or stat.S_ISCHR(status.st_mode)):
        raise error(f"{target}: {_kind(status.st_mode)}; name a file to write the {what} to")


def check_not_an_input(output: str | Path, inputs: dict[str, str | Path | None], what: str = "file") -> None:
    """UsageError (exit 2) when `output` is one of the files the command reads ({option: path}): writing there would
    replace that input (a stack file, a preview) with the command's own output. Call it before writing."""
    target = Path(output)
    for option, source in inputs.items():
        if source is None:
            continue
        try:
            same = target.exists() and os.path.samefile(target, source)
        except (OSError, ValueError):
            same = False
        if same:
            raise UsageError(f"{target}: is the {option} this command reads; writing the {what} there would replace "
                             "it: name another file")


def write_text(path: str | Path, text: str, what: str = "file", *, error: type[UsageError] = UsageError) -> None:
    """Write `text` to `path` (check_writable first); `error` (exit 2) naming the path on any OSError."""
    target = Path(path)
    check_writable(target, what, error=error)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as problem:
        raise error(f"{target}: cannot write the {what}: {describe_os_error(problem)}") from None
