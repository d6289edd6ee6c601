"""Cache keys and reuse of the model stages' results (plain functions, and one cached task run
through Prefect's public result store)."""

from __future__ import annotations

from pathlib import Path

import pytest
from prefect import task
from prefect.settings import PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW, temporary_settings

from reviewflow.findings.localize import Localized
from reviewflow.fsutil import check_output
from reviewflow.git.identity import snapshot_identity
from reviewflow.review.records import ChunkResult, RequestRecord, mark_reused
from tasks.caching import canonical, is_incomplete, stage_cache_key, stage_options
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


@pytest.mark.usefixtures("prefect_harness")
def test_an_incomplete_stored_result_is_computed_again_and_a_complete_one_reused(
    tmp_path: Path,
) -> None:
    answers = [Localized(complete=False), Localized(), Localized(complete=False)]
    calls: list[Localized] = []

    @task(name="localize", cache_key_fn=stage_cache_key, persist_result=True)
    def stage(text: str) -> Localized:
        calls.append(answers[len(calls)])
        return calls[-1]

    cached = stage.with_options(**stage_options(tmp_path, refresh=False))
    with temporary_settings(updates={PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW: "ignore"}):
        assert not cached("same input").complete  # stored, incomplete
        assert cached("same input").complete  # the incomplete record forgotten: asked again
        assert cached("same input").complete  # the complete one reused
    assert len(calls) == 2
    assert len(list((tmp_path / "cache" / "results").iterdir())) == 1  # one record, complete
