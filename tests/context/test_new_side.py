"""The index of a review's new side: a commit's tree, or the working tree with the change
overlaid, written without touching the reviewed repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

from reviewflow.git.models import ChangeSpec, DiffMode
from reviewflow.git.repo import collect_change
from reviewflow.review.newside import new_side_index
from reviewflow.review.reader import Snapshot
from tests.context.conftest import make_repo

FILES = {
    "pkg/util.py": "def helper(x):\n    return x * 2\n\n\ndef gone():\n    return 1\n",
    "pkg/main.py": "from pkg.util import helper, gone\n\n\ndef run():\n"
    "    return helper(3) + gone()\n",
    "pkg/dead.py": "def dead():\n    return 0\n",
}


def _repo_state(root: Path) -> tuple[str, str, bytes]:
    """What a review must not change: objects, refs and the index."""
    objects = subprocess.run(
        ["git", "count-objects", "-v"], cwd=root, capture_output=True, check=True
    ).stdout.decode()
    refs = subprocess.run(
        ["git", "for-each-ref"], cwd=root, capture_output=True, check=True
    ).stdout.decode()
    return objects, refs, (root / ".git" / "index").read_bytes()


def test_a_commit_review_indexes_the_commit_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    repo.write("pkg/util.py", "def helper(x, y=1):\n    return x * y\n")
    commit = repo.commit("edit")
    repo.write("pkg/util.py", "def uncommitted():\n    pass\n")  # not the commit's
    change = collect_change(repo.root, ChangeSpec(mode=DiffMode.COMMIT, commit=commit))
    snapshot = Snapshot(repo_root=str(repo.root), ref=commit)
    index = new_side_index(snapshot, change, tmp_path / "store")
    names = {d.name for d in index.files["pkg/util.py"].definitions}
    assert names == {"helper"}
    assert index.line("pkg/util.py", 1) == "def helper(x, y=1):"
    again = new_side_index(snapshot, change, tmp_path / "store")
    assert (again.stats.parsed, again.stats.reused) == (0, 3)


def test_a_workspace_review_indexes_the_working_tree_without_writing_the_repo(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    repo.write("pkg/util.py", "def helper(x):\n    return x * 3\n")  # `gone` deleted
    repo.write(
        "pkg/fresh.py", "from pkg.util import helper\n\n\ndef fresh():\n    return helper(9)\n"
    )  # untracked
    (repo.root / "pkg" / "dead.py").unlink()
    before = _repo_state(repo.root)
    change = collect_change(repo.root, ChangeSpec(mode=DiffMode.WORKSPACE))
    snapshot = Snapshot(repo_root=str(repo.root))
    index = new_side_index(snapshot, change, tmp_path / "store")
    assert _repo_state(repo.root) == before
    assert sorted(index.files) == ["pkg/fresh.py", "pkg/main.py", "pkg/util.py"]
    assert {d.name for d in index.files["pkg/util.py"].definitions} == {"helper"}
    callers = [(h.path, h.reference.line) for h in index.references("helper", "pkg/util.py")]
    assert ("pkg/fresh.py", 5) in callers
    # lines of new blobs (only in the scratch repository) and of HEAD's blobs stay readable
    assert index.line("pkg/fresh.py", 5) == "return helper(9)"
    assert index.line("pkg/main.py", 5) == "return helper(3) + gone()"
    assert (tmp_path / "store").stat().st_mode & 0o777 == 0o700


def test_a_workspace_review_on_an_unborn_branch(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "init", "-q", str(fresh)], check=True)
    (fresh / "a.py").write_text("def a():\n    return 1\n")
    change = collect_change(fresh, ChangeSpec(mode=DiffMode.WORKSPACE))
    index = new_side_index(Snapshot(repo_root=str(fresh)), change, tmp_path / "store")
    assert list(index.files) == ["a.py"]
