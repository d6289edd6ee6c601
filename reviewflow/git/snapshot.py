"""Reading file content at a ref (the snapshot the tools and the trust model read)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from reviewflow.errors import GitError


def show_file(repo_root: Path, ref: str, path: str) -> bytes | None:
    """The bytes of `path` at `ref`, or None when the path does not exist there."""
    verify = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
        cwd=repo_root,
        capture_output=True,
    )
    if verify.returncode != 0:
        raise GitError(f"unknown revision '{ref}'")
    sha = verify.stdout.decode().strip()
    result = subprocess.run(
        ["git", "cat-file", "blob", f"{sha}:{path}"],
        cwd=repo_root,
        capture_output=True,
    )
    if result.returncode != 0:
        return None
    return result.stdout
