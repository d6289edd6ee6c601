"""Commit and range diffs ignore the `.gitattributes` of the change and of the checkout.

In CI the checkout is the change under review: attributes it brings (`-diff`, `binary`, a
`diff=` driver) must not turn its files into "Binary files differ" and out of the review.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.git.models import Change, DiffMode
from tests.git.conftest import by_path, collect, texts
from tests.gitutil import GitRepo

HOSTILE = [
    pytest.param(".gitattributes", "* -diff\n", id="all-minus-diff"),
    pytest.param(".gitattributes", "*.py binary\n", id="py-binary"),
    pytest.param(".gitattributes", "*.py diff=evil\n", id="diff-driver"),
    pytest.param("src/.gitattributes", "* -diff\n", id="nested"),
]


def _base(repo: GitRepo) -> None:
    """main: two Python files and a real binary; `diff.evil` is a binary driver on the machine."""
    repo.git("config", "diff.evil.binary", "true")
    repo.write("app.py", "x = 1\n")
    repo.write("src/mod.py", "y = 1\n")
    repo.write("blob.bin", b"\x00\x01\x02")
    repo.commit("base")


def _edit(repo: GitRepo) -> None:
    repo.write("app.py", "x = 2\n")
    repo.write("src/mod.py", "y = 2\n")
    repo.write("blob.bin", b"\x00\x01\x03")


def _assert_reviewable(change: Change) -> None:
    files = by_path(change)
    for path, line in (("app.py", "x = 2"), ("src/mod.py", "y = 2")):
        assert not files[path].binary, path
        assert texts(files[path], "add") == [line]
    assert files["blob.bin"].binary  # NUL bytes: git's own content check still applies


def _hostile_branch(repo: GitRepo, where: str, attributes: str) -> str:
    """Branch `pr` off main: edits and a hostile `.gitattributes`, committed and checked out."""
    _base(repo)
    repo.git("checkout", "-q", "-b", "pr")
    _edit(repo)
    repo.write(where, attributes)
    return repo.commit("pr")


@pytest.mark.parametrize(("where", "attributes"), HOSTILE)
def test_range_and_commit_ignore_committed_attributes(
    repo: GitRepo, where: str, attributes: str
) -> None:
    head = _hostile_branch(repo, where, attributes)
    assert "Binary files a/src/mod.py" in repo.git("diff", "main", "pr")  # plain git hides it
    _assert_reviewable(collect(repo, DiffMode.RANGE, from_ref="main", to_ref="pr"))
    _assert_reviewable(collect(repo, DiffMode.COMMIT, commit=head))


@pytest.mark.parametrize(("where", "attributes"), HOSTILE)
def test_attributes_only_in_the_index_or_working_tree_are_ignored(
    repo: GitRepo, where: str, attributes: str
) -> None:
    _base(repo)
    repo.git("checkout", "-q", "-b", "pr")
    _edit(repo)
    head = repo.commit("pr")
    hostile = repo.write(where, attributes)  # working tree only
    assert "Binary files a/src/mod.py" in repo.git("diff", "main", "pr")
    _assert_reviewable(collect(repo, DiffMode.RANGE, from_ref="main", to_ref="pr"))
    repo.git("add", where)  # index and working tree
    _assert_reviewable(collect(repo, DiffMode.COMMIT, commit=head))
    hostile.unlink()  # index only (attribute lookup falls back to the index for missing files)
    _assert_reviewable(collect(repo, DiffMode.RANGE, from_ref="main", to_ref="pr"))
    _assert_reviewable(collect(repo, DiffMode.COMMIT, commit=head))


def test_root_commit_ignores_its_attributes(repo: GitRepo) -> None:
    repo.write("app.py", "x = 1\n")
    repo.write(".gitattributes", "* -diff\n")
    sha = repo.commit("root")
    files = by_path(collect(repo, DiffMode.COMMIT, commit=sha))
    assert not files["app.py"].binary and texts(files["app.py"], "add") == ["x = 1"]


def test_linked_worktree_range(repo: GitRepo, tmp_path: Path) -> None:
    _hostile_branch(repo, ".gitattributes", "* -diff\n")
    repo.git("checkout", "-q", "main")
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", str(linked), "pr")
    _assert_reviewable(collect(linked, DiffMode.RANGE, from_ref="main", to_ref="pr"))


def test_the_machines_info_attributes_still_apply(repo: GitRepo) -> None:
    """`$GIT_DIR/info/attributes` is not part of any change: it is the machine's own setting."""
    _hostile_branch(repo, ".gitattributes", "")
    info = repo.root / ".git" / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("app.py -diff\n")
    files = by_path(collect(repo, DiffMode.RANGE, from_ref="main", to_ref="pr"))
    assert files["app.py"].binary
    assert not files["src/mod.py"].binary


def test_workspace_mode_reads_the_checkouts_attributes(repo: GitRepo) -> None:
    """The working tree is the user's own checkout: its attributes apply, as in git."""
    _base(repo)
    _edit(repo)
    repo.write(".gitattributes", "*.py -diff\n")
    files = by_path(collect(repo))
    assert files["app.py"].binary


def test_ci_preview_of_a_change_hiding_itself(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reviewed repro: `* -diff` in the pull request left 0 files to review in CI."""
    _hostile_branch(repo, ".gitattributes", "* -diff\n")
    monkeypatch.setenv("CI", "true")
    out = tmp_path / "preview.json"
    args = ["review", "--preview", "--repo", str(repo.root), "--from", "main", "--to", "pr"]
    assert main([*args, "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert sorted(f["path"] for f in doc["files"]) == ["app.py", "src/mod.py"]
