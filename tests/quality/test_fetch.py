"""Fetching a case by repository and commit into the cache (real Git, file:// remotes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.quality.cases import Case, QualityError
from bench.quality.fetch import fetch, plan, repo_dir
from tests.gitutil import GitRepo


def _upstream(root: Path) -> tuple[GitRepo, str, str]:
    """A repository whose head commit is only reachable through `refs/pull/7/head`."""
    repo = GitRepo.init(root)
    repo.write("a.py", "x = 1\n")
    base = repo.commit("base")
    repo.git("checkout", "-q", "-b", "topic")
    repo.write("a.py", "x = 2\n")
    head = repo.commit("change")
    repo.git("update-ref", "refs/pull/7/head", head)
    repo.git("checkout", "-q", "main")
    repo.git("branch", "-D", "topic")
    return repo, base, head


def test_a_pull_request_head_is_fetched_through_its_ref_and_then_cached(tmp_path: Path) -> None:
    upstream, base, head = _upstream(tmp_path / "up")
    case = Case("c", upstream.root.as_uri(), (), pull=7, base=base, head=head)
    cache = tmp_path / "cache"
    assert plan(case, cache) == f"git fetch {case.repo} {base[:12]} {head[:12]}"
    fetched = fetch(case, cache, {})
    assert (fetched.base, fetched.head, fetched.repo) == (base, head, repo_dir(cache, case.repo))
    assert plan(case, cache).startswith(f"cached {base[:12]}..{head[:12]}")
    upstream.git("update-ref", "-d", "refs/pull/7/head")
    assert fetch(case, cache, {}).head == head  # already there: nothing asked of the remote


def test_commits_resolved_before_are_read_from_the_cache(tmp_path: Path) -> None:
    upstream, base, head = _upstream(tmp_path / "up")
    case = Case("o-r-7", "https://github.com/o/r", (), pull=7)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "resolved.json").write_text(json.dumps({"o-r-7": {"base": base, "head": head}}))
    assert plan(case, cache) == f"git fetch https://github.com/o/r {base[:12]} {head[:12]}"
    moved = Case("o-r-7", upstream.root.as_uri(), (), pull=7)
    assert fetch(moved, cache, {}).head == head


def test_a_commit_the_remote_does_not_have_is_one_line(tmp_path: Path) -> None:
    upstream, base, _ = _upstream(tmp_path / "up")
    case = Case("c", upstream.root.as_uri(), (), base=base, head="f" * 40)
    with pytest.raises(QualityError, match=r"^git fetch in .*: ") as caught:
        fetch(case, tmp_path / "cache", {})
    assert "\n" not in str(caught.value)
