"""Reading file content at a ref (the snapshot the tools and the trust model read)."""

from __future__ import annotations

from pathlib import Path

from reviewflow.errors import GitError
from reviewflow.git.runner import run_git


def show_file(repo_root: Path, ref: str, path: str) -> bytes | None:
    """The bytes of `path` at `ref`, or None when the path does not exist there."""
    verify = run_git(
        repo_root,
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
        ok=(0, 1, 128),
    )
    sha = verify.decode().strip()
    if not ref or not sha:
        raise GitError(f"unknown revision '{ref}'")
    try:
        return run_git(repo_root, ["cat-file", "blob", f"{sha}:{path}"])
    except GitError:
        return None
