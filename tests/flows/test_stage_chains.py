"""What a cancel keeps of the stages that finished but were not taken yet (`_Chains.take_finished`)
is read from their futures, never asked of the Prefect API: one request per stage took seconds
after a cancel of a large review under load (3.4-4.1 s for 151 files), as long as the watchdog
gives the review to print its report. Here the API is unreachable while they are taken."""

from __future__ import annotations

import time

import pytest
from prefect import flow, task
from prefect.settings import PREFECT_API_URL, temporary_settings

from flows.runners import threads
from flows.stages import _Chains
from reviewflow.review.jobs import Chunk, FileJob
from reviewflow.review.records import ChunkResult

UNREACHABLE = "http://127.0.0.1:9/api"  # the discard port: nothing answers


def _job(path: str) -> FileJob:
    chunk = Chunk(index=0, count=1, text="+x = 1", changed_lines=1)
    return FileJob(
        path=path, status="modified", changed_lines=1, chunks=(chunk,), rule="default",
        rule_label="default", language="python",
    )  # fmt: skip


@task
def tool_loop(path: str) -> ChunkResult:
    return ChunkResult(path=path)  # the model said `task_done`: nothing proposed


def _unused(*args: object) -> object:
    raise AssertionError("nothing is submitted after a cancel")


@flow(task_runner=threads(2))
def cancelled_review(paths: list[str]) -> tuple[list[str], list[str]]:
    """Every file's only chunk done, none taken yet; then the cancel takes them with the API
    gone: the files done (no finding, nothing to relocate), and the results kept."""
    done: list[str] = []
    chains = _Chains(
        _unused,  # type: ignore[arg-type]
        lambda job, index, planned: tool_loop.submit(job.path),
        _unused,  # type: ignore[arg-type]
        _unused,  # type: ignore[arg-type]
        done.append,
    )
    for path in paths:
        chains.start(_job(path))
    deadline = time.monotonic() + 60
    while chains._done.qsize() < len(paths):  # every loop's completion is queued
        assert time.monotonic() < deadline, "the tool loops never finished"
        time.sleep(0.01)
    with temporary_settings(updates={PREFECT_API_URL: UNREACHABLE}):
        chains.take_finished()
    return done, [file.path for file in chains.files if file.path and file.complete]


@pytest.mark.usefixtures("prefect_harness")
def test_a_cancel_takes_the_finished_stages_from_their_futures() -> None:
    paths = [f"app/f{n}.py" for n in range(6)]
    done, reviewed = cancelled_review(paths)
    assert sorted(done) == paths
    assert sorted(reviewed) == paths
