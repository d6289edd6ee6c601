"""What the tools of a review can read, as one hash: part of every model stage's cache key.

A snapshot at a commit is that commit (its content is fixed). The working tree (workspace and
stdin modes) is HEAD plus whatever differs from it: tracked changes (`git diff HEAD`, binary
included) and untracked files that are not ignored, hashed by content without writing objects.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from reviewflow.git.runner import run_git


def snapshot_identity(repo_root: Path, ref: str | None) -> str:
    """A stable hash of the files a review's tools can read at `ref` (None: working tree)."""
    if ref is not None:
        return "commit:" + ref
    digest = hashlib.sha256()
    head = run_git(repo_root, ["rev-parse", "--verify", "--quiet", "HEAD"], ok=(0, 1, 128))
    digest.update(b"head\0" + head.strip() + b"\0")
    diff = ["diff", "--no-ext-diff", "--no-textconv", "--binary"]
    if head.strip():
        digest.update(b"diff\0" + run_git(repo_root, [*diff, "HEAD", "--"]) + b"\0")
    else:  # unborn: the index (what is staged) and the working tree's changes against it
        digest.update(b"index\0" + run_git(repo_root, ["ls-files", "-s", "-z"]) + b"\0")
        digest.update(b"diff\0" + run_git(repo_root, [*diff, "--"]) + b"\0")
    listed = run_git(repo_root, ["ls-files", "-z", "--others", "--exclude-standard"])
    names = [name for name in listed.split(b"\0") if name]
    digest.update(b"untracked\0" + b"\0".join(names) + b"\0")
    for name in names:
        digest.update(name + b"\0" + _content_hash(repo_root / os.fsdecode(name)) + b"\0")
    return "worktree:" + digest.hexdigest()


def _content_hash(path: Path) -> bytes:
    """The hash of a file's bytes (a symlink's target text, never followed)."""
    digest = hashlib.sha256()
    try:
        if path.is_symlink():
            digest.update(b"link\0" + os.fsencode(os.readlink(path)))
        else:
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    except OSError as exc:  # vanished or unreadable: hash the failure, the tools see it too
        digest.update(b"error\0" + str(exc.errno).encode())
    return digest.hexdigest().encode()
