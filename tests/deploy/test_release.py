"""The nightly release review in-process (one Prefect test API): what each run reviews, when a
branch's Variable moves, and how the run ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prefect.variables import Variable

from flows.release import last_reviewed, mark_reviewed, release_review, variable_name
from reviewflow.git.branches import matching_branches
from tests.deploy.readback import artifacts, assert_failed_with_reason
from tests.deploy.scenario import RISKY, SPLIT, origin, push, use_model
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")

CODE = "def {name}(value):\n    return value * 2\n"


def _branch(repo: GitRepo, branch: str, path: str) -> str:
    repo.git("checkout", "--quiet", "-B", branch, "main")
    repo.write(path, CODE.format(name=Path(path).stem))
    return repo.commit(f"add {path}")


def _releases(tmp_path: Path) -> tuple[GitRepo, str]:
    repo, bare = origin(tmp_path)
    _branch(repo, "release/1", "app/one.py")
    _branch(repo, "release/2", "app/two.py")
    _branch(repo, "feature/x", "app/feature.py")  # not a release branch
    push(repo, "main", "release/1", "release/2", "feature/x")
    return repo, bare.as_uri()


def _reviewed_paths(wire: WireServer) -> set[str]:
    text = json.dumps([r.body for r in wire.requests()])
    return {p for p in ("one", "two", "three", "feature") if f"app/{p}.py" in text}


def test_second_run_reviews_only_the_new_commit(
    tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_model(monkeypatch, wire)
    repo, url = _releases(tmp_path)
    wire.respond("openai", ScriptedReviewer({}))

    first = release_review(url, return_state=True)
    assert first.is_completed(), first.message
    assert [(row["branch"], row["status"]) for row in first.result()] == [
        ("release/1", "reviewed"),
        ("release/2", "reviewed"),
    ]
    assert _reviewed_paths(wire) == {"one", "two"}
    old_head = repo.git("rev-parse", "release/1").strip()
    assert last_reviewed(url, "release/1") == old_head

    repo.git("checkout", "--quiet", "release/1")
    repo.write("app/three.py", CODE.format(name="three"))
    new_head = repo.commit("add three")
    push(repo, "release/1")
    sent = len(wire.requests())

    second = release_review(url, return_state=True)
    assert second.is_completed(), second.message
    rows = {row["branch"]: row for row in second.result()}
    assert (rows["release/1"]["since"], rows["release/1"]["head"]) == (old_head, new_head)
    assert rows["release/2"]["status"] == "up-to-date"
    later = json.dumps([r.body for r in wire.requests()[sent:]])
    assert "app/three.py" in later and "app/one.py" not in later and "app/two.py" not in later
    assert last_reviewed(url, "release/1") == new_head


def test_failures_name_the_branches_and_only_completed_reviews_move(
    tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_model(monkeypatch, wire)
    repo, url = _releases(tmp_path)
    repo.git("checkout", "--quiet", "release/2")
    repo.write("app/settings.py", RISKY)
    repo.commit("parse settings")
    push(repo, "release/2")
    wire.respond(
        "openai",
        ScriptedReviewer({"app/settings.py": [SPLIT], "app/one.py": []}, {"app/one.py": 400}),
    )

    state = release_review(url, branches=["release/*"], return_state=True)
    assert_failed_with_reason(state)
    assert "release/1: review incomplete" in state.message
    table = artifacts(state.state_details.flow_run_id)["release-review-origin-git"]
    assert "| `release/2` |" in table and "| failed | 2 |" in table
    assert "release/2: gate failed: 1 finding(s), high app/settings.py" in state.message
    assert last_reviewed(url, "release/1") is None  # incomplete: stays where it was
    assert last_reviewed(url, "release/2") == repo.git("rev-parse", "release/2").strip()
    assert Variable.get(variable_name(url, "feature/x")) is None


def test_an_empty_repository_fails_instead_of_reviewing_the_working_directory(
    tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_model(monkeypatch, wire)
    repo, _ = _releases(tmp_path)
    monkeypatch.chdir(repo.root)  # what `prefect deploy` without REVIEWFLOW_NIGHTLY_REPOSITORY did
    wire.respond("openai", ScriptedReviewer({}))
    state = release_review("", return_state=True)
    assert state.is_failed()
    assert "invalid value for 'repository': ''" in str(state.message)
    assert "REVIEWFLOW_NIGHTLY_REPOSITORY" in str(state.message)
    assert wire.requests() == []
    assert last_reviewed(str(repo.root), "release/1") is None


def test_patterns_follow_git(repo: GitRepo) -> None:
    repo.write("a.py", "x = 1\n")
    repo.commit("base")
    for name in ("release/1.0", "release/2.0/rc", "releases", "hotfix-1"):
        repo.git("branch", name)
    names = [name for name, _ in matching_branches(repo.root, ["release/*", "hotfix-*"])]
    assert names == ["hotfix-1", "release/1.0"]  # `*` stops at `/`


def test_an_overlapping_older_run_never_moves_the_variable_back(tmp_path: Path) -> None:
    repo, _ = origin(tmp_path)
    old_head = _branch(repo, "release/1", "app/one.py")
    repo.write("app/three.py", CODE.format(name="three"))
    new_head = repo.commit("add three")
    url, root = "https://git.example.com/app.git", repo.root
    mark_reviewed(root, url, "release/1", new_head)  # the later run finished first

    mark_reviewed(root, url, "release/1", old_head)
    assert last_reviewed(url, "release/1") == new_head
    repo.git("reset", "--quiet", "--hard", old_head)  # the branch rewound: the Variable follows
    mark_reviewed(root, url, "release/1", old_head)
    assert last_reviewed(url, "release/1") == old_head
