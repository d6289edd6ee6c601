"""An inherited GIT_DIR (as in a git hook) never points our git calls at another repository,
and no variable of the environment reconfigures the git we run."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewflow.errors import GitError
from reviewflow.git.models import DiffMode
from reviewflow.git.repo import find_repo_root
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


def hostile_git_env(tmp_path: Path, decoy: GitRepo) -> dict[str, str]:
    """Variables that reconfigure or redirect git: each would run the marker script, write a
    trace, or point git at the decoy, if it reached a git we run."""
    hook = tmp_path / "fsmonitor-hook"
    hook.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "marker"}\n')
    hook.chmod(0o755)
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.fsmonitor",
        "GIT_CONFIG_VALUE_0": str(hook),
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='{hook}'",
        "GIT_EXEC_PATH": str(tmp_path / "nonexistent"),
        "GIT_TRACE": str(tmp_path / "marker-trace"),
        "GIT_TRACE2_EVENT": str(tmp_path / "marker-trace2"),
        "GIT_INDEX_FILE": str(tmp_path / "nonexistent" / "index"),
        "GIT_OBJECT_DIRECTORY": str(decoy.root / ".git" / "objects"),
        "GIT_DIR": str(decoy.root / ".git"),
        "GIT_WORK_TREE": str(decoy.root),
    }


def test_git_that_the_environment_reconfigures_is_never_run(
    repo: GitRepo, decoy: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git -c` settings in the environment (GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT/KEY/VALUE),
    another exec path, index or object store, and traces: none reaches our git."""
    base = _project(repo)
    repo.write("app.py", "x = 3\n")  # a working-tree change: git reads the index (fsmonitor)
    for name, value in hostile_git_env(tmp_path, decoy).items():
        monkeypatch.setenv(name, value)
    assert find_repo_root(repo.root / ".reviewflow") == repo.root
    change = collect(repo, DiffMode.WORKSPACE)
    assert set(by_path(change)) == {"app.py"} and change.warnings == ()
    assert resolve_commit(repo.root, "main") == base
    ranged = collect(repo, DiffMode.RANGE, from_ref="main", to_ref="pr")
    assert ranged.base_sha == base and set(by_path(ranged)) == {"app.py"}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("marker")) == []
