"""Branches, their heads and their history, for the nightly review of release branches."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from reviewflow.errors import ConfigError, GitError
from reviewflow.git.runner import run_git

_HEADS = "refs/heads/"


def matching_branches(root: Path, patterns: Sequence[str]) -> list[tuple[str, str]]:
    """(name, head SHA) of every local branch matching one of `patterns` (`release/*`), sorted.

    Patterns are Git's `for-each-ref` patterns below `refs/heads/`: `*` does not cross `/`,
    and a pattern without wildcards matches a branch or a whole hierarchy (`release`).
    """
    if not patterns or any(not p.strip() or p.startswith("/") for p in patterns):
        raise ConfigError(
            f"invalid value for 'branches': {list(patterns)!r} (accepted: branch patterns "
            "such as release/* or hotfix-*)"
        )
    out = run_git(
        root, ["for-each-ref", "--format=%(objectname) %(refname)", *(_HEADS + p for p in patterns)]
    )
    rows = (line.split(" ", 1) for line in out.decode("utf-8", "replace").splitlines() if line)
    return sorted((ref.removeprefix(_HEADS), sha) for sha, ref in rows)


def commit_of(root: Path, ref: str) -> str | None:
    """The commit `ref` names (a branch first, then any revision), or None."""
    for name in (_HEADS + ref, ref):
        if name.startswith("-"):
            continue
        out = run_git(root, ["rev-parse", "--verify", "--quiet", name + "^{commit}"], ok=(0, 1))
        if out.strip():
            return out.decode().strip()
    return None


def merge_base(root: Path, a: str, b: str) -> str | None:
    """The best common ancestor of two commits, or None for unrelated histories."""
    out = run_git(root, ["merge-base", "--end-of-options", a, b], ok=(0, 1))
    return out.decode().strip() or None


def is_ancestor(root: Path, ancestor: str, commit: str) -> bool:
    """Whether `ancestor` is a known commit that `commit` contains (a rewritten branch: no)."""
    try:
        return merge_base(root, ancestor, commit) == ancestor
    except GitError:  # not a commit of this repository (garbage-collected, another repo)
        return False
