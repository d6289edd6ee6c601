"""Who the Git user is (`user.name <user.email>`), for records people read, like dismissals."""

from __future__ import annotations

from pathlib import Path

from reviewflow.git.runner import run_git


def git_user(repo_root: Path) -> str:
    """`Name <email>` as the repository's Git config says (either part alone when only one is
    set), or "" when neither is."""
    name, email = (_config(repo_root, key) for key in ("user.name", "user.email"))
    if name and email:
        return f"{name} <{email}>"
    return name or (f"<{email}>" if email else "")


def _config(repo_root: Path, key: str) -> str:
    out = run_git(repo_root, ["config", "--get", key], ok=(0, 1))
    return " ".join(out.decode("utf-8", "replace").split())
