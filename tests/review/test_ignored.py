"""The tools never read files git ignores in the working tree (`.env`, build output)."""

from __future__ import annotations

import pytest

from reviewflow.errors import ToolError
from reviewflow.review.reader import Snapshot, read_bytes
from tests.gitutil import GitRepo


def test_ignored_files_are_refused_tracked_and_untracked_ones_read(repo: GitRepo) -> None:
    repo.write(".gitignore", ".env\n")
    repo.write("tracked.py", "x = 1\n")
    repo.commit("base")
    repo.write(".env", "API_TOKEN=secret\n")
    repo.write("new[1].py", "y = 2\n")  # an untracked name with glob characters
    snapshot = Snapshot(repo_root=str(repo.root), ref=None)
    assert read_bytes(snapshot, "tracked.py") == b"x = 1\n"
    assert read_bytes(snapshot, "new[1].py") == b"y = 2\n"
    with pytest.raises(ToolError, match="ignored by git"):
        read_bytes(snapshot, ".env")
