"""Cache keys and reuse of the model stages' results (plain functions, no Prefect run)."""

from __future__ import annotations

from reviewflow.findings.localize import Localized
from reviewflow.fsutil import check_output
from reviewflow.git.identity import snapshot_identity
from reviewflow.review.records import ChunkResult, RequestRecord, mark_reused
from tasks.caching import canonical, is_incomplete
from tests.gitutil import GitRepo


def test_incomplete_results_of_every_kind_are_never_reused() -> None:
    assert is_incomplete(Localized(complete=False))  # a failed localization is asked again
    assert is_incomplete([ChunkResult(path="a.py"), ChunkResult(path="b.py", complete=False)])
    assert not is_incomplete(Localized())
    assert not is_incomplete([ChunkResult(path="a.py")])


def test_a_reused_result_handed_on_keeps_the_next_stage_key() -> None:
    fresh = ChunkResult(path="a.py", records=(RequestRecord(stage="main", path="a.py"),))
    assert canonical(mark_reused(fresh)) == canonical(fresh)
    assert canonical(mark_reused([fresh])) == canonical([fresh])


def test_devices_are_valid_output_targets() -> None:
    check_output("/dev/null")  # written in place, never replaced: no writable /dev needed


def test_working_tree_identity_follows_staged_files_of_an_unborn_repository(
    repo: GitRepo,
) -> None:
    repo.write("a.py", "x = 1\n")
    repo.git("add", "a.py")
    first = snapshot_identity(repo.root, None)
    repo.write("a.py", "x = 2\n")
    second = snapshot_identity(repo.root, None)
    repo.git("add", "a.py")
    assert len({first, second, snapshot_identity(repo.root, None)}) == 3
