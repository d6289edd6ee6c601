"""Reading file content at a ref (the snapshot the tools and the trust model read)."""

from __future__ import annotations

from pathlib import Path

from reviewflow.errors import GitError
from reviewflow.git.runner import run_git


def resolve_commit(repo_root: Path, ref: str) -> str:
    """The commit SHA `ref` names; GitError "unknown revision" otherwise (never an option)."""
    out = run_git(
        repo_root,
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
        ok=(0, 1, 128),
    )
    sha = out.decode("ascii", "replace").strip()
    if ".." in ref and sha:  # git names a range's two ends, one a line: not one commit
        raise GitError(f"'{ref}' is a range, not one commit")
    if not ref or not sha:
        raise GitError(f"unknown revision '{ref}'")
    return sha


def read_blob(repo_root: Path, sha: str, path: str) -> bytes | None:
    """The bytes of `path` in commit `sha` (already resolved), or None when absent."""
    try:
        return run_git(repo_root, ["cat-file", "blob", f"{sha}:{path}"])
    except GitError:
        return None


def show_file(repo_root: Path, ref: str, path: str) -> bytes | None:
    """The bytes of `path` at `ref`, or None when the path does not exist there."""
    return read_blob(repo_root, resolve_commit(repo_root, ref), path)
