"""The model stages of a review, wired per file: plan -> tool loop per chunk -> relocate ->
review filter. Per-element futures chain them, so one file's tool loop starts as soon as its own
plan is done and its relocation as soon as its own chunks are, whatever the other files do."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prefect import unmapped
from prefect.futures import PrefectFuture

from reviewflow.config import Config
from reviewflow.findings.models import FileFindings
from reviewflow.models import ReviewWarning
from reviewflow.providers.pool import ProviderHandle
from reviewflow.review.jobs import FileJob
from reviewflow.review.reader import Snapshot
from reviewflow.review.records import ChunkResult, PlanResult, RequestRecord, StageResult
from reviewflow.select.reviewed import ReviewedFiles
from tasks.caching import stage_options
from tasks.loop import tool_loop
from tasks.plan import plan
from tasks.relocate import relocate
from tasks.review_filter import review_filter


@dataclass(frozen=True)
class ModelStages:
    """The model stages' results for every file, and what they add up to."""

    files: list[FileFindings]
    records: tuple[RequestRecord, ...]  # of every model stage so far
    warnings: tuple[ReviewWarning, ...]  # of plans and tool loops
    complete: bool  # plans and tool loops
    chunks: int
    tool_calls: int
    options: dict[str, Any]


def run_model_stages(
    jobs: Sequence[FileJob],
    snapshot: Snapshot,
    snapshot_id: str,
    reviewed: ReviewedFiles,
    config: Config,
    handle: ProviderHandle,
    *,
    home: str,
    refresh: bool,
    on_file_done: Callable[[str], None],
) -> ModelStages:
    """Submit every file's stages, then wait for all of them."""
    options = stage_options(home, refresh)
    plans = plan.with_options(**options).map(list(jobs), unmapped(handle))
    loop_task = tool_loop.with_options(**options)
    relocate_task = relocate.with_options(**options)
    filter_task = review_filter.with_options(**options)
    loops: list[PrefectFuture[ChunkResult]] = []
    filtered: list[PrefectFuture[list[FileFindings]]] = []
    for job, future in zip(jobs, plans, strict=True):
        planned: Any = future  # a future stands for its result: the file's chain waits on it
        mine: list[Any] = [
            loop_task.submit(job, index, planned, snapshot, snapshot_id, config.review, handle)
            for index in range(len(job.chunks))
        ]
        placed: Any = relocate_task.submit(mine, reviewed, handle)
        done = filter_task.submit(placed, reviewed, handle)
        done.add_done_callback(_notify(on_file_done, job.path))
        loops += mine
        filtered.append(done)
    plan_results: list[PlanResult] = [future.result() for future in plans]
    chunk_results: list[ChunkResult] = [future.result() for future in loops]
    files = [item for future in filtered for item in future.result()]
    return _summarize(plan_results, chunk_results, files, options)


def _notify(callback: Callable[[str], None], path: str) -> Callable[[Any], None]:
    return lambda _future: callback(path)


def _summarize(
    plans: list[PlanResult],
    chunks: list[ChunkResult],
    files: list[FileFindings],
    options: dict[str, Any],
) -> ModelStages:
    engine: list[StageResult] = [*plans, *chunks]  # the files' own go through `finalize`
    return ModelStages(
        files=files,
        records=tuple(record for result in [*engine, *files] for record in result.records),
        warnings=tuple(warning for result in engine for warning in result.warnings),
        complete=all(result.complete for result in engine),
        chunks=len(chunks),
        tool_calls=sum(chunk.tool_calls for chunk in chunks),
        options=options,
    )
