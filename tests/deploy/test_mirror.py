"""Repositories named by URL: the cached blobless clone and its mirrored branches."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reviewflow.errors import ConfigError
from reviewflow.git.mirror import cache_path, is_remote, local_repository
from tests.deploy.scenario import origin, push
from tests.gitutil import GitRepo


def _branches(root: Path) -> str:
    from reviewflow.git.runner import run_git

    return run_git(root, ["for-each-ref", "--format=%(refname:short)", "refs/heads/"]).decode()


def test_clone_then_fetch_mirrors_the_remote_branches(tmp_path: Path, rf_home: Path) -> None:
    repo, bare = origin(tmp_path)
    url = bare.as_uri()
    with ThreadPoolExecutor(4) as pool:  # simultaneous runs share one clone
        roots = set(pool.map(lambda _: local_repository(url, rf_home), range(4)))
    assert roots == {cache_path(url, rf_home)}
    assert _branches(cache_path(url, rf_home)).split() == ["main"]
    assert "promisor" in (cache_path(url, rf_home) / ".git/config").read_text()  # blobless

    repo.git("checkout", "--quiet", "-b", "release/1")
    repo.write("app/new.py", "x = 1\n")
    head = repo.commit("new")
    push(repo, "release/1")
    root = local_repository(url, rf_home)
    assert _branches(root).split() == ["main", "release/1"]
    assert repo.git("-C", str(root), "rev-parse", "release/1").strip() == head
    push(repo, ":release/1")  # deleted upstream: pruned here
    assert _branches(local_repository(url, rf_home)).split() == ["main"]


def test_names(tmp_path: Path, rf_home: Path) -> None:
    repo, _ = origin(tmp_path)
    assert local_repository(str(repo.root), rf_home) == repo.root  # a working tree: as is
    assert is_remote("git@github.com:owner/app.git") and is_remote("https://h/app.git")
    assert not is_remote("/srv/git/app.git")
    assert cache_path("https://h/o/app.git", rf_home).name.startswith("app-")
    with pytest.raises(ConfigError, match="holds a password"):
        local_repository("https://user:secret@h/o/app.git", rf_home)


@pytest.mark.parametrize("empty", ["", "  \t"])
def test_an_empty_name_is_refused_not_taken_for_the_current_directory(
    empty: str, repo: GitRepo, rf_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo.root)  # a worker's working directory is a repository (this source)
    with pytest.raises(
        ConfigError, match=r"invalid value for 'repository': .*\(accepted: a Git URL"
    ):
        local_repository(empty, rf_home)
