"""A snapshot shipped through the shared store (reviewflow.git.bundle): the tools read exactly
what they read in the repository, the repository is left as it was, and a tree is written and
cloned once."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from reviewflow.errors import GitError
from reviewflow.git.bundle import bundle_commit
from reviewflow.review.reader import Snapshot, grep, list_files, read_bytes, ship
from tests.gitutil import GitRepo


@pytest.fixture(autouse=True)
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Clones go to this test's temporary directory, as a worker's TMPDIR would place them."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))


def _state(repo: GitRepo) -> tuple[str, str, str, bytes]:
    """What a review must not change: refs, objects, status and the index."""
    index = (repo.root / ".git" / "index").read_bytes()
    objects = repo.git("count-objects", "-v")
    return repo.git("for-each-ref"), objects, repo.git("status", "--porcelain"), index


def _workspace(repo: GitRepo) -> None:
    repo.write(".gitignore", ".env\n")
    repo.write("app/a.py", "a = 1\n")
    repo.write("app/b.py", "b = 1\n")
    repo.commit("base")
    repo.write("app/a.py", "a = 2  # changed\n")
    repo.write("app/new.py", "token = lookup()\n")  # untracked, not ignored
    repo.write(".env", "SECRET=1\n")  # ignored: never shipped
    (repo.root / "app" / "b.py").unlink()


def test_a_shipped_workspace_reads_as_the_workspace_and_leaves_the_repository_alone(
    repo: GitRepo, tmp_path: Path
) -> None:
    _workspace(repo)
    before = _state(repo)
    here = Snapshot(repo_root=str(repo.root))
    shipped = ship(here, tmp_path / "store")

    assert _state(repo) == before
    assert shipped.repo_root == here.repo_root and shipped.ref and shipped.bundle
    assert list_files(shipped) == list_files(here) == [".gitignore", "app/a.py", "app/new.py"]
    for path in list_files(here):
        assert read_bytes(shipped, path) == read_bytes(here, path)
    assert grep(shipped, [], "lookup", ["."]) == f"{shipped.ref}:app/new.py".encode() + (
        b"\x001\x00token = lookup()\n"
    )
    assert shipped.root.parent == tmp_path / "tmp" / shipped.root.parent.name  # this machine's


def test_one_tree_is_one_bundle_and_one_clone(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("app/a.py", "a = 1\n")
    head = repo.commit("base")
    store = tmp_path / "store"
    first = ship(Snapshot(repo_root=str(repo.root), ref=head), store)
    again = ship(Snapshot(repo_root=str(repo.root), ref=head), store)
    workspace = ship(Snapshot(repo_root=str(repo.root)), store)  # a clean tree: the same tree

    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    assert [p.name for p in (store / "snapshots").iterdir()] == [f"{tree}.bundle"]
    assert first == again == workspace
    assert first.ref == bundle_commit(Path(str(first.bundle)))
    assert first.root == again.root and first.root.is_dir()
    assert len([p for p in first.root.parent.iterdir() if not p.name.startswith(".")]) == 1


def test_a_file_that_is_not_a_snapshot_bundle_is_refused(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("app/a.py", "a = 1\n")
    repo.commit("base")
    other = tmp_path / "other.bundle"
    repo.git("bundle", "create", "-q", str(other), "main")
    with pytest.raises(GitError, match="not a reviewflow snapshot bundle"):
        bundle_commit(other)
