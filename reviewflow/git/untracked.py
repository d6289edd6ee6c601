"""Untracked files of the working tree, turned into added-file diffs by our code."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from reviewflow.git.headers import SYMLINK_MODE
from reviewflow.git.models import NO_NEWLINE_MARKER, FileDiff, FileStatus, Hunk
from reviewflow.git.quoting import decode_path
from reviewflow.git.runner import run_git

# Git calls a blob binary when its first 8000 bytes hold a NUL; we do the same.
_BINARY_PROBE = 8000


def added_file(path: str, mode: str, data: bytes) -> FileDiff:
    """The diff that adds `data` as a new file: one hunk of added lines, or binary, or empty."""
    link = mode == SYMLINK_MODE
    if b"\0" in data[:_BINARY_PROBE]:
        return FileDiff(path, None, FileStatus.ADDED, binary=True, new_mode=mode, is_symlink=link)
    if not data:
        return FileDiff(path, None, FileStatus.ADDED, new_mode=mode, is_symlink=link)
    text = data.decode("utf-8", "surrogateescape")
    parts = text.split("\n")
    complete = parts[-1] == ""
    if complete:
        parts.pop()
    body = ["+" + part for part in parts]
    if not complete:
        body.append(NO_NEWLINE_MARKER)
    hunk = Hunk(0, 0, 1, len(parts), "", tuple(body), added=len(parts), removed=0)
    return FileDiff(path, None, FileStatus.ADDED, new_mode=mode, hunks=(hunk,), is_symlink=link)


def _read_regular(full: bytes) -> bytes:
    """Read a file without following a symlink that replaced it since `lstat`."""
    fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _entry(full: bytes) -> tuple[str, bytes] | None:
    """(mode, content) of one untracked path; a symlink's content is its target text."""
    info = os.lstat(full)
    if stat.S_ISLNK(info.st_mode):
        return SYMLINK_MODE, os.readlink(full)
    if stat.S_ISREG(info.st_mode):
        mode = "100755" if info.st_mode & stat.S_IXUSR else "100644"
        return mode, _read_regular(full)
    return None


def untracked_files(root: Path, digest: hashlib._Hash) -> tuple[list[FileDiff], list[str]]:
    """Added-file diffs for every untracked, not ignored file, and warnings for unreadable ones."""
    listing = run_git(root, ["ls-files", "--others", "--exclude-standard", "-z"])
    base = os.fsencode(root)
    files: list[FileDiff] = []
    warnings: list[str] = []
    for raw in listing.split(b"\0"):
        if not raw or raw.endswith(b"/"):
            continue  # nested repositories are listed as directories
        path = decode_path(raw)
        try:
            found = _entry(os.path.join(base, raw))
        except FileNotFoundError:
            continue
        except OSError as err:
            warnings.append(f"untracked file {path!r} not readable: {err.strerror or err}")
            continue
        if found is None:
            continue
        mode, data = found
        digest.update(b"untracked\0%s\0%s\0%d\0" % (raw, mode.encode(), len(data)))
        digest.update(data)
        files.append(added_file(path, mode, data))
    return files, warnings
