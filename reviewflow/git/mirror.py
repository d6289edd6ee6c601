"""Repositories named by URL: a blobless clone cached under the reviewflow home, fetched again
on every use. Credentials come from the machine (credential helpers, SSH agent, Git config),
never from the name: a URL with a password in it is refused."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from reviewflow.errors import ConfigError, GitError
from reviewflow.fsutil import private_dirs
from reviewflow.git.runner import run_git

CACHE_DIR = ("cache", "repos")
_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")  # git@host:owner/name.git
_FETCH_REFS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")


def is_remote(repository: str) -> bool:
    """Whether `repository` names a remote (a URL or `user@host:path`) rather than a directory."""
    return "://" in repository or bool(_SCP_LIKE.match(repository))


def local_repository(repository: str, home: Path) -> Path:
    """A working directory that holds `repository`'s branches and tags.

    A local working tree is used as it is. A URL, or a local bare repository, is cloned once
    (blobless, no checkout) into `<home>/cache/repos/` and fetched on later calls, so its local
    branches mirror the remote's. An empty name is refused (it would be the current directory).
    """
    if not repository.strip():
        raise ConfigError(
            f"invalid value for 'repository': {repository!r} (accepted: a Git URL such as "
            "https://git.example.com/app.git, or the path of a Git repository on the worker; "
            "the nightly deployment's is REVIEWFLOW_NIGHTLY_REPOSITORY as `prefect deploy` saw it)"
        )
    if not is_remote(repository):
        path = Path(repository).expanduser().resolve()
        if not path.is_dir():
            raise GitError(f"not a Git repository: {repository}")
        if (path / ".git").exists():
            return path
    _check_url(repository)
    target = cache_path(repository, home)
    private_dirs(target.parent)
    with _locked(target.with_name(target.name + ".lock")):  # runs on one worker share it
        if not (target / ".git").is_dir():
            _clone(repository, target)
        # Local branches and tags mirror the remote's (the clone made only the default one).
        fetch = ["fetch", "--quiet", "--prune", "--force", "--update-head-ok", "origin"]
        run_git(target, [*fetch, *_FETCH_REFS])
    return target


def fetch_request_head(target: Path, source: str, number: int) -> None:
    """Fetch pull/merge request `number`'s head, the remote's ref `source`, into the mirror
    `target` (a fork's commits are only there), as `refs/reviewflow/requests/<number>`: data to
    read, never checked out."""
    with _locked(target.with_name(target.name + ".lock")):
        run_git(
            target, ["fetch", "--quiet", "origin", f"+{source}:refs/reviewflow/requests/{number}"]
        )


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _clone(repository: str, target: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix=".clone-", dir=target.parent))
    try:
        clone = ["clone", "--quiet", "--filter=blob:none", "--no-checkout", "--"]
        run_git(staging, [*clone, repository, "clone"])
        (staging / "clone").rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def cache_path(repository: str, home: Path) -> Path:
    """Where the clone of `repository` is kept: a readable name and a hash of the whole URL."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", repository.rstrip("/").rsplit("/", 1)[-1])
    name = name.removesuffix(".git").strip(".-") or "repository"
    digest = hashlib.sha256(repository.encode()).hexdigest()[:12]
    return home.joinpath(*CACHE_DIR, f"{name[:40]}-{digest}")


def _check_url(repository: str) -> None:
    if "://" in repository:
        try:
            password = urlsplit(repository).password
        except ValueError:
            raise ConfigError(f"invalid repository URL: {repository!r}") from None
        if password is not None:
            raise ConfigError(
                "the repository URL holds a password: give the worker its credentials through "
                "its environment or Git configuration (a credential helper), never as a parameter"
            )
