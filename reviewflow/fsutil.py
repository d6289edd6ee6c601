"""The one way reviewflow writes a file: where the user meant, never half-written."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from reviewflow.errors import OutputError

# This process's own descriptors: written through the descriptor itself (sharing its offset
# with what else goes to stdout), never renamed over the file the shell holds open.
_FD_PATH = re.compile(r"/dev/(?:std(out|err)|fd/(\d+))|/proc/self/fd/(\d+)")
PRIVATE_UMASK = 0o077


def private_dirs(path: Path) -> None:
    """Create `path` and every missing parent as the user's alone (0700); existing ones are
    left as they are. (`mkdir(parents=True, mode=...)` gives the parents the umask's mode.)"""
    missing = []
    for directory in (path, *path.parents):
        if directory.is_dir():
            break
        missing.append(directory)
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """Everything this process creates meanwhile is the user's alone (files 0600 at most,
    directories 0700), whoever creates it: Prefect's result files and database included."""
    previous = os.umask(PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(previous)


def write_output(
    target: str | Path, data: bytes | str, mode: int = 0o600, *, append: bool = False
) -> None:
    """Write `data` to `target` as the user meant it; OutputError (one line) if it cannot.

    `-` is stdout. A symlink is followed and its target replaced atomically. A FIFO, a device or
    /dev/stdout (/dev/fd/N) is written in place, never replaced. A directory is an error. A file
    reviewflow creates gets `mode`; an existing file keeps its own. `append` adds to the end
    of a file someone else keeps (`$GITHUB_STEP_SUMMARY`) instead of replacing it.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    descriptor = 1 if str(target) == "-" else _descriptor(str(target))
    try:
        if descriptor is not None:
            _write_descriptor(descriptor, payload)
        elif append:
            _append(Path(os.path.realpath(target)), payload, mode)
        else:
            _write(Path(target), payload, mode)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None


def _descriptor(target: str) -> int | None:
    """The descriptor `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` or `/proc/self/fd/N` names."""
    found = _FD_PATH.fullmatch(target)
    if found is None:
        return None
    std, number, proc = found.groups()
    if std is not None:
        return 1 if std == "out" else 2
    return int(number or proc)


def _write_descriptor(fd: int, data: bytes) -> None:
    if fd in (1, 2):
        stream = sys.stdout if fd == 1 else sys.stderr
        stream.flush()
        stream.buffer.write(data)
        stream.buffer.flush()
        return
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write(path: Path, data: bytes, mode: int) -> None:
    real = Path(os.path.realpath(path))  # follows every link, also a dangling one's target
    try:
        info = os.stat(real)
    except FileNotFoundError:
        private_dirs(real.parent)
        _write_then_rename(real, data, mode)
        return
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(21, "is a directory")
    if not stat.S_ISREG(info.st_mode):
        _write_in_place(real, data)
        return
    _write_then_rename(real, data, stat.S_IMODE(info.st_mode))


def _write_in_place(path: Path, data: bytes) -> None:
    """A FIFO or a device: opened and written, never created or replaced."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOCTTY)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _append(path: Path, data: bytes, mode: int) -> None:
    if path.is_dir():
        raise IsADirectoryError(21, "is a directory")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOCTTY, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _write_then_rename(path: Path, data: bytes, mode: int) -> None:
    """Write `data` to a temporary file beside `path`, then rename it into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def check_output(target: str | Path, *, directory: bool = False) -> None:
    """Refuse, before any work, a target `write_output` could not write (OutputError, one line):
    a directory where a file goes (or a file where a directory goes), or no writable directory
    to create it in. `-` and this process's descriptors are always fine."""
    text = str(target)
    if text == "-" or _descriptor(text) is not None:
        return
    path = Path(os.path.realpath(Path(text).expanduser()))  # a symlink: where it leads
    if path.exists() and path.is_dir() != directory:
        kind = "is a directory" if path.is_dir() else "is not a directory"
        raise OutputError(f"cannot write {target}: {kind}")
    if path.exists() and not path.is_dir() and not path.is_file():  # FIFO, device: in place
        if not os.access(path, os.W_OK):
            raise OutputError(f"cannot write {target}: permission denied")
        return
    parent = path if path.is_dir() else path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {target}: {parent} is not a writable directory")
    _probe(target, parent)


def _probe(target: str | Path, directory: Path) -> None:
    """Create and remove a file in `directory`, as writing `target` will: a read-only file
    system, or /proc and /sys (whose files look writable to root), fail here, not after the
    review was paid for."""
    try:
        fd, name = tempfile.mkstemp(prefix=".reviewflow-", suffix=".probe", dir=directory)
    except OSError as exc:
        why = (exc.strerror or str(exc)).lower()
        message = f"cannot write {target}: no file can be created in {directory} ({why})"
        raise OutputError(message) from None
    os.close(fd)
    os.unlink(name)
