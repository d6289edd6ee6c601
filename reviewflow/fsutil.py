"""File writing that never leaves a half-written file behind."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

from reviewflow.errors import OutputError


def write_output(target: str | Path, data: bytes | str, mode: int = 0o600) -> None:
    """The one way reviewflow writes a file: reports, config, artifacts' local copies.

    `-` is stdout. (Being reworked: symlinks followed, FIFOs and devices written in place.)
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if str(target) == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(payload)
        sys.stdout.buffer.flush()
        return
    atomic_write_bytes(Path(target), payload, mode)


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write `data` to a temporary file beside `path`, then rename it into place."""
    try:
        _write_then_rename(path, data, mode)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _write_then_rename(path: Path, data: bytes, mode: int) -> None:
    if path.is_dir():
        raise IsADirectoryError(21, "is a directory")
    path.parent.mkdir(parents=True, exist_ok=True)
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


def atomic_write_text(path: Path, text: str, mode: int = 0o600) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode)
