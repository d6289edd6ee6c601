"""An inherited GIT_DIR (as in a git hook) never points our git calls at another repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewflow.errors import GitError
from reviewflow.git.models import DiffMode
from reviewflow.git.snapshot import resolve_commit
from reviewflow.rules import RuleLayer, load_rules
from reviewflow.rules.sources import CommitBase
from tests.git.conftest import by_path, collect
from tests.gitutil import GitRepo

RULES = '{"rules": [{"path": "*.py", "rule": "%s"}]}'


@pytest.fixture
def decoy(tmp_path: Path) -> GitRepo:
    """Another repository with a `main` branch and rules of its own."""
    other = GitRepo.init(tmp_path / "decoy")
    other.write(".reviewflow/rules.json", RULES % "DECOY RULE")
    other.write("decoy.py", "x = 0\n")
    other.commit("decoy")
    return other


def _project(repo: GitRepo) -> str:
    repo.write(".reviewflow/rules.json", RULES % "REAL RULE")
    repo.write("app.py", "x = 1\n")
    base = repo.commit("base")
    repo.git("checkout", "-q", "-b", "pr")
    repo.write("app.py", "x = 2\n")
    repo.commit("pr")
    return base


def test_rule_sources_read_the_given_repository(
    repo: GitRepo, decoy: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = _project(repo)
    monkeypatch.setenv("GIT_DIR", str(decoy.root / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(decoy.root))
    assert resolve_commit(repo.root, "main") == base
    data = CommitBase(repo.root, base).read(".reviewflow/rules.json", (".json",), 10_000)
    assert data is not None and b"REAL RULE" in data
    with pytest.raises(GitError, match=r"^unknown revision 'no-such-ref'$"):
        resolve_commit(repo.root, "no-such-ref")
    with pytest.raises(GitError, match=r"^unknown revision ''$"):
        resolve_commit(repo.root, "")


def test_trusted_ref_rules_and_the_diff_come_from_the_given_repository(
    repo: GitRepo, decoy: GitRepo, rf_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = _project(repo)
    monkeypatch.setenv("GIT_DIR", str(decoy.root / ".git"))
    rules = load_rules(repo.root, rf_home, trusted_ref="main")
    resolved = rules.resolve("app.py")
    assert resolved.layer is RuleLayer.PROJECT and resolved.text == "REAL RULE"
    assert resolved.source == f".reviewflow/rules.json@{base}"
    change = collect(repo, DiffMode.RANGE, from_ref="main", to_ref="pr")
    assert set(by_path(change)) == {"app.py"} and change.base_sha == base
