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
_MIB = 1 << 20
# Untracked files larger than this are not read; the filter leaves them out as too large.
MAX_UNTRACKED_BYTES = 16 * _MIB


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


def _read_regular(full: bytes, limit: int) -> bytes:
    """Read at most `limit + 1` bytes without following a symlink that replaced it since `lstat`."""
    fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit + 1)


def read_entry(full: bytes) -> tuple[str, bytes | None, int] | None:
    """(mode, content, size) of one path of the working tree; content is None for a file over
    the limit; None for what is not a file or a symlink (a directory).

    A symlink's content is its target text. Files are sized with `lstat` before any read,
    and a file that grew past the limit since is not kept either.
    """
    info = os.lstat(full)
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(full)
        return SYMLINK_MODE, target, len(target)
    if not stat.S_ISREG(info.st_mode):
        return None
    mode = "100755" if info.st_mode & stat.S_IXUSR else "100644"
    if info.st_size > MAX_UNTRACKED_BYTES:
        return mode, None, info.st_size
    data = _read_regular(full, MAX_UNTRACKED_BYTES)
    if len(data) > MAX_UNTRACKED_BYTES:
        return mode, None, max(info.st_size, len(data))
    return mode, data, len(data)


def untracked_files(root: Path, digest: hashlib._Hash) -> tuple[list[FileDiff], list[str]]:
    """Added-file diffs for every untracked, not ignored file; warnings for skipped ones.

    A file over MAX_UNTRACKED_BYTES is not read: it is an added file with no hunks and its
    size in `unread_bytes` (the filter leaves it out as too large, as in every other mode).
    """
    listing = run_git(root, ["ls-files", "--others", "--exclude-standard", "-z"])
    base = os.fsencode(root)
    files: list[FileDiff] = []
    warnings: list[str] = []
    for raw in listing.split(b"\0"):
        if not raw or raw.endswith(b"/"):
            continue  # nested repositories are listed as directories
        path = decode_path(raw)
        try:
            found = read_entry(os.path.join(base, raw))
        except FileNotFoundError:
            continue
        except OSError as err:
            warnings.append(f"untracked file {path!r} not readable: {err.strerror or err}")
            continue
        if found is None:
            continue
        mode, data, size = found
        if data is None:
            digest.update(b"untracked-unread\0%s\0%s\0%d\0" % (raw, mode.encode(), size))
            files.append(FileDiff(path, None, FileStatus.ADDED, new_mode=mode, unread_bytes=size))
            continue
        digest.update(b"untracked\0%s\0%s\0%d\0" % (raw, mode.encode(), len(data)))
        digest.update(data)
        files.append(added_file(path, mode, data))
    return files, warnings
